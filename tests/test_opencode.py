"""OpenCode legacy storage trees.

No real OpenCode session exists in ../shared (see §8 of the formats doc): the shared tree is
synthetic, and the second tree here is written from OpenCode's message-v2 schema (ids, callID,
``state.metadata.exit`` of bash, ``state.metadata.diff`` of edit, ``path.cwd/root``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pipeline.ingest import ingest_file, iter_files
from pipeline.trajectory import StepKind

TREE = "opencode/synthetic_schema_coverage/codemie-legacy-storage/storage"
SESSION = "session/test-project/test-session-1.json"


def test_the_session_file_reads_its_messages_and_parts(corpus: Path) -> None:
    storage = corpus / TREE
    report, [t] = ingest_file(storage / SESSION)
    assert report.format == "opencode" and report.status == "ok", report.errors
    tools = [json.loads(p.read_text()) for p in (storage / "part").rglob("*.json")]
    tools = [p for p in tools if p["type"] == "tool"]
    calls = t.tool_calls()
    assert sorted(c.call_id for c in calls) == sorted(p["id"] for p in tools)  # no callID: the part id pairs
    assert all(t.result_of(c) is not None for c in calls)
    write = next(c for c in calls if c.tool == "Write")
    assert write.paths == ["src/test.ts"] and "+console.log('Line 3');" in write.diff
    assert t.task == "Create a test file with console.log statements"
    assert (t.session_id, t.cwd, t.model, t.agent_version) == ("test-session-1", "/test/project",
                                                               "claude-sonnet-4-6", "1.0.0")
    assert t.started_at.timestamp() * 1000 == 1737979200000 and t.ended_at.timestamp() * 1000 == 1737979800000
    assert any(s.kind is StepKind.ASSISTANT and s.text.startswith("Created src/test.ts") for s in t.steps)


def test_message_and_part_files_alone_are_skipped_with_the_reason(corpus: Path) -> None:
    storage = corpus / TREE
    reports = [ingest_file(p)[0] for p in iter_files([storage]) if p.name != Path(SESSION).name]
    assert len(reports) == 7
    for report in reports:
        assert report.format == "opencode" and report.status == "skipped"
        assert "part of an OpenCode session" in report.errors[0].reason
        assert "read through its session file" in report.errors[0].reason


def write(path: Path, value: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2))


def schema_tree(storage: Path) -> Path:
    """A session as OpenCode's legacy storage writes it (message-v2 shapes)."""
    ses, cwd = "ses_5f1a2b3c4d5eAbCdEfGhIjKlMn", "/home/dev/webapp"
    write(storage / "project/4b7c1e.json", {"id": "4b7c1e", "worktree": cwd, "vcs": "git",
                                             "time": {"created": 1760000000000}})
    write(storage / f"session/4b7c1e/{ses}.json", {
        "id": ses, "version": "0.15.3", "projectID": "4b7c1e", "directory": cwd, "title": "Fix failing test",
        "time": {"created": 1760000000000, "updated": 1760000300000}})
    user = {"id": "msg_a01", "sessionID": ses, "role": "user", "time": {"created": 1760000001000},
            "agent": "build", "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}}
    assistant = {"id": "msg_a02", "sessionID": ses, "role": "assistant", "parentID": "msg_a01",
                 "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "mode": "build",
                 "path": {"cwd": cwd, "root": cwd}, "time": {"created": 1760000002000, "completed": 1760000290000},
                 "cost": 0.01, "tokens": {"input": 10, "output": 5, "reasoning": 0, "cache": {"read": 0, "write": 0}}}
    write(storage / f"message/{ses}/msg_a02.json", assistant)  # written out of order on purpose
    write(storage / f"message/{ses}/msg_a01.json", user)
    parts = [
        ("msg_a01", {"type": "text", "text": "The date test fails, fix it"}),
        ("msg_a01", {"type": "text", "text": "<system-reminder>plan mode</system-reminder>", "synthetic": True}),
        ("msg_a02", {"type": "step-start", "snapshot": "abc"}),
        ("msg_a02", {"type": "tool", "callID": "toolu_1", "tool": "bash", "state": {
            "status": "completed", "input": {"command": "npm test", "description": "run tests"},
            "output": "FAIL src/date.test.ts\n1 failed", "title": "run tests",
            "metadata": {"output": "FAIL", "exit": 1, "description": "run tests"},
            "time": {"start": 1760000010000, "end": 1760000020000}}}),
        ("msg_a02", {"type": "tool", "callID": "toolu_2", "tool": "edit", "state": {
            "status": "completed", "input": {"filePath": f"{cwd}/src/date.ts", "oldString": "getYear()",
                                             "newString": "getFullYear()"},
            "output": "", "title": "src/date.ts",
            "metadata": {"diff": "--- a/src/date.ts\n+++ b/src/date.ts\n@@ -1 +1 @@\n-getYear()\n+getFullYear()"},
            "time": {"start": 1760000030000, "end": 1760000031000}}}),
        ("msg_a02", {"type": "tool", "callID": "toolu_3", "tool": "read", "state": {
            "status": "error", "input": {"filePath": f"{cwd}/missing.ts"}, "error": "File not found",
            "time": {"start": 1760000040000, "end": 1760000041000}}}),
        ("msg_a02", {"type": "tool", "callID": "toolu_4", "tool": "bash", "state": {
            "status": "completed", "input": {"command": "npm test", "description": "run tests"},
            "output": "Tests: 12 passed", "title": "run tests", "metadata": {"exit": 0},
            "time": {"start": 1760000050000, "end": 1760000060000}}}),
        ("msg_a02", {"type": "tool", "callID": "toolu_5", "tool": "bash", "state": {
            "status": "running", "input": {"command": "npm run dev"}, "time": {"start": 1760000070000}}}),
        ("msg_a02", {"type": "text", "text": "Fixed: getYear() -> getFullYear()."}),
        ("msg_a02", {"type": "step-finish", "reason": "stop", "cost": 0.01}),
    ]
    for number, (message, part) in enumerate(parts):
        write(storage / f"part/{message}/prt_{number:03d}.json",
              {"id": f"prt_{number:03d}", "sessionID": ses, "messageID": message, **part})
    return storage / f"session/4b7c1e/{ses}.json"


def test_a_session_in_the_message_v2_shapes(tmp_path: Path) -> None:
    report, [t] = ingest_file(schema_tree(tmp_path / "storage"))
    assert report.status == "ok", report.errors
    assert t.task == "The date test fails, fix it"
    assert [s.meta for s in t.steps if s.kind is StepKind.USER] == [False, True]  # synthetic text is not a person
    calls = t.tool_calls()
    assert [c.call_id for c in calls] == ["toolu_1", "toolu_2", "toolu_3", "toolu_4", "toolu_5"]
    results = [t.result_of(c) for c in calls]
    assert [(r.exit_code, r.is_error) if r else None for r in results] == \
        [(1, True), (None, None), (None, True), (0, False), None]  # toolu_5 never finished
    assert results[2].text == "File not found"
    assert calls[0].command == "npm test" and "getFullYear" in calls[1].diff
    assert (t.model, t.cwd, t.repo, t.agent_version) == ("claude-sonnet-4-5", "/home/dev/webapp", "webapp", "0.15.3")
    assert t.outcome.status == "resolved"  # the last test after the edit passed
    assert calls[0].timestamp.timestamp() * 1000 == 1760000010000


def test_the_project_record_and_a_session_without_its_tree(tmp_path: Path) -> None:
    session = schema_tree(tmp_path / "storage")
    report, _ = ingest_file(tmp_path / "storage/project/4b7c1e.json")
    assert report.status == "skipped" and "project record" in report.errors[0].reason
    alone = tmp_path / "elsewhere/session.json"
    alone.parent.mkdir()
    shutil.copy(session, alone)
    report, trajectories = ingest_file(alone)
    assert report.status == "failed" and not trajectories
    assert "no messages for session" in report.errors[0].reason


def test_a_broken_part_file_is_reported_and_the_rest_kept(tmp_path: Path) -> None:
    session = schema_tree(tmp_path / "storage")
    broken = tmp_path / "storage/part/msg_a02/prt_004.json"
    broken.write_text(broken.read_text()[:50])
    wrong = tmp_path / "storage/part/msg_a02/prt_006.json"
    part = json.loads(wrong.read_text())
    part["state"] = "completed"  # wrong type
    wrong.write_text(json.dumps(part))
    report, [t] = ingest_file(session)
    assert report.status == "partial"
    assert any(e.reason.startswith("prt_004.json: invalid JSON") for e in report.errors)
    assert any("'state' should be dict" in e.reason for e in report.errors)
    assert "toolu_1" in [c.call_id for c in t.tool_calls()]


def test_the_older_nested_layout(tmp_path: Path) -> None:
    """``storage/session/{info,message,part/<ses>}/...``, as OpenCode wrote it before the flat layout."""
    flat = schema_tree(tmp_path / "flat")
    ses = flat.stem
    old = tmp_path / "old/storage/session"
    shutil.copy(flat, (old / "info").mkdir(parents=True) or old / "info" / flat.name)
    shutil.copytree(tmp_path / "flat/message", old / "message")
    for message in (tmp_path / "flat/part").iterdir():
        shutil.copytree(message, old / "part" / ses / message.name)
    report, [t] = ingest_file(old / "info" / flat.name)
    assert report.status == "ok", report.errors
    assert len(t.tool_calls()) == 5


REAL = "opencode/jwp23-dotfiles/storage"


def test_the_real_opencode_1_0_tree_reads_its_sessions_and_skips_the_rest(corpus: Path) -> None:
    storage = corpus / REAL
    reports = {p.relative_to(storage).parts[0]: [] for p in iter_files([storage])}
    for path in iter_files([storage]):
        reports[path.relative_to(storage).parts[0]].append(ingest_file(path))
    sessions = [t for report, ts in reports["session"] for t in ts]
    assert all(report.status == "ok" for report, _ in reports["session"])
    assert sorted(len(t.tool_calls()) for t in sessions) == [2, 3]  # read x2 | read x2 + edit
    for kind in ("session_diff", "project", "message", "part"):
        assert reports[kind] and all(r.format == "opencode" and r.status == "skipped" and not ts
                                     for r, ts in reports[kind]), kind
    assert "file diffs" in reports["session_diff"][0][0].errors[0].reason


def test_an_empty_list_elsewhere_is_no_opencode_file(tmp_path: Path) -> None:
    (tmp_path / "session_diff").mkdir()
    for path in (tmp_path / "ses_x.json", tmp_path / "session_diff" / "ses_x.json"):
        path.write_text("[]")
        assert ingest_file(path)[0].format != "opencode"


def test_a_damaged_session_id_is_read_by_its_file_name(corpus: Path, tmp_path: Path) -> None:
    shutil.copytree(corpus / REAL, tmp_path / "storage", copy_function=shutil.copyfile)
    session = next((tmp_path / "storage" / "session").rglob("ses_53993b312ffeefelTsBlbUVXV8.json"))
    session.chmod(0o644)
    info = json.loads(session.read_text())
    session.write_text(json.dumps({**info, "id": "ses_\ufffd\ufffd" + info["id"][4:]}))
    report, [t] = ingest_file(session)
    assert report.status == "partial" and "its file name" in report.errors[0].reason
    assert t.session_id == "ses_53993b312ffeefelTsBlbUVXV8" and len(t.tool_calls()) == 3
