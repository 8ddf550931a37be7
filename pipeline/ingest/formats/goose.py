"""Goose (block/goose) session stores: ``~/.local/share/goose/sessions/sessions.db``.

Since about v1.10 Goose keeps every session in one SQLite store (``schema_version`` 5 seen):

* ``sessions(id "20251202_1", name, description, session_type, working_dir, created_at,
  updated_at, extension_data, *_tokens, schedule_id, recipe_json, ...)``; later versions add
  ``provider_name`` and ``model_config_json``;
* ``messages(id, session_id, role, content_json, created_timestamp, timestamp, tokens,
  metadata_json)``: ``content_json`` is a Goose message's content list, camelCase-tagged items
  ``text{text}``, ``thinking{thinking}``, ``image``, ``toolRequest{id, toolCall}``,
  ``toolResponse{id, toolResult}``, ``toolConfirmationRequest``, ``systemNotification`` ...
  ``toolCall`` / ``toolResult`` are Rust ``Result`` values: ``{status: "success", value}`` or
  ``{status: "error", error}``; a call's value is ``{name, arguments}``, a result's a list of MCP
  content items (or ``{content, isError}``).

Tool names are ``<extension>__<tool>``: ``developer__shell {command}``,
``developer__text_editor {command: view|write|str_replace|insert, path, ...}``. ``metadata_json``
says whether the model or the person saw a message (``agentVisible`` / ``userVisible``). The
working folder is ``sessions.working_dir``. Older Goose wrote ``<id>.jsonl`` files instead, the
same messages one per line (:class:`GooseJsonl`). See §7 of ../shared/docs/trajectory-formats-newer.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats._common import as_dict, as_list, as_str, describe, paths_in, pick_task, unified
from pipeline.ingest.formats._stores import SessionEntry, StoreFormat, ms
from pipeline.ingest.identity import resolve_repo
from pipeline.ingest.reader import Probe, iter_jsonl
from pipeline.ingest.report import FileReport
from pipeline.ingest.sqlite_store import Store, Tables, loads
from pipeline.redact import sanitize
from pipeline.trajectory import Trajectory, TrajectoryBuilder
from pipeline.trajectory.builder import parse_time

_SESSION_COLUMNS = ("id", "name", "description", "working_dir", "created_at", "updated_at", "session_type",
                    "provider_name", "model_config_json")
_MESSAGE_COLUMNS = ("id", "role", "content_json", "created_timestamp", "timestamp", "metadata_json")
_MARKS = "SELECT session_id, count(*), max(id), max(created_timestamp) FROM messages GROUP BY session_id"
_SHELL_TOOLS = {"shell", "bash"}
#: Goose refusing a call (its developer extension's text editor, tool dispatch), after an optional
#: error-code prefix: "'old_str' must appear exactly once in the file, but it does not appear in the
#: file ...", "... appears multiple times", a tool the model named that does not exist.
PROTOCOL_ERRORS = re.compile(
    r"\A\s*(?:[\w -]{0,40}: )?(?:'old_str' must appear exactly once in the file|'old_str' and 'new_str' must "
    r"be different|Could not interpret tool use|Tool .{1,100}? not found|Unknown tool|invalid tool call)")


class Goose(StoreFormat):
    name = "goose"
    agent = "goose"
    description = "Goose session stores (sessions.db: sessions, messages with Goose content JSON)"
    #: Linux and macOS share the XDG folder; Windows keeps it under %APPDATA%\Block\goose\data
    locations = ("${XDG_DATA_HOME:-~/.local/share}/goose/sessions/sessions.db",
                 "%APPDATA%/Block/goose/data/sessions/sessions.db")
    priority = 5
    protocol_errors = PROTOCOL_ERRORS
    empty = "Goose store without messages"

    def claims(self, tables: Tables, path: Path) -> bool:
        return ({"id", "working_dir"} <= tables.get("sessions", frozenset())
                and {"session_id", "role", "content_json"} <= tables.get("messages", frozenset()))

    def sessions(self, store: Store, report: FileReport) -> Iterator[SessionEntry]:
        marks = {(r[0].decode("utf-8", "replace") if isinstance(r[0], bytes) else str(r[0])): list(r[1:])
                 for r in store.rows(_MARKS, report)}
        for session in store.select("sessions", _SESSION_COLUMNS, report, order="created_at, rowid"):
            session_id = session["id"]
            if not isinstance(session_id, str):
                report.error(f"a session without a text id ({session_id!r}); skipped")
                continue
            mark = [session.get("updated_at"), *marks.get(session_id, [0, None, None])]
            yield session_id, mark, lambda s=session: _Session(store, s, report).read()


class _Session:
    def __init__(self, store: Store | None, session: dict[str, Any], report: FileReport, *,
                 path: Path | None = None, source_format: str = "goose") -> None:
        self.store, self.session, self.report = store, session, report
        source = path or (store.path if store is not None else Path())
        self.b = TrajectoryBuilder(source_format=source_format, agent=Goose.agent, source_path=str(source))
        self.prompts: list[str] = []
        self.tools: dict[str, str] = {}  # request id -> tool

    def read(self) -> Trajectory | None:
        if self.store is None:
            return None
        for message in self.store.select("messages", _MESSAGE_COLUMNS, self.report, where="session_id = ?",
                                         order="created_timestamp, id", params=(self.session["id"],)):
            where = f"message {message.get('id')}"
            content = loads(message.get("content_json"), self.report, where)
            meta = as_dict(loads(message.get("metadata_json"), self.report, where)
                           if message.get("metadata_json") else None)
            self.message(message.get("role"), content, meta, ms(message.get("created_timestamp"))
                         or message.get("timestamp"), where)
        return self.finish()

    def message(self, role: Any, content: Any, meta: dict[str, Any], stamp: Any, where: str) -> None:
        """One Goose message: its role, content list and metadata (``userVisible`` / ``agentVisible``)."""
        if not isinstance(content, list):
            if content is not None:
                self.report.error(f"{where}: content should be a list, found {type(content).__name__}")
            return
        hidden = meta.get("userVisible") is False or meta.get("agentVisible") is False
        for item in content:
            if isinstance(item, dict):
                self._item(role, item, stamp, hidden)

    def finish(self) -> Trajectory | None:
        if not self.b.steps:
            return None
        b, session = self.b, self.session
        cwd = session.get("working_dir") if isinstance(session.get("working_dir"), str) else None
        model = as_dict(loads(session.get("model_config_json"), self.report, "session model")
                        if isinstance(session.get("model_config_json"), str) else session.get("model_config")
                        ).get("model_name")
        b.set(session_id=session.get("id"), cwd=cwd or None, model=model if isinstance(model, str) else None,
              started_at=parse_time(session.get("created_at")), ended_at=parse_time(session.get("updated_at")))
        b.set(repo=resolve_repo(b.steps, cwd=sanitize(cwd) if cwd else None))
        description = session.get("description") or session.get("name")
        b.task = pick_task(self.prompts) or (description if isinstance(description, str) else None)
        return b.build()

    def _item(self, role: Any, item: dict[str, Any], stamp: Any, hidden: bool) -> None:
        kind = item.get("type")
        if kind == "text":
            body = as_str(item.get("text"))
            if not body.strip():
                return
            if role == "user":
                self.b.user(body, timestamp=stamp, meta=hidden)
                if not hidden:
                    self.prompts.append(body)
            else:
                self.b.assistant(body, timestamp=stamp)
        elif kind == "image" and role == "user":
            self.b.user("[image]", timestamp=stamp, meta=True)
        elif kind in ("toolRequest", "frontendToolRequest"):
            self._call(item, stamp)
        elif kind == "toolResponse":
            self._result(item, stamp)
        elif kind in ("contextLengthExceeded", "systemNotification") and as_str(item.get("msg") or item.get("text")):
            self.b.user(f"[{kind}] {as_str(item.get('msg') or item.get('text'))}", timestamp=stamp, meta=True)

    def _call(self, item: dict[str, Any], stamp: Any) -> None:
        call_id = as_str(item.get("id")) or None
        call = as_dict(item.get("toolCall"))
        value = as_dict(call.get("value")) if call.get("status", "success") == "success" else {}
        name = as_str(value.get("name")) or "tool"
        args = as_dict(value.get("arguments"))
        short = name.rsplit("__", 1)[-1].lower()
        command = args.get("command") if short in _SHELL_TOOLS and isinstance(args.get("command"), str) else None
        paths = paths_in(args)
        self.b.call(name, call_id=call_id, text=command or describe(name, args), command=command, paths=paths,
                    diff=_diff(short, args, paths), timestamp=stamp)
        if call.get("status") == "error":  # the model's call could not even be parsed
            self.b.result(call_id=call_id, text=as_str(call.get("error")) or "invalid tool call", is_error=True,
                          timestamp=stamp)
        elif call_id:
            self.tools[call_id] = short

    def _result(self, item: dict[str, Any], stamp: Any) -> None:
        call_id = as_str(item.get("id")) or None
        result = as_dict(item.get("toolResult"))
        if result.get("status") == "error":
            self.b.result(call_id=call_id, text=as_str(result.get("error")) or "error", is_error=True,
                          timestamp=stamp)
            return
        value = result.get("value")
        is_error = bool(value.get("isError")) if isinstance(value, dict) else False
        contents = as_list(value.get("content")) if isinstance(value, dict) else as_list(value)
        text = "\n".join(t for t in (_content_text(c) for c in contents) if t)
        self.b.result(call_id=call_id, text=text, is_error=is_error, timestamp=stamp)


class GooseJsonl(TrajectoryFormat):
    """Goose before its SQLite store (before about v1.10): ``sessions/<YYYYMMDD_HHMMSS>.jsonl``.

    The first line is the session's metadata (``working_dir``, ``description``, token counts,
    maybe ``schedule_id`` / ``project_id``); every other line is a Message, ``{id?, role, created
    (epoch seconds), content: [...], metadata?}``, its content as in the store.
    """

    name = "goose-jsonl"
    agent = "goose"
    description = "Goose JSONL sessions (before sessions.db: metadata line, then one message per line)"
    locations = ("${XDG_DATA_HOME:-~/.local/share}/goose/sessions/*.jsonl",
                 "%APPDATA%/Block/goose/data/sessions/*.jsonl")
    suffixes = (".jsonl",)
    priority = 4
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        records = [r for r in probe.records[:5] if isinstance(r, dict)]
        if not records:
            return False
        first = records[0]
        if isinstance(first.get("working_dir"), str) and "role" not in first and "content" not in first:
            return True
        return any(r.get("role") in ("user", "assistant") and isinstance(r.get("content"), list)
                   and isinstance(r.get("created"), int) and any(
                       isinstance(c, dict) and c.get("type") in _GOOSE_ITEMS for c in r["content"]) for r in records)

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        session: dict[str, Any] = {"id": path.stem}
        reader: _Session | None = None
        for line, record in iter_jsonl(path, report):
            if not isinstance(record, dict):
                report.error(f"expected a JSON object, found {type(record).__name__}", line)
                continue
            if reader is None and "role" not in record and "content" not in record:
                session.update({k: v for k, v in record.items() if k in ("working_dir", "description")})
                continue
            if reader is None:
                reader = _Session(None, session, report, path=path, source_format=self.name)
            reader.message(record.get("role"), record.get("content"), as_dict(record.get("metadata")),
                           record.get("created"), f"line {line}")
        trajectory = reader.finish() if reader is not None else None
        if trajectory is not None:
            yield trajectory
        elif not report.errors:
            report.status = "skipped"
            report.error("Goose session without messages")


_GOOSE_ITEMS = {"text", "toolRequest", "toolResponse", "thinking", "toolConfirmationRequest", "image"}


def _content_text(item: Any) -> str:
    """An MCP content item as text; ones meant only for the person (audience ["user"]) are left out."""
    if not isinstance(item, dict):
        return as_str(item)
    audience = as_dict(item.get("annotations")).get("audience")
    if isinstance(audience, list) and audience and "assistant" not in audience:
        return ""
    if item.get("type") == "text":
        return as_str(item.get("text"))
    if item.get("type") == "resource":
        return as_str(as_dict(item.get("resource")).get("text"))
    return f"[{as_str(item.get('type')) or 'content'}]"


def _diff(tool: str, args: dict[str, Any], paths: list[str]) -> str | None:
    if tool != "text_editor":
        return None
    path = paths[0] if paths else "file"
    command = args.get("command")
    if command == "str_replace" and isinstance(args.get("old_str"), str):
        return unified(path, args["old_str"], as_str(args.get("new_str")))
    if command == "write" and isinstance(args.get("file_text"), str):
        return unified(path, "", args["file_text"])
    return None
