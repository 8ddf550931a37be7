"""GitHub Copilot: the CLI's session-state events.jsonl and VS Code's chat sessions, read from the real
files in ../shared/trajectories/copilot_cli and copilot_vscode."""

from __future__ import annotations

import copy
import json
import os
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.cli import main
from pipeline.ingest import ingest_file
from pipeline.ingest.watermark import Mode, read, reader_key
from pipeline.trajectory import StepKind
from tests.test_formats_fuzz import JSON, json_paths, replace

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


# -- VS Code Copilot Chat ------------------------------------------------------------------------

VSCODE = "copilot_vscode"
AGENT = f"{VSCODE}/reddit-condenser/copilot-gpt-5-mini/chat.json"
P47 = f"{VSCODE}/p47-services/docs/chat.json"
CHAT_ONLY = f"{VSCODE}/reddit-condenser/copilot/chat.json"


def chat(corpus: Path, name: str) -> dict:
    return json.loads((corpus / name).read_text(encoding="utf-8"))


def invocations(data: dict) -> list[dict]:
    return [p for r in data["requests"] for p in r["response"] if p.get("kind") == "toolInvocationSerialized"]


# Counted from the raw files: jq '[.requests[].response[] | select(.kind=="toolInvocationSerialized")] | length'
# gives 16, 1 and 0, as many as the model-side calls (jq '[.requests[].result.metadata.toolCallRounds[]?
# .toolCalls[]] | length'); prompts: 7, 6 and 4 requests, each with its message.text.
@pytest.mark.parametrize(("name", "calls", "requests"), [(AGENT, 16, 7), (P47, 1, 6), (CHAT_ONLY, 0, 4)])
def test_real_exports_are_read_with_every_tool_call(corpus: Path, name: str, calls: int, requests: int) -> None:
    report, [t] = ingest_file(corpus / name)
    assert report.format == "copilot-vscode" and report.status == "ok", report.errors
    data = chat(corpus, name)
    assert len(data["requests"]) == requests
    got = t.tool_calls()
    assert len(got) == calls == len(invocations(data))
    assert [c.call_id for c in got] == [p["toolCallId"] for p in invocations(data)]
    model_side = [c["name"] for r in data["requests"] for rnd in r["result"].get("metadata", {}).get("toolCallRounds", [])
                  for c in rnd["toolCalls"]]
    assert [c.tool for c in got] == model_side  # the model's names, paired with the view's invocations
    assert all(t.result_of(c) is not None and t.result_of(c).text for c in got)
    assert [s.text for s in t.steps if s.kind is StepKind.USER and not s.meta] == \
        [r["message"]["text"] for r in data["requests"]]
    assert t.model == Counter(r.get("modelId") for r in data["requests"] if r.get("modelId")).most_common(1)[0][0]


def test_tool_results_edits_and_failures_of_an_agent_session(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / AGENT)
    assert t.cwd == "/Users/ivan/workspaces/personal/reddit-condenser/copilot-gpt-5-mini"  # the files' folder
    calls = t.tool_calls()
    assert Counter(c.tool for c in calls) == Counter({"apply_patch": 11, "read_file": 4, "create_file": 1})
    read = t.result_of(next(c for c in calls if c.tool == "read_file" and c.paths == ["index.html"]))
    assert read.text.startswith('```html\n<!DOCTYPE html>\n<html lang="en">\n')  # the prompt-tsx tree's text
    patches = [c for c in calls if c.tool == "apply_patch"]
    # the patches' absolute paths, relative to the cwd: "*** Update File" (1 "*** Add File", index.html)
    assert all(c.paths and c.diff.startswith((f"--- a/{c.paths[0]}\n", f"--- /dev/null\n+++ b/{c.paths[0]}\n"))
               for c in patches)
    assert sum(c.diff.startswith("--- /dev/null") for c in patches) == 1
    failed = [t.result_of(c) for c in calls if t.result_of(c).is_error]
    # jq over result.metadata.toolCallResults: 3 texts begin "Applying patch failed with error"
    assert [r.text.split(":")[0] for r in failed] == ["Applying patch failed with error"] * 3
    assert all(r.protocol_error for r in failed)
    answers = [s.text for s in t.steps if s.kind is StepKind.ASSISTANT]
    assert not any(a.startswith("```") for a in answers)  # the view's empty code blocks where edits go


def test_a_dev_container_export(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / P47)
    assert t.cwd == "/workspaces/p47-services" and t.repo == "p47-services"
    assert t.agent_version == "0.35.3" and t.model == "copilot/claude-opus-4.5"
    [create] = t.tool_calls()
    assert create.paths == ["docs/helm-values-propagation.md"] and "+# Helm Values Propagation" in create.diff
    assert t.started_at.timestamp() * 1000 == pytest.approx(chat(corpus, P47)["requests"][0]["timestamp"], abs=1)


def mutation_log(data: dict, first: int) -> list[dict]:
    """The export as VS Code >= 1.10x keeps it: a snapshot with the first requests, then pushes and sets."""
    snapshot = {"version": 3, "sessionId": "s-1", "creationDate": data["requests"][0]["timestamp"],
                "initialLocation": "panel", "responderUsername": "GitHub Copilot",
                "requests": data["requests"][:first]}
    entries: list[dict] = [{"kind": 0, "v": snapshot}]
    for index, request in enumerate(data["requests"][first:], start=first):
        pending = {**request, "response": [], "result": {}}
        entries.append({"kind": 2, "k": ["requests"], "v": [pending]})
        entries.append({"kind": 2, "k": ["requests", index, "response"], "v": request["response"]})
        entries.append({"kind": 1, "k": ["requests", index, "result"], "v": request["result"]})
    return entries


def test_the_jsonl_mutation_log_replays_to_the_session(corpus: Path, tmp_path: Path) -> None:
    data = chat(corpus, AGENT)
    storage = tmp_path / "workspaceStorage/abc123"
    (storage / "chatSessions").mkdir(parents=True)
    (storage / "workspace.json").write_text('{"folder": "file:///Users/ivan/workspaces/personal/reddit-condenser"}')
    log = storage / "chatSessions/s-1.jsonl"
    entries = mutation_log(data, 2)
    entries.append({"kind": 2, "k": ["requests", 6, "response"], "i": 0})  # truncate, then nothing: cleared
    entries.append({"kind": 2, "k": ["requests", 6, "response"], "v": data["requests"][6]["response"]})
    entries.append({"kind": 1, "k": ["no", "such", "path"], "v": 1})
    log.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    report, [t] = ingest_file(log)
    assert report.format == "copilot-vscode" and report.status == "partial"
    assert [e.line for e in report.errors] == [len(entries)] and "not in the session" in report.errors[0].reason
    _, [export] = ingest_file(corpus / AGENT)
    def shown(steps):  # what does not depend on the cwd (paths are relative to it)
        return [(s.kind, s.tool, s.call_id, s.is_error, s.text if s.kind is not StepKind.TOOL_CALL else "")
                for s in steps if s.kind is not StepKind.ASSISTANT]
    assert shown(t.steps) == shown(export.steps)
    assert len(t.tool_calls()) == 16 and t.session_id == "s-1"
    assert t.cwd == "/Users/ivan/workspaces/personal/reddit-condenser"  # workspace.json, not the files' folder
    assert t.tool_calls()[0].paths == ["copilot-gpt-5-mini/README.md"]


def test_a_growing_mutation_log_is_read_incrementally(corpus: Path, tmp_path: Path) -> None:
    entries = [json.dumps(e).encode() + b"\n" for e in mutation_log(chat(corpus, AGENT), 1)]
    live = tmp_path / "s-1.jsonl"
    live.write_bytes(entries[0] + entries[1][:30])
    reading = read(live, None, reader=KEY)
    assert reading.watermark.line == 1 and reading.watermark.state is not None
    written = 1
    for end in (2, 8, len(entries)):
        with live.open("ab") as handle:
            handle.write((entries[1][30:] if written == 1 else b"") + b"".join(entries[max(written, 2):end]))
        written = end
        reading = read(live, reading.watermark, reader=KEY)
        assert reading.mode is Mode.APPENDED and reading.watermark.line == end
    _, [whole] = ingest_file(live)
    [t] = reading.trajectories
    assert t.model_dump(exclude={"source_path"}) == whole.model_dump(exclude={"source_path"})
    assert len(t.tool_calls()) == 16


def test_vscode_detection_is_by_content(corpus: Path, tmp_path: Path) -> None:
    other = tmp_path / "chat.json"
    other.write_text('{"requests": [{"id": 1}], "name": "a load test plan"}')
    assert ingest_file(other)[0].format != "copilot-vscode"
    renamed = tmp_path / "anything.json"
    renamed.write_bytes((corpus / P47).read_bytes())
    assert ingest_file(renamed)[0].format == "copilot-vscode"
    empty = tmp_path / "empty.json"
    empty.write_text('{"version": 3, "sessionId": "x", "creationDate": 1, "initialLocation": "panel", "requests": []}')
    report, trajectories = ingest_file(empty)
    assert report.format == "copilot-vscode" and report.status == "skipped" and not trajectories


def test_formats_lists_where_vscode_chats_are_found() -> None:
    result = CliRunner().invoke(main, ["formats", "--json"], catch_exceptions=False)
    rows = {row["name"]: row for row in json.loads(result.output)}
    locations = rows["copilot-vscode"]["locations"]
    assert "~/.config/Code/User/workspaceStorage/*/chatSessions/*.json*" in locations
    assert "~/Library/Application Support/Code/User/workspaceStorage/*/chatSessions/*.json*" in locations


# -- either: fields of the wrong type cost the field, never the file ------------------------------

FUZZ = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "15")), deadline=None, suppress_health_check=list(HealthCheck))


def scrambled(document, data: st.DataObject):
    document = copy.deepcopy(document)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = json_paths(document)
        depth = data.draw(st.integers(0, 6))
        target = data.draw(st.sampled_from([p for p in paths if len(p) <= depth] or paths))
        try:
            document = replace(document, target, data.draw(JSON))
        except (KeyError, IndexError, TypeError):
            continue
    return document


def readable(path: Path) -> None:
    report, trajectories = ingest_file(path)
    assert report.status in ("ok", "partial", "failed", "skipped")
    json.dumps(report.contract())
    for t in trajectories:
        for step in t.steps:
            if step.kind is StepKind.TOOL_RESULT and step.call_index is not None:
                assert t.steps[step.call_index].result_index == step.index


@FUZZ
@given(data=st.data())
def test_scrambled_cli_events_are_reported_not_raised(corpus: Path, tmp_path_factory, data: st.DataObject) -> None:
    rows = scrambled(events(corpus, SHORT)[:60], data)
    rows = rows if isinstance(rows, list) else [rows]
    path = tmp_path_factory.mktemp("cli") / "events.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    readable(path)


@FUZZ
@given(data=st.data())
def test_scrambled_vscode_sessions_are_reported_not_raised(corpus: Path, tmp_path_factory,
                                                          data: st.DataObject) -> None:
    session = chat(corpus, AGENT)
    session["requests"] = session["requests"][3:5]  # a read, a failed patch, a file created
    folder = tmp_path_factory.mktemp("vscode")
    document = scrambled(session, data)
    (folder / "chat.json").write_text(json.dumps(document))
    readable(folder / "chat.json")
    log = scrambled(mutation_log(session, 1), data)
    log = log if isinstance(log, list) else [log]
    (folder / "s.jsonl").write_text("\n".join(json.dumps(e) for e in log) + "\n")
    readable(folder / "s.jsonl")
