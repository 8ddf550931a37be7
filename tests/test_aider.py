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
def launches(path: Path) -> dict[str, str]:
    """Launch id -> its raw text, split on aider's header line: ``<start>#<n>`` (n counts launches
    that started the same second), ``#1`` for what precedes the first header."""
    parts = re.split(r"(?m)^# aider chat started at (\S+ \S+)", path.read_text(encoding="utf-8"))
    out, seen = {"#1": parts[0]}, Counter()
    for i in range(1, len(parts), 2):
        start = parts[i].replace(" ", "T")
        seen[start] += 1
        out[f"{start}#{seen[start]}"] = parts[i + 1]
    return out


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
def by_launch(path: Path) -> dict[str, list[Trajectory]]:
    """Launch id -> its requests' trajectories, in the order they were read."""
    report, trajectories = ingest_file(path)
    assert report.status == "ok" and report.format == "aider", report.errors
    grouped: dict[str, list[Trajectory]] = {}
    for t in trajectories:
        grouped.setdefault(t.parent_session_id, []).append(t)
    return grouped


def steps_of(requests: list[Trajectory], kind: StepKind) -> list:
    return [(t, s) for t in requests for s in t.steps if s.kind is kind]


@pytest.mark.parametrize("name", [HISTORY, WINDOWS])
def test_each_launch_in_which_something_was_typed_gives_its_requests_in_order(corpus: Path, name: str) -> None:
    path = corpus / name
    raw = launches(path)
    parsed = by_launch(path)
    with_input = {launch for launch, body in raw.items() if typed_inputs(body)}
    assert set(parsed) == with_input
    assert len(raw) > len(parsed) > 0, "launches where aider started and quit give no trajectory"
    for launch, requests in parsed.items():
        start = launch.split("#")[0]
        assert [t.session_id for t in requests] == [f"{launch}.{k}" for k in range(1, len(requests) + 1)]
        for t in requests:
            if not start:  # the history file begins in the middle of a launch
                assert t.started_at is None
            else:
                assert t.started_at is not None and t.started_at.isoformat().startswith(start)
            assert t.agent == t.source_format == "aider"
        # the launch's facts are on every request
        assert len({(t.started_at, t.agent_version, t.cwd, t.repo) for t in requests}) == 1, launch
    assert sum(map(len, parsed.values())) > len(parsed), "launches with several requests are split"


@pytest.mark.parametrize("name", [HISTORY, WINDOWS])
def test_every_edit_block_is_an_edit_call_with_its_path_and_diff(corpus: Path, name: str) -> None:
    path = corpus / name
    raw = launches(path)
    for launch, requests in by_launch(path).items():
        edits = [c for _, c in steps_of(requests, StepKind.TOOL_CALL)
                 if c.tool == "edit" and not c.text.endswith("(whole file)")]
        assert len(edits) == complete_blocks(raw[launch]), launch
        for call in edits:
            assert call.paths and call.paths[0] != "unknown", (launch, call.text)
            # (a block whose SEARCH and REPLACE are the same changes nothing: no diff)
            assert call.diff is None or call.diff.startswith(f"--- a/{call.paths[0]}"), (launch, call.text)


@pytest.mark.parametrize("name", [HISTORY, WINDOWS])
def test_every_applied_edit_answers_a_call_of_its_request(corpus: Path, name: str) -> None:
    path = corpus / name
    raw = launches(path)
    for launch, requests in by_launch(path).items():
        applied = {p.replace("\\", "/") for p in re.findall(r"(?m)^> Applied edit to (.+?)  $", raw[launch])}
        answered = {t.steps[r.call_index].paths[0].replace("\\", "/") for t, r in steps_of(requests, StepKind.TOOL_RESULT)
                    if r.tool == "edit" and r.text.startswith("Applied edit")}
        assert applied <= answered, launch
        if not re.search(r"SEARCH/REPLACE blocks? (were|was) applied successfully", raw[launch]):
            assert answered == applied, launch  # else aider applied blocks without saying "Applied edit"
        commits = re.findall(r"(?m)^> Commit ([0-9a-f]{7}) ", raw[launch])
        noted = {sha for _, r in steps_of(requests, StepKind.TOOL_RESULT) for sha in re.findall(r"Commit ([0-9a-f]{7})", r.text)}
        assert noted <= set(commits)
        for t in requests:  # a result always answers a call of its own request
            assert all(r.call_index is not None for r in t.steps if r.kind is StepKind.TOOL_RESULT), t.session_id


def test_failed_search_blocks_are_errors(corpus: Path) -> None:
    path = corpus / WINDOWS
    raw = launches(path)
    for launch, requests in by_launch(path).items():
        results = steps_of(requests, StepKind.TOOL_RESULT)
        failed = [r for _, r in results if r.tool == "edit" and r.is_error and "failed to exactly match" in r.text]
        assert len(failed) == raw[launch].count("SearchReplaceNoExactMatch"), launch
        assert all(r.call_index is not None for r in failed)
        skipped = {t.steps[r.call_index].paths[0] for t, r in results if r.text.endswith(" skipped")}
        assert skipped == set(re.findall(r"(?m)^> Skipping edits to (.+?)  $", raw[launch])), launch


def test_run_and_test_commands_are_calls_with_their_output_and_exit_code(corpus: Path) -> None:
    path = corpus / HISTORY
    raw = launches(path)
    pytest_summary = re.compile(r"(?m)^=+ (.*) in [\d.]+s =+$")
    checked = Counter()
    for launch, requests in by_launch(path).items():
        typed = [i for i in typed_inputs(raw[launch]) if re.match(r"^(/run|/test|/git|!)\s*\S", i)]
        shell = [c for t, c in steps_of(requests, StepKind.TOOL_CALL)
                 if c.tool in ("run", "test") and t.steps[c.index - 1].text.startswith(("/", "!"))]
        expected = [re.sub(r"^(/run|/test|!)\s*", "", i).strip().replace("/git ", "git ", 1) for i in typed]
        assert [c.command for c in shell] == expected, launch
        for t, call in steps_of(requests, StepKind.TOOL_CALL):
            result = t.result_of(call)
            if call.tool == "test":
                # aider sends /test output to the model only when the tests failed
                summary = pytest_summary.findall(result.text)[-1]
                assert result.exit_code == (1 if re.search(r"failed|error", summary) else 0), (launch, summary)
                checked[result.exit_code] += 1
            if call.tool == "lint":
                assert result.exit_code == 1 and result.text, launch  # aider shows lint output only on errors
                checked["lint"] += 1
    assert checked[0] and checked[1] and checked["lint"]


def test_header_fields(corpus: Path) -> None:
    [t] = by_launch(corpus / HISTORY)["2024-08-05T19:33:32#1"]
    assert t.agent_version == "0.47.2-dev"
    assert t.model == "claude-3-5-sonnet-20240620"
    assert t.task == "Use the Spinner instead of the inlined custom spinner"
    [edit] = t.tool_calls()
    assert edit.paths == ["aider/utils.py"] and '+        spinner = Spinner("Installing...")' in edit.diff
    result = t.result_of(edit)
    assert result.text.startswith("Applied edit to aider/utils.py") and not result.is_error
    windows = [t for requests in by_launch(corpus / WINDOWS).values() for t in requests]
    cwd = [t.cwd for t in windows if t.cwd and t.cwd.startswith("C:\\")]
    assert cwd and all(t.repo for t in windows)
    assert {t.model for t in windows} >= {"openrouter/qwen3-235b-a22b"}


def test_commands_are_not_the_task_and_ask_is_not_read_twice(corpus: Path) -> None:
    parsed = by_launch(corpus / HISTORY)
    for t in (t for requests in parsed.values() for t in requests):
        if t.task:
            assert not t.task.startswith(("/add", "/drop", "/clear", "/undo", "/diff", "/run", "/ex"))
    asked = [(t.session_id, s.text) for t in parsed["2024-08-09T07:52:53#1"] for s in t.steps
             if s.kind is StepKind.USER and "clipboard holds an image" in s.text]
    assert asked == [("2024-08-09T07:52:53#1.2", "/ask is there a way to tell if the clipboard holds an image or text")]


#: How many requests each published transcript holds: its non-command messages, read by hand
#: (complex-change ends with "nice, that worked!", which is how the last request went).
REQUESTS = {"2048-game": 3, "add-test": 1, "census": 9, "complex-change": 8, "hello-world-flask": 4}


@pytest.mark.parametrize("example", EXAMPLES)
def test_published_transcripts_are_read_inside_their_chat_blocks_one_trajectory_per_request(
        corpus: Path, example: str) -> None:
    path = corpus / "aider/aider-website-examples" / f"{example}.md"
    report, requests = ingest_file(path)
    assert report.status == "ok" and report.format == "aider"
    assert len(requests) == REQUESTS[example]
    text = path.read_text(encoding="utf-8")
    messages = [m for m in re.findall(r"(?m)^#### (.+?)\s*$", text) if not m.startswith("/")]
    messages = [m for m in messages if m != "nice, that worked!"]
    assert [t.task.split("\n")[0][:15] for t in requests] == [m[:15] for m in messages]  # (an API key is redacted)
    assert [t.session_id for t in requests] == [f"#1.{k}" for k in range(1, len(requests) + 1)]
    assert {t.parent_session_id for t in requests} == {"#1"}
    steps = [s for t in requests for s in t.steps]
    assert not any("chat-transcript" in s.text or "nav_order" in s.text for s in steps)
    blocks = sum(1 for line in text.splitlines() if TAIL.match(line))
    applied = len(re.findall(r"(?m)^> Applied edit to ", text))
    edits = [(t, c) for t in requests for c in t.tool_calls() if c.tool == "edit"]
    assert len(edits) == blocks and applied <= blocks
    assert all(t.result_of(c) is not None and not t.result_of(c).is_error for t, c in edits)


def test_each_request_has_its_own_title_edits_and_checks(corpus: Path) -> None:
    """A launch of six requests (aider 0.51, 2024-08-22): six trajectories, each with its edits."""
    requests = by_launch(corpus / HISTORY)["2024-08-22T06:29:25#1"]
    assert [t.task.split("\n")[0][:45] for t in requests] == [
        "write a script that will take a markdown file",
        "add aider/coders/editblock_coder.py",
        "instead of wordcount, call `find_original_upd",
        "use indent=4 on all json.dump",
        "catch exceptions right at `find_original_upda",
        "add shebang",
    ]
    commits = [sorted(set(re.findall(r"Commit ([0-9a-f]{7})", " ".join(r.text for r in t.steps
                                                                          if r.kind is StepKind.TOOL_RESULT))))
               for t in requests]
    assert commits[:5] == [["3272a2b", "53d992a", "55bca8d"], [], ["4763582", "7e76309"], ["cb7879a"],
                           ["10d885d", "ac56676", "b32fa29"]]
    assert all(c.paths == ["testsr.py"] for t in requests[:5] for c in t.tool_calls() if c.tool == "edit")
    assert [sum(c.tool == "edit" for c in t.tool_calls()) for t in requests][:5] == [1, 0, 1, 1, 1]
    # /add and /tok prepare the next request; /diff looks at what the request before it did
    third = [s.text for s in requests[2].steps if s.kind is StepKind.USER]
    assert third[:3] == ["/add aider/coders/editblock_coder.py", "/tok",
                         "instead of wordcount, call `find_original_update_blocks` on each chunk. emit the results "
                         "as json to stdout"]
    assert "/diff" in [s.text for s in requests[4].steps if s.kind is StepKind.USER]
    assert {(t.parent_session_id, t.model, t.agent_version, t.repo) for t in requests} == {
        ("2024-08-22T06:29:25#1", "claude-3-5-sonnet-20240620", "0.51.2-dev", "aider")}


def test_a_correction_is_its_own_request_next_to_the_one_it_corrects(corpus: Path) -> None:
    requests = by_launch(corpus / HISTORY)["2024-08-06T08:55:14#1"]
    first, correction = requests[0], requests[1]
    assert first.task.startswith("add tests for --map-tokens")
    assert correction.task == "don't use --no-git in those tests"
    assert correction.parent_session_id == first.parent_session_id == "2024-08-06T08:55:14#1"
    assert (first.session_id, correction.session_id) == ("2024-08-06T08:55:14#1.1", "2024-08-06T08:55:14#1.2")
    assert any("--no-git" in (c.diff or "") for c in first.tool_calls())  # what the correction is about


def test_go_on_messages_stay_in_the_request_they_answer(corpus: Path) -> None:
    # (the first message of a launch has no request before it to go on with: it opens one)
    tasks = {t.task for requests in by_launch(corpus / HISTORY).values() for t in requests[1:]}
    assert not {"do that", "do it", "make that change", "go ahead", "yes", "thanks"} & tasks
    # "/ask <plan>" then "do that": one trajectory, its task the question, the edits in it
    asked = [t for requests in by_launch(corpus / HISTORY).values() for t in requests
             if (t.task or "").startswith("/ask") and any(s.text == "do that" for s in t.steps)]
    assert asked and any(any(c.tool == "edit" for c in t.tool_calls()) for t in asked)


def test_the_aider_history_gives_one_trajectory_per_request(corpus: Path) -> None:
    """1,133 launches, 677 in which something was typed: 980 requests, 538 launches of one."""
    parsed = by_launch(corpus / HISTORY)
    assert len(parsed) == 677 and sum(map(len, parsed.values())) == 980
    assert Counter(len(requests) for requests in parsed.values())[1] == 538


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
