"""Issue 12: passwords and tokens written the ways that once got through -- and text that must stay.

Every form of ``Factory.forms()`` (command-line flags, ``sudo -S``, ``.netrc``, conninfo, prose
in eight languages, a token wrapped over two lines, base64 of a ``.env``) is caught whole in
every context, by the library and by ``skillmill redact``; ordinary text that looks close is
not touched; a prose password too plain to cut out is reported by ``prose_password``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.redact import Redactor, prose_password
from tests.planted import FORM_KINDS, Factory, Secret

CONTEXTS = {
    "as is": lambda line: line,
    "in prose": lambda line: f"Then I ran `{line}` and it worked.",
    "JSON-escaped": lambda line: json.dumps({"command": line}),
    "after non-ASCII text": lambda line: f"設定しました 🎉 ✓\n{line}",
    "after a new line, JSON-escaped": lambda line: json.dumps(f"$ history\n{line}\n"),
    "added by a diff": lambda line: "@@ -1,2 +1,4 @@\n" + "".join(f"+{part}\n" for part in line.split("\n")),
    "removed by a diff": lambda line: "@@ -1,4 +1,2 @@\n" + "".join(f"-{part}\n" for part in line.split("\n")),
}


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor()


def _left(secret: Secret, text: str) -> list[str]:
    return [f for f in secret.fragments() if f in text or json.dumps(f)[1:-1] in text]


@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_every_form_is_redacted_and_named_in_every_context(redactor: Redactor, context: str) -> None:
    wrap = CONTEXTS[context]
    seen: set[str] = set()
    for seed in range(4):
        for secret in Factory(seed).forms():
            text = wrap(secret.line)
            redacted, counts = redactor.redact(text)
            assert not _left(secret, redacted), f"{secret.kind} left {context}: {secret.line[:70]!r} -> {redacted!r}"
            assert secret.kind in counts, f"{secret.line[:60]!r} redacted as {counts}, not {secret.kind}"
            seen.add(secret.kind)
    assert seen == set(FORM_KINDS)


def test_forms_read_well_once_redacted(redactor: Redactor) -> None:
    redacted = {redactor.redact(s.line)[0] for s in Factory(7).forms()}
    for line in ["mysql -u root -p'[REDACTED:password]' billing",
                 "mysql -h db.internal -u root -p[REDACTED:password] billing",
                 "echo '[REDACTED:password]' | sudo -S systemctl restart nginx",
                 "machine api.internal login deploy password [REDACTED:password]",
                 'psql "host=db.internal user=app password=[REDACTED:password] dbname=prod"',
                 "export GH_TOKEN=[REDACTED:github-token]",  # the two lines were one token
                 "data:\n  .env: [REDACTED:base64-secret]\ntype: Opaque",
                 "the staging password is [REDACTED:password]", "пароль от базы: [REDACTED:password]"]:
        assert line in redacted, line


#: Close to a form, but no secret: each must come out unchanged.
ORDINARY = [
    "docker run -p 8080:80 nginx", "pytest -p no:cacheprovider -q", "mysql -u root -p billing", "mysql -uroot -p",
    "ssh -p 22 deploy@10.0.4.12", "scp -P 2222 a b:", "docker run -u 1000:1000 img", "git push -u origin main",
    "curl -u deploy https://ci.internal", 'curl -u "$CI_USER:$CI_TOKEN" https://ci.internal',
    "echo $SUDO_PASSWORD | sudo -S true", "docker login -u ci-bot --password-stdin registry.internal",
    "sshpass -f ~/.deploy-pw ssh -p 22 deploy@host", "password=None", 'password=""', "password = ''",
    "password=os.environ['DB_PASSWORD']", "password: str", "password: Optional[str] = None",
    "A password is required.", "The password is incorrect, try again.", "the password is hashed with bcrypt",
    "if password is None:", "Passwords must be at least 8 characters.", "Passwort ist erforderlich",
    "le mot de passe est incorrect", "PGPASSWORD=$DB_PASSWORD psql", "export PGPASSWORD=\"${PGPASSWORD}\"",
    "machine api.internal login deploy", "default login anonymous", "the pw is 8 chars", "All 12 tests passed",
    'echo "aGVsbG8gd29ybGQsIHRoaXMgaXMgcGxhaW4gdGV4dA==" | base64 -d',
    "sha=a94a8fe5ccb19ba61c4c0873d391e987982fbbd3 id=0b9c2f46-31a8-4a3c-9a0e-5d1f4e0c2b7a",
    "self.assertEqual(response.status_code, 200)\n        ghp_prefix = 'ghp_'",
]


def test_ordinary_text_close_to_a_form_is_left_alone(redactor: Redactor) -> None:
    for line in ORDINARY:
        assert redactor.find(line) == [], line
        assert redactor.find(json.dumps({"c": line})) == [], line


def test_a_whole_token_at_a_line_end_is_not_joined_with_the_next_word(redactor: Redactor) -> None:
    token = next(s.value for s in Factory(2).secrets() if s.kind == "github-token")
    redacted = redactor.redact(f"GH_TOKEN={token}\nexport PATH")[0]
    assert redacted == "GH_TOKEN=[REDACTED:github-token]\nexport PATH"


def test_prose_passwords_too_plain_to_redact_are_reported_for_review(redactor: Redactor) -> None:
    plain = ["the staging password is tulip", "пароль: тюльпан", "the password is 'marigold'",
             "das Kennwort lautet Sonnenblume"]
    for text in plain:
        assert redactor.find(text) == [], text  # too ambiguous to cut out
        match = prose_password(text)
        assert match is not None and match.group("value").strip("'") in text, text
    for secret in Factory(3).forms():
        if any(w in secret.line for w in ("staging password", "пароль", "Passwort", "パスワード")):
            match = prose_password(secret.line)
            assert match is not None and match.group("value").rstrip(".") == secret.value
    for text in ["A password is required.", "password: str", "the password is [REDACTED:password]",
                 "Your password is ********", "The test passed", "password was changed yesterday"]:
        assert prose_password(text) is None, text


def test_skillmill_redact_finds_every_form_and_prints_none(tmp_path: Path) -> None:
    secrets = Factory(5).forms()
    log = tmp_path / "deploy.log"
    log.write_text("\n".join(s.line for s in secrets) + "\n", encoding="utf-8")
    session = tmp_path / "session.jsonl"
    session.write_text("\n".join(json.dumps({"type": "tool_result", "content": s.line}) for s in secrets) + "\n",
                       encoding="utf-8")
    for path in (log, session):
        report = CliRunner().invoke(main, ["redact", "--json", str(path)], catch_exceptions=False)
        assert report.exit_code == 1
        assert not [s.kind for s in secrets if _left(s, report.output)]
        counts = json.loads(report.output)["counts"]
        assert counts == {"password": 22, "github-token": 1, "base64-secret": 2}, counts
        redacted = CliRunner().invoke(main, ["redact", "--redacted", str(path)], catch_exceptions=False)
        assert redacted.exit_code == 0 and redacted.output.count("[REDACTED:") == 25
        assert not [s.line for s in secrets if _left(s, redacted.output)]
