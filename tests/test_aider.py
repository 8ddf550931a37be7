"""Aider chat histories: the real files in ../shared/trajectories/aider."""

from __future__ import annotations

import re
import shutil
import tracemalloc
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from pipeline.ingest import detect, ingest_file
from pipeline.ingest.formats.aider import Aider
from pipeline.ingest.reader import Probe
from pipeline.ingest.report import FileReport
from pipeline.trajectory import StepKind, Trajectory

HISTORY = "aider/aider-repo/tests_fixtures_chat-history.md"
WINDOWS = "aider/Aquaticat-Monochromatic/.aider.chat.history.md"
EXAMPLES = ["2048-game", "add-test", "census", "complex-change", "hello-world-flask"]

HEAD = re.compile(r"^<{7} (SEARCH|ORIGINAL)\s*$")
DIVIDER = re.compile(r"^={7}\s*$")
TAIL = re.compile(r"^>{7} (REPLACE|UPDATED)\s*$")


@cache
def sessions(path: Path) -> dict[str | None, str]:
    """Session start -> its raw text, split on aider's header line; None: what precedes the first."""
    parts = re.split(r"(?m)^# aider chat started at (\S+ \S+)", path.read_text(encoding="utf-8"))
    return {None: parts[0]} | {parts[i].replace(" ", "T"): parts[i + 1] for i in range(1, len(parts), 2)}


def typed_inputs(body: str) -> list[str]:
    """The first line of every ``####`` input block that is not blank."""
    firsts, previous = [], ""
    for line in body.split("\n"):
        if line.startswith("#### ") and not previous.startswith("####") and line[5:].strip() not in ("", "<blank>"):
            firsts.append(line[5:].rstrip())
        previous = line
    return firsts


def reply_lines(body: str) -> list[str]:
    """Lines that are neither typed (####) nor aider's output (> and the lines a message runs on)."""
    out, continued = [], False
    for line in body.split("\n"):
        if continued:
            continued = not re.search(r"\S  $", line)
        elif line.startswith(("#### ", "> ")) or line.rstrip() in (">", "####"):
            continued = line.startswith("> ") and bool(line[2:].strip()) and not re.search(r"\S  $", line)
        else:
            out.append(line)
    return out


def complete_blocks(body: str) -> int:
    count, state = 0, 0
    for line in reply_lines(body):
        if HEAD.match(line):
            state = 1
        elif DIVIDER.match(line) and state == 1:
            state = 2
        elif TAIL.match(line):
            count += state == 2
            state = 0
    return count


@cache
def by_session(path: Path) -> dict[str | None, Trajectory]:
    report, trajectories = ingest_file(path)
    assert report.status == "ok" and report.format == "aider", report.errors
    return {t.session_id: t for t in trajectories}


@pytest.mark.parametrize("name", [HISTORY, WINDOWS])
def test_one_trajectory_per_session_in_which_something_was_typed(corpus: Path, name: str) -> None:
    path = corpus / name
    raw = sessions(path)
    parsed = by_session(path)
    with_input = {start for start, body in raw.items() if typed_inputs(body)}
    assert set(parsed) == with_input
    assert len(raw) > len(parsed) > 0, "sessions where aider started and quit are not trajectories"
    for start, t in parsed.items():
        if start is None:  # the history file begins in the middle of a session
            assert t.started_at is None
        else:
            assert t.started_at is not None and t.started_at.isoformat().startswith(start)
        assert t.agent == t.source_format == "aider"


@pytest.mark.parametrize("name", [HISTORY, WINDOWS])
def test_every_edit_block_is_an_edit_call_with_its_path_and_diff(corpus: Path, name: str) -> None:
    path = corpus / name
    raw = sessions(path)
    for start, t in by_session(path).items():
        edits = [c for c in t.tool_calls() if c.tool == "edit" and not c.text.endswith("(whole file)")]
        assert len(edits) == complete_blocks(raw[start]), start
        for call in edits:
            assert call.paths and call.paths[0] != "unknown", (start, call.text)
            # (a block whose SEARCH and REPLACE are the same changes nothing: no diff)
            assert call.diff is None or call.diff.startswith(f"--- a/{call.paths[0]}"), (start, call.text)


@pytest.mark.parametrize("name", [HISTORY, WINDOWS])
def test_every_applied_edit_answers_a_call(corpus: Path, name: str) -> None:
    path = corpus / name
    raw = sessions(path)
    for start, t in by_session(path).items():
        applied = {p.replace("\\", "/") for p in re.findall(r"(?m)^> Applied edit to (.+?)  $", raw[start])}
        answered = {t.steps[r.call_index].paths[0].replace("\\", "/") for r in t.steps
                    if r.kind is StepKind.TOOL_RESULT and r.tool == "edit" and r.text.startswith("Applied edit")}
        assert applied <= answered, start
        if not re.search(r"SEARCH/REPLACE blocks? (were|was) applied successfully", raw[start]):
            assert answered == applied, start  # else aider applied blocks without saying "Applied edit"
        commits = re.findall(r"(?m)^> Commit ([0-9a-f]{7}) ", raw[start])
        noted = {sha for r in t.steps if r.kind is StepKind.TOOL_RESULT for sha in re.findall(r"Commit ([0-9a-f]{7})", r.text)}
        assert noted <= set(commits)


def test_failed_search_blocks_are_errors(corpus: Path) -> None:
    path = corpus / WINDOWS
    raw = sessions(path)
    for start, t in by_session(path).items():
        failed = [r for r in t.steps if r.kind is StepKind.TOOL_RESULT and r.tool == "edit" and r.is_error
                  and "failed to exactly match" in r.text]
        assert len(failed) == raw[start].count("SearchReplaceNoExactMatch"), start
        assert all(r.call_index is not None for r in failed)
        skipped = {t.steps[r.call_index].paths[0] for r in t.steps
                   if r.kind is StepKind.TOOL_RESULT and r.text.endswith(" skipped")}
        assert skipped == set(re.findall(r"(?m)^> Skipping edits to (.+?)  $", raw[start])), start


def test_run_and_test_commands_are_calls_with_their_output_and_exit_code(corpus: Path) -> None:
    path = corpus / HISTORY
    raw = sessions(path)
    pytest_summary = re.compile(r"(?m)^=+ (.*) in [\d.]+s =+$")
    checked = Counter()
    for start, t in by_session(path).items():
        typed = [i for i in typed_inputs(raw[start]) if re.match(r"^(/run|/test|/git|!)\s*\S", i)]
        shell = [c for c in t.tool_calls() if c.tool in ("run", "test") and t.steps[c.index - 1].text.startswith(("/", "!"))]
        expected = [re.sub(r"^(/run|/test|!)\s*", "", i).strip().replace("/git ", "git ", 1) for i in typed]
        assert [c.command for c in shell] == expected, start
        for call in t.tool_calls():
            result = t.result_of(call)
            if call.tool == "test":
                # aider sends /test output to the model only when the tests failed
                summary = pytest_summary.findall(result.text)[-1]
                assert result.exit_code == (1 if re.search(r"failed|error", summary) else 0), (start, summary)
                checked[result.exit_code] += 1
            if call.tool == "lint":
                assert result.exit_code == 1 and result.text, start  # aider shows lint output only on errors
                checked["lint"] += 1
    assert checked[0] and checked[1] and checked["lint"]


def test_header_fields(corpus: Path) -> None:
    parsed = by_session(corpus / HISTORY)
    t = parsed["2024-08-05T19:33:32"]
    assert t.agent_version == "0.47.2-dev"
    assert t.model == "claude-3-5-sonnet-20240620"
    assert t.task == "Use the Spinner instead of the inlined custom spinner"
    [edit] = t.tool_calls()
    assert edit.paths == ["aider/utils.py"] and '+        spinner = Spinner("Installing...")' in edit.diff
    result = t.result_of(edit)
    assert result.text.startswith("Applied edit to aider/utils.py") and not result.is_error
    windows = by_session(corpus / WINDOWS)
    cwd = [t.cwd for t in windows.values() if t.cwd and t.cwd.startswith("C:\\")]
    assert cwd and all(t.repo for t in windows.values())
    assert {t.model for t in windows.values()} >= {"openrouter/qwen3-235b-a22b"}


def test_commands_are_not_the_task_and_ask_is_not_read_twice(corpus: Path) -> None:
    parsed = by_session(corpus / HISTORY)
    for t in parsed.values():
        if t.task:
            assert not t.task.startswith(("/add", "/drop", "/clear", "/undo", "/diff", "/run", "/ex"))
    t = parsed["2024-08-09T07:52:53"]
    asked = [s.text for s in t.steps if s.kind is StepKind.USER and "clipboard holds an image" in s.text]
    assert asked == ["/ask is there a way to tell if the clipboard holds an image or text"]


@pytest.mark.parametrize("example", EXAMPLES)
def test_published_transcripts_are_read_inside_their_chat_blocks(corpus: Path, example: str) -> None:
    path = corpus / "aider/aider-website-examples" / f"{example}.md"
    report, [t] = ingest_file(path)
    assert report.status == "ok" and report.format == "aider"
    text = path.read_text(encoding="utf-8")
    first_input = re.search(r"(?m)^#### (.+?)\s*$", text).group(1)
    assert t.task == first_input
    assert not any("chat-transcript" in s.text or "nav_order" in s.text for s in t.steps)
    blocks = sum(1 for line in text.splitlines() if TAIL.match(line))
    applied = len(re.findall(r"(?m)^> Applied edit to ", text))
    edits = [c for c in t.tool_calls() if c.tool == "edit"]
    assert len(edits) == blocks and applied <= blocks
    assert all(t.result_of(c) is not None and not t.result_of(c).is_error for c in edits)


def test_detection_is_by_content(corpus: Path, tmp_path: Path) -> None:
    renamed = tmp_path / "notes.md"
    shutil.copy(corpus / WINDOWS, renamed)
    assert detect(Probe.read(renamed)).name == "aider"
    readme = tmp_path / "README.md"
    readme.write_text("# Project\n\n#### Installation\n\n> Note: run it twice.\n\nSome text.\n")
    assert detect(Probe.read(readme)) is None
    report, trajectories = ingest_file(readme)
    assert report.status == "skipped" and not trajectories
    assert Aider.suffixes == (".md",)


def test_the_history_is_streamed_one_session_at_a_time(corpus: Path, tmp_path: Path) -> None:
    text = (corpus / HISTORY).read_bytes()
    start = text.index(b"# aider chat started at")
    source = text[start:text.index(b"# aider chat started at", start + 300_000)]  # ~300 KB of whole sessions
    peaks, counts = [], []
    for copies in (2, 8):  # both past the reader's 256 KiB block
        path = tmp_path / f"x{copies}.md"
        path.write_bytes(source * copies)
        tracemalloc.start()
        counts.append(sum(1 for _ in Aider().parse(path, FileReport(path=str(path)))))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert counts[1] == 4 * counts[0] > 10
    assert peaks[1] < peaks[0] * 1.25, "four times the input, not four times the memory"
