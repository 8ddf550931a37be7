"""OpenHands V1 (software-agent-sdk) conversations: ``base_state.json`` + ``events/event-NNNNN-<id>.json``.

No V1 conversation is in ../shared/trajectories (openhands/ holds V0 exports and output.jsonl rows).
``tests/fixtures/openhands_v1/conversations/<id>/`` is written from the SDK's event models
(``openhands/sdk/event/llm_convertible/{action,observation,message}.py``: ActionEvent with
``tool_call``, ObservationEvent with a TerminalObservation / FileEditorObservation, AgentErrorEvent)
and its persistence layout; the counts below are taken from those files, not from the reader.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pipeline.ingest import ingest_file

CONVERSATION = next((Path(__file__).parent / "fixtures" / "openhands_v1" / "conversations").iterdir())
BASE = CONVERSATION / "base_state.json"


def raw_events(folder: Path = CONVERSATION) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((folder / "events").glob("event-*.json"))]


def raw_calls(events: list[dict]) -> list[str]:
    """tool_call_id of every ActionEvent that is a tool call (finish and think are conversation)."""
    return [e["tool_call_id"] for e in events if e["kind"] == "ActionEvent" and e["tool_name"] not in ("finish", "think")]


def test_a_conversation_folder_is_one_trajectory() -> None:
    events = raw_events()
    assert len(events) == 16 and len(raw_calls(events)) == 5
    report, [t] = ingest_file(BASE)
    assert (report.status, report.format) == ("ok", "openhands-v1")
    assert [c.call_id for c in t.tool_calls()] == raw_calls(events)
    assert [c.tool for c in t.tool_calls()] == ["terminal", "file_editor", "file_editor", "view_image", "terminal"]
    first, edit, refused, unknown, last = t.tool_calls()
    assert first.command == "cd /workspace/project/tinycli && python -m pytest -q tests/test_cli.py"
    assert (t.result_of(first).exit_code, t.result_of(first).is_error) == (1, True)
    assert (t.result_of(last).exit_code, t.result_of(last).is_error) == (0, False)
    assert edit.paths == ["/workspace/project/tinycli/tinycli/cli.py"]
    assert '+    parser.add_argument("--verbose", action="store_true")' in edit.diff.splitlines()
    assert t.result_of(refused).is_error and t.result_of(refused).protocol_error  # the editor refused the edit
    assert t.result_of(unknown).is_error and t.result_of(unknown).protocol_error  # AgentErrorEvent: no such tool
    state = json.loads(BASE.read_text())
    assert t.session_id == state["id"] and t.model == state["agent"]["llm"]["model"]
    assert t.cwd == "/workspace/project/tinycli" and t.repo == "tinycli"
    assert t.task == "Add a --verbose flag to tinycli and make the tests pass."
    assert t.steps[-1].text == "Added a --verbose flag to tinycli; the CLI tests pass."  # finish's message
    assert t.outcome.status == "resolved"  # the last test run after the last edit passed


def test_an_event_file_alone_is_skipped_with_the_reason() -> None:
    event = sorted((CONVERSATION / "events").glob("event-*.json"))[2]
    report, trajectories = ingest_file(event)
    assert (report.format, report.status, trajectories) == ("openhands-v1", "skipped", [])
    assert "base_state.json" in report.errors[0].reason


def test_the_events_as_jsonl(tmp_path: Path) -> None:
    events = raw_events()
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    report, [t] = ingest_file(path)
    assert (report.status, report.format) == ("ok", "openhands-v1")
    assert [c.call_id for c in t.tool_calls()] == raw_calls(events)
    assert t.cwd == "/workspace/project/tinycli"  # from the terminal's metadata.working_dir


def test_an_errored_conversation_is_failed(tmp_path: Path) -> None:
    folder = tmp_path / CONVERSATION.name
    shutil.copytree(CONVERSATION, folder)
    state = json.loads((folder / "base_state.json").read_text())
    state["execution_status"] = "error"
    (folder / "base_state.json").write_text(json.dumps(state))
    _, [t] = ingest_file(folder / "base_state.json")
    assert t.outcome.status == "failed" and "error" in t.outcome.evidence
    # a ConversationErrorEvent says the same, with its detail
    state["execution_status"] = "finished"
    (folder / "base_state.json").write_text(json.dumps(state))
    error = {"id": "e-err", "timestamp": "2026-03-11T18:34:00", "source": "environment", "kind": "ConversationErrorEvent",
             "code": "LLMBadRequestError", "detail": "context window exceeded"}
    (folder / "events" / "event-00016-e-err.json").write_text(json.dumps(error))
    _, [t] = ingest_file(folder / "base_state.json")
    assert t.outcome.status == "failed" and t.steps[-1].text == "[conversation error] context window exceeded"


def test_v0_files_stay_v0(corpus: Path) -> None:
    for path in sorted((corpus / "openhands").rglob("*.json*")):
        if not path.name.startswith("SOURCES"):
            assert ingest_file(path)[0].format == "openhands", path


# -- V0 server store: sessions/<id>/event_cache/<start>-<end>.json pages + events/<n>.json ----------
def test_a_v0_session_store_is_read_from_its_first_cache_page(corpus: Path, tmp_path: Path) -> None:
    """The real export basic_gui_mode.json (18 events) laid out as the V0 server stores it: full pages
    in event_cache/ (5 events a page here, 25 in OpenHands), the events past the last page in events/."""
    export = corpus / "openhands" / "runtime_replay_trajs" / "basic_gui_mode.json"
    events = json.loads(export.read_text())
    session = tmp_path / "sessions" / "5c1e0b7e9d2f4a8c"
    (session / "event_cache").mkdir(parents=True)
    (session / "events").mkdir()
    for start in range(0, 15, 5):
        (session / "event_cache" / f"{start}-{start + 5}.json").write_text(json.dumps(events[start:start + 5]))
    for event in events:
        (session / "events" / f"{event['id']}.json").write_text(json.dumps(event))
    _, [whole] = ingest_file(export)
    report, [t] = ingest_file(session / "event_cache" / "0-5.json")
    assert (report.status, report.format) == ("ok", "openhands")
    assert [(s.kind, s.text) for s in t.steps] == [(s.kind, s.text) for s in whole.steps]
    assert len(t.tool_calls()) == len(whole.tool_calls()) > 0
    report, trajectories = ingest_file(session / "event_cache" / "5-10.json")
    assert (report.status, trajectories) == ("skipped", []) and "0-5.json" in report.errors[0].reason


def test_an_events_folder_without_its_base_state_is_read_from_its_first_event(tmp_path: Path) -> None:
    folder = tmp_path / "events"
    shutil.copytree(CONVERSATION / "events", folder)
    first, second, *_ = sorted(folder.glob("event-*.json"))
    report, [t] = ingest_file(first)
    assert (report.status, report.format) == ("ok", "openhands-v1")
    assert [c.call_id for c in t.tool_calls()] == raw_calls(raw_events(CONVERSATION))
    assert t.session_id is None and t.cwd == "/workspace/project/tinycli"
    report, trajectories = ingest_file(second)
    assert (report.status, trajectories) == ("skipped", [])
