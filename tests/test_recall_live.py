"""Recall while the rest of skillmill runs: lean imports, a concurrent writer, feedback that never blocks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.errors import IndexError_
from pipeline.recall import RecallIndex, feedback
from tests.conftest import ROOT

pytestmark = pytest.mark.slow
RUFF = "github-awesome-copilot/ruff-recursive-fix"
TEAM = [RUFF, "wshobson-agents/python-code-style", "anthropics-skills/internal-comms",
        "getsentry-skills/create-branch", "github-awesome-copilot/git-commit"]


def team_folder(skills_corpus: Path, dest: Path) -> Path:
    import shutil

    for name in TEAM:
        shutil.copytree(skills_corpus / name, dest / name)
    return dest


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def imported_modules(*args: str, stdin: str = "") -> tuple[set[str], subprocess.CompletedProcess[str]]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "pipeline", *args], input=stdin,
                          capture_output=True, text=True, env=env(), timeout=120, check=False)
    modules = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    return modules, proc


@pytest.mark.parametrize("args", [["recall", "--json", "fix E501 line too long reported by ruff"],
                                  ["hook", "claude-code"]])
def test_the_recall_and_hook_paths_import_no_litellm_prefect_or_pydantic(skills_corpus: Path, tmp_path: Path,
                                                                        args: list[str]) -> None:
    CliRunner().invoke(main, ["index", "--skills", str(team_folder(skills_corpus, tmp_path / "team"))])
    payload = json.dumps({"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit",
                          "prompt": "fix E501 line too long reported by ruff"})
    modules, proc = imported_modules(*args, stdin=payload)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ruff-recursive-fix" in proc.stdout  # the command did its work
    heavy = {m for m in modules if m.split(".")[0] in {"litellm", "prefect", "pydantic", "instructor", "openai"}}
    assert heavy == set()
    # Queries read the serving snapshot: not even DuckDB (~100 ms) or click (~20 ms) is imported.
    assert {m for m in modules if m.split(".")[0] in {"duckdb", "_duckdb", "click", "orjson", "numpy"}} == set()
    assert {"sqlite3", "pipeline.recall.search"} <= modules  # the measurement itself works


WRITER = textwrap.dedent("""
    import sys
    from pipeline.index.state import StateDB
    from pipeline.recall.service import refresh

    with StateDB() as state:  # holds the state database the whole time, as a nightly run does
        print("locked", flush=True)
        if len(sys.argv) > 2:  # wait until told, so the test can act while the lock is held
            sys.stdin.readline()
        for i in range(int(sys.argv[1])):
            refresh([], con=state.con)
        print("published", sys.argv[1], flush=True)
""")


def test_recall_never_fails_while_a_run_writes(skills_corpus: Path, tmp_path: Path) -> None:
    folder = team_folder(skills_corpus, tmp_path / "team")
    assert CliRunner().invoke(main, ["index", "--skills", str(folder)]).exit_code == 0
    writer = subprocess.Popen([sys.executable, "-c", WRITER, "12"], stdout=subprocess.PIPE, text=True, env=env())
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "locked"
        with pytest.raises(IndexError_, match="in use"):  # the writer really holds the state DB
            from pipeline.index.state import StateDB

            StateDB()
        queries = 0
        seen_versions = set()
        while writer.poll() is None or queries < 20:
            with RecallIndex() as index:  # a new reader each time, like a hook process
                hits = index.search("fix E501 line too long reported by ruff")
                seen_versions.add(index.con.execute("SELECT value FROM meta WHERE key = 'published_at'").fetchone()[0])
            assert hits and hits[0].name == "ruff-recursive-fix"
            queries += 1
            if queries % 10 == 0:  # and a real CLI process now and then
                proc = subprocess.run([sys.executable, "-m", "pipeline", "recall", "--json", "ruff E501"],
                                      capture_output=True, text=True, env=env(), timeout=60, check=False)
                assert proc.returncode == 0, proc.stderr
                assert json.loads(proc.stdout)["results"][0]["name"] == "ruff-recursive-fix"
        assert writer.wait(timeout=300) == 0
        assert writer.stdout.read().strip() == "published 12"
    finally:
        writer.kill()
    assert len(seen_versions) >= 2, "the readers overlapped with several publishes"


def test_feedback_is_journaled_during_a_run_then_stored_and_ranked(skills_corpus: Path, tmp_path: Path) -> None:
    folder = team_folder(skills_corpus, tmp_path / "team")
    runner = CliRunner()
    runner.invoke(main, ["index", "--skills", str(folder)])
    query = "create a branch and commit the staged changes with a good message"
    with RecallIndex() as index:
        hits = index.search(query)
        before = [h.name for h in hits]
        top = index.get(before[0])[0]
    assert len(before) >= 2
    writer = subprocess.Popen([sys.executable, "-c", WRITER, "1", "wait"], stdout=subprocess.PIPE, text=True,
                              env=env(), stdin=subprocess.PIPE)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "locked"
        for _ in range(3):  # the state DB is locked: these must neither fail nor wait
            feedback.record(top["name"], "wrong", "pointed at the wrong command", path=top["path"], source="test")
        assert len(feedback.journaled()) == 3
        writer.communicate("go\n", timeout=300)
    finally:
        writer.kill()
    assert writer.returncode == 0
    assert feedback.journaled() == [], "the run's index stage moved the journal into the state DB"
    from pipeline.index.state import StateDB

    with StateDB() as state:
        rows = state.con.execute("SELECT skill, verdict, path FROM skill_feedback").fetchall()
    assert rows == [(top["name"], "wrong", top["path"])] * 3
    with RecallIndex() as index:
        after = index.search(query)
    assert [h.name for h in after].index(before[0]) > 0, "a skill reported wrong three times no longer ranks first"
    assert next(h.score for h in after if h.name == before[0]) < hits[0].score
    with pytest.raises(Exception, match="unknown verdict"):
        feedback.record("x", "meh")
