"""Issue 23, second round: what a blind attacker still found in the state DB and SKILL.md -- each as a class.

``Factory.survivors2()`` holds the attacker's values, ``Factory.variants2()`` the same classes
written further for the fix; each is caught whole and named in every context, text close to them
stays as it is, and the redacted lines still read.
"""

from __future__ import annotations

import base64
import json
import string

import pytest

from pipeline.redact import Redactor
from tests.planted import ALNUM, HEX, ROUND2_KINDS, URLSAFE, Factory, Secret
from tests.test_redact_forms import CONTEXTS


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor()


def _left(secret: Secret, text: str) -> list[str]:
    return [f for f in secret.fragments() if f in text or json.dumps(f)[1:-1] in text]


@pytest.mark.parametrize("group", ["survivors2", "variants2"])
@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_every_second_round_value_is_redacted_whole_and_named_in_every_context(redactor: Redactor, group: str,
                                                                                 context: str) -> None:
    wrap = CONTEXTS[context]
    failures = []
    for seed in range(6):
        for secret in getattr(Factory(seed), group)():
            redacted, counts = redactor.redact(wrap(secret.line))
            if _left(secret, redacted) or secret.kind not in counts:
                failures.append(f"{secret.kind}: {secret.line[:70]!r} -> {redacted[:140]!r} {counts}")
    assert not failures, "\n".join(failures)


def test_every_second_round_kind_is_planted() -> None:
    assert {s.kind for s in Factory(1).survivors2() + Factory(1).variants2()} == set(ROUND2_KINDS)


def test_second_round_values_read_well_once_redacted(redactor: Redactor) -> None:
    redacted = {redactor.redact(s.line)[0] for s in Factory(9).survivors2() + Factory(9).variants2()}
    for line in ["DJANGO_SECRET_KEY=[REDACTED:secret]", "SECRET_KEY = '[REDACTED:secret]'",
                 "app.config['SECRET_KEY'] = '[REDACTED:secret]'", 'settings["api_key"] = "[REDACTED:api-key]"',
                 'os.environ["X_TOKEN"] = "[REDACTED:token]"',
                 "creds = {'user': 'deploy', 'password': '[REDACTED:password]'}",
                 'os.environ.setdefault("DJANGO_SECRET_KEY", "[REDACTED:secret]")',
                 "  secret_key: [REDACTED:secret]  # rotated yearly"]:
        assert line in redacted, line


@pytest.mark.parametrize("text, expected", [
    ("curl 'https://api.internal/v1/x?api_key=Zk3m)N1pL0vR7tY2wX5q8&page=2'",
     "curl 'https://api.internal/v1/x?api_key=[REDACTED:api-key]&page=2'"),
    ("client = Client(token=tok2024!abc$defgh, retries=3)", "client = Client(token=[REDACTED:token], retries=3)"),
    ("{token: tok2024!abc$defgh}", "{token: [REDACTED:token]}"),
    ("(export API_TOKEN=Zk3m)N1pL0vR7tY2wX5q8)", "(export API_TOKEN=[REDACTED:token])"),
    ("API_TOKEN=Zk3m)N1pL0vR7tY2wX5q8) make", "API_TOKEN=[REDACTED:token] make"),
])
def test_a_bare_value_ends_where_its_url_call_or_brackets_end_it(redactor: Redactor, text: str, expected: str) -> None:
    assert redactor.redact(text)[0] == expected


#: Close to a second-round form, but no secret: each must come out unchanged.
ORDINARY = [
    "app.config['SECRET_KEY'] = os.environ['SECRET_KEY']", 'settings["api_key"] = get_api_key()',
    'os.environ["X_TOKEN"] = token', 'SECRET_KEY = os.getenv("DJANGO_SECRET_KEY", "")',
    "password = get_password(user),", "api_key: ${{ secrets.API_KEY }}", "DJANGO_SECRET_KEY=$(openssl rand -base64 32)",
    "export API_TOKEN=$API_TOKEN_PROD", "SECRET_KEY=%DJANGO_SECRET%", 'os.environ.setdefault("SECRET_KEY", "dev")',
    'os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mysite.settings")', 'pairs = [("token", "refresh_token_v2")]',
    "if settings['api_key'] == 'test1234':", "token: # filled in by CI", "token: -1", "api_key=-- see below",
    "password=self.password)", "secret_key = settings.SECRET_KEY,", "auth_token = request.headers.get(",
    "- Google OAuth: `ya29.[alphanumeric-_]{100,}`", "SECRET_KEY = env('SECRET_KEY')",
]


def test_ordinary_text_close_to_a_second_round_form_is_left_alone(redactor: Redactor) -> None:
    for line in ORDINARY:
        assert redactor.find(line) == [], line
        assert redactor.find(json.dumps({"c": line})) == [], line


#: Markup that says "this is the password" (Maven settings.xml, Java properties as XML, .NET appSettings, Android
#: resources, plists), and tools that store the secret given on their command line -- both as attacker's forms
#: and variants.
STORED = [
    ("<password>S3cr3tPa55w0rd!</password>", "password"),
    ("<server><id>x</id><username>u</username><password>hunter2hunter2</password></server>", "password"),
    ("<ns2:apiKey>Zk3mN1pL0vR7tY2wX5q8</ns2:apiKey>", "api-key"),
    ("<passphrase><![CDATA[correct horse battery]]></passphrase>", "password"),
    ('<entry key="db.password">Zk3m)N1pL0v</entry>', "password"),
    ('<add key="ClearTextPassword" value="Zk3mN1pL0vR7"/>', "password"),
    ('<property name="db.password" value="hunter2hunter2"/>', "password"),
    ("<key>API_TOKEN</key>\n<string>Zk3mN1pL0vR7tY2wX5q8</string>", "token"),
    ('{"xml": "<settings>\\n  <password>hunter2hunter2</password>\\n</settings>"}', "password"),
    ("gh secret set API_KEY --body Zk3mN1pL0vR7tY2wX5q8ab", "secret"),
    ('gh secret set API_KEY -b"Zk3mN1pL0vR7tY2wX5q8ab" --repo a/b', "secret"),
    ("gh secret set DEPLOY_KEY --env prod --body=hunter2hunter2", "secret"),
    ("kubectl create secret generic db --from-literal=password=S3cr3tPa55w0rd! -n x", "secret"),
    ("kubectl create secret generic api --from-literal api_key=Zk3mN1pL0vR7tY2wX5q8", "secret"),
    ("aws configure set aws_secret_access_key Zk3mN1pL0vR7tY2wX5q8ab/cd+ef", "aws-secret-key"),
    ("aws configure set default.aws_session_token Zk3mN1pL0vR7tY2wX5q8abcdef", "token"),
    ("security add-generic-password -a me -s svc -w hunter2hunter2", "secret"),
    ("npm config set //registry.npmjs.org/:_authToken Zk3mN1pL0vR7tY2wX5q8abcdefg", "token"),
]


@pytest.mark.parametrize("text, kind", STORED)
def test_a_secret_markup_or_a_tool_is_told_to_store_is_redacted(redactor: Redactor, text: str, kind: str) -> None:
    redacted, counts = redactor.redact(text)
    assert kind in counts, (text, redacted, counts)
    for word in ("S3cr3tPa55w0rd", "hunter2hunter2", "Zk3m", "correct horse"):
        assert word not in redacted, (text, redacted)


@pytest.mark.parametrize("text", [
    "<password>${env.PW}</password>", "<password>***</password>", "<passwordPolicy>strict</passwordPolicy>",
    "<token-count>12</token-count>", "<key>name</key><string>MyApp</string>", "<password><![CDATA[]]></password>",
    "<credentials><password>{token}</password></credentials>", "gh secret set API_KEY < key.txt",
    'gh secret set X --body "$VALUE"', "gh secret list", "kubectl get secret db -o yaml",
    "kubectl create secret generic db --from-file=password=./pw.txt", "aws configure set region eu-west-1",
    "aws configure get aws_secret_access_key", "my secret set of tests -b 3", "security find-generic-password -s svc",
    "npm config get //registry.npmjs.org/:_authToken",
])
def test_markup_and_tool_lines_without_a_secret_are_left_alone(redactor: Redactor, text: str) -> None:
    assert redactor.find(text) == [], text


# -- issue 23, third round: a blind attacker's findings, each as a class ------------------------
def _b64url(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")


def _jwts() -> list[str]:
    """JWTs whose header holds what once made only a part of them redacted: a random ``kid``
    (Kubernetes service-account tokens), blanks, no ``typ``; payloads that are not ``eyJ``."""
    factory = Factory(31)
    r = factory._rand
    payload = _b64url({"iss": "https://kubernetes.default.svc", "sub": "system:serviceaccount:ci:deploy",
                       "exp": 1767225600, "kubernetes.io": {"namespace": "ci"}})
    return [
        ".".join([_b64url({"alg": "RS256", "kid": r(43, URLSAFE)}), payload, r(342, URLSAFE)]),
        ".".join([_b64url({"kid": r(40, HEX), "alg": "RS256"}), payload, r(342, URLSAFE)]),
        ".".join([_b64url({"alg": "ES256", "typ": "JWT", "kid": r(22, URLSAFE)}), payload, r(86, URLSAFE)]),
        ".".join([base64.urlsafe_b64encode(b'{\n  "alg": "HS256",\n  "kid": "' + r(24).encode() + b'"\n}')
                  .decode().rstrip("="), payload, r(43, URLSAFE)]),
        ".".join([_b64url({"alg": "HS256"}), base64.urlsafe_b64encode(r(30).encode()).decode().rstrip("="),
                  r(43, URLSAFE)]),
        ".".join([_b64url({"alg": "none", "kid": r(43, URLSAFE)}), payload, ""]),
    ]


@pytest.mark.parametrize("jwt", _jwts())
@pytest.mark.parametrize("line", ["{}", "token: {}", "Authorization: Bearer {}", "kubectl --token={} get pods",
                                  '{{"token": "{}"}}', "KUBE_TOKEN={}"])
def test_a_jwt_is_redacted_whole_whatever_its_header_holds(redactor: Redactor, jwt: str, line: str) -> None:
    text = line.format(jwt)
    for context in CONTEXTS.values():
        redacted, counts = redactor.redact(context(text))
        assert counts.get("jwt") == 1, (text[:80], redacted[:200], counts)
        assert not [part for part in jwt.split(".") if part and part in redacted], redacted[:200]


def _session_token(length: int) -> str:
    return "IQoJb3JpZ2luX2VjE" + Factory(length)._rand(length - 19, ALNUM + "+/") + "=="


@pytest.mark.parametrize("length", [300, 700, 1400, 5000])
@pytest.mark.parametrize("line, kind", [
    ("aws_session_token = {}", "token"), ("AWS_SESSION_TOKEN={}", "token"), ('"SessionToken": "{}"', "token"),
    ('{{"Credentials": {{"SessionToken": "{}", "Expiration": "2026-12-03T15:00:00Z"}}}}', "token"),
    ("sessionToken: {}", "token"), ("session_token='{}'", "token"), ("SESSIONTOKEN={}", "token"),
    ("<SessionToken>{}</SessionToken>", "token"), ("aws sts ... --session-token {} --region x", "token"),
    ("X-Amz-Security-Token: {}", "token"), ("DB_PASSWORD={}", "password"),
    ("the session token is {} for now", "token"), ("openssl enc -pass pass:{} -in x", "password"),
    ('psql "host=db user=app password={}"', "password"), ("echo {} | docker login --password-stdin", "password"),
])
def test_a_value_is_redacted_whole_however_long(redactor: Redactor, length: int, line: str, kind: str) -> None:
    token = _session_token(length)
    for context in CONTEXTS.values():
        redacted, counts = redactor.redact(context(line.format(token)))
        assert kind in counts, (line, redacted[:200], counts)
        assert token[-12:] not in redacted and token[len(token) // 2:][:12] not in redacted, redacted[:300]


@pytest.mark.parametrize("line, kind", [
    ("VAULT_TOKEN=s.{r24}", "token"), ("export VAULT_TOKEN=s.{r24}", "token"), ("X_TOKEN=hvs.{r24}", "token"),
    ("X_TOKEN=hvs.{l24}", "token"), ("VAULT_TOKEN=b.{l24}", "token"), ("client_secret=q7k9t.{r30}", "secret"),
    ('client_secret: "q7k9t.{r30}"', "secret"), ("token = 's.{r24}'", "token"), ("PASETO_TOKEN=v2.local.{r40}", "token"),
    ('{{"client_secret": "a1b2c.{r30}"}}', "secret"), ("api_key=k3y.{r24}", "api-key"),
])
def test_a_value_under_a_secrets_name_is_not_refused_for_a_dot(redactor: Redactor, line: str, kind: str) -> None:
    for seed in range(8):
        r = Factory(seed)._rand
        values = {"r24": r(24), "l24": r(24, string.ascii_lowercase + string.digits), "r30": r(30), "r40": r(40, URLSAFE)}
        text = line.format(**values)
        for context in CONTEXTS.values():
            redacted, counts = redactor.redact(context(text))
            assert kind in counts, (text, redacted, counts)
            assert not [v for v in values.values() if v[4:16] in redacted], (text, redacted)


@pytest.mark.parametrize("line", [
    "token=self.token", "secret=config.secret_key", "password=args.password", "password=self._password)",
    "api_key: config.apiKeyV2", "token = ctx.obj.auth_token", "secret = settings.AWS_S3_SECRET_KEY",
    "f(SECRET_KEY=settings.SECRET_KEY_V2)", "API_TOKEN=docs.internal", "password = self.db.password2",
    "token: this.props.oAuth2Token", "key = os.environ.API_KEY", "client_secret=creds.client_secret",
    "password=opts.p12Password", "token=client.s3Client2.token",
])
def test_an_attribute_reference_under_a_secrets_name_stays(redactor: Redactor, line: str) -> None:
    assert redactor.find(line) == [], line
    assert redactor.find(json.dumps({"c": line})) == [], line


def _session_ids(seed: int) -> dict[str, str]:
    r = Factory(seed)._rand
    lower = string.ascii_lowercase + string.digits
    return {"PHPSESSID": r(26, lower), "JSESSIONID": r(32, HEX.upper()) + ".node1",
            "connect.sid": f"s%3A{r(32, URLSAFE)}.{r(43, ALNUM)}%2B{r(6)}", "laravel_session": f"eyJpdiI6{r(180)}%3D",
            "_session_id": r(32, HEX), "ASP.NET_SessionId": r(24, lower), "sessionid": r(32, lower),
            "_myapp_session": f"{r(120, ALNUM)}--{r(40, HEX)}", "ASPSESSIONIDQSCTRDAB": r(24, string.ascii_uppercase + string.digits),
            "ci_session": r(40, lower), "express.sid": f"s%3A{r(32, URLSAFE)}.{r(43, ALNUM)}"}


@pytest.mark.parametrize("line", ["{name}={value}", "Cookie: {name}={value}", "Cookie: lang=en; {name}={value}; theme=dark",
                                  "Set-Cookie: {name}={value}; Path=/; HttpOnly; Secure",
                                  "curl -b '{name}={value}' https://app.internal/admin",
                                  'curl --cookie "{name}={value}" https://app.internal/',
                                  "curl -H 'Cookie: {name}={value}' https://app.internal/", "export {name}={value}",
                                  "document.cookie = '{name}={value}'"])
def test_a_session_cookie_is_redacted_by_its_name(redactor: Redactor, line: str) -> None:
    for seed in range(3):
        for name, value in _session_ids(seed).items():
            text = line.format(name=name, value=value)
            for context in CONTEXTS.values():
                redacted, counts = redactor.redact(context(text))
                assert "session-cookie" in counts, (text, redacted, counts)
                assert value[:12] not in redacted and value[-12:] not in redacted, (text, redacted)


@pytest.mark.parametrize("line", [
    "tmux_session=work-2024-06-01-deploy", "session_id=5c0375b4-57a5-4f26-b12d-d022ee4e51b7",
    '"sessionId": "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"', "SESSION_ENGINE=django.contrib.sessions.backends.db",
    "sessionid=None", "PHPSESSID=deleted", "laravel_session=/var/lib/php/sessions2024",
    "Set-Cookie: sessionid=; expires=Thu, 01 Jan 1970 00:00:00 GMT", "the session id is in the cookie jar",
    "consider the side effects: sid=S-1-5-21", "session.save_path=/var/lib/php/sessions",
])
def test_session_look_alikes_stay(redactor: Redactor, line: str) -> None:
    assert redactor.find(line) == [], line
    assert redactor.find(json.dumps({"c": line})) == [], line


@pytest.mark.parametrize("line", ["TF_VAR_db_password={v}", "export TF_VAR_admin_password='{v}'", "PGPASS={v}",
                                  "PGPASSWORD={v}", "db_pw={v}", "DB_PW={v}", "MYSQL_PWD={v}", "dbPw = '{v}'",
                                  "ADMIN_PASS={v}", '{{"db_pw": "{v}"}}'])
def test_short_password_words_and_prefixed_names_name_a_password(redactor: Redactor, line: str) -> None:
    value = Factory(3)._rand(12)
    for context in CONTEXTS.values():
        redacted, counts = redactor.redact(context(line.format(v=value)))
        assert "password" in counts and value not in redacted, (line, redacted, counts)


@pytest.mark.parametrize("line", ["PWD=/home/x", "PWD=/home/deploy/build-2024", "OLDPWD=/srv/app/release7",
                                  "pwd_dir=/tmp/x", "TF_VAR_region=eu-west-1", "PGPASSFILE=/home/x/.pgpass"])
def test_working_folders_and_other_names_stay(redactor: Redactor, line: str) -> None:
    assert redactor.find(line) == [], line
