"""Codex CLI rollouts: the real files in ../shared/trajectories/codex (0.77, 0.104 redacted, 0.125, 0.128)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from pipeline.distill import consolidate, distill
from pipeline.ingest import ingest_file
from pipeline.trajectory import StepKind

REAL = [
    "codemie-code/rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl",
    "codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
    "codemie-code/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl",
    "localpush_redacted/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl",
    "localpush_redacted/rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl",
    "localpush_redacted/rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl",
    "localpush_redacted/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
    "localpush_redacted/rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl",
    "localpush_redacted/rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
]
OLD = REAL[0]  # codex_exec 0.77: `shell` tool, JSON-in-string outputs
NEW = REAL[1]  # codex-tui 0.125: unified exec, exit codes in exec_command_end, apply_patch
DESKTOP = REAL[2]  # Codex Desktop 0.128: IDE-wrapped prompts, no turn_context
COMPACTED = REAL[6]  # redacted, with `compacted` + `context_compacted`
CALL_TYPES = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}


def raw(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def raw_payloads(path: Path, line_type: str) -> list[dict]:
    return [r["payload"] for r in raw(path) if r.get("type") == line_type]


@pytest.mark.parametrize("name", REAL)
def test_every_real_rollout_parses_with_all_its_tool_calls(corpus: Path, name: str) -> None:
    path = corpus / "codex" / name
    report, trajectories = ingest_file(path)
    assert report.status == "ok", report.errors
    assert report.format == "codex"
    [t] = trajectories
    items = raw_payloads(path, "response_item")
    raw_calls = [i for i in items if i["type"] in CALL_TYPES]
    calls = t.tool_calls()
    assert len(calls) == len(raw_calls)
    assert Counter(c.call_id for c in calls if c.call_id) == Counter(i["call_id"] for i in raw_calls if "call_id" in i)
    outputs = {i["call_id"] for i in items if i["type"] in ("function_call_output", "custom_tool_call_output")}
    for call in calls:  # every call whose output is in the file is paired with it, both ways
        result = t.result_of(call)
        if call.call_id in outputs or call.tool == "web_search":
            assert result is not None and result.call_index == call.index and result.call_id == call.call_id
        else:
            assert result is None
    assert [s.index for s in t.steps] == list(range(len(t.steps)))
    assert report.trajectories[0].tool_calls == len(raw_calls)


def test_the_human_prompt_comes_from_user_message_events_not_injected_context(corpus: Path) -> None:
    for name in (OLD, NEW):
        path = corpus / "codex" / name
        _, [t] = ingest_file(path)
        prompts = [p["message"] for p in raw_payloads(path, "event_msg") if p["type"] == "user_message"]
        users = [s.text for s in t.steps if s.kind is StepKind.USER]
        assert users == prompts
        injected = [i for i in raw_payloads(path, "response_item") if i["type"] == "message" and i["role"] != "assistant"
                    and "AGENTS.md" in json.dumps(i)]
        assert injected and not any("AGENTS.md" in u or "<environment_context>" in u for u in users)


def test_header_of_the_077_exec_rollout(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "codex" / OLD)
    assert (t.agent, t.source_format, t.agent_version) == ("codex", "codex", "0.77.0")
    assert t.session_id == "019b7f94-51b4-7593-922e-ba12b5b73b52"
    assert t.model == "gpt-5-1-codex-2025-11-13"
    assert t.cwd == "/Users/Nikita_Levyankov/repos/EPMCDME/codemie-ai/codemie-code"
    assert t.git_branch == "codex" and t.repo == "codemie-ai/codemie-code"  # from git.repository_url
    assert t.task == "what is current repository about? summarize purpuse and explain goals"
    assert [c.command for c in t.tool_calls()] == ["ls", "rg --files -g 'AGENTS.md'", "sed -n '1,160p' README.md"]
    # exit codes from the JSON-in-string outputs, and the text unwrapped from it
    codes = [json.loads(p["output"])["metadata"]["exit_code"] for p in raw_payloads(corpus / "codex" / OLD,
                                                                                      "response_item")
             if p["type"] == "function_call_output"]
    results = [t.result_of(c) for c in t.tool_calls()]
    assert [r.exit_code for r in results] == codes
    assert results[1].text == "docs/AGENTS.md\n"
    assert t.started_at.isoformat().startswith("2026-01-02T16:39:45.33")
    assert t.ended_at >= max(s.timestamp for s in t.steps if s.timestamp)


def test_exit_codes_are_joined_from_exec_command_end(corpus: Path) -> None:
    path = corpus / "codex" / NEW
    _, [t] = ingest_file(path)
    ends = {p["call_id"]: p for p in raw_payloads(path, "event_msg") if p["type"] == "exec_command_end"}
    by_id = {c.call_id: c for c in t.tool_calls()}
    assert ends and set(ends) <= set(by_id)
    for call_id, end in ends.items():
        result = t.result_of(by_id[call_id])
        assert result.exit_code == end["exit_code"], by_id[call_id].command
        assert result.is_error is (end["exit_code"] != 0)
    failing = [c for c in t.tool_calls() if (r := t.result_of(c)) and r.exit_code not in (0, None)]
    assert len(failing) == sum(1 for e in ends.values() if e["exit_code"] != 0) == 4
    rg = next(c for c in failing if "node_modules/opencode-ai" in c.command)
    # the function_call_output only said "Process running"; the text is the command's real output
    assert "No such file or directory" in t.result_of(rg).text
    assert t.model == "gpt-5.5" and t.git_branch == "feat/codex-agent-plugin"
    assert t.repo == "codemie-ai/codemie-code"  # from git.repository_url
    # "show tools" opens the session; the task is the request that followed
    assert t.task == "let's update the defailt context compart to 90 in env var"


def test_apply_patch_gives_paths_and_diff(corpus: Path) -> None:
    path = corpus / "codex" / NEW
    _, [t] = ingest_file(path)
    patches = [c for c in t.tool_calls() if c.tool == "apply_patch"]
    changed = [p for p in raw_payloads(path, "event_msg") if p["type"] == "patch_apply_end"]
    assert len(patches) == len(changed) == 3
    for call, end in zip(patches, changed, strict=True):
        [absolute] = end["changes"]
        assert call.paths == [absolute.removeprefix(t.cwd + "/")]
        assert call.diff.startswith(f"--- a/{call.paths[0]}")
        assert any(line.startswith("+") and line[1:].strip() and line[1:] in call.diff
                   for line in end["changes"][absolute]["unified_diff"].splitlines())
        assert t.result_of(call).is_error is False


def test_an_ide_prompt_keeps_the_request_as_task(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "codex" / DESKTOP)
    assert t.task.startswith("analyze trascript and summarzie action items")
    assert t.steps[0].text.lstrip().startswith("# Files mentioned by the user")
    assert t.model is None  # this rollout has no turn_context: nothing to tell the model from
    assert t.agent_version == "0.128.0-alpha.1"


def test_compacted_history_does_not_break_pairing(corpus: Path) -> None:
    path = corpus / "codex" / COMPACTED
    lines = raw(path)
    compaction = next(i for i, r in enumerate(lines) if r["type"] == "compacted")
    _, [t] = ingest_file(path)
    calls_after = [r["payload"]["call_id"] for r in lines[compaction:] if r["type"] == "response_item"
                   and r["payload"]["type"] in ("function_call", "custom_tool_call")]
    by_id = {c.call_id: c for c in t.tool_calls()}
    assert calls_after and all(t.result_of(by_id[i]) is not None for i in calls_after)
    # the repository_url and the cwd were redacted to hashes: no name rather than a hash that means nothing
    assert t.cwd.startswith("/redacted/path/") and t.repo is None


def test_redacted_rollouts_keep_structure(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "codex" / REAL[3])
    assert t.model == "gpt-5.3-codex" and t.agent_version == "0.104.0-alpha.1"
    assert t.task.startswith("[REDACTED_MESSAGE")
    assert {c.tool for c in t.tool_calls()} >= {"exec_command", "apply_patch", "write_stdin", "web_search"}


def test_synthetic_rollouts_do_not_crash(corpus: Path) -> None:
    for path in sorted((corpus / "codex/synthetic_schema_coverage").glob("*.jsonl")):
        report, trajectories = ingest_file(path)
        assert report.format == "codex" and report.status in ("ok", "skipped"), (path.name, report.errors)
    report, trajectories = ingest_file(corpus / "codex/synthetic_schema_coverage/agent-sessions_codex_050_legacy.jsonl")
    assert report.status == "skipped" and not trajectories
    assert "without messages or tool calls" in report.errors[0].reason
    _, [t] = ingest_file(corpus / "codex/synthetic_schema_coverage/codemie_rollout-error-handling.jsonl")
    assert [t.result_of(c).exit_code for c in t.tool_calls()] == [0, 1, 0]
    assert t.repo == "codemie-code"  # no repository_url: the cwd's name


def test_bad_lines_are_reported_and_the_rest_kept(corpus: Path, tmp_path: Path) -> None:
    lines = (corpus / "codex" / OLD).read_bytes().split(b"\n")
    bad = list(lines)
    bad[5] = b'{"timestamp":"x","type":"turn_context","payload":["not", "an", "object"]}'
    call = json.loads(lines[9])
    assert call["payload"]["type"] == "function_call"
    call["payload"]["call_id"] = 7  # wrong type: the call is dropped, its output stays unpaired
    bad[9] = json.dumps(call).encode()
    bad[-2] = bad[-2][: len(bad[-2]) // 2]  # the last line cut off mid-write
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b"\n".join(bad[:-1]))
    report, [t] = ingest_file(path)
    assert report.status == "partial"
    reasons = {e.line: e.reason for e in report.errors}
    # Which record, which field, what it should have been: one wording for every format.
    assert reasons[6] == "a 'turn_context' line: 'payload' should be an object, found list"
    assert reasons[10] == "a 'response_item' line: function_call: 'call_id' should be str, found int"
    assert "truncated last line" in reasons[len(bad) - 1]
    assert len(t.tool_calls()) == 2 and t.task == "what is current repository about? summarize purpuse and explain goals"


def test_pre_rolloutline_rollouts_are_read(corpus: Path, tmp_path: Path) -> None:
    """Before RolloutLine, a rollout was a session header then bare response items (same real content here)."""
    lines = raw(corpus / "codex" / OLD)
    meta = lines[0]["payload"]
    header = {"id": meta["id"], "timestamp": meta["timestamp"], "instructions": "…", "git": meta["git"]}
    items = [r["payload"] for r in lines if r["type"] == "response_item"]
    path = tmp_path / "rollout-old.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [header, *items, {"record_type": "state"}]) + "\n")
    report, [t] = ingest_file(path)
    assert report.format == "codex" and report.status == "ok", report.errors
    assert len(t.tool_calls()) == 3 and all(t.result_of(c).exit_code == 0 for c in t.tool_calls())
    # no user_message events: the prompt is the one user message that is not injected context
    assert [s.text for s in t.steps if s.kind is StepKind.USER] == [t.task]
    assert t.task.startswith("what is current repository about?")


def test_the_distiller_learns_from_a_codex_session(corpus: Path) -> None:
    """No skill of the session's own (its fix will not recur): the commands it ran, each with its purpose
    and whether it worked, and the files it found and then edited -- for the working-in-<repo> manual."""
    _, [t] = ingest_file(corpus / "codex" / NEW)
    assert t.repo == "codemie-ai/codemie-code" and t.outcome.status == "resolved"
    distilled = distill(t)
    assert distilled.skills == [] and distilled.reason is None
    assert all(f.repo == t.repo and f.agent == "codex" and f.outcome == "resolved" and f.steps
               for f in distilled.facts)
    test = 'npm test -- --run src/agents/plugins/__tests__/codemie-code-reasoning.test.ts'
    assert [(f.kind, f.command, f.ok) for f in distilled.facts if f.kind in ("test", "build")] == [
        ("test", f'{test} -t "Compaction Config"', False),  # the new test, before the change
        ("test", f'{test} -t "Compaction Config"', True),
        ("test", test, True),
        ("build", "npm run build", True)]
    edited = {p for c in t.tool_calls() if c.tool == "apply_patch" for p in c.paths}
    assert {p for f in distilled.facts if f.kind == "location" for p in f.paths} == edited
    manual = consolidate(t.repo, distilled.facts)
    assert manual is not None and manual.name == "working-in-codemie-code" and manual.kind == "repo"
    assert manual.procedure[0].text.startswith("Tests: `npm test -- --run <tests>` (1 session")
    # the whole test file, not the one test the session wrote; a plain `npm run build` seen once says nothing
    assert [i.command for i in manual.procedure] == [test]
    _, [read_only] = ingest_file(corpus / "codex" / OLD)
    assert distill(read_only).reason == "no project command ran, no correction, no file searched for and then edited"


def test_redacted_sessions_say_their_inputs_are_unreadable(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "codex" / COMPACTED)
    patches = [c for c in t.tool_calls() if c.tool == "apply_patch"]
    assert patches and not any(c.paths for c in patches)  # the patch text is a placeholder: no file names
    assert distill(t).reason.startswith("tool inputs unreadable")


def test_local_shell_calls_are_commands(corpus: Path, tmp_path: Path) -> None:
    """Rollouts of the ``local_shell`` tool: the same real session with its calls in that shape."""
    lines = raw(corpus / "codex" / OLD)
    for line in lines:
        item = line["payload"]
        if line["type"] == "response_item" and item["type"] == "function_call":
            args = json.loads(item["arguments"])
            line["payload"] = {"type": "local_shell_call", "call_id": item["call_id"], "status": "completed",
                               "action": {"type": "exec", "command": args["command"],
                                          "working_directory": args["workdir"]}}
    path = tmp_path / "rollout-local-shell.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    report, [t] = ingest_file(path)
    assert report.status == "ok", report.errors
    assert [(c.tool, c.command) for c in t.tool_calls()] == [
        ("local_shell", "ls"), ("local_shell", "rg --files -g 'AGENTS.md'"), ("local_shell", "sed -n '1,160p' README.md")]
    assert all(t.result_of(c).exit_code == 0 for c in t.tool_calls())
