"""Gemini CLI bare histories (``[{role, parts}]``, what ``/chat save`` writes to ``checkpoint-<tag>.json``,
newer releases as ``{"history": [...]}``) and the named project folders with ``.project_root``.

No saved chat is in ../shared/trajectories. The real recording
``gemini_cli/codemie-code/chats/session-2026-01-16T11-01-file-ops-37b7abef.json`` is turned into the
history the CLI sent the model for it (its tool records hold the very ``functionResponse`` parts), and
``tests/fixtures/gemini_cli/inventory-api/`` is a named project folder with a saved chat written
from gemini-cli's ``Logger.saveCheckpoint`` / ``Content`` types (ids on some calls, not on others).
"""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.ingest import ingest_file
from pipeline.trajectory import StepKind

REAL = "gemini_cli/codemie-code/chats/session-2026-01-16T11-01-file-ops-37b7abef.json"
SAVED = Path(__file__).parent / "fixtures" / "gemini_cli" / "inventory-api" / "checkpoint-fix-pagination.json"


def history_of(recording: dict) -> list[dict]:
    """The Content list of a recording: model turns with functionCall parts, then the functionResponse parts."""
    history = []
    for message in recording["messages"]:
        text = message["content"] if isinstance(message["content"], str) else " ".join(
            p.get("text", "") for p in message["content"])
        if message["type"] == "user":
            history.append({"role": "user", "parts": [{"text": text}]})
        elif message["type"] == "gemini":
            calls = message.get("toolCalls") or []
            history.append({"role": "model", "parts": [*([{"text": text}] if text else []),
                                                       *({"functionCall": {"id": c["id"], "name": c["name"],
                                                                           "args": c["args"]}} for c in calls)]})
            if calls:
                history.append({"role": "user", "parts": [p for c in calls for p in c["result"]]})
    return history


def test_a_saved_history_reads_like_the_recording_it_came_from(corpus: Path, tmp_path: Path) -> None:
    recording = json.loads((corpus / REAL).read_text())
    raw_calls = [c for m in recording["messages"] for c in m.get("toolCalls") or []]
    assert len(raw_calls) == 14  # jq '[.messages[].toolCalls[]?] | length'
    _, [legacy] = ingest_file(corpus / REAL)
    for name, document in (("checkpoint-old.json", history_of(recording)),
                           ("checkpoint-new.json", {"history": history_of(recording), "authType": "oauth-personal"})):
        path = tmp_path / name
        path.write_text(json.dumps(document, indent=2))
        report, [t] = ingest_file(path)
        assert (report.status, report.format) == ("ok", "gemini-cli"), report.errors
        assert [c.call_id for c in t.tool_calls()] == [c["id"] for c in raw_calls]
        assert [(c.tool, c.command, c.paths) for c in t.tool_calls()] == \
            [(c.tool, c.command, c.paths) for c in legacy.tool_calls()]
        assert [(t.result_of(c).text, t.result_of(c).is_error) for c in t.tool_calls()] == \
            [(legacy.result_of(c).text, legacy.result_of(c).is_error) for c in legacy.tool_calls()]
        assert t.task == legacy.task


def test_a_saved_chat_in_a_named_project_folder(tmp_path: Path) -> None:
    document = json.loads(SAVED.read_text())
    calls = [p["functionCall"] for c in document["history"] if c["role"] == "model" for p in c["parts"]
             if "functionCall" in p]
    assert len(calls) == 4 and sum("id" not in c for c in calls) == 2
    report, [t] = ingest_file(SAVED)
    assert (report.status, report.format) == ("ok", "gemini-cli")
    assert [c.tool for c in t.tool_calls()] == ["search_file_content", "run_shell_command", "replace",
                                                 "run_shell_command"]
    first_test, last_test = t.tool_calls()[1], t.tool_calls()[3]
    assert (t.result_of(first_test).exit_code, t.result_of(first_test).is_error) == (1, True)
    assert t.result_of(last_test).exit_code == 0 and "2 passed" in t.result_of(last_test).text
    replace = t.tool_calls()[2]
    assert t.result_of(replace).text.startswith("Successfully modified file")
    assert "+    offset = (page - 1) * size" in replace.diff.splitlines()
    assert t.cwd == "/home/lena/src/inventory-api" and t.repo == "inventory-api"  # from .project_root
    assert t.task == "The /items endpoint returns the first page twice. Fix the pagination."
    opener = t.steps[0]
    assert opener.kind is StepKind.USER and opener.meta  # the CLI's own context, not the person
    assert not any("Locating the paginator" in s.text for s in t.steps)  # thought parts are not answers
    # without .project_root the directory named in the opening context is the cwd
    alone = tmp_path / SAVED.name
    alone.write_bytes(SAVED.read_bytes())
    _, [moved] = ingest_file(alone)
    assert moved.cwd == "/home/lena/src/inventory-api"


def test_an_empty_history_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint-empty.json"
    path.write_text('{"history": [], "authType": "gemini-api-key"}')
    report, trajectories = ingest_file(path)
    assert (report.format, report.status, trajectories) == ("gemini-cli", "skipped", [])
