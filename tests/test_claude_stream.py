"""Claude Code headless captures (``claude -p --output-format stream-json``) and claude-code-action's
execution file (the same messages as one JSON array).

No real stream-json capture is in ../shared/trajectories: the one sample there is claude-code-action's
own fixture of its execution file (``claude_code_stream_json/synthetic_schema_coverage/``), read as
is. The JSONL form is ``tests/fixtures/claude_stream_json/ci-run.jsonl``, written from the Agent SDK's
``SDKMessage`` types (a ``hook_response`` before ``init``, a ``stream_event`` partial message, a
subagent's messages under ``parent_tool_use_id``, ``tool_use_result`` and ``permission_denials``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pipeline.ingest import ingest_file
from pipeline.trajectory import StepKind
from tests.conftest import TRAJECTORIES

SHARED = (TRAJECTORIES or Path("/nonexistent")) / "claude_code_stream_json"
ACTION = SHARED / "synthetic_schema_coverage" / "claude-code-action_sample-turns.json"
CAPTURE = Path(__file__).parent / "fixtures" / "claude_stream_json" / "ci-run.jsonl"


def tool_uses(messages: list[dict]) -> list[tuple[str | None, str]]:
    """(parent_tool_use_id, tool_use id) of every tool_use block, counted from the raw messages."""
    return [(m.get("parent_tool_use_id"), block["id"]) for m in messages if m.get("type") == "assistant"
            for block in m["message"]["content"] if block.get("type") == "tool_use"]


def test_the_action_s_execution_file_is_read_as_one_run() -> None:
    messages = json.loads(ACTION.read_text())
    # jq '[.[]|select(.type=="assistant")|.message.content[]|select(.type=="tool_use")]|length' -> 3
    assert len(tool_uses(messages)) == 3
    report, [run] = ingest_file(ACTION)
    assert (report.status, report.format) == ("ok", "claude-code-stream-json")
    assert [c.call_id for c in run.tool_calls()] == [i for _, i in tool_uses(messages)]
    assert [c.tool for c in run.tool_calls()] == ["Read", "Edit", "mcp__github__add_pull_request_review_comment"]
    assert all(run.result_of(c) is not None and not run.result_of(c).is_error for c in run.tool_calls())
    assert run.session_id == "sample-session-id" and run.model == "claude-test-model"
    assert run.source_format == "claude-code-stream-json" and run.agent == "claude-code"


def test_a_stream_json_capture_with_a_subagent(tmp_path: Path) -> None:
    messages = [json.loads(line) for line in CAPTURE.read_text().splitlines() if line.strip()]
    raw = tool_uses(messages)
    # 6 tool_use blocks: 5 of the main agent, 1 (Grep) of the Task subagent toolu_02
    assert len(raw) == 6 and [i for p, i in raw if p] == ["toolu_s1"]
    path = tmp_path / CAPTURE.name
    shutil.copy(CAPTURE, path)
    report, [main, sub] = ingest_file(path)
    assert (report.status, report.format) == ("ok", "claude-code-stream-json")
    assert [c.call_id for c in main.tool_calls()] == [i for p, i in raw if not p]
    assert [c.tool for c in main.tool_calls()] == ["Bash", "Task", "Edit", "Bash", "Bash"]
    assert [c.tool for c in sub.tool_calls()] == ["Grep"]
    assert sub.parent_session_id == main.session_id == "4f1c2d3e-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
    assert sub.task == "Find where ledger balances are rounded and report the function"
    assert main.cwd == "/home/runner/work/ledger/ledger" and main.agent_version == "2.1.73"
    assert main.model == "claude-sonnet-4-6"
    first, *_, denied, again = main.tool_calls()
    assert main.result_of(first).is_error and not main.result_of(again).is_error
    assert main.result_of(denied).is_error and main.result_of(denied).protocol_error
    # the partial message (stream_event) adds no text of its own
    assert not any(s.text == "Let me" for s in main.steps)


def test_a_run_stopped_by_its_turn_limit_is_failed(tmp_path: Path) -> None:
    lines = CAPTURE.read_text().splitlines()
    result = json.loads(lines[-1])
    result.update(subtype="error_max_turns", is_error=True, errors=["Reached maximum number of turns (7)"])
    path = tmp_path / "max-turns.jsonl"
    path.write_text("\n".join([*lines[:-1], json.dumps(result)]) + "\n")
    _, [main, _sub] = ingest_file(path)
    assert main.outcome.status == "failed"
    assert main.steps[-1].kind is StepKind.USER and "error_max_turns" in main.steps[-1].text


def test_a_capture_cut_before_the_model_answered_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_text("\n".join(CAPTURE.read_text().splitlines()[:2]) + "\n")
    report, trajectories = ingest_file(path)
    assert (report.format, report.status, trajectories) == ("claude-code-stream-json", "skipped", [])


def test_a_claude_code_transcript_is_not_taken_for_a_capture() -> None:
    session = (TRAJECTORIES or Path("/nonexistent")) / "claude_code"
    report, _ = ingest_file(session / "codemie-code" / "session-196820da.jsonl")
    assert report.format == "claude-code"


def test_message_types_of_newer_releases_are_skipped_not_fatal(tmp_path: Path) -> None:
    lines = CAPTURE.read_text().splitlines()
    newer = [json.dumps({"type": "rate_limit_event", "rate_limit_info": {"status": "allowed"}, "uuid": "u-rl"}),
             json.dumps({"type": "tool_use_summary", "summary": "Ran the ledger tests", "uuid": "u-ts"})]
    path = tmp_path / "newer.jsonl"
    path.write_text("\n".join([lines[0], *newer, *lines[1:]]) + "\n")
    report, [main, sub] = ingest_file(path)
    assert (report.status, report.format) == ("ok", "claude-code-stream-json")
    assert len(main.tool_calls()) == 5 and len(sub.tool_calls()) == 1
