"""Random records in the shapes of Codex, Gemini CLI and OpenCode files: reported, never a crash.

Values of every JSON type land in every field the readers look at, so a field of the wrong type
anywhere is exercised, not only the ones a hand-written test thought of.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.ingest import ingest_file
from pipeline.ingest.formats.codex import CodexRollout
from pipeline.ingest.formats.gemini_cli import GeminiCli
from pipeline.ingest.formats.opencode import OpenCodeStorage
from pipeline.ingest.report import FileReport
from pipeline.trajectory import StepKind
from pipeline.trajectory.commands import Purpose, classify

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=12),
                    st.sampled_from(["call_1", "user", "gemini", "assistant", "completed", "error", "bash",
                                     "exec_command", "apply_patch", "*** Begin Patch\n*** Add File: a.py\n+x",
                                     "Process running with session ID 1", '{"output": "x", "metadata": {}}']))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                      max_leaves=8)


def shaped(keys: list[str], **fixed: st.SearchStrategy) -> st.SearchStrategy:
    """Dicts with some of ``keys`` (random values) and the ``fixed`` ones."""
    return st.fixed_dictionaries(fixed, optional={k: VALUES for k in keys if k not in fixed})


PAYLOAD_KEYS = ["type", "role", "content", "name", "arguments", "input", "call_id", "output", "action", "status",
                "message", "exit_code", "aggregated_output", "changes", "success", "model", "cwd", "git", "id",
                "kind", "images", "session_id", "namespace", "result"]
CODEX_LINE = st.fixed_dictionaries({
    "timestamp": st.one_of(st.just("2026-01-01T00:00:00Z"), VALUES),
    "type": st.sampled_from(["session_meta", "response_item", "event_msg", "turn_context", "compacted", "x"]),
    "payload": st.one_of(shaped(PAYLOAD_KEYS, type=st.sampled_from(
        ["message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
         "local_shell_call", "web_search_call", "user_message", "exec_command_end", "patch_apply_end",
         "mcp_tool_call_end", "task_complete"])), VALUES)})
GEMINI_LINE = st.one_of(
    shaped(["type", "content", "toolCalls", "model", "timestamp", "parts"], id=st.sampled_from(["m1", "m2", "m3"])),
    st.fixed_dictionaries({"$set": VALUES}), st.fixed_dictionaries({"$rewindTo": VALUES}),
    shaped(["startTime", "messages", "directories"], sessionId=st.just("s"), projectHash=st.just("h")),
    st.lists(shaped(["id", "name", "args", "result", "status"]), max_size=3).map(
        lambda calls: {"id": "m9", "type": "gemini", "toolCalls": calls}),
    VALUES)
OPENCODE_PART = shaped(["type", "text", "tool", "callID", "state", "synthetic"], id=st.just("prt_1"),
                       sessionID=st.just("ses_1"), messageID=st.just("msg_1"))


def run(fmt, path: Path) -> FileReport:
    report = FileReport(path=str(path))
    for trajectory in fmt.parse(path, report):
        assert [s.index for s in trajectory.steps] == list(range(len(trajectory.steps)))
        for step in trajectory.steps:
            if step.kind is StepKind.TOOL_CALL:
                classify(step)
    return report


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(CODEX_LINE, max_size=12), st.binary(max_size=40))
def test_random_codex_lines(lines: list[dict], tail: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rollout.jsonl"
        path.write_bytes(b"\n".join(json.dumps(x).encode() for x in lines) + b"\n" + tail)
        run(CodexRollout(), path)
        ingest_file(path)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(GEMINI_LINE, max_size=12), st.booleans())
def test_random_gemini_records(lines: list, legacy: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "session.json"
        if legacy:
            path.write_text(json.dumps({"sessionId": "s", "projectHash": "h", "messages": lines}, indent=2))
        else:
            path.write_text("\n".join(json.dumps(x) for x in [{"sessionId": "s", "projectHash": "h"}, *lines]))
        run(GeminiCli(), path)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shaped(["directory", "time", "messages", "version", "parentID"], id=st.just("ses_1")),
       shaped(["role", "time", "modelID", "path", "parts", "error"], id=st.just("msg_1"), sessionID=st.just("ses_1")),
       st.lists(OPENCODE_PART, max_size=4))
def test_random_opencode_trees(session: dict, message: dict, parts: list[dict]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        storage = Path(folder) / "storage"
        for relative, value in [("session/p/ses_1.json", session), ("message/ses_1/msg_1.json", message),
                                *((f"part/msg_1/prt_{i}.json", p) for i, p in enumerate(parts))]:
            (storage / relative).parent.mkdir(parents=True, exist_ok=True)
            (storage / relative).write_text(json.dumps(value))
        run(OpenCodeStorage(), storage / "session/p/ses_1.json")


def test_codex_gemini_and_opencode_tools_are_understood() -> None:
    """The distiller sees these agents' shell, edit and read tools for what they are."""
    from pipeline.trajectory import Step

    def call(tool: str, command: str | None = None, paths: tuple[str, ...] = ()) -> Purpose:
        step = Step(index=0, kind=StepKind.TOOL_CALL, tool=tool, command=command, paths=list(paths))
        return classify(step).purpose

    assert call("exec_command", "npm test -- --run x.test.ts") is Purpose.TEST
    assert call("shell", "pytest -q") is Purpose.TEST
    assert call("run_shell_command", "npm run build") is Purpose.BUILD
    for edit in ("apply_patch", "replace", "write_file", "smart_edit", "edit", "write", "patch"):
        assert call(edit, paths=("a.py",)) is Purpose.EDIT, edit
    for read in ("read_file", "read_many_files", "list_directory", "search_file_content", "glob", "grep",
                 "list", "web_search", "google_web_search", "web_fetch"):
        assert call(read, paths=("a.py",)) is Purpose.EXPLORE, read


def test_these_readers_claim_only_their_own_files(corpus: Path) -> None:
    """Detection by content: no file of another agent is taken for a Codex, Gemini or OpenCode one."""
    from pipeline.ingest import iter_files

    owners = {"codex": "codex", "gemini-cli": "gemini_cli", "opencode": "opencode"}
    claimed = set()
    for path in iter_files([corpus]):
        report, _ = ingest_file(path)
        if report.format in owners:
            claimed.add(path)
            assert path.relative_to(corpus).parts[0] == owners[report.format], path
    theirs = {p for folder in owners.values() for p in (corpus / folder).rglob("*.json*")
              if not p.name.startswith("SOURCES")}
    assert claimed == theirs  # and every one of their files is recognised
