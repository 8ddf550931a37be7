"""OpenCode 1.2+ (sst / anomalyco): the SQLite store ``~/.local/share/opencode/opencode.db`` and ``opencode export``.

OpenCode 1.2 moved its storage tree (``pipeline.ingest.formats.opencode``) into one SQLite store
(drizzle, WAL mode) with the same records as rows:

* ``project(id, worktree, vcs, ...)``;
* ``session(id, project_id, parent_id, slug, directory, title, version, ..., time_created,
  time_updated)``;
* ``message(id, session_id, time_created, time_updated, data)``: ``data`` is the message record
  of the tree without ``id`` and ``sessionID`` (role, modelID, path{cwd, root}, error ...);
* ``part(id, message_id, session_id, time_created, time_updated, data)``: ``data`` the part
  record without ``id``, ``sessionID`` and ``messageID`` (text, tool{callID, tool, state}, ...).

Times are epoch milliseconds. ``opencode export <session>`` prints one session as JSON,
``{info: <session>, messages: [{info: <message>, parts: [<part>, ...]}]}``, the tree's records
nested. Both are read through the tree's reader, so a tool part means the same in all three.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats import opencode
from pipeline.ingest.formats._common import SHAPE_ERRORS, as_dict, shape_error
from pipeline.ingest.formats._stores import SessionEntry, StoreFormat
from pipeline.ingest.reader import Probe, load_json
from pipeline.ingest.report import FileReport
from pipeline.ingest.sqlite_store import Store, Tables, loads
from pipeline.trajectory import Trajectory

_SESSION_COLUMNS = ("id", "project_id", "parent_id", "directory", "title", "version", "time_created",
                    "time_updated")
_ROW_COLUMNS = ("id", "message_id", "time_created", "time_updated", "data")
#: Per session and table: rows, the last and the sum of their update times (a row changed earlier moves it), last id.
_MARKS = "SELECT session_id, count(*), max(time_updated), total(time_updated), max(id) FROM {table} GROUP BY session_id"
_EXPORT_HEAD = re.compile(r'^\s*\{\s*"info"\s*:\s*\{[^{}]*"id"\s*:\s*"ses_')


class OpenCodeDb(StoreFormat):
    name = "opencode-db"
    agent = "opencode"
    description = "OpenCode 1.2+ SQLite store (opencode.db: session, message and part rows with JSON data)"
    #: xdg-basedir's data folder on every system, macOS and Windows included
    locations = ("${XDG_DATA_HOME:-~/.local/share}/opencode/opencode.db",)
    priority = 5
    protocol_errors = opencode.PROTOCOL_ERRORS
    empty = "OpenCode store without sessions"

    def claims(self, tables: Tables, path: Path) -> bool:
        return ({"id", "directory", "time_updated"} <= tables.get("session", frozenset())
                and {"id", "session_id", "data"} <= tables.get("message", frozenset())
                and {"id", "message_id", "data"} <= tables.get("part", frozenset()))

    def sessions(self, store: Store, report: FileReport) -> Iterator[SessionEntry]:
        marks: dict[str, list[Any]] = {}
        for table in ("message", "part"):
            for row in store.rows(_MARKS.format(table=table), report):
                key = row[0].decode("utf-8", "replace") if isinstance(row[0], bytes) else str(row[0])
                marks.setdefault(key, []).extend(v.decode("utf-8", "replace") if isinstance(v, bytes) else v
                                                 for v in row[1:])
        worktrees = {row["id"]: row.get("worktree") for row in store.select("project", ("id", "worktree"), report)}
        for session in store.select("session", _SESSION_COLUMNS, report, order="time_created, id"):
            session_id = session["id"]
            if not isinstance(session_id, str):
                report.error(f"a session without a text id ({session_id!r}); skipped")
                continue
            mark = [session.get("time_updated"), *marks.get(session_id, [])]
            root = worktrees.get(session.get("project_id"))
            yield session_id, mark, lambda s=session, r=root: self._session(store, s, r, report)

    def _session(self, store: Store, row: dict[str, Any], root: Any, report: FileReport) -> Trajectory | None:
        info: dict[str, Any] = {"id": row["id"], "title": row.get("title"), "directory": row.get("directory"),
                                "version": row.get("version"), "parentID": row.get("parent_id"),
                                "projectID": row.get("project_id"),
                                "time": {"created": row.get("time_created"), "updated": row.get("time_updated")}}
        parts: dict[str, list[dict[str, Any]]] = {}
        for part in store.select("part", _ROW_COLUMNS, report, where="session_id = ?", order="message_id, id",
                                 params=(row["id"],)):
            data = loads(part.get("data"), report, f"part {part['id']}")
            if isinstance(data, dict) and isinstance(part["id"], str):
                parts.setdefault(str(part.get("message_id")), []).append(
                    {**data, "id": part["id"], "sessionID": row["id"], "messageID": part.get("message_id")})
        messages = []
        for message in store.select("message", ("id", "time_created", "data"), report, where="session_id = ?",
                                    order="time_created, id", params=(row["id"],)):
            data = loads(message.get("data"), report, f"message {message['id']}")
            if isinstance(data, dict) and isinstance(message["id"], str):
                record = {**data, "id": message["id"], "sessionID": row["id"]}
                if not isinstance(as_dict(record.get("time")).get("created"), int | float):
                    record["time"] = {**as_dict(record.get("time")), "created": message.get("time_created")}
                messages.append((record, parts.get(message["id"], [])))
        return _Rows(store.path, info, report, self.name, messages, root).read()


class OpenCodeExport(TrajectoryFormat):
    name = "opencode-export"
    agent = "opencode"
    description = "OpenCode `opencode export <session>` JSON ({info, messages: [{info, parts}]})"
    locations = ("<output dir>/<session>.json (opencode export)",)
    suffixes = (".json",)
    priority = 7
    protocol_errors = opencode.PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        document = probe.document
        if isinstance(document, dict):
            return _is_export(document)
        return probe.first_char == "{" and bool(_EXPORT_HEAD.match(probe.text[:4000]))

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        document = load_json(path, report)
        if document is None:
            return
        if not isinstance(document, dict) or not _is_export(document):
            report.error("not an OpenCode export ({info, messages} with a session's info expected)")
            return
        info = dict(document["info"])
        messages = []
        for position, entry in enumerate(document["messages"]):
            message = as_dict(entry).get("info")
            if not isinstance(message, dict) or not isinstance(message.get("id"), str):
                report.error(f"message {position}: no info with an id; skipped")
                continue
            parts = [p for p in (as_dict(entry).get("parts") or []) if isinstance(p, dict) and isinstance(
                p.get("id"), str)] if isinstance(as_dict(entry).get("parts"), list) else []
            messages.append((message, parts))
        trajectory = _Rows(path, info, report, self.name, messages, None).read()
        if trajectory is not None:
            yield trajectory
        elif not report.errors:
            report.status = "skipped"
            report.error("OpenCode export of a session without messages")


def _is_export(document: dict[str, Any]) -> bool:
    info, messages = document.get("info"), document.get("messages")
    return (isinstance(info, dict) and isinstance(info.get("id"), str) and isinstance(messages, list)
            and opencode.record_kind(info) == "session"
            and all(isinstance(m, dict) and "info" in m for m in messages[:20]))


class _Rows(opencode._Session):  # noqa: SLF001 -- the tree's reader, fed from rows instead of files
    """A session whose messages and parts come as records (store rows, an export), not files."""

    def __init__(self, path: Path, info: dict[str, Any], report: FileReport, source_format: str,
                 messages: list[tuple[dict[str, Any], list[dict[str, Any]]]], root: Any) -> None:
        self.source_format = source_format
        super().__init__(path, info, report)
        self.messages = messages
        self.root = root if isinstance(root, str) and root not in ("", "/") else None

    def _read(self) -> Trajectory | None:
        for message, parts in self.messages:
            try:
                self._message(message, parts)
            except SHAPE_ERRORS as exc:
                self.report.error(shape_error(f"message {message.get('id')}", exc))
        return self._build() if self.b.steps else None
