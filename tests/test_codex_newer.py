"""Codex 0.118+ rollout records: world_state, tool_search_call, image_generation_call, an MCP call
known only from its mcp_tool_call_end, turn_aborted, error, thread_name_updated, forks.

The real 0.125 / 0.128 rollouts (tests/test_codex.py) hold custom_tool_call apply_patch and
web_search_call; the newer records are only in agent-sessions' catalog of rollout item types
(``codex/synthetic_schema_coverage/agent-sessions_codex_small.jsonl``, cli 0.146). Its lines 1-25
are one coherent turn (the rest reuse trimmed ids), so the tests read those lines.
"""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.ingest import ingest_file
from pipeline.trajectory import StepKind

SMALL = "codex/synthetic_schema_coverage/agent-sessions_codex_small.jsonl"


def head(corpus: Path, tmp_path: Path, edit=None, name: str = "rollout-head.jsonl") -> Path:
    lines = (corpus / SMALL).read_text().splitlines()[:25]
    records = [json.loads(line) for line in lines]
    if edit is not None:
        records = edit(records)
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_the_newer_items_are_tool_calls(corpus: Path, tmp_path: Path) -> None:
    path = head(corpus, tmp_path)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    items = [r["payload"] for r in records if r["type"] == "response_item"]
    calls = [i for i in items if i["type"] in ("custom_tool_call", "function_call", "tool_search_call",
                                               "web_search_call")]
    known = {i.get("call_id") for i in calls}
    mcp = [r["payload"] for r in records if r["payload"].get("type") == "mcp_tool_call_end"
           and r["payload"]["call_id"] not in known]
    # jq: lines 9, 10, 12, 14 are calls; line 16 an mcp_tool_call_end (call-5) without its function_call
    assert (len(calls), len(mcp)) == (4, 1)
    report, [t] = ingest_file(path)
    assert (report.status, report.format) == ("ok", "codex")
    assert [c.tool for c in t.tool_calls()] == ["shell", "shell", "tool_search", "web_search",
                                                 "mcp__example__example_tool"]
    search = t.tool_calls()[2]
    assert t.result_of(search).text == "tools found: example_tool"
    mcp_call = t.tool_calls()[4]
    assert mcp_call.call_id == "call-5" and t.result_of(mcp_call).is_error is False
    assert '"title":"example"' in mcp_call.text
    # world_state adds no step; the interrupted turn is a meta step the distiller can see
    assert [s.text for s in t.steps if s.kind is StepKind.USER] == ["List the files", "[turn aborted: interrupted]"]
    assert t.task == "List the files" and t.agent_version == "0.146.0"


def test_an_mcp_call_with_its_function_call_is_read_once(corpus: Path, tmp_path: Path) -> None:
    def with_call(records: list[dict]) -> list[dict]:
        call = {"timestamp": records[15]["timestamp"], "type": "response_item",
                "payload": {"type": "function_call", "name": "mcp__example__example_tool", "call_id": "call-5",
                            "arguments": json.dumps({"title": "example"})}}
        end = records[15]
        end["payload"]["result"] = {"Err": "tool failed"}
        return [*records[:15], call, end, *records[16:]]

    _, [t] = ingest_file(head(corpus, tmp_path, with_call))
    [mcp] = [c for c in t.tool_calls() if c.call_id == "call-5"]
    assert mcp.tool == "mcp__example__example_tool"
    assert len(t.tool_calls()) == 5


def test_errors_and_the_thread_name(corpus: Path, tmp_path: Path) -> None:
    def nameless(records: list[dict]) -> list[dict]:
        kept = [r for r in records if r["payload"].get("type") not in ("user_message", "message")]
        stamp = records[0]["timestamp"]
        return [*kept[:3], {"timestamp": stamp, "type": "event_msg",
                            "payload": {"type": "thread_name_updated", "thread_id": "t", "thread_name": "List files"}},
                *kept[3:], {"timestamp": stamp, "type": "event_msg",
                            "payload": {"type": "error", "message": "stream disconnected before completion"}}]

    _, [t] = ingest_file(head(corpus, tmp_path, nameless))
    assert t.task == "List files"  # no prompt in the file: the thread's name
    assert t.steps[-1].meta and t.steps[-1].text == "[turn ended on an error] stream disconnected before completion"


def test_a_fork_keeps_its_own_id_and_names_its_parent(corpus: Path, tmp_path: Path) -> None:
    def forked(records: list[dict]) -> list[dict]:
        meta = records[0]
        meta["payload"]["forked_from_id"] = "019fc8be-1111-7000-8000-000000000000"
        parent = json.loads(json.dumps(meta))
        parent["payload"].update(id="019fc8be-1111-7000-8000-000000000000", cli_version="0.140.0")
        del parent["payload"]["forked_from_id"]
        return [meta, parent, *records[1:]]

    _, [t] = ingest_file(head(corpus, tmp_path, forked))
    assert t.session_id == "019fc8be-3658-7ca3-9e29-000000000000"
    assert t.parent_session_id == "019fc8be-1111-7000-8000-000000000000" and t.agent_version == "0.146.0"


def test_the_whole_catalog_reads_without_errors(corpus: Path) -> None:
    report, [t] = ingest_file(corpus / SMALL)
    assert report.status == "ok" and not report.errors
    assert {"tool_search", "image_generation", "web_search"} <= {c.tool for c in t.tool_calls()}


# -- codex exec --json --------------------------------------------------------------------------
# No capture of `codex exec --json` is in ../shared/trajectories; tests/fixtures/codex_exec_json/
# is written from codex-rs exec/src/exec_events.rs (ThreadEvent, ThreadItem and its details).
EXEC = Path(__file__).parent / "fixtures" / "codex_exec_json" / "fix-rounding.jsonl"
TOOL_ITEMS = {"command_execution", "file_change", "mcp_tool_call", "collab_tool_call", "web_search"}


def exec_events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_codex_exec_capture_is_one_run_with_its_items_as_calls(tmp_path: Path) -> None:
    events = exec_events(EXEC)
    items = {e["item"]["id"]: e["item"]["type"] for e in events if e["type"].startswith("item.")}
    tools = [i for i, kind in items.items() if kind in TOOL_ITEMS]
    # 5 tool items (2 commands, a web search, an MCP call, a file change); started + completed is one call
    assert len(tools) == 5
    path = tmp_path / EXEC.name
    path.write_bytes(EXEC.read_bytes())
    report, [t] = ingest_file(path)
    assert (report.status, report.format) == ("ok", "codex-exec-json")
    assert [c.call_id for c in t.tool_calls()] == tools
    assert [c.tool for c in t.tool_calls()] == ["exec_command", "web_search", "mcp__github__get_issue", "apply_patch",
                                                 "exec_command"]
    first, _, mcp, patch, last = t.tool_calls()
    assert first.command == "npm test -- --run ledger.test.ts"  # out of its /bin/bash -lc wrapper
    assert (t.result_of(first).exit_code, t.result_of(first).is_error) == (1, True)
    assert t.result_of(last).exit_code == 0
    assert t.result_of(mcp).is_error and t.result_of(mcp).text == "issue 12 not found"
    assert patch.paths == ["src/money.ts"]
    assert t.session_id == "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5" and t.agent == "codex"
    # reasoning and the to-do list are not steps; the two agent messages are
    assert [s.kind for s in t.steps].count(StepKind.ASSISTANT) == 2


def test_a_failed_turn_fails_the_run(tmp_path: Path) -> None:
    lines = EXEC.read_text().splitlines()
    path = tmp_path / "failed.jsonl"
    failed = {"type": "turn.failed", "error": {"message": "stream error: exceeded retry limit"}}
    path.write_text("\n".join([*lines[:6], json.dumps(failed)]) + "\n")
    _, [t] = ingest_file(path)
    assert t.outcome.status == "failed" and "exceeded retry limit" in t.outcome.evidence
    assert t.steps[-1].meta and len(t.tool_calls()) == 1


def test_the_first_experimental_json_spelling_is_read(tmp_path: Path) -> None:
    path = tmp_path / "experimental.jsonl"
    events = [{"type": "session.created", "session_id": "s-1"},
              {"type": "item.completed", "item": {"id": "item_0", "item_type": "command_execution",
                                                  "command": "bash -lc ls", "aggregated_output": "a.txt\n",
                                                  "exit_code": 0, "status": "completed"}},
              {"type": "item.completed", "item": {"id": "item_1", "item_type": "assistant_message", "text": "One file."}}]
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    report, [t] = ingest_file(path)
    assert report.format == "codex-exec-json" and t.session_id == "s-1"
    assert [c.command for c in t.tool_calls()] == ["ls"] and t.steps[-1].text == "One file."


def test_rollouts_are_not_taken_for_exec_captures(corpus: Path) -> None:
    for path in sorted((corpus / "codex").rglob("rollout-*.jsonl")):
        assert ingest_file(path)[0].format == "codex", path
