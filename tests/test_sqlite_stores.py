"""Agents that keep their sessions in SQLite: the read-only store primitive and the readers on real stores.

Counts in the tests come from the raw stores, read with the sqlite3 shell on a copy (the stores
are in WAL mode: a copy of the file and its ``-wal`` together), e.g. for Crush::

    cp crush.db crush.db-wal /tmp/x/ && sqlite3 /tmp/x/crush.db \\
      "select count(*) from messages, json_each(messages.parts) where json_each.value->>'type' = 'tool_call'"
"""

from __future__ import annotations

import hashlib
import random
import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from pipeline.ingest import PARSER_FAILED, ingest_file, iter_files, sqlite_store
from pipeline.ingest.reader import Checkpoint, Probe
from pipeline.ingest.report import FileReport
from pipeline.ingest.watermark import Mode, read
from pipeline.plugins import registered_formats
from pipeline.trajectory import StepKind
from tests.conftest import TRAJECTORIES

CORPUS = TRAJECTORIES or Path("/nonexistent")
CRUSH = CORPUS / "crush" / "exabgp" / ".crush" / "crush.db"
OPENCODE_GO = CORPUS / "crush" / "legacy_go_opencode__kashifkhan0771-utils" / ".opencode" / "opencode.db"

pytestmark = pytest.mark.skipif(not CRUSH.exists(), reason="the real trajectory corpus is not here")


def digests(path: Path) -> dict[str, str]:
    """sha256 of the store and each companion file beside it."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.parent.glob(path.name + "*"))}


def copy_store(path: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for part in path.parent.glob(path.name + "*"):
        shutil.copyfile(part, folder / part.name)
    return folder / path.name


def calls(trajectory) -> int:
    return sum(1 for s in trajectory.steps if s.kind is StepKind.TOOL_CALL)


# -- the primitive ---------------------------------------------------------------------------
def test_a_store_whose_rows_live_in_its_wal_is_read_and_left_as_it_was(tmp_path: Path) -> None:
    """crush.db is a 4 KB header; the session's 34 messages are in crush.db-wal."""
    store = copy_store(CRUSH, tmp_path / ".crush")
    (tmp_path / ".crush" / "crush.db-shm").unlink()  # a copy without the shared-memory index
    before = digests(store)
    assert store.stat().st_size == 4096
    report = FileReport(path=str(store))
    with sqlite_store.open_store(store, report) as opened:
        assert opened is not None
        assert opened.has("messages", "parts", "provider")
        assert sum(1 for _ in opened.select("messages", ("id",), report)) == 34
    assert digests(store) == before  # nothing written, no -shm created beside it
    assert not (tmp_path / ".crush" / "crush.db-shm").exists()
    assert report.errors == []


def test_the_real_stores_are_never_touched() -> None:
    before = {p: digests(p) for p in (CRUSH, OPENCODE_GO)}
    for path in before:
        ingest_file(path)
    assert {p: digests(p) for p in before} == before


def test_schema_is_read_without_side_files_and_damage_is_reported(tmp_path: Path) -> None:
    store = copy_store(OPENCODE_GO, tmp_path / ".opencode")
    tables = sqlite_store.schema(Probe.read(store))
    assert {"sessions", "messages", "files"} <= set(tables)
    damaged = tmp_path / "damaged.db"
    data = bytearray(store.read_bytes()[:8192])
    data[100:4096] = b"\xff" * (4096 - 100)  # the schema page overwritten
    damaged.write_bytes(bytes(data))
    report = FileReport(path=str(damaged))
    with sqlite_store.open_store(damaged, report) as opened:
        assert opened is None
    assert report.errors and "SQLite" in report.errors[0].reason
    not_a_db = tmp_path / "notes.db"
    not_a_db.write_text("hello")
    assert ingest_file(not_a_db)[0].status == "skipped"


def test_a_locked_store_is_still_read(tmp_path: Path) -> None:
    """An agent writing its store holds a lock; the copy is read all the same."""
    store = copy_store(OPENCODE_GO, tmp_path / ".opencode")
    writer = sqlite3.connect(store)
    try:
        writer.execute("BEGIN EXCLUSIVE")
        report, trajectories = ingest_file(store)
    finally:
        writer.rollback()
        writer.close()
    assert report.format == "opencode-go"
    assert len(trajectories) == 7


# -- Crush -----------------------------------------------------------------------------------
def test_crush_store() -> None:
    """One session, 34 messages (3 user, 17 assistant, 14 tool); 14 tool_call parts
    (ls 4, glob 3, view 3, multiedit 2, edit 1, write 1) and 14 tool_result parts, one with
    is_error (a multiedit whose old_string was not found)."""
    report, trajectories = ingest_file(CRUSH)
    assert report.format == "crush"
    assert report.status == "ok", report.errors
    assert len(trajectories) == 1
    (t,) = trajectories
    assert t.agent == "crush"
    assert t.session_id == "4f04805a-caf7-4a47-b98f-b50e16556fa2"
    assert calls(t) == 14
    results = [s for s in t.steps if s.kind is StepKind.TOOL_RESULT]
    assert len(results) == 14
    assert all(s.call_index is not None for s in results)
    errors = [s for s in results if s.is_error]
    assert len(errors) == 1 and "old_string not found" in errors[0].text
    assert errors[0].protocol_error  # the harness refused the edit, the project did not fail
    assert t.model == "o4-mini"
    assert t.task and t.task.startswith("`Please analyze this codebase")
    # the view of a relative path answered for the absolute one: the project folder
    assert t.cwd == "/Users/thomas/Code/github.com/exa-networks/exabgp/main"
    edits = [s for s in t.steps if s.kind is StepKind.TOOL_CALL and s.tool in ("edit", "multiedit", "write")]
    assert edits and all(s.diff for s in edits)
    assert t.started_at is not None and t.started_at.year == 2025


def test_go_opencode_store() -> None:
    """7 sessions, 124 messages; 80 tool_call parts (edit 45, view 19, write 7, glob 4, patch 4,
    grep 1) and 80 tool_result parts, 21 with is_error. Per session (in created order) the tool
    calls are 8, 40, 4, 12, 14, 1, 1."""
    report, trajectories = ingest_file(OPENCODE_GO)
    assert report.format == "opencode-go"
    assert report.status == "ok", report.errors
    assert [calls(t) for t in trajectories] == [8, 40, 4, 12, 14, 1, 1]
    assert sum(1 for t in trajectories for s in t.steps if s.kind is StepKind.TOOL_RESULT and s.is_error) == 21
    assert {t.agent for t in trajectories} == {"opencode"}
    # the store is the project's: the folder the files of all its sessions share
    assert {t.cwd for t in trajectories} == {"/home/max/dev/utils"}


def test_crush_and_go_opencode_claim_only_their_own_stores() -> None:
    by_name = {f.name: f for f in registered_formats()}
    crush, go = by_name["crush"], by_name["opencode-go"]
    assert crush.sniff(Probe.read(CRUSH)) and not go.sniff(Probe.read(CRUSH))
    assert go.sniff(Probe.read(OPENCODE_GO)) and not crush.sniff(Probe.read(OPENCODE_GO))


# -- increments ------------------------------------------------------------------------------
def test_a_store_read_again_gives_only_its_new_and_changed_sessions(tmp_path: Path) -> None:
    store = copy_store(OPENCODE_GO, tmp_path / ".opencode")
    first = read(store, None, reader="r")
    assert first.mode is Mode.NEW and len(first.trajectories) == 7
    assert first.watermark is not None and first.watermark.state is not None
    # nothing changed: not parsed again
    again = read(store, first.watermark, reader="r")
    assert again.mode is Mode.UNCHANGED
    # one session gains a message: only that session is read again
    con = sqlite3.connect(store)
    session = con.execute("SELECT id FROM sessions ORDER BY created_at LIMIT 1").fetchone()[0]
    con.execute("INSERT INTO messages (id, session_id, role, parts, model, created_at, updated_at) "
                "VALUES ('m-new', ?, 'user', ?, NULL, 1751999999, 1751999999)",
                (session, '[{"type":"text","data":{"text":"and now add tests"}}]'))
    con.execute("UPDATE sessions SET updated_at = 1751999999 WHERE id = ?", (session,))
    con.commit()
    con.close()
    grown = read(store, first.watermark, reader="r")
    assert grown.mode is Mode.SESSIONS
    assert [t.session_id for t in grown.trajectories] == [session]
    assert grown.trajectories[0].steps[-1].text == "and now add tests"
    assert grown.watermark is not None
    assert set(first.watermark.trajectories) < set(grown.watermark.trajectories)
    assert len(grown.watermark.trajectories) == 8


def test_resume_without_changes_reads_nothing(tmp_path: Path) -> None:
    store = copy_store(CRUSH, tmp_path / ".crush")
    fmt = next(f for f in registered_formats() if f.name == "crush")
    checkpoint = Checkpoint()
    assert len(list(fmt.resume(store, FileReport(path=str(store)), checkpoint))) == 1
    report = FileReport(path=str(store))
    assert list(fmt.resume(store, report, checkpoint)) == []
    assert report.status == "skipped"


# -- Goose -----------------------------------------------------------------------------------
GOOSE = CORPUS / "goose" / "jwp23-dotfiles" / "sessions" / "sessions.db"


def test_goose_store_without_messages_is_detected_and_skipped() -> None:
    """sessions.db: schema_version 5, one session (20251202_1, working_dir /Users/jpresley/workspace/tmp/vsl),
    0 messages."""
    before = digests(GOOSE)
    report, trajectories = ingest_file(GOOSE)
    assert report.format == "goose"
    assert report.status == "skipped"
    assert trajectories == []
    assert "1 session" in report.errors[0].reason
    assert digests(GOOSE) == before


GOOSE_MESSAGES = [
    ("user", [{"type": "text", "text": "run the tests"}]),
    ("assistant", [{"type": "text", "text": "Running them."},
                   {"type": "toolRequest", "id": "t1", "toolCall": {"status": "success", "value": {
                       "name": "developer__shell", "arguments": {"command": "pytest -q"}}}}]),
    ("user", [{"type": "toolResponse", "id": "t1", "toolResult": {"status": "success", "value": [
        {"type": "text", "text": "1 failed, 3 passed in 0.2s"}]}}]),
    ("assistant", [{"type": "toolRequest", "id": "t2", "toolCall": {"status": "success", "value": {
        "name": "developer__text_editor", "arguments": {"command": "str_replace", "path": "/x/a.py",
                                                        "old_str": "a", "new_str": "b"}}}}]),
    ("user", [{"type": "toolResponse", "id": "t2", "toolResult": {"status": "error",
                                                                  "error": "no match for old_str"}}]),
]


def test_goose_jsonl_sessions(tmp_path: Path) -> None:
    """Goose before sessions.db (no real file found): a metadata line, then one Message per line."""
    path = tmp_path / "20250101_120000.jsonl"
    lines = [{"working_dir": "/home/me/app", "description": "fix the tests", "message_count": 5}]
    lines += [{"role": role, "created": 1735732800 + n, "content": content}
              for n, (role, content) in enumerate(GOOSE_MESSAGES)]
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n")
    report, (t,) = ingest_file(path)
    assert report.format == "goose-jsonl" and report.status == "ok", report.errors
    assert (t.session_id, t.cwd, t.task) == ("20250101_120000", "/home/me/app", "run the tests")
    assert calls(t) == 2
    assert [s.is_error for s in t.steps if s.kind is StepKind.TOOL_RESULT] == [False, True]


def test_goose_messages_added_to_the_real_store_are_read(tmp_path: Path) -> None:
    """The real store with messages shaped as Goose's Message serializes them (its source: camelCase
    content items, Result values as {status, value}); 2 tool calls, one failing."""
    store = copy_store(GOOSE, tmp_path / "sessions")
    con = sqlite3.connect(store)
    for stamp, (role, content) in enumerate(GOOSE_MESSAGES, 1764694735):
        con.execute("INSERT INTO messages (session_id, role, content_json, created_timestamp) VALUES (?, ?, ?, ?)",
                    ("20251202_1", role, orjson.dumps(content).decode(), stamp))
    con.commit()
    con.close()
    report, (t,) = ingest_file(store)
    assert report.format == "goose" and report.status == "ok", report.errors
    assert t.cwd == "/Users/jpresley/workspace/tmp/vsl"
    assert t.task == "run the tests"
    tool_calls = [s for s in t.steps if s.kind is StepKind.TOOL_CALL]
    assert [s.tool for s in tool_calls] == ["developer__shell", "developer__text_editor"]
    assert tool_calls[0].command == "pytest -q" and tool_calls[1].diff
    results = [s for s in t.steps if s.kind is StepKind.TOOL_RESULT]
    assert [s.is_error for s in results] == [False, True]
    assert [s.protocol_error for s in results] == [False, False]  # "no match for old_str" is not Goose's wording


# -- OpenCode 1.2+ -----------------------------------------------------------------------------
TREE = CORPUS / "opencode" / "jwp23-dotfiles" / "storage"
#: The tables of OpenCode 1.2's store as its drizzle schema declares them (packages/opencode/src/session/
#: session.sql.ts, project.sql.ts; the columns this test fills).
OPENCODE_SCHEMA = """
CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT NOT NULL, vcs TEXT, name TEXT,
  time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, sandboxes TEXT NOT NULL DEFAULT '[]');
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, workspace_id TEXT, parent_id TEXT,
  slug TEXT NOT NULL, directory TEXT NOT NULL, path TEXT, title TEXT NOT NULL, version TEXT NOT NULL,
  share_url TEXT, summary_additions INTEGER, summary_deletions INTEGER, summary_files INTEGER,
  summary_diffs TEXT, revert TEXT, permission TEXT, time_created INTEGER NOT NULL,
  time_updated INTEGER NOT NULL, time_compacting INTEGER, time_archived INTEGER);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
  time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,
  time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
"""


def tree_sessions() -> list[tuple[dict, list[tuple[dict, list[dict]]]]]:
    """The real OpenCode 1.0.107 tree's sessions with their messages and parts, in id order."""
    sessions = []
    for path in sorted((TREE / "session").glob("*/ses_*.json")):
        info = orjson.loads(path.read_bytes())
        messages = []
        for message_path in sorted((TREE / "message" / info["id"]).glob("msg_*.json")):
            message = orjson.loads(message_path.read_bytes())
            parts = [orjson.loads(p.read_bytes()) for p in sorted((TREE / "part" / message["id"]).glob("prt_*.json"))]
            messages.append((message, parts))
        sessions.append((info, messages))
    return sessions


def tree_as_store(folder: Path) -> Path:
    """The same records as rows, the way OpenCode 1.2's migration moved the tree into its store."""
    folder.mkdir(parents=True, exist_ok=True)
    store = folder / "opencode.db"
    con = sqlite3.connect(store)
    con.executescript(OPENCODE_SCHEMA)
    for project_path in (TREE / "project").glob("*.json"):
        project = orjson.loads(project_path.read_bytes())
        con.execute("INSERT INTO project (id, worktree, vcs, time_created, time_updated) VALUES (?, ?, ?, ?, ?)",
                    (project["id"], project["worktree"], project.get("vcs"), project["time"]["created"],
                     project["time"].get("updated", project["time"]["created"])))
    for info, messages in tree_sessions():
        con.execute("INSERT INTO session (id, project_id, slug, directory, title, version, time_created, "
                    "time_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (info["id"], info["projectID"], info["id"], info["directory"], info["title"], info["version"],
                     info["time"]["created"], info["time"]["updated"]))
        for message, parts in messages:
            data = {k: v for k, v in message.items() if k not in ("id", "sessionID")}
            con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                        (message["id"], info["id"], message["time"]["created"], message["time"]["created"],
                         orjson.dumps(data).decode()))
            for part in parts:
                data = {k: v for k, v in part.items() if k not in ("id", "sessionID", "messageID")}
                con.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                            (part["id"], message["id"], info["id"], message["time"]["created"],
                             message["time"]["created"], orjson.dumps(data).decode()))
    con.commit()
    con.close()
    return store


def test_opencode_store_reads_as_the_tree_it_came_from(tmp_path: Path) -> None:
    """The tree: 2 sessions, 12 messages, 5 tool parts (grep -l '"type": *"tool"' part/*/*.json).
    In its store, the same sessions give the same steps as the tree's reader."""
    store = tree_as_store(tmp_path / "opencode")
    report, trajectories = ingest_file(store)
    assert report.format == "opencode-db"
    assert report.status == "ok", report.errors
    assert len(trajectories) == 2
    assert sum(calls(t) for t in trajectories) == 5
    from_tree = {}
    for path in sorted((TREE / "session").glob("*/ses_*.json")):
        (t,) = ingest_file(path)[1]
        from_tree[t.session_id] = t
    for t in trajectories:
        tree = from_tree[t.session_id]
        assert [(s.kind, s.tool, s.text) for s in t.steps] == [(s.kind, s.tool, s.text) for s in tree.steps]
        assert (t.cwd, t.model, t.task, t.agent) == (tree.cwd, tree.model, tree.task, tree.agent)
        assert t.source_format == "opencode-db"


def test_opencode_export_reads_as_the_tree_it_came_from(tmp_path: Path) -> None:
    """`opencode export` nests the same records: {info, messages: [{info, parts}]}."""
    total = 0
    for info, messages in tree_sessions():
        exported = tmp_path / f"{info['id']}.json"
        exported.write_bytes(orjson.dumps({"info": info, "messages": [{"info": m, "parts": p} for m, p in messages]},
                                          option=orjson.OPT_INDENT_2))
        report, trajectories = ingest_file(exported)
        assert report.format == "opencode-export", report.errors
        assert report.status == "ok", report.errors
        (t,) = trajectories
        assert t.session_id == info["id"]
        total += calls(t)
    assert total == 5


def test_an_opencode_store_session_that_changes_is_read_again_alone(tmp_path: Path) -> None:
    store = tree_as_store(tmp_path / "opencode")
    first = read(store, None, reader="r")
    assert len(first.trajectories) == 2
    con = sqlite3.connect(store)
    part_id, data = con.execute("SELECT id, data FROM part WHERE data LIKE '%\"type\":\"tool\"%' "
                                "ORDER BY id LIMIT 1").fetchone()
    session = con.execute("SELECT session_id FROM part WHERE id = ?", (part_id,)).fetchone()[0]
    changed = orjson.loads(data)
    changed["state"] = {**changed["state"], "status": "error", "error": "aborted"}
    con.execute("UPDATE part SET data = ?, time_updated = time_updated + 1 WHERE id = ?",
                (orjson.dumps(changed).decode(), part_id))
    con.commit()
    con.close()
    again = read(store, first.watermark, reader="r")
    assert again.mode is Mode.SESSIONS
    assert [t.session_id for t in again.trajectories] == [session]
    assert any(s.is_error and s.text == "aborted" for s in again.trajectories[0].steps)


# -- Cursor ----------------------------------------------------------------------------------
CURSOR = CORPUS / "cursor_agent" / "cursor-history" / "workspaceStorage" / "state.vscdb"
CURSOR_DUMP = CURSOR.parent / "f87f6e0b2cf1ae8645cc0c5ffaa99529.json"


def test_cursor_ide_workspace_store() -> None:
    """state.vscdb (Cursor ~0.42): composer.composerData holds 26 composers with 82 inline bubbles,
    all with text; the chat pane's 5 tabs hold 49 bubbles, 44 with text. No tool calls in this era."""
    before = digests(CURSOR)
    report, trajectories = ingest_file(CURSOR)
    assert report.format == "cursor-ide"
    assert report.status == "ok", report.errors
    assert len(trajectories) == 31
    assert sum(len(t.steps) for t in trajectories) == 82 + 44
    assert sum(calls(t) for t in trajectories) == 0
    first = trajectories[0]
    assert first.session_id == "090e988a-b2e3-4fcc-84e0-62a9401ae6ea"
    assert first.task and first.task.startswith("add the following elements to the sidebar")
    assert first.started_at is not None and first.started_at.year == 2024
    assert digests(CURSOR) == before


def test_cursor_dump_and_vscode_stores_are_not_claimed(tmp_path: Path) -> None:
    """The Datasette JSON dump of such a table is not Cursor's file; nor is a VS Code store (same tables)."""
    assert ingest_file(CURSOR_DUMP)[0].status == "skipped"
    vscode = tmp_path / "state.vscdb"
    con = sqlite3.connect(vscode)
    con.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    con.execute("INSERT INTO ItemTable VALUES ('workbench.panel.markers.hidden', 'true')")
    con.commit()
    con.close()
    assert ingest_file(vscode)[0].status == "skipped"


def test_cursor_ide_global_store_with_tool_bubbles(tmp_path: Path) -> None:
    """The newer global layout (cursorDiskKV: composerData:<id> listing headers, bubbleId:<id>:<bubble>
    holding each bubble with toolFormerData), added to a copy of the real store as the docs describe it."""
    store = copy_store(CURSOR, tmp_path / "globalStorage")
    con = sqlite3.connect(store)
    con.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    composer = {"composerId": "c-1", "name": "fix tests", "createdAt": 1750000000000, "lastUpdatedAt": 1750000100000,
                "fullConversationHeadersOnly": [{"bubbleId": "b1", "type": 1}, {"bubbleId": "b2", "type": 2},
                                                {"bubbleId": "b3", "type": 2}]}
    bubbles = {
        "b1": {"type": 1, "text": "make the tests pass"},
        "b2": {"type": 2, "text": "", "toolFormerData": {
            "name": "run_terminal_cmd", "toolCallId": "t1", "status": "completed",
            "params": '{"command": "pytest -q"}', "result": '{"output": "1 failed", "exitCode": 1}'}},
        "b3": {"type": 2, "text": "One test fails.", "toolFormerData": {
            "name": "edit_file", "toolCallId": "t2", "status": "error", "params": '{"target_file": "/w/a.py"}',
            "result": '{"error": "The string to replace was not found in the file"}'}},
    }
    con.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", ("composerData:c-1", orjson.dumps(composer)))
    for bubble_id, bubble in bubbles.items():
        con.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"bubbleId:c-1:{bubble_id}", orjson.dumps(bubble)))
    con.commit()
    con.close()
    report, trajectories = ingest_file(store)
    assert report.status == "ok", report.errors
    assert len(trajectories) == 32
    t = next(t for t in trajectories if t.session_id == "c-1")
    assert [s.tool for s in t.steps if s.kind is StepKind.TOOL_CALL] == ["run_terminal_cmd", "edit_file"]
    results = [s for s in t.steps if s.kind is StepKind.TOOL_RESULT]
    assert [(s.exit_code, s.is_error) for s in results] == [(1, True), (None, True)]
    assert results[1].protocol_error


def protobuf_bytes(field: int, value: bytes) -> bytes:
    """One length-delimited protobuf field (lengths below 128)."""
    return bytes([field << 3 | 2, len(value)]) + value


def test_cursor_agent_cli_store(tmp_path: Path) -> None:
    """A store.db laid out as the docs describe it (no real one was found): meta "0" hex JSON, message
    blobs as JSON keyed by their sha256, a protobuf root listing them in order."""
    folder = tmp_path / "chats" / ("0" * 32) / "agent-1"
    folder.mkdir(parents=True)
    store = folder / "store.db"
    con = sqlite3.connect(store)
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    con.execute("CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB)")
    messages = [
        {"role": "user", "id": "1", "content": [{"type": "text", "text": "<user_info>\nWorkspace Path: /home/me/app\n"
                                                                          "</user_info>"}]},
        {"role": "user", "id": "2", "content": [{"type": "text", "text": "list the files"}]},
        {"role": "assistant", "id": "3", "content": [
            {"type": "tool-call", "toolCallId": "c1", "toolName": "Shell", "args": {"command": "ls"}}]},
        {"role": "tool", "id": "4", "content": [
            {"type": "tool-result", "toolCallId": "c1", "toolName": "Shell", "result": "README.md"}]},
        {"role": "assistant", "id": "5", "content": [{"type": "text", "text": "There is a README."}]},
    ]
    ids = []
    for message in reversed(messages):  # stored out of order: the root says the order
        data = orjson.dumps(message)
        ids.insert(0, hashlib.sha256(data).digest())
        con.execute("INSERT INTO blobs VALUES (?, ?)", (hashlib.sha256(data).hexdigest(), data))
    root = b"".join(protobuf_bytes(1, i) for i in ids)
    root_id = hashlib.sha256(root).hexdigest()
    con.execute("INSERT INTO blobs VALUES (?, ?)", (root_id, root))
    meta = {"agentId": "agent-1", "latestRootBlobId": root_id, "name": "List files", "mode": "auto-run",
            "createdAt": 1760000000000, "lastUsedModel": "gpt-5"}
    con.execute("INSERT INTO meta VALUES ('0', ?)", (orjson.dumps(meta).hex(),))
    con.commit()
    con.close()
    report, (t,) = ingest_file(store)
    assert report.format == "cursor-agent" and report.status == "ok", report.errors
    assert (t.session_id, t.model, t.cwd, t.task) == ("agent-1", "gpt-5", "/home/me/app", "list the files")
    assert [s.kind for s in t.steps] == [StepKind.USER, StepKind.USER, StepKind.TOOL_CALL, StepKind.TOOL_RESULT,
                                         StepKind.ASSISTANT]
    assert t.steps[2].command == "ls" and t.steps[3].call_index == 2


# -- damage --------------------------------------------------------------------------------------
STORES = [CRUSH, OPENCODE_GO, GOOSE, CURSOR]


@pytest.mark.parametrize("original", STORES, ids=lambda p: p.name)
@pytest.mark.parametrize("damage", ["truncated", "garbled page", "garbled wal"])
def test_a_damaged_store_is_reported_never_raised(original: Path, damage: str, tmp_path: Path) -> None:
    store = copy_store(original, tmp_path / original.parent.name)
    (store.parent / f"{store.name}-shm").unlink(missing_ok=True)
    wal = store.parent / f"{store.name}-wal"
    if damage == "truncated":
        store.write_bytes(store.read_bytes()[: max(4096, store.stat().st_size // 2)])
    elif damage == "garbled page":
        data = bytearray(store.read_bytes())
        at = max(4096, len(data) // 2 // 4096 * 4096)
        data[at:at + 4096] = random.Random(7).randbytes(4096)
        store.write_bytes(bytes(data))
    elif wal.exists():
        data = bytearray(wal.read_bytes())
        data[len(data) // 2: len(data) // 2 + 8192] = random.Random(7).randbytes(8192)
        wal.write_bytes(bytes(data))
    else:
        pytest.skip("no WAL beside this store")
    report, trajectories = ingest_file(store)
    assert not any(PARSER_FAILED in e.reason for e in report.errors), report.errors
    assert report.status in ("ok", "partial", "failed", "skipped")
    assert len(report.trajectories) == len(trajectories)
    if report.status != "ok" and report.status != "skipped":
        assert report.errors


def test_bad_bytes_in_a_cell_are_replaced_and_reported(tmp_path: Path) -> None:
    """Invalid UTF-8 and NUL bytes inside a message's JSON: the message is kept, both reported."""
    store = copy_store(OPENCODE_GO, tmp_path / ".opencode")
    con = sqlite3.connect(store)
    message_id, parts = con.execute("SELECT id, parts FROM messages WHERE role = 'user' ORDER BY created_at "
                                    "LIMIT 1").fetchone()
    at = parts.index('"text":"') + len('"text":"')
    broken = parts[:at].encode() + b"\xff\xfe\x00\x00" + parts[at:].encode()
    con.execute("UPDATE messages SET parts = CAST(? AS TEXT) WHERE id = ?", (broken, message_id))
    con.commit()
    con.close()
    report, trajectories = ingest_file(store)
    assert report.status == "partial"
    reasons = " ".join(e.reason for e in report.errors)
    assert "NUL bytes dropped" in reasons and "UTF-8" in reasons
    assert [calls(t) for t in trajectories] == [8, 40, 4, 12, 14, 1, 1]


def test_crush_bash_results_give_their_exit_code_and_folder(tmp_path: Path) -> None:
    """A bash call and its result added to a copy of the real store as Crush's bash tool writes them:
    stderr, then "Exit code N", then "<cwd>...</cwd>" (internal/llm/tools/bash.go)."""
    store = copy_store(CRUSH, tmp_path / ".crush")
    con = sqlite3.connect(store)
    session = con.execute("SELECT id FROM sessions").fetchone()[0]
    call = [{"type": "tool_call", "data": {"id": "call_b1", "name": "bash", "input": '{"command":"pytest -q"}',
                                           "type": "function", "finished": True}},
            {"type": "finish", "data": {"reason": "tool_use", "time": 1755639400}}]
    result = [{"type": "tool_result", "data": {
        "tool_call_id": "call_b1", "name": "bash", "is_error": False,
        "content": "1 failed, 2 passed in 0.1s\nExit code 1\n\n<cwd>/srv/exabgp</cwd>",
        "metadata": '{"start_time":1,"end_time":2,"output":"...","working_directory":"/srv/exabgp"}'}},
        {"type": "finish", "data": {"reason": "stop", "time": 0}}]
    for number, (role, parts) in enumerate([("assistant", call), ("tool", result)]):
        con.execute("INSERT INTO messages (id, session_id, role, parts, model, created_at, updated_at, provider) "
                    "VALUES (?, ?, ?, ?, 'o4-mini', ?, ?, 'openai')",
                    (f"bash-{number}", session, role, orjson.dumps(parts).decode(), 1755639400 + number,
                     1755639400 + number))
    con.commit()
    con.close()
    (t,) = ingest_file(store)[1]
    assert calls(t) == 15
    last = t.steps[-1]
    assert (last.kind, last.exit_code, last.is_error) == (StepKind.TOOL_RESULT, 1, True)
    assert t.cwd == "/srv/exabgp"  # the shell's own folder is the best evidence


# -- Cursor chats exported by SpecStory ------------------------------------------------------------
SPECSTORY = CORPUS / "cursor_ide_specstory" / "minsky"


@pytest.mark.parametrize(("name", "tools", "users"), [
    # grep -c '^```bash' (30), grep -c '^Read file' (8), blocks starting '```diff' (4), '<details>' (2)
    ("2025-04-29_19-23-continuing-task-001.md",
     {"run_terminal_cmd": 30, "read_file": 8, "edit_file": 4, "listed_directory": 2}, 7),
    # 15 bash fences at a block's start, 1 'Read file', 5 '<details>' panels (3 listings, 2 codebase searches)
    ("2025-04-30_01-13-task-011-progress-and-updates.md",
     {"run_terminal_cmd": 15, "read_file": 1, "listed_directory": 3, "searched_codebase": 2}, 1),
])
def test_specstory_exports(name: str, tools: dict[str, int], users: int) -> None:
    """Not SQLite, but Cursor's agent chats as SpecStory writes them out; one session per file."""
    report, (t,) = ingest_file(SPECSTORY / name)
    assert report.format == "cursor-specstory"
    assert report.status == "ok", report.errors
    found: dict[str, int] = {}
    for step in t.steps:
        if step.kind is StepKind.TOOL_CALL:
            found[step.tool] = found.get(step.tool, 0) + 1
    assert found == tools
    assert sum(1 for s in t.steps if s.kind is StepKind.USER) == users
    assert t.agent == "cursor" and t.started_at is not None
    commands = [s for s in t.steps if s.kind is StepKind.TOOL_CALL and s.command]
    assert all(s.result_index is not None for s in commands[:5])


def test_a_cancelled_call_is_a_failed_one() -> None:
    """'Cancelled' follows the Read file of startSession.test.ts in the first export."""
    (t,) = ingest_file(SPECSTORY / "2025-04-29_19-23-continuing-task-001.md")[1]
    (cancelled,) = [s for s in t.steps if s.kind is StepKind.TOOL_RESULT and s.text == "Cancelled"]
    assert cancelled.is_error and t.steps[cancelled.call_index].tool == "read_file"


def test_a_folder_walk_enters_the_agents_data_folders() -> None:
    """Crush, the Go OpenCode and SpecStory keep their files in a hidden folder of the project."""
    found = {p.name for p in iter_files([CORPUS / "crush", CORPUS / "cursor_ide_specstory"])}
    assert {"crush.db", "opencode.db", "2025-04-29_19-23-continuing-task-001.md"} <= found
    assert not any(name.endswith(("-wal", "-shm")) for name in found)
