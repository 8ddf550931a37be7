"""Session text printed on a terminal: escape sequences are shown, never executed.

A real mini-swe-agent session (from ``samples/``: matplotlib, a failed run, so the manual learned
from it carries a risk flag) with escape sequences planted where a crafted session would put them:
the task and the output of a command (its error becomes the manual's Environment symptom).
``ESC [ 6 A`` + ``ESC [ J`` would move the cursor up over the RISK FLAGS block ``review show``
just printed and erase it; U+202E would reverse what follows. (A crafted working directory no
longer reaches a skill: a folder name with control characters names no repository.)
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.runs import tables as runs_tables
from pipeline.terminal import visible
from tests.conftest import SAMPLES
from tests.review_support import build

SESSION = SAMPLES / "claude_code" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
FAILED_RUN = SAMPLES / "mini_swe_agent" / "matplotlib__matplotlib-21568.traj.json"
TITLE = "[Bug]: Datetime axis with usetex is unclear"
ERROR = "dvipng could not be found"
ERASE = "\x1b[6A\x1b[J"  # cursor up six lines, erase to the end of the screen
PLANTED = f"{ERASE}\x07\u202e\x08"
#: What click itself writes with color on: SGR sequences (colors, bold). Anything else is planted.
SGR = re.compile(r"\x1b\[[0-9;]*m")
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def crafted(tmp_path: Path) -> tuple[Path, str]:
    """A library holding the flagged candidate distilled from the crafted session; (library, name)."""
    run = json.loads(FAILED_RUN.read_text(encoding="utf-8"))
    for message in run["messages"]:
        message["content"] = (message["content"].replace(TITLE, TITLE.replace("usetex", f"usetex{PLANTED}"))
                              .replace(ERROR, ERROR.replace("dvipng", f"dvipng{ERASE}")))
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / FAILED_RUN.name).write_text(json.dumps(run), encoding="utf-8")
    shutil.copy(FAILED_RUN.with_name("matplotlib__matplotlib-21568.report.json"), folder)  # it failed
    summary = build([folder], tmp_path / "skills")
    assert summary.written == ["working-in-matplotlib"]
    return tmp_path / "skills", "working-in-matplotlib"


def shown(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(main, list(args), color=True, catch_exceptions=False)  # as on a terminal
    assert result.exit_code == code, result.output
    return result.output


def assert_inert(output: str) -> None:
    leftover = UNSAFE.findall(SGR.sub("", output))
    assert not leftover, f"control characters reach the terminal: {leftover}"


def test_review_show_keeps_the_risk_flags_block_readable(crafted: tuple[Path, str]) -> None:
    library, name = crafted
    output = shown("review", "show", name, "--library", str(library))
    assert_inert(output)
    assert "RISK FLAGS" in output and "low-evidence" in output
    assert r"usetex\x1b[6A\x1b[J\x07\u202e\x08" in output, "the planted sequence is shown, as text"
    assert r"dvipng\x1b[6A\x1b[J could" in output, "the symptom from the crafted command output"


def test_review_list_shows_planted_sequences_as_text(crafted: tuple[Path, str]) -> None:
    library, name = crafted
    output = shown("review", "list", "--library", str(library))
    assert_inert(output)
    # the list shows no session text now: the repository comes from the instance id, and a name with
    # control characters (a crafted cwd) is never a repository's
    assert name in output and "matplotlib/matplotlib" in output and "low-evidence" in output


def test_recall_prints_skill_text_with_its_lines_but_without_control_characters(
        crafted: tuple[Path, str]) -> None:
    library, name = crafted
    output = shown("recall", "--include-candidates", "dvipng could not be found",
                   "--budget", "4000")
    assert name in output, output
    assert_inert(output)
    assert "\n## " in output, "the brief keeps its lines"
    assert r"\x1b[6A" in output


def test_visible_writes_out_controls_and_bidi_marks_and_keeps_tabs() -> None:
    assert visible("a\x1b[2Jb\x07\x9b1A\u202ec\td") == r"a\x1b[2Jb\x07\x9b1A\u202ec" + "\td"
    assert visible("one\ntwo\r") == r"one\ntwo\r"
    assert visible("one\ntwo\r", newlines=True) == "one\ntwo" + r"\r"
    assert visible("plain — text ✓") == "plain — text ✓"


def test_ingest_and_runs_show_a_crafted_file_name_as_text(tmp_path: Path) -> None:
    """File names are the user's disk's, and a name may hold any byte but '/' and NUL."""
    from datetime import UTC, datetime

    from pipeline.index.state import StateDB
    from pipeline.ingest import ingest_file
    from pipeline.summary import RunSummary

    folder = tmp_path / "in"
    folder.mkdir()
    cut = folder / f"session{ERASE}.jsonl"  # a real session cut mid-line: a partial read, with an error
    cut.write_bytes(SESSION.read_bytes()[:5000])
    output = shown("ingest", str(folder), code=1)
    assert_inert(output)
    assert r"session\x1b[6A\x1b[J.jsonl" in output and "truncated" in output

    summary = RunSummary(run_id="r1")
    summary.add_file(ingest_file(cut)[0])
    assert summary.errors, "the cut line is reported"
    with StateDB() as state:
        runs_tables.record_run(state, "r1", datetime.now(UTC), summary.exit_code, summary.contract())
    output = shown("runs")
    assert_inert(output)
    assert r"session\x1b[6A\x1b[J.jsonl" in output
