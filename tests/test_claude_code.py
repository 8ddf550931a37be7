"""Claude Code sessions: the real files in ../shared/trajectories/claude_code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.ingest import ingest_file
from pipeline.trajectory import StepKind, Trajectory

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
INLINE = "claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
SHORT = "codemie-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"


def entries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def blocks(entry: dict) -> list[dict]:
    content = (entry.get("message") or {}).get("content")
    return content if isinstance(content, list) else []


def raw_tool_uses(path: Path) -> tuple[set[str], set[str]]:
    """Tool use ids and tool result ids, counted straight from the JSON lines."""
    uses, results = set(), set()
    for entry in entries(path):
        for block in blocks(entry):
            if block.get("type") == "tool_use":
                uses.add(block["id"])
            elif block.get("type") == "tool_result":
                results.add(block["tool_use_id"])
    return uses, results


def raw_agents(path: Path) -> int:
    """How many agents wrote the file: the main one, plus one per inline sidechain root or agent id."""
    main, roots, agent_ids = False, 0, set()
    for entry in entries(path):
        if entry.get("type") not in ("user", "assistant"):
            continue
        if not entry.get("isSidechain"):
            main = True
        elif entry.get("agentId"):
            agent_ids.add(entry["agentId"])
        elif entry.get("parentUuid") is None:
            roots += 1
    return int(main) + roots + len(agent_ids)


def assert_paired(trajectory: Trajectory) -> None:
    assert [s.index for s in trajectory.steps] == list(range(len(trajectory.steps)))
    for step in trajectory.steps:
        if step.kind is StepKind.TOOL_RESULT and step.call_index is not None:
            call = trajectory.steps[step.call_index]
            assert call.kind is StepKind.TOOL_CALL and call.call_id == step.call_id
            assert call.result_index == step.index
        if step.kind is StepKind.TOOL_CALL and step.result_index is not None:
            assert trajectory.steps[step.result_index].call_index == step.index


@pytest.mark.parametrize("name", REAL)
def test_every_real_session_parses_with_all_its_tool_calls(corpus: Path, name: str) -> None:
    path = corpus / "claude_code" / name
    report, trajectories = ingest_file(path)
    assert report.status == "ok", report.errors
    assert report.format == "claude-code"
    assert len(trajectories) == raw_agents(path)
    uses, results = raw_tool_uses(path)
    calls = [c.call_id for t in trajectories for c in t.tool_calls()]
    assert sorted(calls) == sorted(uses), "every tool call exactly once, across the file's trajectories"
    paired = [s for t in trajectories for s in t.steps if s.kind is StepKind.TOOL_RESULT and s.call_index is not None]
    assert len(paired) == len(results & uses)
    for trajectory in trajectories:
        assert_paired(trajectory)
    assert [r.id for r in report.trajectories] == [t.id for t in trajectories]


def test_header_fields_and_task(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "claude_code" / SHORT)
    assert t.agent == "claude-code" and t.source_format == "claude-code"
    assert t.session_id == "4c2ddfdc-b619-4525-8d03-1950fb1b0257" and t.parent_session_id is None
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


def test_inline_sidechains_become_subagent_trajectories_linked_to_their_task_call(corpus: Path) -> None:
    path = corpus / "claude_code" / INLINE
    parent, *subagents = ingest_file(path)[1]
    assert parent.task == "/orchestrator create TODO app by Next.js"
    assert parent.parent_session_id is None and not any(s.sidechain for s in parent.steps)
    prompts = [c for c in parent.tool_calls() if c.tool == "Task"]
    task_prompts = {}
    for entry in entries(path):
        for block in blocks(entry):
            if block.get("type") == "tool_use" and block["name"] == "Task":
                task_prompts[block["id"]] = block["input"]["prompt"]
    assert len(subagents) == len(prompts) == len(task_prompts) == 5
    assert sorted(t.task for t in subagents) == sorted(p.strip() for p in task_prompts.values())
    for child in subagents:
        assert child.parent_session_id == parent.session_id == "fe5e1c67-53e7-4862-81ae-d0e013e3270b"
        assert child.session_id.startswith("sidechain-")
        assert all(s.sidechain for s in child.steps)
        assert child.tool_calls(), "the subagent's own work is in its trajectory"
    # The subagent's final report is the result of the parent's Task call.
    for call in prompts:
        assert parent.result_of(call) is not None and parent.result_of(call).text


def test_agent_file_beside_the_session_is_linked_to_it(corpus: Path) -> None:
    folder = corpus / "claude_code/codemie-code/-tmp-private"
    _, [child] = ingest_file(folder / "agent-36541525.jsonl")
    _, [parent] = ingest_file(folder / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl")
    assert child.session_id == "agent-36541525"
    assert child.parent_session_id == parent.session_id
    assert child.task == "Warmup" and all(s.sidechain for s in child.steps)


def test_subagents_folder_is_linked_to_the_session_and_its_task_call(corpus: Path) -> None:
    folder = corpus / "claude_code/codemie-code/incremental-subagents"
    _, [parent] = ingest_file(folder / "turn-2.jsonl")
    _, [child] = ingest_file(folder / "turn-2/subagents/agent-a485154.jsonl")
    assert child.parent_session_id == parent.session_id == "e9fb405b-169f-40eb-9396-7e75076f045d"
    # The parent's Task result names the agent: that is the child's session id.
    task_results = [e["toolUseResult"] for e in entries(folder / "turn-2.jsonl")
                    if isinstance(e.get("toolUseResult"), dict) and "agentId" in e["toolUseResult"]]
    assert [f"agent-{r['agentId']}" for r in task_results] == [child.session_id]
    assert child.task == task_results[0]["prompt"].strip()
    assert len(child.tool_calls()) == task_results[0]["totalToolUseCount"] == 20
    assert child.model == "claude-sonnet-4-5-20250929"


def test_slash_command_session_keeps_the_real_request(corpus: Path) -> None:
    _, trajectories = ingest_file(corpus / "claude_code" / INLINE)
    assert trajectories[0].task == "/orchestrator create TODO app by Next.js"


def test_clear_is_not_the_task(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "claude_code/codemie-code/session-196820da.jsonl")
    assert t.task and not t.task.startswith("/clear")


def test_compact_summary_is_not_a_request(corpus: Path) -> None:
    path = corpus / "claude_code/codemie-code/session-624a4a58.jsonl"
    _, [t] = ingest_file(path)
    summary = [s for s in t.steps if s.text.startswith("This session is being continued")]
    assert len(summary) == 1 and summary[0].meta and summary[0].kind is StepKind.USER
    assert t.task.startswith("@src/providers/plugins/sso/ARCHITECTURE-REFACTORING.md")
    boundary = next(i for i, e in enumerate(entries(path)) if e.get("subtype") == "compact_boundary")
    after = [e for e in entries(path)[boundary:] for b in blocks(e) if b.get("type") == "tool_use"]
    assert after and {b["id"] for e in after for b in blocks(e) if b.get("type") == "tool_use"} <= {
        c.call_id for c in t.tool_calls()}, "work after the compaction is kept"


def test_bash_exit_codes_come_from_the_result_text(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "claude_code/codemie-code/session-196820da.jsonl")
    results = [s for s in t.steps if s.kind is StepKind.TOOL_RESULT and s.tool == "Bash"]
    failed = [s for s in results if s.exit_code]
    assert failed and all(s.text.startswith("Exit code") and s.is_error for s in failed)
    assert all(s.exit_code == 0 for s in results if not s.is_error)


def test_permission_denials_and_tool_use_errors_are_errors_without_an_exit_code(corpus: Path) -> None:
    _, [denied] = ingest_file(corpus / "claude_code/codemie-code/session-9eda1058.jsonl")
    [result] = [s for s in denied.steps if s.text.startswith("The user doesn't want to proceed")]
    assert result.is_error and result.exit_code is None and result.call_index is not None
    _, trajectories = ingest_file(corpus / "claude_code" / INLINE)
    invalid = [s for t in trajectories for s in t.steps if s.text.startswith("<tool_use_error>")]
    raw = [b for e in entries(corpus / "claude_code" / INLINE) for b in blocks(e)
           if b.get("type") == "tool_result" and str(b.get("content")).startswith("<tool_use_error>")]
    assert len(invalid) == len(raw) > 10
    assert all(s.is_error and s.exit_code is None for s in invalid)


def test_tool_use_result_as_a_string_is_the_result_text(corpus: Path, tmp_path: Path) -> None:
    # Failed calls carry "Error: ..." in toolUseResult; here the block's own content is gone.
    source = corpus / "claude_code/codemie-code/session-3fe1b6bc.jsonl"
    lines = []
    for entry in entries(source):
        if isinstance(entry.get("toolUseResult"), str):
            for block in blocks(entry):
                block.pop("content", None)
        lines.append(json.dumps(entry))
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n")
    _, [t] = ingest_file(path)
    failed = [s for s in t.steps if s.kind is StepKind.TOOL_RESULT and s.is_error]
    strings = [e["toolUseResult"] for e in entries(source) if isinstance(e.get("toolUseResult"), str)]
    assert len(failed) == len(strings) == 5
    assert sorted(s.text for s in failed) == sorted(strings)


def test_a_rewound_branch_is_left_out_and_nothing_is_read_twice(corpus: Path, tmp_path: Path) -> None:
    source = corpus / "claude_code" / SHORT
    original = entries(source)
    prompts = [e for e in original if e.get("type") == "user" and isinstance(e["message"]["content"], str)]
    assert [p["message"]["content"] for p in prompts][:2] == ["create hello.py, md and js", "update py with one liner comment"]
    rewound = prompts[1]
    # The person rewinds to before their second request and asks something else.
    retry = dict(rewound, uuid="rewind-user-1", timestamp="2025-12-10T20:00:00.000Z",
                 message={"role": "user", "content": "delete every file instead"})
    answer = {**next(e for e in original if e.get("type") == "assistant"), "uuid": "rewind-assistant-1",
              "parentUuid": "rewind-user-1", "timestamp": "2025-12-10T20:00:05.000Z",
              "message": {"id": "msg_rewind", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                          "content": [{"type": "text", "text": "Deleting them."}]}}
    path = tmp_path / "rewound.jsonl"
    # Every original line twice (a session written again must not double its steps), then the rewind.
    text = source.read_text(encoding="utf-8")
    path.write_text(text + text + json.dumps(retry) + "\n" + json.dumps(answer) + "\n")
    report, [t] = ingest_file(path)
    _, [whole] = ingest_file(source)
    assert report.status == "ok", report.errors
    user_texts = [s.text for s in t.steps if s.kind is StepKind.USER]
    assert "update py with one liner comment" not in user_texts
    assert user_texts[-1] == "delete every file instead" and t.steps[-1].text == "Deleting them."
    cut = next(s.index for s in whole.steps if s.text == "update py with one liner comment")
    assert [s.text for s in t.steps[:cut]] == [s.text for s in whole.steps[:cut]]
    assert len(t.steps) == cut + 2
    assert_paired(t)


def test_parallel_tool_results_are_not_mistaken_for_rewinds(corpus: Path) -> None:
    # 2.1.x hangs each parallel tool result under its own tool_use line: the tree branches.
    path = corpus / "claude_code/codemie-code/incremental-subagents/turn-2.jsonl"
    parents = [e.get("parentUuid") for e in entries(path) if e.get("uuid")]
    assert len(parents) != len(set(parents)), "this session's tree does branch"
    _, [t] = ingest_file(path)
    assert all(t.result_of(c) is not None for c in t.tool_calls())


def test_2_1_entry_types_are_skipped_and_superseded_replies_dropped(corpus: Path) -> None:
    # A 22-type catalog up to Claude Code 2.1.220, most of which we do not use.
    report, trajectories = ingest_file(corpus / "claude_code/synthetic_schema_coverage/agent-sessions_claude_small.jsonl")
    assert report.status == "ok" and trajectories
    texts = [s.text for t in trajectories for s in t.steps]
    assert "Done." not in texts, "superseded by the aborted reply"
    assert "Partial reply" not in texts, "retracted by the API refusal"
    assert "Summary of prior context." in texts, "what followed a retracted reply still happened"
    summary = next(s for t in trajectories for s in t.steps if s.text == "Summary of prior context.")
    assert summary.meta
    denial = next(s for t in trajectories for s in t.steps if s.text.startswith("The user doesn't want"))
    assert denial.is_error and denial.exit_code is None


def test_long_outputs_are_truncated_with_their_size_kept(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "claude_code/codemie-code/session-624a4a58.jsonl")
    long = [s for s in t.steps if s.text_size > len(s.text)]
    assert long, "this session has large tool outputs"
    assert all("characters elided" in s.text for s in long)


def test_edit_diffs_come_from_the_applied_patch_or_else_from_the_arguments(corpus: Path) -> None:
    path = corpus / "claude_code" / INLINE
    patches = {}
    for entry in entries(path):
        result = entry.get("toolUseResult")
        for block in blocks(entry):
            if block.get("type") == "tool_result" and isinstance(result, dict) and result.get("structuredPatch"):
                patches[block["tool_use_id"]] = result["structuredPatch"]
    trajectories = ingest_file(path)[1]
    edits = [c for t in trajectories for c in t.tool_calls() if c.tool in ("Edit", "MultiEdit")]
    applied = [c for c in edits if c.call_id in patches]
    attempted = [c for c in edits if c.call_id not in patches]
    assert applied and attempted, "this session has both"
    for call in applied:
        hunk = patches[call.call_id][0]
        assert f"@@ -{hunk['oldStart']},{hunk['oldLines']} +{hunk['newStart']},{hunk['newLines']} @@" in call.diff
    for call in attempted:  # refused edits ("File has not been read yet") changed nothing
        assert call.diff is None
        assert any(s.call_id == call.call_id and s.is_error for t in trajectories for s in t.steps)
