"""Gemini CLI chat recordings: the real files in ../shared/trajectories/gemini_cli, and the JSONL log form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.ingest import ingest_file
from pipeline.trajectory import StepKind, clip

CHATS = "gemini_cli/codemie-code/chats"
REAL = ["session-2025-12-01T21-45-5b959dae.json", "session-2026-01-16T11-01-file-ops-37b7abef.json"]


def record(corpus: Path, name: str) -> dict:
    return json.loads((corpus / CHATS / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", REAL)
def test_every_real_recording_parses_with_all_its_tool_calls(corpus: Path, name: str) -> None:
    report, [t] = ingest_file(corpus / CHATS / name)
    assert report.status == "ok", report.errors
    assert report.format == "gemini-cli"
    raw_calls = [c for m in record(corpus, name)["messages"] for c in m.get("toolCalls") or []]
    calls = t.tool_calls()
    assert [c.call_id for c in calls] == [c["id"] for c in raw_calls]
    assert [c.tool for c in calls] == [c["name"] for c in raw_calls]
    for call, raw in zip(calls, raw_calls, strict=True):  # call and result come from the same record
        result = t.result_of(call)
        assert result is not None and result.call_index == call.index and result.call_id == call.call_id
        assert result.text == clip(raw["result"][0]["functionResponse"]["response"]["output"])[0]
        assert result.is_error is (raw["status"] != "success")
    users = [s.text for s in t.steps if s.kind is StepKind.USER]
    assert users == [m["content"] for m in record(corpus, name)["messages"] if m["type"] == "user"]
    assert [s.index for s in t.steps] == list(range(len(t.steps)))


def test_header_task_and_timestamps(corpus: Path) -> None:
    data = record(corpus, REAL[0])
    _, [t] = ingest_file(corpus / CHATS / REAL[0])
    assert t.agent == "gemini-cli" and t.session_id == data["sessionId"]
    assert t.model == "gemini-3-pro-image-preview"
    assert t.task == "Explain what this is"  # the opening "hi" is not the task
    assert t.started_at.isoformat().startswith(data["startTime"][:19])
    assert t.ended_at.isoformat().startswith(data["lastUpdated"][:19])
    assert t.cwd is None  # anonymised paths: no touched directory hashes to projectHash, nothing is guessed
    replace = next(c for c in t.tool_calls() if c.tool == "replace")
    args = next(c["args"] for m in data["messages"] for c in m.get("toolCalls") or [] if c["name"] == "replace")
    assert replace.paths == [args["file_path"]]
    added = [line for line in args["new_string"].splitlines() if line.strip()
             and line not in args["old_string"].splitlines()]
    assert added and all(f"+{line}" in replace.diff.splitlines() for line in added)


def test_the_cwd_is_the_touched_directory_whose_hash_is_project_hash(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / CHATS / REAL[1])
    assert t.cwd == "/Users/Nikita_Levyankov/repos/EPMCDME/codemie-ai/codemie-code"
    assert t.repo == "codemie-code"
    assert t.task == "expore repository and figure out issues. focus on adaptability and security"  # not "show tools"
    writes = [c for c in t.tool_calls() if c.tool == "write_file"]
    assert [c.paths for c in writes] == [["hello.md"]] * 3


def test_logs_json_is_skipped_with_the_reason(corpus: Path) -> None:
    report, trajectories = ingest_file(corpus / "gemini_cli/codemie-code/logs.json")
    assert report.format == "gemini-cli" and report.status == "skipped" and not trajectories
    assert "prompt log" in report.errors[0].reason and "no model answers or tool calls" in report.errors[0].reason


def test_synthetic_recordings_parse(corpus: Path) -> None:
    report, [t] = ingest_file(corpus / "gemini_cli/synthetic_schema_coverage/agent-sessions_gemini_large.json")
    assert report.status == "ok", report.errors
    shells = t.tool_calls()
    assert [c.command for c in shells] == ["printf 'line1\\nline2\\nline3\\n'", "ls /non-existent-directory"]
    assert [(t.result_of(c).exit_code, t.result_of(c).is_error) for c in shells] == [(0, False), (1, True)]
    report, [t] = ingest_file(corpus / "gemini_cli/synthetic_schema_coverage/agent-sessions_gemini_jsonl_v040.jsonl")
    assert report.status == "ok" and t.tool_calls()[0].command == "ls -F"
    assert t.model == "gemini-3-flash-preview"


def jsonl_from_real(corpus: Path, tmp_path: Path, extra: list[dict] | None = None) -> tuple[Path, dict]:
    """The real legacy recording rewritten as the current append log (metadata line + one message per line)."""
    data = record(corpus, REAL[1])
    meta = {k: v for k, v in data.items() if k != "messages"}
    lines = [meta]
    for message in data["messages"]:
        if message.get("toolCalls"):  # the recorder writes the message, then again with its tool calls
            lines.append({**message, "toolCalls": [{**c, "result": None, "status": "executing"}
                                                   for c in message["toolCalls"]]})
        lines.append(message)
        lines.append({"$set": {"lastUpdated": message["timestamp"]}})
    path = tmp_path / "session-2026-01-16T11-01-37b7abef.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [*lines, *(extra or [])]) + "\n")
    return path, data


def test_the_jsonl_log_replaces_messages_by_id(corpus: Path, tmp_path: Path) -> None:
    path, data = jsonl_from_real(corpus, tmp_path)
    report, [t] = ingest_file(path)
    assert report.status == "ok", report.errors
    _, [legacy] = ingest_file(corpus / CHATS / REAL[1])
    assert [(s.kind, s.text, s.exit_code, s.is_error) for s in t.steps] == \
        [(s.kind, s.text, s.exit_code, s.is_error) for s in legacy.steps]
    assert t.ended_at.isoformat().startswith(data["messages"][-1]["timestamp"][:19])


def test_rewind_drops_the_message_and_everything_after_it(corpus: Path, tmp_path: Path) -> None:
    data = record(corpus, REAL[1])
    target = next(m for m in data["messages"] if m["type"] == "user" and m["content"] == "create hello.md file")
    path, _ = jsonl_from_real(corpus, tmp_path, [{"$rewindTo": target["id"]}, {"$rewindTo": "no-such-message"}])
    report, [t] = ingest_file(path)
    users = [s.text for s in t.steps if s.kind is StepKind.USER]
    assert users == ["show tools", "expore repository and figure out issues. focus on adaptability and security"]
    assert not any(c.tool == "write_file" for c in t.tool_calls())
    assert report.status == "partial"
    assert "not in the session" in report.errors[0].reason and report.errors[0].line is not None


def test_bad_shapes_are_reported_per_line(corpus: Path, tmp_path: Path) -> None:
    path, _ = jsonl_from_real(corpus, tmp_path)
    lines = path.read_text().splitlines()
    number = next(i for i, line in enumerate(lines) if '"toolCalls"' in line and '"executing"' not in line)
    broken = json.loads(lines[number])
    broken["toolCalls"] = "not a list"
    lines[number] = json.dumps(broken)
    lines.append('{"id": "cut-off", "type": "user", "con')  # truncated last line
    path.write_text("\n".join(lines))
    report, [t] = ingest_file(path)
    assert report.status == "partial"
    reasons = {e.line: e.reason for e in report.errors}
    assert "truncated last line" in reasons[len(lines)]
    assert reasons[number + 1] == "a 'gemini' message: 'toolCalls' should be list, found str"
    assert len(t.tool_calls()) >= 4  # the other messages' calls are kept
