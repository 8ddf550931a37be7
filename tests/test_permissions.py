"""What skillmill keeps in $SKILLMILL_HOME is its owner's only, as skill files are: files 0600, folders 0700.

The state database holds every step of every session (commands, tool output); the recall index
and its serving snapshot, skill text; logs and snapshots quote both. Checked with ``os.stat``
after the real stages ran over the real sample sessions, under the common umask 022.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from tests.conftest import ROOT, SAMPLES
from tests.review_support import build, django_inputs

MANUAL = "working-in-django"
QUERY = "run the django tests with runtests.py"


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def open_to_others(root: Path) -> list[str]:
    """Everything below ``root`` (and ``root``) that a group or other user may read, enter or write."""
    found = [root, *root.rglob("*")]
    return [f"{oct(mode(p))} {p.relative_to(root.parent)}" for p in found if not p.is_symlink() and mode(p) & 0o077]


def test_a_run_review_recall_and_hook_leave_nothing_in_home_open_to_others(
        tmp_path: Path, isolated_home: Path) -> None:
    library = tmp_path / "skills"
    build([SAMPLES], library)  # the run's stages: state database, skills, recall index and its snapshot
    for name in ("skillmill.duckdb", "recall.duckdb", "recall.serve.sqlite"):
        assert mode(isolated_home / name) == 0o600, name

    def cli(*args: str) -> None:
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
        assert result.exit_code == 0, result.output

    cli("review", "approve", MANUAL, "--by", "alice", "--library", str(library))
    cli("feedback", "add", MANUAL, "helpful", "--note", "ok")
    cli("recall", QUERY)

    from pipeline.execution.lock import run_lock
    from pipeline.runs.report import write_snapshot

    with run_lock():
        write_snapshot([])
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": "s-1", "cwd": str(tmp_path),
               "prompt": QUERY}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    hook = subprocess.run([sys.executable, "-c", "import os; os.umask(0o022); from pipeline.agents import hook; "
                           "hook._log('a line for the log'); hook.run('claude-code')"],
                          input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=60, check=True)
    assert MANUAL in hook.stdout

    assert not open_to_others(isolated_home)
    assert {p.name for p in isolated_home.iterdir()} >= {
        "skillmill.duckdb", "recall.duckdb", "recall.serve.sqlite", "recall.duckdb.lock", "run.lock",
        "runs-snapshot.json", "feedback", "hooks", "logs"}
    assert mode(library / "_audit.jsonl") == 0o600 and mode(library / ".skillmill.lock") == 0o600


def test_the_error_log_is_owner_only(isolated_home: Path) -> None:
    from pipeline.cli._output import save_traceback

    try:
        raise RuntimeError("a bug, quoting /home/me/secret-project/notes.txt")
    except RuntimeError as exc:
        log = save_traceback(exc)
    assert mode(log) == 0o600 and mode(log.parent) == 0o700 and mode(isolated_home) == 0o700


def test_a_home_and_database_made_before_are_closed_when_opened(tmp_path: Path, isolated_home: Path) -> None:
    """Homes of earlier versions: the folder 0755 and the databases 0644."""
    from pipeline.index.state import StateDB

    with StateDB():
        pass
    os.chmod(isolated_home, 0o755)
    os.chmod(isolated_home / "skillmill.duckdb", 0o644)
    build([django_inputs(tmp_path, "django__django-16255")], tmp_path / "skills")
    assert not open_to_others(isolated_home)


def test_a_library_outside_the_home_and_the_vector_cache_are_made_owner_only(tmp_path: Path,
                                                                            isolated_home: Path) -> None:
    """Issue 23.8: skill and repository names are the user's; so are the cached vectors of their skills."""
    from pipeline.library import Library
    from pipeline.recall.semantic import embed_documents
    from tests.test_skill_file import sample_skills

    library = Library(tmp_path / "elsewhere" / "team" / "skills")
    library.save(sample_skills()[0])
    for folder in (tmp_path / "elsewhere", tmp_path / "elsewhere" / "team", library.root,
                   *[p for p in library.root.rglob("*") if p.is_dir()]):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder

    class Tiny:
        name, dim = "tiny", 2

        def embed(self, texts):  # noqa: ANN001, ANN202
            return [[1.0, 0.0] for _ in texts]

    cache = isolated_home / "vectors.sqlite"
    embed_documents(Tiny(), ["a skill"], cache=cache)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
