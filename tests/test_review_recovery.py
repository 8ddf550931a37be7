"""`kill -9` of a review decision after it moved the skill and before it republished the recall index.

`review deprecate` moves ``<library>/NAME`` to ``_deprecated/NAME``, logs, then republishes. Killed
in between, the index still lists the skill as approved: every hook, MCP call and recall would go on
serving it. The kill is real (SIGKILL, from inside the republish the command is about to do); then
the hook must not serve it, and the next command that serves or decides republishes.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline import settings
from pipeline.cli import main
from pipeline.library import Library
from pipeline.recall import serving
from tests.conftest import ROOT
from tests.review_support import build, django_inputs

MANUAL = "working-in-django"  # the manual of the django sitemaps session (the only skill it gives)
QUERY = "run the django tests with runtests.py"
#: ``skillmill review deprecate``, killed by SIGKILL where it would republish (after the move and the audit entry).
KILLED_AT_REPUBLISH = """
import os, signal, sys
import pipeline.review.publish as publish
publish.republish = lambda library: os.kill(os.getpid(), signal.SIGKILL)
from pipeline.cli import main
sys.argv = ["skillmill", *sys.argv[1:]]
main()
"""


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output + result.stderr
    return result.output


def published_status(name: str) -> set[str]:
    """What the published serving snapshot says of ``name`` (read as the file, bypassing any reader logic)."""
    snapshot = serving.path_for(settings.recall_index_path())
    with sqlite3.connect(f"{snapshot.as_uri()}?mode=ro", uri=True) as con:
        return {r[0] for r in con.execute("SELECT status FROM skills WHERE name = ?", [name])}


def hook(cwd: Path, session: str) -> str:
    """The hook's answer in a new agent session (a skill is given once per session)."""
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": str(cwd), "prompt": QUERY}
    done = subprocess.run([sys.executable, "-m", "pipeline", "hook", "claude-code"], input=json.dumps(payload),
                          capture_output=True, text=True, env=env(), timeout=60, check=True)
    return done.stdout


@pytest.fixture
def killed(tmp_path: Path) -> Path:
    """A library whose approved skill was deprecated by a command killed before it republished."""
    library = tmp_path / "skills"
    build([django_inputs(tmp_path, "django__django-16255")], library)
    cli("review", "approve", MANUAL, "--by", "alice", "--library", str(library))
    assert MANUAL in hook(tmp_path, "before-the-kill"), "approved: the hook serves it"
    done = subprocess.run([sys.executable, "-c", KILLED_AT_REPUBLISH, "review", "deprecate", MANUAL,
                           "--reason", "Django fixed it upstream", "--by", "alice", "--library", str(library)],
                          capture_output=True, text=True, env=env(), timeout=120, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert Library(library).get(MANUAL).skill.status == "deprecated", "the move happened"
    assert published_status(MANUAL) == {"approved"}, "and the index never heard of it"
    return library


def test_the_hook_does_not_serve_a_skill_deprecated_by_a_killed_command(killed: Path, tmp_path: Path) -> None:
    assert MANUAL not in hook(tmp_path, "after-the-kill")


def test_the_next_recall_republishes_and_the_skill_is_gone(killed: Path) -> None:
    result = CliRunner().invoke(main, ["recall", "--json", QUERY], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["results"] == []
    assert published_status(MANUAL) == {"deprecated"}, "republished from the library"
    assert "republished the recall index" in result.stderr
    again = CliRunner().invoke(main, ["recall", "--json", QUERY], catch_exceptions=False)
    assert again.stderr == "", "once repaired, nothing more to do"


def test_the_next_review_command_republishes(killed: Path) -> None:
    cli("review", "list", "--library", str(killed))
    assert published_status(MANUAL) == {"deprecated"}


def test_mcp_get_skill_and_recall_skills_do_not_serve_it(killed: Path) -> None:
    import asyncio

    from pipeline.agents.mcp_server import build_server

    server = build_server()
    got = asyncio.run(server.call_tool("get_skill", {"name": MANUAL}))
    assert "No approved skill" in got.content[0].text  # type: ignore[union-attr]
    brief = asyncio.run(server.call_tool("recall_skills", {"task": QUERY}))
    assert MANUAL not in brief.content[0].text  # type: ignore[union-attr]
    assert published_status(MANUAL) == {"deprecated"}


def test_a_decision_in_progress_is_left_to_publish_itself(tmp_path: Path) -> None:
    """The repair does not wait for, nor publish under, a decision that holds the library right now."""
    from pipeline.agents import repair
    from pipeline.recall import pending

    library = Library(tmp_path / "skills")
    (tmp_path / "skills").mkdir()
    pending.mark(library.root)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pipeline.library import Library; "
                               f"lock = Library({str(library.root)!r}).lock(); lock.__enter__(); print('held'); "
                               "sys.stdout.flush(); time.sleep(60)"], stdout=subprocess.PIPE, text=True, env=env())
    try:
        assert holder.stdout.readline().strip() == "held"  # type: ignore[union-attr]
        assert repair.repair() is False and pending.read() is not None
    finally:
        holder.kill()
        holder.wait()


def test_the_reader_knows_how_the_writer_marks_library_skills() -> None:
    from pipeline.recall import index, search

    assert search.LIBRARY_ROOT == index.LIBRARY
