"""Claude Code sessions: the real files in ../shared/trajectories/claude_code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.ingest import ingest_file
from pipeline.trajectory import StepKind

REAL = [
    "codemie-code/session-196820da.jsonl",
    "codemie-code/session-3fe1b6bc.jsonl",
    "codemie-code/session-624a4a58.jsonl",
    "codemie-code/session-9eda1058.jsonl",
    "codemie-code/incremental-simple/3fb74381-turn-2.jsonl",
    "codemie-code/incremental-subagents/turn-2.jsonl",
    "codemie-code/incremental-subagents/turn-2/subagents/agent-a485154.jsonl",
    "codemie-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
    "codemie-code/-tmp-private/agent-36541525.jsonl",
    "claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
    "claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
    "claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
]


def raw_tool_uses(path: Path) -> tuple[set[str], set[str]]:
    """Tool use ids and tool result ids, counted straight from the JSON lines."""
    uses, results = set(), set()
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        content = (entry.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                uses.add(block["id"])
            elif block.get("type") == "tool_result":
                results.add(block["tool_use_id"])
    return uses, results


@pytest.mark.parametrize("name", REAL)
def test_every_real_session_parses_with_all_its_tool_calls(corpus: Path, name: str) -> None:
    path = corpus / "claude_code" / name
    report, trajectories = ingest_file(path)
    assert report.status == "ok", report.errors
    assert report.format == "claude-code"
    assert len(trajectories) == 1
    trajectory = trajectories[0]
    uses, results = raw_tool_uses(path)
    calls = trajectory.tool_calls()
    assert {c.call_id for c in calls} == uses
    assert len(calls) == len(uses)
    paired = [s for s in trajectory.steps if s.kind is StepKind.TOOL_RESULT and s.call_index is not None]
    assert len(paired) == len(results & uses)
    for result in paired:  # pairing goes both ways
        call = trajectory.steps[result.call_index]
        assert call.kind is StepKind.TOOL_CALL and call.call_id == result.call_id
        assert call.result_index == result.index
    assert [s.index for s in trajectory.steps] == list(range(len(trajectory.steps)))


def test_header_fields_and_task(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "claude_code/codemie-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl")
    assert t.agent == "claude-code" and t.source_format == "claude-code"
    assert t.session_id == "4c2ddfdc-b619-4525-8d03-1950fb1b0257"
    assert t.cwd == "/tmp/private" and t.git_branch == "analytics-v2" and t.agent_version == "2.0.64"
    assert t.model == "claude-sonnet-4-5-20250929"
    assert t.task == "create hello.py, md and js"
    assert t.started_at is not None and t.ended_at is not None and t.started_at <= t.ended_at
    assert len(t.id) == 16
    commands = [s.command for s in t.tool_calls() if s.command]
    assert commands == ["rm hello.js"]
    edit = next(s for s in t.tool_calls() if s.tool == "Edit")
    assert edit.paths == ["/tmp/private/hello.py"]
    assert "+# Simple hello world program" in (edit.diff or "")


def test_slash_command_session_keeps_the_real_request(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "claude_code/claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
    assert t.task == "/orchestrator create TODO app by Next.js"
    assert any(s.sidechain for s in t.steps), "inline sidechain entries are kept and marked"


def test_clear_is_not_the_task(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "claude_code/codemie-code/session-196820da.jsonl")
    assert t.task and not t.task.startswith("/clear")


def test_bash_exit_codes_come_from_the_result_text(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "claude_code/codemie-code/session-196820da.jsonl")
    results = [s for s in t.steps if s.kind is StepKind.TOOL_RESULT and s.tool == "Bash"]
    failed = [s for s in results if s.exit_code]
    assert failed and all(s.text.startswith("Exit code") and s.is_error for s in failed)
    assert all(s.exit_code == 0 for s in results if not s.is_error)


def test_subagent_file_is_linked_to_its_parent(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "claude_code/codemie-code/-tmp-private/agent-36541525.jsonl")
    assert t.parent_session_id == "4c2ddfdc-b619-4525-8d03-1950fb1b0257"
    assert t.session_id == "agent-36541525"


def test_unknown_entry_types_are_skipped_not_fatal(corpus: Path) -> None:
    # A 22-type catalog up to Claude Code 2.1.220, most of which we do not use.
    report, trajectories = ingest_file(corpus / "claude_code/synthetic_schema_coverage/agent-sessions_claude_small.jsonl")
    assert report.status == "ok" and trajectories


def test_long_outputs_are_truncated_with_their_size_kept(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "claude_code/codemie-code/session-624a4a58.jsonl")
    long = [s for s in t.steps if s.text_size > len(s.text)]
    assert long, "this session has large tool outputs"
    assert all("characters elided" in s.text for s in long)
