"""GitHub Copilot: the CLI's session-state events.jsonl and VS Code's chat sessions, read from the real
files in ../shared/trajectories/copilot_cli and copilot_vscode."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.ingest import ingest_file
from pipeline.ingest.watermark import Mode, read, reader_key
from pipeline.trajectory import StepKind

STATE = "copilot_cli/agent-engram/session-state"
SHORT = f"{STATE}/07c40cd0-ff51-4d6e-bdcd-ac2f90877203/events.jsonl"
LONG = f"{STATE}/8baa78ec-b203-4c7f-b1d3-c1170ae84b7d/events.jsonl"
KEY = reader_key("test")


def events(corpus: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (corpus / name).read_text(encoding="utf-8").splitlines() if line.strip()]


# -- Copilot CLI ---------------------------------------------------------------------------------

# Counted from the raw files, independently of the reader:
#   jq -r 'select(.type=="tool.execution_start") | .data.toolCallId' events.jsonl | sort -u | wc -l
# gives 86 and 269 (the same ids as the assistant.message toolRequests); tool.execution_complete
# events: 86 and 268 (one call in the long session never completed); success == false: 0 and 6.
@pytest.mark.parametrize(("name", "calls", "completed", "failed"), [(SHORT, 86, 86, 0), (LONG, 269, 268, 6)])
def test_real_sessions_are_read_with_every_tool_call(corpus: Path, name: str, calls: int, completed: int,
                                                    failed: int) -> None:
    report, [t] = ingest_file(corpus / name)
    assert report.format == "copilot-cli" and report.status == "ok", report.errors
    raw = events(corpus, name)
    starts = [e["data"] for e in raw if e["type"] == "tool.execution_start"]
    got = t.tool_calls()
    assert len(got) == calls
    assert [c.call_id for c in got] == [s["toolCallId"] for s in starts]
    assert [c.tool for c in got] == [s["toolName"] for s in starts]
    results = [t.result_of(c) for c in got]
    assert sum(r is not None for r in results) == completed
    outcome = {e["data"]["toolCallId"]: e["data"] for e in raw if e["type"] == "tool.execution_complete"}
    for call, result in zip(got, results, strict=True):
        if result is None:
            continue
        data = outcome[call.call_id]
        if data["success"] is False:
            assert result.is_error is True and result.text == data["error"]["message"]
        elif call.tool not in ("powershell", "bash"):
            assert result.is_error is False
    assert sum(bool(r and r.is_error and not r.exit_code) for r in results) == failed
    prompts = [e["data"]["content"] for e in raw if e["type"] == "user.message" and e["data"]["content"].strip()]
    assert [s.text for s in t.steps if s.kind is StepKind.USER and not s.meta] == prompts
    assert [s.index for s in t.steps] == list(range(len(t.steps)))


def test_header_comes_from_session_start(corpus: Path) -> None:
    start = events(corpus, SHORT)[0]["data"]
    _, [t] = ingest_file(corpus / SHORT)
    assert t.session_id == start["sessionId"] and t.agent_version == start["copilotVersion"] == "1.0.10"
    assert t.cwd == start["context"]["cwd"] and t.git_branch == start["context"]["branch"]
    assert t.repo == "softwaresalt/agent-engram"  # context.repository
    assert t.model == "claude-opus-4.6"  # the model most tool completions name
    assert t.task.startswith("Using @.context\\backlog.md Break down Feature 007")
    assert t.started_at.isoformat().startswith(start["startTime"][:19])


def test_shell_exit_codes_come_from_the_output_and_from_later_notifications(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / SHORT)
    shells = [c for c in t.tool_calls() if c.tool == "powershell"]
    # grep -c 'exited with exit code 0>' over the powershell results: 57 exit 0, 3 exit 1.
    assert Counter(t.result_of(c).exit_code for c in shells) == Counter({0: 57, 1: 3})
    assert all(t.result_of(c).is_error is (t.result_of(c).exit_code != 0) for c in shells)
    # Long session: "Check compilation" ran async as shellId 2; a system.notification says it exited 101.
    raw = events(corpus, LONG)
    note = next(e["data"]["kind"] for e in raw if e["type"] == "system.notification"
                and e["data"]["kind"].get("type") == "shell_completed")
    assert (note["shellId"], note["exitCode"]) == ("2", 101)
    _, [t] = ingest_file(corpus / LONG)
    started = next(c for c in t.tool_calls() if c.tool == "powershell" and "shellId: 2 is" in t.result_of(c).text)
    assert t.result_of(started).exit_code == 101 and t.result_of(started).is_error is True


def test_subagent_steps_are_sidechain_and_refusals_are_protocol_errors(corpus: Path) -> None:
    raw = events(corpus, LONG)
    side = {e["data"]["toolCallId"] for e in raw if e["type"] == "tool.execution_start"
            and e["data"].get("parentToolCallId")}
    assert len(side) == 37  # jq: tool.execution_start with data.parentToolCallId
    _, [t] = ingest_file(corpus / LONG)
    assert {c.call_id for c in t.tool_calls() if c.sidechain} == side
    refused = [r.text for r in (t.result_of(c) for c in t.tool_calls()) if r is not None and r.protocol_error]
    assert sorted(refused) == sorted(["No match found", "No match found", "Tool 'task_complete' does not exist.",
                                      next(x for x in refused if x.startswith("Command not executed."))])
    edits = [c for c in t.tool_calls() if c.tool == "edit"]
    assert len(edits) == 27 and all(c.diff and c.paths for c in edits)
    assert all(not p.startswith("D:") for c in edits for p in c.paths)  # relative to the cwd


def test_a_growing_session_is_read_incrementally_and_comes_out_whole(corpus: Path, tmp_path: Path) -> None:
    lines = (corpus / SHORT).read_bytes().splitlines(keepends=True)
    live = tmp_path / "events.jsonl"
    live.write_bytes(b"".join(lines[:40]) + lines[40][:25])  # a line half written
    reading = read(live, None, reader=KEY)
    assert reading.watermark.line == 40
    written = 40
    for end in (41, 150, 151, 300, len(lines)):
        with live.open("ab") as handle:
            handle.write((lines[written][25:] if written == 40 else lines[written]) + b"".join(lines[written + 1:end]))
        written = end
        reading = read(live, reading.watermark, reader=KEY)
        assert reading.mode is Mode.APPENDED and reading.watermark.line == end
    _, [whole] = ingest_file(corpus / SHORT)
    [t] = reading.trajectories
    assert t.model_dump(exclude={"source_path"}) == whole.model_dump(exclude={"source_path"})


def test_detection_is_by_content(corpus: Path, tmp_path: Path) -> None:
    lines = (corpus / SHORT).read_text(encoding="utf-8").splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[5:]))  # lost its session.start: the event envelope still tells
    report, [t] = ingest_file(cut)
    assert report.format == "copilot-cli" and t.tool_calls()
    other = tmp_path / "events.jsonl"
    other.write_text('{"type": "session.start", "data": {"x": 1}}\n{"type": "user", "message": "hi"}\n')
    assert ingest_file(other)[0].format != "copilot-cli"


def test_formats_lists_where_copilot_files_are_found() -> None:
    result = CliRunner().invoke(main, ["formats", "--json"], catch_exceptions=False)
    rows = {row["name"]: row for row in json.loads(result.output)}
    assert "${COPILOT_HOME:-~/.copilot}/session-state/*/events.jsonl" in rows["copilot-cli"]["locations"]
