"""Continue.dev sessions: the real ones in ../shared/trajectories/continue (Dec 2024, chat mode).

The three sessions hold no tool call: ``grep -c toolCall <session>.json`` is 0 for each, and no
history item has ``toolCallState``; the counts of user and assistant messages are taken from the
raw ``history`` inside the tests. Agent mode (2025) is checked on one of them with the documented
``toolCalls`` / ``toolCallState`` / ``role: "tool"`` fields added.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline.ingest import ingest_file, iter_files
from pipeline.plugins import registered_formats
from pipeline.trajectory import StepKind

SESSIONS = "continue/developer/.continue/sessions"
REAL = ["435181c8-70d7-44f4-a410-159d1724cb1c", "7bc6e275-126c-4a65-ab0a-0607c64789f9",
        "a8daad33-c769-4a45-a45e-82799229541f"]


def raw(corpus: Path, name: str) -> dict:
    return json.loads((corpus / SESSIONS / f"{name}.json").read_text(encoding="utf-8"))


def dates(corpus: Path) -> dict[str, int]:
    index = json.loads((corpus / SESSIONS / "sessions.json").read_text(encoding="utf-8"))
    return {e["sessionId"]: int(e["dateCreated"]) for e in index}


@pytest.mark.parametrize("name", REAL)
def test_every_real_session_is_read(corpus: Path, name: str) -> None:
    report, [t] = ingest_file(corpus / SESSIONS / f"{name}.json")
    assert (report.format, report.status) == ("continue", "ok"), report.errors
    session = raw(corpus, name)
    assert "toolCall" not in (corpus / SESSIONS / f"{name}.json").read_text(encoding="utf-8")
    assert t.tool_calls() == []
    history = [item["message"] for item in session["history"]]
    users = [s for s in t.steps if s.kind is StepKind.USER and not s.meta]
    assert len(users) == sum(1 for m in history if m["role"] == "user")
    assert sum(1 for s in t.steps if s.kind is StepKind.ASSISTANT) == sum(1 for m in history if m["role"] == "assistant")
    assert (t.session_id, t.cwd, t.agent) == (name, session["workspaceDirectory"], "continue")
    assert t.started_at.timestamp() * 1000 == dates(corpus)[name]
    models = {log["completionOptions"]["model"] for item in session["history"] for log in item.get("promptLogs") or []}
    assert t.model in models


def test_attached_files_are_noted_and_the_highlighted_code_is_not_the_task(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / SESSIONS / "435181c8-70d7-44f4-a410-159d1724cb1c.json")
    notes = [s.text for s in t.steps if s.kind is StepKind.USER and s.meta]
    assert notes and "devcontainer.json (/workspaces/EVOLUTION/.devcontainer/devcontainer.json)" in notes[0]
    _, [t] = ingest_file(corpus / SESSIONS / "7bc6e275-126c-4a65-ab0a-0607c64789f9.json")
    assert t.task.startswith("Please explain the cause of this error and how to solve it:")
    assert t.task.endswith("(in model.py (4-10))")
    assert t.steps[0].text.lstrip().startswith("```py model.py (4-10)"), "the step keeps the code"


def test_the_index_is_skipped_and_the_hidden_sessions_folder_is_walked(corpus: Path) -> None:
    found = list(iter_files([corpus / "continue"]))
    assert sorted(p.stem for p in found if p.parent.name == "sessions") == sorted([*REAL, "sessions"])
    report, trajectories = ingest_file(corpus / SESSIONS / "sessions.json")
    assert (report.format, report.status, trajectories) == ("continue", "skipped", [])
    assert "session index" in report.errors[0].reason


def test_agent_mode_tool_calls_and_their_states(corpus: Path, tmp_path: Path) -> None:
    session = raw(corpus, "7bc6e275-126c-4a65-ab0a-0607c64789f9")
    command = {"id": "call_1", "type": "function",
               "function": {"name": "run_terminal_command", "arguments": json.dumps({"command": "pip install watchdog"})}}
    edit = {"id": "call_2", "type": "function", "function": {"name": "single_find_and_replace", "arguments": json.dumps(
        {"filepath": "model.py", "old_string": "import requests", "new_string": "import requests\nimport watchdog"})}}
    read = {"id": "call_3", "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"filepath": "setup.py"})}}
    session["history"][1:1] = [
        {"message": {"role": "assistant", "content": "Installing it.", "toolCalls": [command, edit, read]},
         "contextItems": [], "toolCallStates": [
             {"toolCallId": "call_1", "toolCall": command, "status": "done", "parsedArgs": {},
              "output": [{"name": "Terminal", "description": "pip", "content": "ERROR: No matching distribution",
                          "status": "Command failed with exit code 1"}]},
             {"toolCallId": "call_2", "toolCall": edit, "status": "errored", "output": [
                 {"name": "Tool Call Error", "description": "single_find_and_replace",
                  "content": 'Edit at index 0: string not found in file: "import requests"'}]},
             {"toolCallId": "call_3", "toolCall": read, "status": "calling"}]},
        {"message": {"role": "tool", "toolCallId": "call_1", "content": "ERROR: No matching distribution"},
         "contextItems": []}]
    path = tmp_path / "sessions" / "7bc6e275-126c-4a65-ab0a-0607c64789f9.json"
    path.parent.mkdir()
    path.write_text(json.dumps(session))
    shutil.copy(corpus / SESSIONS / "sessions.json", path.parent)
    report, [t] = ingest_file(path)
    assert report.status == "ok", report.errors
    first, second, third = t.tool_calls()
    assert (first.tool, first.command, first.call_id) == ("run_terminal_command", "pip install watchdog", "call_1")
    assert (t.result_of(first).exit_code, t.result_of(first).text) == (1, "ERROR: No matching distribution")
    assert second.paths == ["model.py"] and "+import watchdog" in second.diff
    assert t.result_of(second).is_error is True and t.result_of(second).protocol_error, "the agent's slip"
    assert not t.result_of(first).protocol_error, "a command that failed is the project's"
    assert t.result_of(third) is None, "still running when the session was saved"
    assert sum(1 for s in t.steps if s.kind is StepKind.TOOL_RESULT) == 2, "the tool message repeats call_1"


def test_formats_lists_continue_with_its_folder() -> None:
    [fmt] = [f for f in registered_formats() if f.name == "continue"]
    assert fmt.locations[0] == "${CONTINUE_GLOBAL_DIR:-~/.continue}/sessions/*.json"
