"""Issue 23: credentials that survived -- and the general rules that catch them now.

Every value of ``Factory.survivors()`` (the attacker's planted values that stayed in the state
DB) and ``Factory.variants()`` (the same forms beyond the issue's list: other CLIs' password
flags, other providers' tokens) is caught whole and named in every context; text close to them
stays as it is; gitleaks' published rules are read from their data file as gitleaks wrote them;
a token at a line's end is joined with the next line only when that line goes on with a token.
"""

from __future__ import annotations

import json

import pytest

from pipeline.redact import Redactor
from tests.planted import ISSUE23_KINDS, Factory, Secret
from tests.test_redact_forms import CONTEXTS


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor()


def _left(secret: Secret, text: str) -> list[str]:
    return [f for f in secret.fragments() if f in text or json.dumps(f)[1:-1] in text]


@pytest.mark.parametrize("group", ["survivors", "variants"])
@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_every_issue_23_value_is_redacted_and_named_in_every_context(redactor: Redactor, group: str,
                                                                      context: str) -> None:
    wrap = CONTEXTS[context]
    failures = []
    for seed in range(4):
        for secret in getattr(Factory(seed), group)():
            redacted, counts = redactor.redact(wrap(secret.line))
            if _left(secret, redacted) or secret.kind not in counts:
                failures.append(f"{secret.kind}: {secret.line[:70]!r} -> {redacted[:120]!r} {counts}")
    assert not failures, "\n".join(failures)


def test_every_issue_23_kind_is_planted() -> None:
    kinds = {s.kind for s in Factory(1).survivors() + Factory(1).variants()}
    assert kinds == set(ISSUE23_KINDS)
    assert {"vault-service-token", "digitalocean-pat", "shopify-access-token", "atlassian-api-token",
            "age-secret-key"} <= kinds  # named by gitleaks' rule ids: its rules found them


def test_issue_23_values_read_well_once_redacted(redactor: Redactor) -> None:
    redacted = {redactor.redact(s.line)[0] for s in Factory(9).survivors() + Factory(9).variants()}
    for line in ["redis-cli -h cache.internal -p 6379 -a [REDACTED:password] ping",
                 "echo [REDACTED:password] | docker login -u ci-bot --password-stdin registry.internal:5000",
                 "smbclient //fs.internal/share -U deploy%[REDACTED:password] -c 'ls'",
                 "htpasswd -b -c /etc/nginx/.htpasswd admin [REDACTED:password]",
                 "aws configure set aws_secret_access_key [REDACTED:aws-secret-key]",
                 "export REDIS_URL=redis://:[REDACTED:url-password]@cache.internal:6379/0",
                 "doctl auth init -t [REDACTED:digitalocean-pat]",
                 "7z a -p[REDACTED:password] -mhe=on backup.7z data/",
                 "lftp -u deploy,[REDACTED:password] sftp://files.internal"]:
        assert line in redacted, line


#: Close to a credential position, but no secret: each must come out unchanged.
ORDINARY = [
    "docker run -p 80:80 nginx", "docker run -p 127.0.0.1:8080:80 -u app:app img", "python -W error -m pytest",
    "grep -a -n pattern file.bin", "wc -w README.md", "pytest -p no:cacheprovider -q", "ssh -p 2222 deploy@host",
    "mkdir -p build/out", "git push -u origin main", "docker run -u 1000:1000 img", "ps -u root -o pid",
    "redis-cli -p 6379 ping", "redis-cli -a $REDIS_PASSWORD ping", 'curl -u "$CI_USER:$CI_TOKEN" https://ci.internal',
    "ldapsearch -x -W -D cn=admin,dc=acme,dc=io", "zip -r out.zip dir", "unzip -p a.zip file", "7z x backup.7z",
    "openssl pkcs12 -export -in c.pem -out c.p12 -passout env:P12_PASSWORD",
    "openssl rsa -in key.pem -passin file:pass.txt", "ssh-keygen -t ed25519 -N '' -f key",
    "restic backup --password-file ~/.restic-pw /srv", "gpg --batch --passphrase-fd 0 -d f.gpg",
    "echo $DOCKER_PASSWORD | docker login -u ci --password-stdin registry.internal:5000",
    "htpasswd -B -c /etc/nginx/.htpasswd admin",
    "aws configure set region eu-west-1", "npm config set registry https://registry.npmjs.org/",
    "vault login -method=oidc", "mysql --password billing", "sort --key=2 -t, data.csv",
    "codemie-gemini -m gemini-2.5-flash --api-key key 'optimize performance'", "--api-key <key>  # Override API key",
    "Original token count: 1356", "the key is in the vault", "cache key 5d41402abc4b2a76b9719d911017c592",
    "Cookie: theme=dark; lang=en-GB", "https://x.test/a?sig=abcdefghijklmnopqrstuvwxyz123",
    "sha=a94a8fe5ccb19ba61c4c0873d391e987982fbbd3 id=0b9c2f46-31a8-4a3c-9a0e-5d1f4e0c2b7a",
    "export PATH=$HOME/.local/bin:$PATH", "kubectl --token $K8S_TOKEN get pods", "--token-limit 4096 --max-tokens 100",
]


def test_ordinary_text_close_to_a_credential_position_is_left_alone(redactor: Redactor) -> None:
    for line in ORDINARY:
        assert redactor.find(line) == [], line
        assert redactor.find(json.dumps({"c": line})) == [], line


def test_certificate_and_signature_bodies_are_not_taken_for_key_lines(redactor: Redactor) -> None:
    factory = Factory(4)
    body = "\n".join(factory._rand(64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
                     for _ in range(4))
    for text in (f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----",
                 f"-----BEGIN PGP SIGNATURE-----\n\n{body}\n=abcd\n-----END PGP SIGNATURE-----"):
        assert redactor.find(text) == [], text[:40]
    assert redactor.redact(f"$ tail -n 4 key.pem\n{body}")[0] == "$ tail -n 4 key.pem\n[REDACTED:private-key]"


# -- gitleaks' rules, vendored as data -------------------------------------------------------------
def test_gitleaks_rules_are_read_from_the_file_gitleaks_wrote_with_its_license() -> None:
    from pipeline.redact import vendored

    data = vendored.DATA.read_text(encoding="utf-8")
    assert data.startswith("# This file has been auto-generated") and 'title = "gitleaks config"' in data
    assert "MIT License" in (vendored.DATA.parent / "GITLEAKS-LICENSE").read_text()
    taken = {rule.kind for rule in vendored.token_rules()}
    assert {"shopify-access-token", "digitalocean-pat", "vault-service-token", "age-secret-key",
            "atlassian-api-token", "linear-api-key", "postman-api-token"} <= taken
    assert not taken & set(vendored.SKIPPED)
    assert "generic-api-key" not in taken and "discord-client-secret" not in taken  # by a name: ours


def test_go_regex_syntax_is_rewritten_for_python() -> None:
    import re

    from pipeline.redact import vendored

    assert vendored.python_regex(r"lin_api_(?i)[a-z0-9]{4}") == r"lin_api_(?i:[a-z0-9]{4})"
    assert re.fullmatch(vendored.python_regex(r"lin_api_(?i)[a-z0-9]{4}"), "lin_api_AbC1")
    assert not re.fullmatch(vendored.python_regex(r"lin_api_(?i)[a-z0-9]{4}"), "LIN_API_abc1")
    # (?i) in the middle of a group reaches the group's other alternatives, and no further
    pattern = re.compile(vendored.python_regex(r"(?:a(?i)b|c)d"))
    assert pattern.fullmatch("aBd") and pattern.fullmatch("Cd") and not pattern.fullmatch("aBD")
    assert vendored.python_regex(r"x\z") == r"x\Z"
    assert re.fullmatch(vendored.python_regex(r"[[a]+"), "[a[")


# -- issue 23 section 8: the wrapped-token rule ate the first word of the next line ------------------
@pytest.mark.parametrize("next_line", ["python3 run.py", "ls2 -la", "  cd2 build", "export2 PATH", "    h2o is water",
                                       "+python3 -m pytest"])
def test_a_whole_token_at_a_line_end_keeps_the_next_lines_first_word(redactor: Redactor, next_line: str) -> None:
    secrets = {s.kind: s.value for s in Factory(2).secrets()}
    for kind in ("openai-api-key", "github-token", "slack-token", "stripe-key"):
        redacted = redactor.redact(f"KEY={secrets[kind]}\n{next_line}")[0]
        assert redacted == f"KEY=[REDACTED:{kind}]\n{next_line}", (kind, redacted)


def test_a_token_wrapped_after_a_whole_looking_first_part_is_still_joined(redactor: Redactor) -> None:
    key = next(s.value for s in Factory(3).secrets() if s.kind == "openai-api-key" and s.value.startswith("sk-proj"))
    head, tail = key[:60], key[60:]  # the first part alone already looks like a whole sk- key
    for text in (f"export OPENAI_API_KEY={head}\n    {tail}", json.dumps(f"export OPENAI_API_KEY={head}\n{tail}")):
        redacted = redactor.redact(text)[0]
        assert head not in redacted and tail not in redacted and "[REDACTED:openai-api-key]" in redacted, redacted


def test_key_lines_opening_with_a_plus_are_taken_whole_and_the_next_command_stays(redactor: Redactor) -> None:
    """Found by the flow test: a body line starting with '+' (base64) was read as a diff's added
    line one character short, so the block ended there and the key's last lines were stored."""
    factory = Factory(6)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    lines = [factory._rand(64, alphabet), "+" + factory._rand(63, alphabet), factory._rand(64, alphabet)]
    text = "$ sed -n 3,5p id_rsa\n" + "\n".join(lines) + "\nmysql -h db.internal billing"
    assert redactor.redact(text)[0] == "$ sed -n 3,5p id_rsa\n[REDACTED:private-key]\nmysql -h db.internal billing"
