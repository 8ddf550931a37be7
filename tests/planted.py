"""Fake secrets of every kind the redactor must catch, planted into real session files.

Values are generated at run time from a seeded RNG (so no key-shaped literal is committed,
and no planted value can already be somewhere by chance). Every position of a session --
user prompt, command, heredoc, tool output, file written, assistant text -- gets its own
fresh set, so a leak names the position it came from. URLs with credentials are part of
every set. Used by tests/test_redaction_flow.py and benchmarks/redaction.py.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
DJANGO = "abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)"  # django.core.management.utils

#: Every kind the issue names, as the placeholder spells it.
KINDS = (
    "openai-api-key", "anthropic-api-key", "aws-access-key-id", "aws-secret-key", "github-token",
    "github-fine-grained-token", "gitlab-token", "slack-token", "slack-webhook", "stripe-key", "google-api-key",
    "google-oauth-token", "google-client-secret", "huggingface-token", "npm-token", "sendgrid-api-key",
    "twilio-key", "private-key", "jwt", "url-password", "bearer-token", "basic-auth", "password", "token",
    "secret", "api-key", "high-entropy-string",
)


@dataclass(frozen=True)
class Secret:
    kind: str
    value: str
    line: str  # how it appears: a realistic line holding the value
    position: str = ""  # where it was planted (user prompt, command, ...)
    #: Other text that must not survive: the halves of a wrapped token, what base64 encodes.
    pieces: tuple[str, ...] = ()

    def fragments(self) -> list[str]:
        """Substrings that must not survive anywhere: the value, and pieces of it (partial leaks)."""
        if self.kind == "private-key":
            return [line for line in self.value.splitlines() if len(line) >= 40]
        parts = [self.value, *self.pieces]
        body = self.value[-max(12, len(self.value) // 2):]
        if len(body) >= 24:
            parts += [body[:12], body[len(body) // 2 - 6:len(body) // 2 + 6], body[-12:]]
        return parts


class Factory:
    """One fresh secret of every kind per call of :meth:`secrets`."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def _rand(self, n: int, alphabet: str = ALNUM) -> str:
        """Random text with at least two digits and, where the alphabet has both, both cases."""
        want_cases = any(c.islower() for c in alphabet) + any(c.isupper() for c in alphabet)
        while True:
            value = "".join(self.rng.choice(alphabet) for _ in range(n))
            cases = any(c.islower() for c in value) + any(c.isupper() for c in value)
            if (sum(c.isdigit() for c in value) >= 2 or n < 4) and cases == want_cases:
                return value

    def _b64url(self, data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    def secrets(self) -> list[Secret]:
        r = self._rand
        pw = r(10) + "!" + r(5)
        aws_id = "AKIA" + r(16, string.ascii_uppercase + "234567")
        jwt = ".".join([self._b64url({"alg": "HS256", "typ": "JWT"}),
                        self._b64url({"sub": r(12), "iat": self.rng.randrange(10**9, 2 * 10**9)}), r(43, URLSAFE)])
        basic = base64.b64encode(f"deploy:{r(14)}".encode()).decode()
        hook = f"T{r(10, string.ascii_uppercase + string.digits)}/B{r(10, string.ascii_uppercase + string.digits)}/{r(24)}"
        key_lines = [r(64, B64) for _ in range(8)]
        private_key = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *key_lines, "-----END RSA PRIVATE KEY-----"])
        values = [
            ("openai-api-key", f"sk-{r(48)}", "export OPENAI_API_KEY={v}"),
            ("openai-api-key", f"sk-proj-{r(74, URLSAFE)}T3BlbkFJ{r(74, URLSAFE)}", 'OPENAI_API_KEY="{v}" python run.py'),
            ("anthropic-api-key", f"sk-ant-api03-{r(93, URLSAFE)}AA", "ANTHROPIC_API_KEY={v}"),
            ("aws-access-key-id", aws_id, "aws_access_key_id = {v}"),
            ("aws-secret-key", r(40, B64), "aws_secret_access_key = {v}"),
            ("github-token", f"ghp_{r(36)}", "git clone https://{v}@github.com/acme/billing.git"),
            ("github-fine-grained-token", f"github_pat_{r(22)}_{r(59)}", "echo {v} | gh auth login --with-token"),
            ("gitlab-token", f"glpat-{r(20, URLSAFE)}", "git remote set-url origin https://oauth2:{v}@gitlab.com/acme/api.git"),
            ("slack-token", f"xoxb-{r(12, string.digits)}-{r(13, string.digits)}-{r(24)}", "SLACK_BOT_TOKEN={v}"),
            ("slack-webhook", hook, "curl -X POST -d '{{\"text\":\"deployed\"}}' https://hooks.slack.com/services/{v}"),
            ("stripe-key", f"sk_live_{r(99)}", 'stripe.api_key = "{v}"'),
            ("google-api-key", f"AIza{r(35, URLSAFE)}", "curl 'https://maps.googleapis.com/maps/api/geocode/json?address=x&key={v}'"),
            ("google-oauth-token", f"ya29.{r(120, URLSAFE)}", "gcloud auth print-access-token  # {v}"),
            ("google-client-secret", f"GOCSPX-{r(28, URLSAFE)}", '"client_secret": "{v}",'),
            ("huggingface-token", f"hf_{r(34)}", "huggingface-cli login --token {v}"),
            ("npm-token", f"npm_{r(36)}", "//registry.npmjs.org/:_authToken={v}"),
            ("sendgrid-api-key", f"SG.{r(22, URLSAFE)}.{r(43, URLSAFE)}", "SENDGRID_API_KEY={v}"),
            ("twilio-key", f"SK{r(32, HEX)}", "twilio api:core:keys:list  # {v}"),
            ("private-key", private_key, "{v}"),
            ("jwt", jwt, "Cookie: session={v}"),
            ("url-password", pw, "DATABASE_URL=postgres://app_user:{v}@db.internal:5432/prod"),
            ("bearer-token", r(40), 'curl -H "Authorization: Bearer {v}" https://api.internal/v1/jobs'),
            ("basic-auth", basic, "Authorization: Basic {v}"),
            ("password", r(9) + "#" + r(4), "DB_PASSWORD={v}"),
            ("token", r(32), "export CI_DEPLOY_TOKEN='{v}'"),
            ("secret", r(40, URLSAFE), "JWT_SECRET={v}"),
            ("api-key", r(32), "MAPBOX_API_KEY={v}"),
            ("high-entropy-string", r(44, B64), 'FERNET_MATERIAL = "{v}"'),
        ]
        return [Secret(kind, value, line.format(v=value)) for kind, value, line in values]


    def forms(self) -> list[Secret]:
        """Issue 12: the ways of writing a password or a token that once got through, one of each."""
        r = self._rand
        values = []

        def pw(symbols: bool = True) -> str:
            return r(7) + ("#%" if symbols else "") + r(5)

        for line in ("PGPASSWORD={v} psql -h db.internal -U app -c 'select 1'", "export PGPASSWORD={v}",
                     "MYSQL_PWD={v} mysqldump -u root billing > billing.sql", "mysql -u root -p'{v}' billing",
                     "mysql -h db.internal -u root -p{v} billing", "mysqldump --password={v} billing",
                     "sshpass -p '{v}' ssh deploy@10.0.4.12 'systemctl restart api'",
                     "docker login -u ci-bot -p {v} registry.internal:5000",
                     "curl -u deploy:{v} https://ci.internal/api/jobs", "curl --user deploy:{v} -X POST https://ci.internal/x",
                     'psql "host=db.internal user=app password={v} dbname=prod"',
                     "echo '{v}' | sudo -S systemctl restart nginx", "printf '%s\\n' '{v}' | sudo -S apt-get install -y jq",
                     "machine api.internal login deploy password {v}"):
            values.append(("password", pw(symbols="'" in line), line))
        for line in ("the staging password is {v}", "пароль от базы: {v}", "Das Passwort für staging lautet {v}",
                     "le mot de passe de la base est {v}", "la contraseña de staging es {v}", "a senha do banco é {v}",
                     "数据库密码是 {v}", "パスワードは {v} です"):
            values.append(("password", pw(symbols=False), line))
        secrets = [Secret(kind, value, line.format(v=value)) for kind, value, line in values]
        token = f"ghp_{r(36)}"
        # cut by a terminal 80 columns wide, the rest indented on the next line
        secrets.append(Secret("github-token", token, f"export GH_TOKEN={token[:21]}\n    {token[21:]}",
                              pieces=(token[:21], token[21:])))
        key = f"sk-proj-{r(74, URLSAFE)}T3BlbkFJ{r(74, URLSAFE)}"
        encoded = base64.b64encode(f"OPENAI_API_KEY={key}\nLOG_LEVEL=info\n".encode()).decode()
        secrets.append(Secret("base64-secret", encoded, f"data:\n  .env: {encoded}\ntype: Opaque", pieces=(key,)))
        encoded = base64.b64encode(f"export OPENAI_API_KEY={key}".encode()).decode()
        secrets.append(Secret("base64-secret", encoded, f"echo {encoded} | base64 -d >> ~/.bashrc", pieces=(key,)))
        return secrets

    def survivors(self) -> list[Secret]:
        """Issue 23 section 5: the values an attacker planted that stayed in the state DB, one of each form."""
        r = self._rand
        key_lines = [r(64, B64) for _ in range(8)]
        discord_id = str(self.rng.randrange(10**17, 10**18 * 9))
        discord = ".".join([base64.b64encode(discord_id.encode()).decode().rstrip("="), r(6, URLSAFE), r(38, URLSAFE)])
        sas = urllib.parse.quote(base64.b64encode(self.rng.randbytes(32)).decode(), safe="")
        values = [
            ("aws-secret-key", r(40, B64), "aws configure set aws_secret_access_key {v}"),
            ("password", self._password(), "redis-cli -h cache.internal -p 6379 -a {v} ping"),
            ("password", self._password(), "echo {v} | docker login -u ci-bot --password-stdin registry.internal:5000"),
            ("password", self._password(), "smbclient //fs.internal/share -U deploy%{v} -c 'ls'"),
            ("password", self._password(), "ldapsearch -x -H ldap://ldap.internal -D cn=admin,dc=acme,dc=io -w {v} -b dc=acme,dc=io"),
            ("password", self._password(), "htpasswd -b -c /etc/nginx/.htpasswd admin {v}"),
            ("password", self._password(), "openssl pkcs12 -export -in cert.pem -inkey key.pem -out cert.p12 -passout pass:{v}"),
            ("password", self._password(), "az login --service-principal -u http://ci-deploy -p {v} --tenant acme.onmicrosoft.com"),
            ("aws-secret-key", r(40, B64), "The AWS secret access key for the deploy user is {v}, keep it out of git."),
            ("token", r(32, HEX), "Twilio auth token {v} goes with account AC" + r(32, HEX) + "."),
            ("discord-bot-token", discord, "client.run('{v}')"),
            ("atlassian-api-token", "ATATT3" + r(177, URLSAFE) + "=" + r(8, HEX.upper()), "| jira | deploy@acme.io | {v} |"),
            ("vault-service-token", "hvs." + r(91, URLSAFE), "logged in as ci with {v} (ttl 768h)"),
            ("digitalocean-pat", "dop_v1_" + r(64, HEX), "doctl auth init -t {v}"),
            ("shopify-access-token", "shpat_" + r(32, HEX), "| staging | {v} |"),
            ("age-secret-key", "AGE-SECRET-KEY-1" + r(58, BECH32), "# public key: age1" + r(58, BECH32.lower()) + "\n{v}"),
            ("azure-sas-signature", sas,
             "https://acme.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31T00:00:00Z&sig={v}"),
            ("url-password", self._password(), "export REDIS_URL=redis://:{v}@cache.internal:6379/0"),
            ("private-key", "\n".join(key_lines[2:6]), "$ sed -n '3,6p' ~/.ssh/id_rsa\n{v}"),
        ]
        return [Secret(kind, value, line.format(v=value)) for kind, value, line in values]

    def variants(self) -> list[Secret]:
        """Issue 23: more of the same, beyond its list -- other CLIs' password flags, other providers' shapes."""
        r, pw = self._rand, self._password
        telegram = f"{self.rng.randrange(10**8, 10**10)}:AA{r(33, URLSAFE)}"
        values = [
            ("password", pw(), "mysql -h db.internal -u root --password={v} billing"),
            ("url-password", pw(), "psql postgresql://app:{v}@db.internal:5432/prod -c 'select 1'"),
            ("password", pw(), "sshpass -p {v} scp backup.tar deploy@10.0.4.12:/srv"),
            ("password", pw(), "curl -su admin:{v} https://ci.internal/api/json"),
            ("password", pw(), "mongo admin -u root -p {v} --eval 'db.stats()'"),
            ("password", pw(), "keytool -importkeystore -srckeystore app.p12 -srcstoretype PKCS12 -srcstorepass {v} -destkeystore app.jks"),
            ("password", pw(), "zip -r -P {v} secrets.zip .env"),
            ("password", pw(), "7z a -p{v} -mhe=on backup.7z data/"),
            ("password", pw(), "gpg --batch --pinentry-mode loopback --passphrase {v} -d secrets.env.gpg"),
            ("password", pw(), "sqlcmd -S db.internal -U sa -P {v} -Q 'SELECT 1'"),
            ("password", pw(), "lftp -u deploy,{v} sftp://files.internal"),
            ("password", pw(), "ssh-keygen -t ed25519 -N {v} -f ~/.ssh/deploy"),
            ("password", pw(), "openssl enc -aes-256-cbc -salt -in db.sql -out db.sql.enc -k {v}"),
            ("password", pw(), "unzip -P {v} secrets.zip"),
            ("password", pw(), "rclone config create backup sftp host files.internal user deploy pass {v}"),
            ("password", pw(), "wget --user=deploy --http-password={v} https://files.internal/db.sql"),
            ("password", pw(), "psexec \\\\build01 -u ACME\\ci -p {v} cmd"),
            ("password", pw(), '{{"username": "deploy", "password": "{v}"}}'),
            ("password", pw(), "  password: {v}"),
            ("password", pw(), "[pypi]\nusername = deploy\npassword = {v}"),
            ("token", r(40), "kubectl --token {v} -n prod get pods"),
            ("token", r(36), "npm config set //npm.internal/:_authToken {v}"),
            ("vault-service-token", "hvs." + r(91, URLSAFE), "vault login {v}"),
            ("token", base64.b64encode(f"deploy:{r(14)}".encode()).decode(), "_auth={v}"),
            ("session-cookie", r(32, HEX[:10] + "abcdefghijklmnopqrstuvwxyz"), "Cookie: sessionid={v}; csrftoken=abc"),
            ("heroku-api-key-v2", "HRKU-AA" + r(58, URLSAFE), "heroku auth:token\n{v}"),
            ("telegram-bot-token", telegram, "curl https://api.telegram.org/bot{v}/getMe"),
            ("discord-webhook", f"{self.rng.randrange(10**17, 10**18)}/{r(68, URLSAFE)}",
             "curl -X POST -d @msg.json https://discord.com/api/webhooks/{v}"),
            ("linear-api-key", "lin_api_" + r(40), "| linear | {v} |"),
            ("postman-api-token", f"PMAK-{r(24, HEX)}-{r(34, HEX)}", "postman login --with-api-key {v}"),
            ("grafana-service-account-token", f"glsa_{r(32)}_{r(8, HEX)}", "created the service account token {v} for ci"),
            ("databricks-api-token", "dapi" + r(32, HEX), "databricks configure  # pasted {v}"),
            ("sentry-user-token", "sntryu_" + r(64, HEX), "sentry-cli --auth-token-file t; cat t\n{v}"),
        ]
        return [Secret(kind, value, line.format(v=value)) for kind, value, line in values]

    def _password(self) -> str:
        return self._rand(8) + "#" + self._rand(5)

    def _django_key(self, lead: str = "") -> str:
        """A Django ``SECRET_KEY`` as ``get_random_secret_key()`` writes it (50 characters, punctuation in
        them); ``lead``: its first character, then two letters or digits and a ``)``."""
        head = lead + self._rand(2, string.ascii_lowercase + string.digits) + ")" if lead else ""
        return head + self._rand(50 - len(head), DJANGO) + "!"

    def _symbols_password(self) -> str:
        """A generated password with the punctuation that once ended a value: ``)#%(!$&*^``."""
        return self._rand(5) + "(" + self._rand(3) + ")!" + self._rand(4) + "$&" + self._rand(3) + "*^"

    def survivors2(self) -> list[Secret]:
        """Issue 23, second round: what a blind attacker found in the state DB and SKILL.md after the first."""
        r, django, pw = self._rand, self._django_key, self._symbols_password
        values = [
            ("secret", django("7"), "DJANGO_SECRET_KEY={v}"),
            ("secret", "django-insecure-" + django(), "SECRET_KEY = '{v}'"),
            ("secret", r(32), "app.config['SECRET_KEY'] = '{v}'"),
            ("api-key", r(32), 'settings["api_key"] = "{v}"'),
            ("token", r(40), 'os.environ["X_TOKEN"] = "{v}"'),
            ("password", pw(), "creds = {{'user': 'deploy', 'password': '{v}'}}"),
            ("secret", django(), "secret_key: {v}"),
            ("api-key", pw(), 'api_key = "{v}"'),
        ]
        return [Secret(kind, value, line.format(v=value)) for kind, value, line in values]

    def variants2(self) -> list[Secret]:
        """Issue 23, second round: the same classes beyond the attacker's list (written for the fix)."""
        r, django, pw = self._rand, self._django_key, self._symbols_password
        values = [
            # a value opening with what once made it a reference, a flag or a comment
            *(("secret", django(lead), "DJANGO_SECRET_KEY={v}") for lead in "$(%#-=&@"),
            ("secret", r(6) + "%(" + r(4) + "%s!" + django(), "SECRET_KEY={v}"),  # `%(`, `%s`: not a template
            ("password", pw(), 'DB_PASSWORD="{v}"'),
            ("token", django(), "export API_TOKEN='{v}'"),
            ("secret", r(40), "ENV['STRIPE_SECRET'] = '{v}'"),
            ("api-key", r(32), "$_ENV['MAPBOX_API_KEY'] = '{v}';"),
            ("api-key", r(32), 'config[:api_key] = "{v}"'),
            ("token", r(40), 'process.env["SLACK_TOKEN"] = "{v}";'),
            ("secret", django(), 'os.environ.setdefault("DJANGO_SECRET_KEY", "{v}")'),
            ("token", r(40), 'monkeypatch.setenv("API_TOKEN", "{v}")'),
            ("token", r(40), "localStorage.setItem('auth_token', '{v}');"),
            ("password", pw(), "client = Client(username='deploy', password='{v}')"),
            ("secret", django(), "  secret_key: {v}  # rotated yearly"),
            ("password", pw(), 'password: "{v}"'),
            ("secret", django(), "secret_key = {v}"),
            ("password", pw(), "stringData:\n  DB_PASSWORD: {v}"),
        ]
        return [Secret(kind, value, line.format(v=value)) for kind, value, line in values]


#: Placeholder kinds of :meth:`Factory.forms`.
FORM_KINDS = ("password", "github-token", "base64-secret")
#: Placeholder kinds of :meth:`Factory.survivors` and :meth:`Factory.variants`.
ISSUE23_KINDS = tuple(sorted({s.kind for s in Factory(0).survivors() + Factory(0).variants()}))
#: ... and of the second round's (:meth:`Factory.survivors2`, :meth:`Factory.variants2`).
ROUND2_KINDS = tuple(sorted({s.kind for s in Factory(0).survivors2() + Factory(0).variants2()}))


def block(secrets: list[Secret]) -> str:
    return "\n".join(s.line for s in secrets)


class Planter:
    """Plants a fresh secret set per position; remembers what went where."""

    def __init__(self, seed: int = 4, *, forms: bool = False, issue23: bool = False) -> None:
        self.factory = Factory(seed)
        self.forms = forms  # plant Factory.forms() (issue 12) instead of Factory.secrets()
        self.issue23 = issue23  # plant Factory.survivors() and .variants() (issue 23) instead
        self.planted: dict[str, list[Secret]] = {}

    def take(self, position: str) -> str:
        if self.issue23:
            fresh = self.factory.survivors() + self.factory.variants()
        else:
            fresh = self.factory.forms() if self.forms else self.factory.secrets()
        secrets = [replace(s, position=position) for s in fresh]
        self.planted.setdefault(position, []).extend(secrets)
        return block(secrets)

    def secrets(self) -> list[Secret]:
        return [s for group in self.planted.values() for s in group]

    # -- Claude Code ---------------------------------------------------------------------
    def claude_code(self, source: Path, target: Path) -> Path:
        records = [orjson.loads(line) for line in source.read_bytes().splitlines() if line.strip()]
        done: set[str] = set()
        bash_calls = 0
        for record in records:
            message = record.get("message") if isinstance(record.get("message"), dict) else {}
            content = message.get("content")
            kind = record.get("type")
            if kind == "user" and not record.get("isMeta"):
                # First in the prompt, so that it is in the task's first line: the skill's title.
                if isinstance(content, str) and "<command-args>" in content and "slash command" not in done:
                    message["content"] = content.replace("<command-args>",
                                                         f"<command-args>{self.take('slash command')}\n", 1)
                    done.add("slash command")
                elif isinstance(content, str) and "user prompt" not in done and not content.startswith("<"):
                    message["content"] = f"{self.take('user prompt')}\n{content}"
                    done.add("user prompt")
                for item in content if isinstance(content, list) else []:
                    if item.get("type") == "text" and "user prompt" not in done:
                        item["text"] = f"{self.take('user prompt')}\n{item['text']}"
                        done.add("user prompt")
                    elif item.get("type") == "tool_result" and "tool output" not in done:
                        item["content"] = _append(item.get("content"), f"\n$ env\n{self.take('tool output')}")
                        done.add("tool output")
                    elif item.get("type") == "tool_result" and item.get("is_error") and "error output" not in done:
                        item["content"] = _prepend(item.get("content"), f"{self.take('error output')}\n")
                        done.add("error output")
                patch = record.get("toolUseResult")
                if isinstance(patch, dict) and isinstance(patch.get("structuredPatch"), list) \
                        and "file written (patch)" not in done:
                    for hunk in patch["structuredPatch"][:1]:
                        hunk["lines"] = [*hunk.get("lines", []),
                                         *("+" + x for x in self.take("file written (patch)").splitlines())]
                    done.add("file written (patch)")
            if kind == "assistant":
                for item in content if isinstance(content, list) else []:
                    if item.get("type") == "text" and "assistant text" not in done:
                        item["text"] += f"\nI configured the service with:\n{self.take('assistant text')}"
                        done.add("assistant text")
                    elif item.get("type") == "tool_use":
                        self._claude_tool(item, done, bash_calls)
                        bash_calls += item.get("name") == "Bash"
        target.write_bytes(b"\n".join(orjson.dumps(r) for r in records) + b"\n")
        return target

    def _claude_tool(self, item: dict[str, Any], done: set[str], bash_calls: int) -> None:
        args = item.get("input") or {}
        if item.get("name") == "Bash" and isinstance(args.get("command"), str):
            if bash_calls == 0:
                args["command"] = f"{args['command']}\n{self.take('command')}"
            elif bash_calls == 1:
                args["command"] = f"{args['command']}\ncat > .env <<'EOF'\n{self.take('heredoc')}\nEOF"
        elif item.get("name") in ("Write", "Edit", "MultiEdit") and "file written" not in done:
            planted = self.take("file written")
            if isinstance(args.get("content"), str):
                args["content"] += f"\n{planted}\n"
            elif isinstance(args.get("new_string"), str):
                args["new_string"] += f"\n{planted}\n"
            elif isinstance(args.get("edits"), list) and args["edits"]:
                args["edits"][0]["new_string"] += f"\n{planted}\n"
            done.add("file written")

    # -- mini-swe-agent ------------------------------------------------------------------
    def mini_swe_agent(self, source: Path, target: Path) -> Path:
        data = orjson.loads(source.read_bytes())
        messages = data["messages"] if isinstance(data, dict) else data
        commands = 0
        outputs = 0
        for message in messages:
            content = message.get("content")
            if not isinstance(content, str):
                continue
            if message.get("role") == "user" and "<pr_description>" in content:
                message["content"] = re.sub(r"(<pr_description>\s*(?:Consider the following PR description:\s*)?)",
                                            lambda m: f"{m.group(1)}{self.take('user prompt')}\n", content, count=1)
            elif message.get("role") == "user" and "<output>" in content and outputs < 2:
                position = "tool output" if outputs == 0 else "tool output (second)"
                message["content"] = content.replace("</output>", f"\n{self.take(position)}\n</output>", 1)
                outputs += 1
            elif message.get("role") == "assistant" and "```bash" in content and commands < 2:
                thought = f"I will export the credentials first:\n{self.take('assistant text')}\n\n" \
                    if commands == 0 else ""
                extra = self.take("command") if commands == 0 else \
                    f"cat <<'EOF' > deploy/settings.env\n{self.take('heredoc')}\nEOF"
                block_end = re.search(r"```bash\s*\n.*?(\n```)", content, flags=re.S)
                if block_end is None:
                    continue
                cut = block_end.start(1)
                message["content"] = f"{thought}{content[:cut]}\n{extra}{content[cut:]}"
                _sync_actions(message, extra)
                commands += 1
        target.write_bytes(orjson.dumps(data))
        return target

    # -- Codex rollout -------------------------------------------------------------------
    def codex(self, source: Path, target: Path) -> Path:
        records = [orjson.loads(line) for line in source.read_bytes().splitlines() if line.strip()]
        counts: dict[str, int] = {}

        def once(position: str, limit: int = 1) -> bool:
            counts[position] = counts.get(position, 0) + 1
            return counts[position] <= limit

        for record in records:
            payload = record.get("payload") if isinstance(record.get("payload"), dict) else {}
            kind = (record.get("type"), payload.get("type"))
            if kind == ("event_msg", "user_message") and once("user prompt"):
                payload["message"] = f"{self.take('user prompt')}\n{payload['message']}"
            elif kind == ("response_item", "message") and payload.get("role") in ("user", "assistant"):
                for item in payload.get("content") or []:
                    if item.get("type") == "output_text" and once("assistant text"):
                        item["text"] += f"\nConfigured with:\n{self.take('assistant text')}"
                    elif item.get("type") == "input_text" and not item["text"].startswith(("#", "<")) \
                            and once("user prompt (response item)"):
                        item["text"] += f"\nUse these for the deploy:\n{self.take('user prompt (response item)')}"
            elif kind == ("event_msg", "agent_message") and once("assistant message event"):
                payload["message"] += f"\nConfigured with:\n{self.take('assistant message event')}"
            elif kind == ("response_item", "function_call") and once("command", 2):
                payload["arguments"] = _codex_arguments(payload.get("arguments"), self.take("command"))
            elif kind == ("response_item", "function_call_output") and once("tool output", 2):
                payload["output"] = _codex_output(payload.get("output"), self.take("tool output"))
            elif kind == ("event_msg", "exec_command_end") and once("tool output (exec end)", 2):
                planted = self.take("tool output (exec end)")
                for key in ("aggregated_output", "stdout"):
                    if isinstance(payload.get(key), str):
                        payload[key] += f"\n{planted}"
            elif kind == ("response_item", "custom_tool_call") and once("file written"):
                lines = "".join(f"+{x}\n" for x in self.take("file written").splitlines())
                payload["input"] = str(payload.get("input", "")).replace("*** End Patch", lines + "*** End Patch", 1)
        target.write_bytes(b"\n".join(orjson.dumps(r) for r in records) + b"\n")
        return target


    # -- OpenHands (an exported event list) ------------------------------------------------
    def openhands(self, source: Path, target: Path) -> Path:
        events = orjson.loads(source.read_bytes())
        password = self.factory._rand(14)
        ids: dict[str, str] = {}
        done: set[str] = set()
        for event in events:
            args = event.get("args") if isinstance(event.get("args"), dict) else {}
            kind = event.get("action") or f"observation:{event.get('observation')}"
            if kind == "message" and event.get("source") == "user" and "user prompt" not in done:
                args["content"] = f"{self.take('user prompt')}\n{args.get('content', '')}"
                done.add("user prompt")
            elif kind == "message" and event.get("source") == "agent" and "assistant text" not in done:
                args["content"] = f"{args.get('content', '')}\nConfigured with:\n{self.take('assistant text')}"
                done.add("assistant text")
            elif kind == "run" and "command" not in done:
                args["command"] = f"{args.get('command', '')}\n{self.take('command')}"
                done.add("command")
            elif kind == "observation:run" and "tool output" not in done:
                event["content"] = f"{event.get('content', '')}\n{self.take('tool output')}"
                done.add("tool output")
            elif kind == "observation:edit" and "edit output" not in done:
                event["content"] = f"{event.get('content', '')}\n{self.take('edit output')}"
                done.add("edit output")
            meta = event.get("tool_call_metadata")
            if isinstance(meta, dict) and isinstance(meta.get("tool_call_id"), str):
                # The field issue 12 found stored unredacted: the same id on an action and its observation.
                original = meta["tool_call_id"]
                meta["tool_call_id"] = ids.setdefault(original, f"https://ci:{password}@git.internal/{original}")
        self.planted.setdefault("tool_call_id", []).append(
            Secret("url-password", password, f"https://ci:{password}@git.internal/", position="tool_call_id"))
        target.write_bytes(orjson.dumps(events))
        return target


def _append(content: Any, text: str) -> Any:
    if isinstance(content, str):
        return content + text
    if isinstance(content, list):
        return [*content, {"type": "text", "text": text}]
    return text


def _prepend(content: Any, text: str) -> Any:
    if isinstance(content, str):
        return text + content
    if isinstance(content, list):
        return [{"type": "text", "text": text}, *content]
    return text


def _sync_actions(message: dict[str, Any], extra: str) -> None:
    actions = (message.get("extra") or {}).get("actions")
    if isinstance(actions, list) and actions and isinstance(actions[0], dict) and actions[0].get("command"):
        actions[0]["command"] = f"{actions[0]['command']}\n{extra}"


def _codex_arguments(arguments: Any, planted: str) -> str:
    try:
        args = json.loads(arguments)
    except (TypeError, ValueError):
        return f"{arguments}\n{planted}"
    for key in ("cmd", "command"):
        if isinstance(args.get(key), str):
            args[key] += f"\n{planted}"
        elif isinstance(args.get(key), list) and args[key]:
            args[key][-1] = f"{args[key][-1]}\n{planted}"
    return json.dumps(args)


def _codex_output(output: Any, planted: str) -> Any:
    if isinstance(output, str) and output.startswith("{"):
        try:
            data = json.loads(output)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("output"), str):
            data["output"] += f"\n{planted}"
            return json.dumps(data)
    return f"{output}\n{planted}" if isinstance(output, str) else output


#: format name -> (planter method, a real session of that format under the shared corpus)
SOURCES: dict[str, tuple[Callable[[Planter, Path, Path], Path], str]] = {
    "claude-code": (Planter.claude_code, "claude_code/claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"),
    "mini-swe-agent": (Planter.mini_swe_agent,
                       "mini_swe_agent/swebench_verified_gemini-3-pro/resolved/django__django-16255.traj.json"),
    "codex": (Planter.codex, "codex/codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"),
    "openhands": (Planter.openhands, "openhands/runtime_replay_trajs/basic_gui_mode.json"),
}
