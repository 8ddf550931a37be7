"""Crush (charmbracelet) stores, and those of its predecessor the Go OpenCode: ``<project>/.crush/crush.db``.

Both keep every session of a project in one SQLite store in the project's data folder
(``.crush/crush.db``; the Go OpenCode ``.opencode/opencode.db``, ``data.directory`` in their
configs), written by the same sqlc queries and goose migrations:

* ``sessions(id, parent_session_id, title, message_count, prompt_tokens, completion_tokens, cost,
  created_at, updated_at, summary_message_id)``;
* ``messages(id, session_id, role, parts, model, [provider,] created_at, updated_at, finished_at)``,
  roles user / assistant / tool, ``parts`` a JSON list of ``{type, data}``: ``text{text}``,
  ``reasoning{thinking}``, ``image_url{url}``, ``binary{Path, MIMEType}``,
  ``tool_call{id, name, input (a JSON string), finished}``, ``tool_result{tool_call_id, name,
  content, metadata (a JSON string), is_error}`` and ``finish{reason, time, message}``. Newer Crush
  stores a row's parts zstd-compressed (a zstd frame instead of ``[``);
* ``files(session_id, path, content, version)``: file snapshots, not read.

Crush added ``messages.provider``; a store without it is the Go OpenCode's (its folder says so
too). The comments say milliseconds, but the Go code writes Unix seconds: both are read. There
is no working folder in the store: it is the folder around ``.crush/`` (or what the tools show,
``pipeline.ingest.formats._stores.Workdir``). A bash result ends with ``Exit code N`` when the
command failed, Crush's then with ``<cwd>/the/folder</cwd>``. See the "crush" folder of ../shared/trajectories.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.ingest.formats._common import (
    as_dict,
    as_str,
    describe,
    loads_object,
    paths_in,
    pick_task,
    unified,
)
from pipeline.ingest.formats._stores import (
    SessionEntry,
    StoreFormat,
    Workdir,
    common_folder,
    ms,
    project_folder,
)
from pipeline.ingest.identity import resolve_repo
from pipeline.ingest.report import FileReport
from pipeline.ingest.sqlite_store import Store, Tables, loads, text
from pipeline.redact import sanitize
from pipeline.trajectory import Trajectory, TrajectoryBuilder
from pipeline.trajectory.builder import parse_time

_SESSION_COLUMNS = ("id", "parent_session_id", "title", "message_count", "created_at", "updated_at")
_MESSAGE_COLUMNS = ("id", "role", "parts", "model", "provider", "created_at", "updated_at", "finished_at")
#: Per session: how many messages, the last and the sum of their update times (an earlier message
#: rewritten moves it), the last row (the session's mark).
_MARKS = ("SELECT session_id, count(*), max(updated_at), total(updated_at), max(rowid) FROM messages "
          "GROUP BY session_id")
_ZSTD = b"\x28\xb5\x2f\xfd"
#: The files the sessions touched, to tell the project folder they all share (the store is the project's).
_PROJECT_PATHS = "SELECT DISTINCT path FROM files LIMIT 2000"
_SHELL_TOOLS = {"bash", "shell"}
#: The end of a bash result: ``Exit code N`` when the command failed, then Crush's ``<cwd>...</cwd>``.
_EXIT = re.compile(r"(?:^|\n)Exit code (-?\d+)\s*(?:<cwd>[^\n]*</cwd>\s*)?$")
_CWD = re.compile(r"\n<cwd>([^\n]+)</cwd>\s*$")
#: Crush / Go OpenCode refusing a call before running it (tool argument and file-state checks).
PROTOCOL_ERRORS = re.compile(
    r"\A\s*(?:edit \d+ failed: )?(?:old_string not found in (?:the )?(?:file|content)|old_string appears multiple "
    r"times|you must read the file before (?:editing|writing) it|file .{1,300}? has been modified since it was "
    r"last read|invalid parameters|error parsing parameters|tool not found)", re.I)


def _crush_schema(tables: Tables) -> bool:
    sessions, messages = tables.get("sessions", frozenset()), tables.get("messages", frozenset())
    return ({"id", "title", "message_count", "updated_at"} <= sessions
            and {"id", "session_id", "role", "parts"} <= messages)


class Crush(StoreFormat):
    name = "crush"
    agent = "crush"
    description = "Crush SQLite stores (<project>/.crush/crush.db: sessions, messages with JSON parts)"
    locations = ("<repo>/.crush/crush.db",)
    priority = 5
    protocol_errors = PROTOCOL_ERRORS
    empty = "Crush store without messages"
    data_folders = (".crush",)

    def claims(self, tables: Tables, path: Path) -> bool:
        if not _crush_schema(tables):
            return False
        return "provider" in tables["messages"] or path.absolute().parent.name == ".crush"

    def sessions(self, store: Store, report: FileReport) -> Iterator[SessionEntry]:
        marks = {text(row[0], report, "messages") if isinstance(row[0], bytes) else str(row[0]): list(row[1:])
                 for row in store.rows(_MARKS, report)}
        found = store.rows(_PROJECT_PATHS, report) if store.has("files", "path") else iter(())
        paths = [p for p in (text(r[0], report, "files") if isinstance(r[0], bytes) else r[0] for r in found)
                 if isinstance(p, str) and p.startswith("/")]
        project = common_folder(paths) if paths else None
        for session in store.select("sessions", _SESSION_COLUMNS, report, order="created_at, rowid"):
            session_id = session["id"]
            if not isinstance(session_id, str):
                report.error(f"a session without a text id ({session_id!r}); skipped")
                continue
            mark = [session.get("updated_at"), *marks.get(session_id, [0, None, None, None])]
            yield session_id, mark, lambda s=session: _Session(self, store, s, report, project).read()


class OpenCodeGo(Crush):
    name = "opencode-go"
    agent = "opencode"
    description = ("Go OpenCode (opencode-ai/opencode, Crush's predecessor) SQLite stores "
                   "(<project>/.opencode/opencode.db)")
    locations = ("<repo>/.opencode/opencode.db",)
    empty = "Go OpenCode store without messages"
    data_folders = (".opencode",)

    def claims(self, tables: Tables, path: Path) -> bool:
        return (_crush_schema(tables) and "provider" not in tables["messages"]
                and path.absolute().parent.name != ".crush")


class _Session:
    def __init__(self, fmt: Crush, store: Store, session: dict[str, Any], report: FileReport,
                 project: str | None) -> None:
        self.fmt, self.store, self.session, self.report = fmt, store, session, report
        self.b = TrajectoryBuilder(source_format=fmt.name, agent=fmt.agent, source_path=str(store.path))
        self.workdir = Workdir(project_folder(store.path, fmt.data_folders), project)
        self.models: Counter[str] = Counter()
        self.prompts: list[str] = []
        self.last: Any = None
        self.calls: dict[str, tuple[str, dict[str, Any]]] = {}  # call id -> (tool, arguments)

    def read(self) -> Trajectory | None:
        session_id = self.session["id"]
        for message in self.store.select("messages", _MESSAGE_COLUMNS, self.report, where="session_id = ?",
                                         order="created_at, rowid", params=(session_id,), raw=("parts",)):
            parts = self._parts(message)
            role = message.get("role")
            stamp = ms(message.get("created_at"))
            self.last = message.get("finished_at") or message.get("updated_at") or self.last
            if role == "assistant" and isinstance(message.get("model"), str) and message["model"]:
                self.models[message["model"]] += 1
            for part in parts:
                self._part(role, part, stamp, ms(message.get("finished_at")) or stamp)
        if not self.b.steps:
            return None
        b = self.b
        cwd = self.workdir.best()
        b.set(session_id=session_id, cwd=cwd,
              parent_session_id=self.session.get("parent_session_id") or None,
              model=self.models.most_common(1)[0][0] if self.models else None,
              started_at=parse_time(self.session.get("created_at")),
              ended_at=parse_time(self.session.get("updated_at") or self.last))
        b.set(repo=resolve_repo(b.steps, cwd=sanitize(cwd) if cwd else None))
        b.task = pick_task(self.prompts) or (self.session.get("title") if isinstance(self.session.get("title"), str)
                                             else None)
        return b.build()

    def _parts(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        value = message.get("parts")
        where = f"message {message.get('id')}"
        if isinstance(value, bytes) and value.startswith(_ZSTD):
            value = _unzstd(value)
            if value is None:
                self.report.error(f"{where}: its parts are zstd-compressed (Crush 0.60+), which this Python cannot "
                                  "decompress (it needs 3.14's compression.zstd); skipped")
                return []
        if isinstance(value, bytes):
            value = text(value, self.report, where)
        parts = loads(value, self.report, where)
        if not isinstance(parts, list):
            if parts is not None:
                self.report.error(f"{where}: parts should be a list, found {type(parts).__name__}")
            return []
        return [p for p in parts if isinstance(p, dict)]

    def _part(self, role: Any, part: dict[str, Any], stamp: Any, end: Any) -> None:
        kind, data = part.get("type"), as_dict(part.get("data"))
        if kind == "text":
            body = as_str(data.get("text"))
            if not body.strip():
                return
            if role == "user":
                self.b.user(body, timestamp=stamp)
                self.prompts.append(body)
            elif role == "assistant":
                self.b.assistant(body, timestamp=stamp)
            else:
                self.b.user(body, timestamp=stamp, meta=True)
        elif kind in ("image_url", "binary") and role == "user":
            name = as_str(data.get("Path") or data.get("path") or data.get("url")) or kind
            self.b.user(f"[attachment: {name}]", timestamp=stamp, meta=True)
        elif kind == "tool_call":
            self._call(data, stamp)
        elif kind == "tool_result":
            self._result(data, end)
        elif kind == "finish" and data.get("reason") == "error" and role == "assistant":
            detail = " ".join(as_str(data.get(k)) for k in ("message", "details")).strip()
            self.b.user(f"[error] {detail}".strip(), timestamp=ms(data.get("time")) or end, meta=True)

    def _call(self, data: dict[str, Any], stamp: Any) -> None:
        name = as_str(data.get("name")) or "tool"
        call_id = as_str(data.get("id")) or None
        raw = data.get("input")
        args = loads_object(raw) or {}
        if not args and isinstance(raw, str) and raw.strip():
            args = {"input": raw}
        lowered = name.lower()
        command = args.get("command") if lowered in _SHELL_TOOLS and isinstance(args.get("command"), str) else None
        paths = paths_in(args)
        for path in paths:
            self.workdir.seen(path)
        patch = args.get("patch_text") if isinstance(args.get("patch_text"), str) else None
        if patch:
            paths += re.findall(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$", patch, re.M)
        self.b.call(name, call_id=call_id, text=command or describe(name, args), command=command, paths=paths,
                    diff=_diff(lowered, args, paths), timestamp=stamp)
        if command is not None:
            self.workdir.state(args.get("workdir") or args.get("cwd"))
        if call_id:
            self.calls[call_id] = (lowered, args)

    def _result(self, data: dict[str, Any], stamp: Any) -> None:
        call_id = as_str(data.get("tool_call_id")) or None
        content = as_str(data.get("content"))
        if not content and data.get("data"):
            content = f"[{as_str(data.get('mime_type')) or 'media'}]"
        metadata = loads_object(data.get("metadata")) or {}
        tool, args = self.calls.get(call_id or "", ("", {}))
        self.workdir.pair(args.get("file_path"), metadata.get("file_path"))
        exit_code = None
        if tool in _SHELL_TOOLS:
            self.workdir.state(metadata.get("working_directory"))
            if cwd := _CWD.search(content):
                self.workdir.state(cwd.group(1))
            found = _EXIT.search(content)
            exit_code = int(found.group(1)) if found else (None if data.get("is_error") else 0)
        is_error = bool(data.get("is_error")) or (exit_code not in (None, 0))
        diff = metadata.get("diff") if isinstance(metadata.get("diff"), str) else None
        if diff and call_id:
            self.b.amend_result(call_id, diff=diff)
        self.b.result(call_id=call_id, text=content, exit_code=exit_code, is_error=is_error, timestamp=stamp)


def _diff(tool: str, args: dict[str, Any], paths: list[str]) -> str | None:
    path = paths[0] if paths else "file"
    if tool == "edit" and isinstance(args.get("old_string"), str):
        return unified(path, args["old_string"], as_str(args.get("new_string")))
    if tool == "multiedit" and isinstance(args.get("edits"), list):
        hunks = [unified(path, as_str(e.get("old_string")), as_str(e.get("new_string")))
                 for e in args["edits"] if isinstance(e, dict)]
        return "\n".join(h for h in hunks if h) or None
    if tool == "write" and isinstance(args.get("content"), str):
        return unified(path, "", args["content"])
    if tool == "patch" and isinstance(args.get("patch_text"), str):
        return args["patch_text"]
    return None


def _unzstd(value: bytes) -> bytes | None:
    try:
        from compression import zstd  # type: ignore[import-not-found]  # Python 3.14+
    except ImportError:
        return None
    try:
        return bytes(zstd.decompress(value))
    except Exception:  # noqa: BLE001 -- a damaged frame is the row's problem, reported by the caller
        return None

