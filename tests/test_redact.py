"""The detectors: every kind caught in every syntax, ordinary code left alone, config honoured."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline import config
from pipeline.errors import UsageError
from pipeline.redact import PLACEHOLDER_RE, Redactor, current
from pipeline.redact.rules import View
from pipeline.redact.scan import mask
from tests.planted import B64, KINDS, Factory

CONTEXTS = {
    "as is": lambda line: line,
    "in prose": lambda line: f"Then I ran `{line}` and it worked.",
    "JSON-escaped": lambda line: json.dumps({"command": line}),
    "after non-ASCII text": lambda line: f"設定しました 🎉 ✓\n{line}",
}


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor()


@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_every_kind_is_caught_whole_and_named_in_every_context(redactor: Redactor, context: str) -> None:
    wrap = CONTEXTS[context]
    seen: set[str] = set()
    for seed in range(5):
        for secret in Factory(seed).secrets():
            text = wrap(secret.line)
            value = secret.value if secret.value in text else json.dumps(secret.value)[1:-1]
            start = text.index(value)
            covering = [f for f in redactor.find(text) if f.start <= start and f.end >= start + len(value)]
            assert covering, f"{secret.kind} not found {context}: {secret.line[:60]}..."
            assert covering[0].kind == secret.kind
            seen.add(secret.kind)
    assert seen == set(KINDS)


def test_redacted_text_stays_readable_and_redacting_again_changes_nothing(redactor: Redactor) -> None:
    secrets = Factory(11).secrets()
    text = "\n".join(s.line for s in secrets)
    redacted, counts = redactor.redact(text)
    assert sum(counts.values()) == len(secrets)
    assert not any(s.value in redacted for s in secrets)
    assert "export OPENAI_API_KEY=[REDACTED:openai-api-key]" in redacted
    assert "postgres://app_user:[REDACTED:url-password]@db.internal:5432/prod" in redacted
    assert "https://hooks.slack.com/services/[REDACTED:slack-webhook]" in redacted
    assert 'curl -H "Authorization: Bearer [REDACTED:bearer-token]" https://api.internal/v1/jobs' in redacted
    assert len(PLACEHOLDER_RE.findall(redacted)) == len(secrets)
    assert redactor.redact(redacted) == (redacted, {})


def _corpus_texts(corpus: Path) -> list[tuple[Path, str]]:
    return [(p, p.read_text(encoding="utf-8", errors="replace")) for p in sorted(corpus.rglob("*"))
            if p.is_file() and p.suffix in (".json", ".jsonl", ".md", ".traj")]


#: Ordinary values that look random but are not secrets.
LOOKALIKES = {
    "uuid": re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"),
    "git sha / hex digest": re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{40}(?:[0-9a-f]{24})?(?![0-9A-Za-z])"),
    "base64 blob": re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{100,}={0,2}"),
}


_SECRET_NAME_BEFORE = re.compile(r"(?i)(key|token|secret|passw|auth)[^\n]{0,12}$")


def test_hashes_uuids_shas_and_base64_in_the_real_corpus_are_left_alone(redactor: Redactor, corpus: Path) -> None:
    """Unless a secret's name is right before it (``api_key = '<40 hex>'`` is a key, and redacted)."""
    counted = dict.fromkeys(LOOKALIKES, 0)
    for path, text in _corpus_texts(corpus):
        spans = [(f.start, f.end, f.kind) for f in redactor.find(text)]
        for name, pattern in LOOKALIKES.items():
            for match in pattern.finditer(text):
                if _SECRET_NAME_BEFORE.search(text, max(0, match.start() - 40), match.start()):
                    continue
                counted[name] += 1
                hit = [k for s, e, k in spans if s < match.end() and match.start() < e]
                assert not hit, f"{name} redacted as {hit} in {path.name}: {text[match.start():match.start() + 16]}..."
    assert all(counted.values()), counted  # each kind of look-alike really occurs in the corpus


def test_lockfile_integrity_hashes_are_left_alone(redactor: Redactor) -> None:
    """The shared corpus has no lockfile: npm, yarn and pnpm syntax with fresh sha512 values."""
    factory = Factory(8)
    lines = []
    for _ in range(200):
        digest = factory._rand(86, B64) + "=="
        lines += [f'      "integrity": "sha512-{digest}",', f"  integrity sha512-{digest}",
                  f"    resolution: {{integrity: sha512-{digest}}}", f'"resolved": "https://registry.npmjs.org/x/-/x-1.0.{len(lines)}.tgz",']
    assert redactor.find("\n".join(lines)) == []


def test_runs_match_a_plain_regex_on_real_text(corpus: Path) -> None:
    reference = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{16,}")
    for text in ["", "a" * 16, "b" * 15, "x " + "c" * 20, "d" * 20 + " e", "é" + "f" * 16 + "ü"]:
        assert View(text).runs() == [m.span() for m in reference.finditer(text)]
    for _, text in _corpus_texts(corpus / "claude_code")[:4]:
        assert View(text).runs() == [m.span() for m in reference.finditer(text)]


def test_names_without_secrets_and_code_references_are_not_redacted(redactor: Redactor) -> None:
    ordinary = [
        "max_tokens=4096", "token = get_token()", "api_key = os.environ['OPENAI_API_KEY']",
        "password=os.getenv('DB_PASSWORD')", "SECRET_KEY = settings.SECRET_KEY", "export TOKEN=$GITHUB_TOKEN",
        "self.client.login(username='testclient', password='password')", "token_type = 'bearer_token'",
        "src/cli/commands/profile/auth.ts:10:export function createLoginCommand()", "primary_key=True",
        "API_KEY=<your-api-key-here>", "password: ${DB_PASSWORD}", "Authorization: Bearer $TOKEN",
        "ssh_key_path = '/home/me/.ssh/id_ed25519'", "commit = 'a94a8fe5ccb19ba61c4c0873d391e987982fbbd3'",
        "git clone git@github.com:acme/billing.git", "https://user@example.com/path", "api_key=sk-...",
    ]
    for line in ordinary:
        assert redactor.find(line) == [], line


def test_secrets_given_as_command_line_flags_are_redacted(redactor: Redactor) -> None:
    flagged = {
        "mysql -u root --password Hunter2Secret9 app": ("Hunter2Secret9", "password"),
        "gh auth login --token abcd1234efgh5678": ("abcd1234efgh5678", "token"),
        "deploy --db-password 'Xk9!vq2Lw' --dry-run": ("Xk9!vq2Lw", "password"),
        "my-cli -api-key Zq8xW3kLp0Vb7nR2 run": ("Zq8xW3kLp0Vb7nR2", "api-key"),
    }
    for line, (value, kind) in flagged.items():
        redacted, counts = redactor.redact(line)
        assert value not in redacted and counts == {kind: 1}, line
    for line in ["the token is abcd1234efgh5678", "run --password-file ./pw.txt", "pytest --tb short",
                 "llm --max-tokens 4096", "git log --key value"]:
        assert redactor.find(line) == [], line


def test_masks_never_show_more_than_a_quarter_of_a_value() -> None:
    for secret in Factory(3).secrets():
        shown = mask(secret.value, secret.kind).split("\u2026")[0]
        assert len(shown) <= max(4, len(secret.value) // 4) if secret.kind != "private-key" else "PRIVATE KEY" in shown
        assert shown not in ("",) or len(secret.value) < 4
        assert secret.value not in mask(secret.value, secret.kind)


def _write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / config.CONFIG_FILE).write_text(text, encoding="utf-8")


def test_extra_patterns_and_the_allow_list_come_from_the_config_file(isolated_home: Path) -> None:
    secrets = {s.kind: s for s in Factory(5).secrets()}
    kept = secrets["github-token"].value
    internal = "itk_" + "Zx81" * 8
    text = f"{secrets['github-token'].line}\n{secrets['stripe-key'].line}\nINTERNAL={internal}"
    assert "itk_" in current().redact(text)[0]  # nothing configured yet
    _write_config(isolated_home, f'[redaction]\nextra_patterns = {{ internal-token = "itk_[A-Za-z0-9]{{32}}" }}\n'
                                 f'allow = ["{kept}"]\n')
    redacted, counts = current().redact(text)  # the config file changed: a new redactor
    assert "[REDACTED:internal-token]" in redacted and internal not in redacted
    assert kept in redacted and counts.get("github-token") is None
    assert secrets["stripe-key"].value not in redacted


def test_a_bad_extra_pattern_is_a_usage_error_with_the_place_to_fix_it(isolated_home: Path) -> None:
    _write_config(isolated_home, '[redaction]\nextra_patterns = { internal-token = "itk_[A-Z" }\n')
    with pytest.raises(UsageError) as error:
        config.load()
    assert "internal-token" in error.value.message and "skillmill.toml" in (error.value.hint or "")
    with pytest.raises(UsageError):
        Redactor({"Bad Kind": "x"})
