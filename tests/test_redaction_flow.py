"""Done-when of issues 4 and 12: secrets planted in real sessions never come out of skillmill.

Fake secrets of every kind (tests/planted.py) go into every position of a real session --
user prompt, command, heredoc, tool output, file written, assistant text, URLs -- which is
then run through ``skillmill run`` exactly as a user would. Afterwards no planted value (nor
a piece of one) may be found in any file under SKILLMILL_HOME read as bytes, in any table of
``skillmill.duckdb`` or ``recall.duckdb``, in any skill file, in the command's output, or in
the text a prompt would hold about the trajectory. Every kind must have been recorded.
Issue 12's forms (``Factory.forms``: command-line flags, ``sudo -S``, ``.netrc``, prose in eight
languages, wrapped tokens, base64; and a URL in OpenHands' ``tool_call_id``) go the same way.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from pipeline import settings
from pipeline.cli import main
from pipeline.index.db import CONFIG
from pipeline.ingest import ingest_file
from pipeline.plugins import registered_formats
from pipeline.trajectory.transcript import transcript
from tests.planted import FORM_KINDS, KINDS, SOURCES, Planter, Secret

pytestmark = pytest.mark.usefixtures("prefect_server")

FORMATS = ("claude-code", "mini-swe-agent", "codex")
FORM_FORMATS = ("claude-code", "mini-swe-agent", "codex", "openhands")


def _plant(fmt: str, corpus: Path, inputs: Path, *, forms: bool = False) -> tuple[Planter, Path]:
    if not any(f.name == fmt for f in registered_formats()):
        pytest.skip(f"the {fmt} format is not registered yet")
    planter = Planter(seed=FORM_FORMATS.index(fmt) + 1 + 10 * forms, forms=forms)
    method, relative = SOURCES[fmt]
    source = corpus / relative
    inputs.mkdir()
    planted = method(planter, source, inputs / source.name)
    report = source.with_name(source.name.replace(".traj.json", ".report.json"))
    if report != source and report.is_file():
        shutil.copy(report, inputs / report.name)  # the SWE-bench label, so the session becomes a skill
    return planter, planted


def _leaks(secrets: list[Secret], text: str, where: str) -> list[str]:
    return [f"{s.kind} planted in {s.position} found in {where}"
            for s in secrets for fragment in s.fragments() if fragment in text]


def _dump(database: Path) -> dict[str, str]:
    """Every table of a DuckDB file, as text."""
    con = duckdb.connect(str(database), read_only=True, config=CONFIG)
    try:
        tables = con.execute("SELECT table_schema, table_name FROM information_schema.tables "
                             "WHERE table_type = 'BASE TABLE'").fetchall()
        return {f"{database.name}:{schema}.{name}":
                "\n".join(map(repr, con.execute(f'SELECT * FROM "{schema}"."{name}"').fetchall()))
                for schema, name in tables}
    finally:
        con.close()


@pytest.mark.parametrize("fmt", FORMATS)
def test_planted_secrets_are_nowhere_after_a_run(fmt: str, corpus: Path, tmp_path: Path) -> None:
    planter, planted_file = _plant(fmt, corpus, tmp_path / "in")
    assert {s.kind for s in planter.secrets()} == set(KINDS)
    _run_and_check(planter, planted_file, tmp_path, KINDS)


@pytest.mark.parametrize("fmt", FORM_FORMATS)
def test_issue_12_forms_are_nowhere_after_a_run(fmt: str, corpus: Path, tmp_path: Path) -> None:
    planter, planted_file = _plant(fmt, corpus, tmp_path / "in", forms=True)
    kinds = (*FORM_KINDS, "url-password") if fmt == "openhands" else FORM_KINDS  # its tool_call_ids
    assert {s.kind for s in planter.secrets()} == set(kinds)
    _run_and_check(planter, planted_file, tmp_path, kinds)


def _run_and_check(planter: Planter, planted_file: Path, tmp_path: Path, kinds: tuple[str, ...]) -> None:
    secrets = planter.secrets()
    library = tmp_path / "skills"

    runner = CliRunner()
    result = runner.invoke(main, ["run", "--json", str(planted_file.parent), "--library", str(library)],
                           catch_exceptions=False)
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert result.exit_code == 0, result.output
    ingest = runner.invoke(main, ["ingest", "--json", str(planted_file)], catch_exceptions=False)

    leaks = _leaks(secrets, result.output + result.stderr, "`skillmill run` output")
    leaks += _leaks(secrets, ingest.output + ingest.stderr, "`skillmill ingest` output")
    home = settings.home()
    files = [p for root in (home, library) for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "skillmill.duckdb" for p in files) and any(p.name == "recall.duckdb" for p in files)
    for path in files:
        leaks += _leaks(secrets, path.read_bytes().decode("utf-8", errors="replace"), str(path))
    tables = {**_dump(settings.state_db_path()), **_dump(settings.recall_index_path())}
    assert {"skillmill.duckdb:main.steps", "skillmill.duckdb:main.redactions", "recall.duckdb:main.skills"} <= set(tables)
    for name, rows in tables.items():
        leaks += _leaks(secrets, rows, f"table {name}")
    _, trajectories = ingest_file(planted_file)
    for trajectory in trajectories:
        leaks += _leaks(secrets, transcript(trajectory), "the prompt transcript")
        leaks += _leaks(secrets, trajectory.model_dump_json(), "the trajectory model")
    assert not leaks, "\n".join(sorted(set(leaks)))

    # Every planted kind was recognised as that kind, and recorded: in the DB and the run summary.
    con = duckdb.connect(str(settings.state_db_path()), read_only=True, config=CONFIG)
    recorded = {kind for (kind,) in con.execute("SELECT DISTINCT kind FROM redactions").fetchall()}
    fields = {field for (field,) in con.execute("SELECT DISTINCT field FROM redactions").fetchall()}
    con.close()
    assert recorded >= set(kinds), sorted(set(kinds) - recorded)
    assert {"text", "command"} <= fields
    assert set(summary["redactions"]["kinds"]) >= set(kinds)
    assert summary["redactions"]["values"] >= len(secrets) // len(planter.planted)
    # ... and the placeholders are where the values were: redacted text still flows into the outputs.
    assert "[REDACTED:" in tables["skillmill.duckdb:main.steps"]
    if summary["written"]:
        assert any("[REDACTED:" in p.read_text() for p in library.rglob("SKILL.md"))
    assert "Redacted:" in result.stdout


@pytest.mark.slow
def test_issue_23_values_are_nowhere_in_the_state_db_indexes_logs_exports_or_the_hooks_answer(
        corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23 (c): the values that once stayed in ``steps.command`` / ``steps.text`` and a manual's
    Environment section, planted into a real session, then every place skillmill writes or prints:
    the state DB, both recall indexes (``recall.duckdb``, ``vectors.sqlite``), the logs, an export,
    and the hook's answer to a prompt that holds them all -- read as raw bytes."""
    pytest.importorskip("model2vec")
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT
    from tests.test_eval_semantic import tiny_static_model

    monkeypatch.setenv("SKILLMILL_EMBEDDER", f"static:{tiny_static_model(tmp_path / 'model')}")
    planter = Planter(seed=23, issue23=True)
    method, relative = SOURCES["mini-swe-agent"]  # a resolved SWE-bench run: it becomes a skill
    source = corpus / relative
    (tmp_path / "in").mkdir()
    planted_file = method(planter, source, tmp_path / "in" / source.name)
    shutil.copy(source.with_name(source.name.replace(".traj.json", ".report.json")), tmp_path / "in")
    secrets = planter.secrets()
    library, project = tmp_path / "skills", tmp_path / "project"

    runner = CliRunner()
    printed = []
    for args in (["run", "--json", str(planted_file.parent), "--library", str(library)],
                 ["review", "approve", "--all", "--by", "alice", "--library", str(library)],
                 ["index"],
                 ["export", "--agent", "claude-code", "--project", str(project), "--library", str(library), "--json"]):
        result = runner.invoke(main, args, catch_exceptions=False)
        assert result.exit_code in (0, 1), (args, result.output, printed)  # approve exits 1 when it refused some
        printed.append((" ".join(args[:1]), result.output + result.stderr))
    prompt = "\n".join(s.line for s in secrets) + "\nwhat did the session before this one do?"
    payload = json.dumps({"session_id": "0b5e7a52-6f0e-4d1c-9a53-2f2f3c9f7e11", "cwd": str(project),
                          "transcript_path": str(tmp_path / "t.jsonl"), "hook_event_name": "UserPromptSubmit",
                          "prompt": prompt})
    hook = subprocess.run([sys.executable, "-m", "pipeline", "hook", "claude-code"], input=payload,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          timeout=120, check=False)
    assert hook.returncode == 0
    printed.append(("hook", hook.stdout + hook.stderr))

    home = settings.home()
    files = [p for root in (home, library, project) for p in root.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"skillmill.duckdb", "recall.duckdb", "vectors.sqlite"} <= names, sorted(names)
    assert list(library.rglob("SKILL.md")), "the run wrote no skill: nothing would reach an export or the hook"
    leaks = []
    for where, text in printed:
        leaks += _leaks(secrets, text, f"`skillmill {where}` output")
    for path in files:
        raw = path.read_bytes().decode("utf-8", errors="replace")
        leaks += _leaks(secrets, raw, str(path.relative_to(tmp_path)))
        leaks += _leaks_escaped(secrets, raw, str(path.relative_to(tmp_path)))
    assert not leaks, "\n".join(sorted(set(leaks)))
    con = duckdb.connect(str(settings.state_db_path()), read_only=True, config=CONFIG)
    recorded = {kind for (kind,) in con.execute("SELECT DISTINCT kind FROM redactions").fetchall()}
    con.close()
    assert {"password", "url-password", "private-key", "vault-service-token", "discord-bot-token"} <= recorded


def _leaks_escaped(secrets: list[Secret], text: str, where: str) -> list[str]:
    """The same, for a value stored JSON-escaped (a '\\' or '"' in it is written escaped)."""
    return [f"{s.kind} planted in {s.position} found (JSON-escaped) in {where}"
            for s in secrets for fragment in s.fragments()
            if json.dumps(fragment)[1:-1] != fragment and json.dumps(fragment)[1:-1] in text]
