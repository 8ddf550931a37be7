"""Each format marks its harness's refusals (``protocol_error``), and only those.

A harness refusing a tool call -- an edit that did not apply, a file not read first, a malformed
call -- says nothing about the project; a command that ran and failed does. Real files where the
corpus has refusals; where it has none, a real file with one realistic refusal put in.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pipeline.ingest import ingest_file
from pipeline.plugins import registered_formats
from pipeline.trajectory import Step, StepKind, Trajectory


def marked(t: Trajectory) -> list[Step]:
    return [s for s in t.steps if s.protocol_error]


def results(t: Trajectory) -> list[Step]:
    return [s for s in t.steps if s.kind is StepKind.TOOL_RESULT]


def failed_commands(t: Trajectory) -> list[Step]:
    """Results of commands that ran and exited non-zero: the project failing, never a refusal."""
    return [s for s in results(t) if s.exit_code not in (None, 0)]


def test_every_format_declares_its_refusals() -> None:
    declared = {f.name: f.protocol_errors is not None for f in registered_formats()}
    assert declared == dict.fromkeys(declared, True)
    assert {"claude-code", "codex", "gemini-cli", "opencode", "mini-swe-agent", "swe-agent", "openhands", "atif",
            "aider", "crush", "opencode-go", "goose", "opencode-db", "opencode-export"} <= set(declared)


def test_marks_are_on_results_only(corpus: Path) -> None:
    _, found = ingest_file(corpus / "claude_code/claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
    steps = [s for t in found for s in marked(t)]
    assert steps and all(s.kind is StepKind.TOOL_RESULT for s in steps)


# -- Claude Code ---------------------------------------------------------------------------

def test_claude_code_marks_its_tool_use_errors(corpus: Path) -> None:
    _, found = ingest_file(corpus / "claude_code/claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
    refused = [s for t in found for s in marked(t)]
    assert len(refused) == 14
    assert {s.text for s in refused} == {
        "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>",
        "EISDIR: illegal operation on a directory, read"}
    failing = [s for t in found for s in failed_commands(t)]  # `ls types/`, `npm run build` ... exit 1
    assert len(failing) == 9 and not any(s.protocol_error for s in failing)

    _, found = ingest_file(corpus / "claude_code/claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl")
    assert [s.text.split("\n")[0] for t in found for s in marked(t)] == [
        "<tool_use_error>InputValidationError: Task failed due to the following issue:",
        "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>"]


def test_claude_code_bash_failures_and_a_persons_no_are_not_refusals(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "claude_code/codemie-code/session-3fe1b6bc.jsonl")
    [refused] = marked(t)
    assert refused.text == "<tool_use_error>File does not exist.</tool_use_error>"
    failing = failed_commands(t)
    assert [s.exit_code for s in failing] == [1, 1, 5, 1] and failing[0].text.startswith("Exit code 1")
    assert not any(s.protocol_error for s in failing)
    _, [declined] = ingest_file(corpus / "claude_code/codemie-code/session-9eda1058.jsonl")
    [no] = [s for s in results(declined) if s.is_error]
    assert no.text.startswith("The user doesn't want to proceed with this tool use") and not no.protocol_error


# -- Codex ---------------------------------------------------------------------------------

def test_codex_marks_a_write_to_a_closed_session_not_a_failing_command(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "codex/codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl")
    [refused] = marked(t)
    assert refused.text.startswith("write_stdin failed: stdin is closed for this session")
    failing = failed_commands(t)  # rg on a missing folder (2), a failing vitest run (1) ...
    assert len(failing) == 4 and not any(s.protocol_error for s in failing)
    assert any("vitest" in s.text for s in failing)


def test_codex_marks_a_patch_that_did_not_apply() -> None:
    [codex] = [f for f in registered_formats() if f.name == "codex"]
    pattern = codex.protocol_errors
    assert pattern is not None
    assert pattern.search("apply_patch verification failed: Failed to find expected lines in src/app.ts:\n"
                          "export function main() {")
    assert pattern.search("Exit code: 1\nWall time: 0 seconds\nOutput:\napply_patch verification failed: x")
    assert not pattern.search("Exit code: 1\nWall time: 2.1 seconds\nOutput:\nFAIL src/app.test.ts")


# -- SWE-agent -----------------------------------------------------------------------------

def test_swe_agent_marks_edits_its_linter_rejected(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "swe_agent/tests_test_data/gpt4__swe-bench-dev-easy_first_only__default__t-0.00"
                                  "__p-0.95__c-3.00__install-1/pydicom__pydicom-1458.traj")
    refused = marked(t)
    assert len(refused) == 3 and all(t.steps[s.call_index].tool == "edit" for s in refused)
    assert refused[0].text.startswith("Your proposed edit has introduced new syntax error(s).")
    [traceback] = failed_commands(t)  # `python reproduce_bug.py` ends on a ValueError: the project
    assert traceback.exit_code == 1 and not traceback.protocol_error


def test_swe_agent_does_not_mark_a_wrong_flag_or_a_timeout(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "swe_agent/demonstrations/ctf/rev/rock.traj")
    errors = [s for s in results(t) if s.is_error]
    assert {s.text.strip() for s in errors} == {"EXECUTION TIMED OUT", "Wrong flag!"}
    assert not marked(t)


# -- OpenHands -----------------------------------------------------------------------------

def test_openhands_marks_editor_refusals_not_build_failures(corpus: Path) -> None:
    _, runs = ingest_file(corpus / "openhands/eval_output/multi_swe_bench_output.jsonl")
    assert [len(marked(t)) for t in runs] == [1, 11, 12]
    texts = [s.text for t in runs for s in marked(t)]
    assert all(text.startswith("ERROR:\n") for text in texts)
    assert sum("did not appear verbatim" in text for text in texts) == 13
    assert sum("Parameter `old_str` is required for command: str_replace." in text for text in texts) == 5
    failing = [s for t in runs for s in failed_commands(t)]  # make, cmake, apt-get, `ponyc: command not found`
    assert len(failing) == 19 and not any(s.protocol_error for s in failing)
    assert any(s.exit_code == 127 and "ponyc: command not found" in s.text for s in failing)


def test_openhands_marks_agentskills_edits_that_were_not_applied(corpus: Path) -> None:
    _, [_, t] = ingest_file(corpus / "openhands/resolver/resolver_output.jsonl")
    texts = [s.text.split("\n")[0] for s in marked(t)]
    assert len(texts) == 11
    assert texts.count("[Your proposed edit has introduced new syntax error(s). Please understand the errors and "
                       "retry your edit command.]") == 8
    assert sum(text.startswith("[No exact match found in /workspace/src/PullRequestViewer.tsx") for text in texts) == 3


# -- Aider ---------------------------------------------------------------------------------

def test_aider_marks_search_blocks_that_did_not_match_not_lint_or_test_failures(corpus: Path) -> None:
    _, sessions = ingest_file(corpus / "aider/Aquaticat-Monochromatic/.aider.chat.history.md")
    refused = [s for t in sessions for s in marked(t)]
    assert len(refused) == 7
    assert {s.text for s in refused} == {
        "SEARCH block failed to exactly match lines in CONVENTIONS.md",
        "SEARCH block failed to exactly match lines in packages/module/es/src/iterables.intersection.ts",
        "SEARCH block failed to exactly match lines in packages/module/es/src/iterable.filter.ts"}
    skipped = [s for t in sessions for s in results(t) if s.text.endswith(" skipped")]
    assert len(skipped) == 2 and not any(s.protocol_error for s in skipped)  # the person said no

    _, sessions = ingest_file(corpus / "aider/aider-repo/tests_fixtures_chat-history.md")
    assert sum(len(marked(t)) for t in sessions) == 53
    failing = [s for t in sessions for s in failed_commands(t)]  # lint runs and pytest runs that failed
    assert len(failing) == 89 and not any(s.protocol_error for s in failing)


# -- Formats whose corpus holds no refusal: a real file with one put in ---------------------

def test_mini_swe_agent_marks_an_action_it_did_not_execute(corpus: Path, tmp_path: Path) -> None:
    source = corpus / "mini_swe_agent/swebench_verified_gemini-3-pro/resolved/pallets__flask-5014.traj.json"
    _, [before] = ingest_file(source)
    assert not marked(before)
    failing = failed_commands(before)  # `pytest` failing twice before the fix: the project
    assert [s.exit_code for s in failing] == [1, 1] and "test session starts" in failing[0].text
    data = json.loads(source.read_text())
    answer = next(m for m in data["messages"] if m["role"] == "user" and "<returncode>0</returncode>" in m["content"])
    answer["content"] = ("<exception>action was not executed</exception>\n<returncode>-1</returncode>\n"
                         "<output>\n</output>")  # mini-swe-agent 2.x's answer to a skipped action
    (tmp_path / source.name).write_text(json.dumps(data))
    _, [t] = ingest_file(tmp_path / source.name)
    [refused] = marked(t)
    assert refused.text == "action was not executed" and refused.exit_code == -1
    assert not any(s.protocol_error for s in failed_commands(t) if s is not refused)


def test_gemini_cli_marks_an_edit_whose_string_was_not_found(corpus: Path, tmp_path: Path) -> None:
    source = corpus / "gemini_cli/codemie-code/chats/session-2025-12-01T21-45-5b959dae.json"
    data = json.loads(source.read_text())
    replace = next(c for m in data["messages"] for c in m.get("toolCalls") or [] if c["name"] == "replace")
    path = replace["args"]["file_path"]
    replace["status"] = "error"
    replace["result"] = [{"functionResponse": {"id": replace["id"], "name": "replace", "response": {
        "error": f"Failed to edit, 0 occurrences found for old_string in {path}. No edits made. The exact text "
                 "in old_string was not found. Ensure you're not escaping content incorrectly and check "
                 "whitespace, indentation, and context. Use read_file tool to verify."}}}]
    (tmp_path / source.name).write_text(json.dumps(data))
    _, [t] = ingest_file(tmp_path / source.name)
    [refused] = marked(t)
    assert refused.is_error and refused.text.startswith("Failed to edit, 0 occurrences found for old_string")
    _, [listing] = ingest_file(corpus / "gemini_cli/synthetic_schema_coverage/agent-sessions_gemini_large.json")
    [failing] = failed_commands(listing)  # `ls /non-existent-directory`, Exit Code: 1
    assert not failing.protocol_error


def test_opencode_marks_an_edit_whose_old_string_was_not_found(corpus: Path, tmp_path: Path) -> None:
    tree = tmp_path / "storage"
    shutil.copytree(corpus / "opencode/synthetic_schema_coverage/codemie-legacy-storage/storage", tree)
    part = tree / "part/msg-assistant-1/part-tool-write.json"
    data = json.loads(part.read_text())
    data["tool"] = "edit"
    data["state"] = {"status": "error", "input": {"filePath": "src/test.ts", "oldString": "console.log('Line 4');",
                                                  "newString": "console.log('Line four');"},
                     "error": "Error: oldString not found in content", "time": {"start": 1737979300000,
                                                                                "end": 1737979300100}}
    part.write_text(json.dumps(data))
    _, [t] = ingest_file(tree / "session/test-project/test-session-1.json")
    [refused] = marked(t)
    assert refused.text == "Error: oldString not found in content" and refused.is_error


def test_atif_marks_the_refusals_of_the_harness_it_carries(corpus: Path, tmp_path: Path) -> None:
    source = corpus / "atif/openagents_third_party/tbench-regex-log/trajectory.json"
    _, [before] = ingest_file(source)
    errors = [s for s in results(before) if s.is_error or s.exit_code not in (None, 0)]
    assert [s.text.split("\n")[0] for s in errors] == ["EACCES: permission denied, mkdir '/app'", "Exit code 1"]
    assert not marked(before)  # the file system refusing a Write, and sudo failing: not the harness
    data = json.loads(source.read_text())
    step = next(s for s in data["steps"] if s.get("observation") and "Permissions Size" in json.dumps(s))
    refusal = "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>"
    step["observation"] = {"type": "tool_result", "content": refusal,  # a Claude Code run converted to ATIF
                           "result": {"success": False, "error": refusal}}
    (tmp_path / "trajectory.json").write_text(json.dumps(data))
    _, [t] = ingest_file(tmp_path / "trajectory.json")
    [refused] = marked(t)
    assert refused.text == refusal


def test_a_refusal_quoted_later_in_a_result_is_not_one(corpus: Path, tmp_path: Path) -> None:
    """The pattern looks at the start of a result: a file or log that quotes a refusal is not one."""
    source = corpus / "mini_swe_agent/swebench_verified_gemini-3-pro/resolved/pallets__flask-5014.traj.json"
    data = json.loads(source.read_text())
    answer = next(m for m in data["messages"] if m["role"] == "user" and "<returncode>0</returncode>" in m["content"])
    answer["content"] = ("<returncode>0</returncode>\n<output>\n# notes\n"
                         "action was not executed\nPlease always provide EXACTLY ONE action\n</output>")
    (tmp_path / source.name).write_text(json.dumps(data))
    _, [t] = ingest_file(tmp_path / source.name)
    assert not marked(t)
