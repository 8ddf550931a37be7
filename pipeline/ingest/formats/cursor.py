"""Cursor: the IDE's ``state.vscdb`` stores and the ``cursor-agent`` CLI's ``store.db``.

**IDE.** ``…/Cursor/User/{globalStorage,workspaceStorage/<hash>}/state.vscdb`` are VS Code's
key-value stores, ``ItemTable(key, value)`` and (newer, global) ``cursorDiskKV(key, value)``, the
values JSON. The agent's chats:

* ``composer.composerData`` (ItemTable): ``{allComposers: [{composerId, name, createdAt,
  lastUpdatedAt, conversation: [bubble ...]}]}``; until late 2024 the conversation is inline;
* ``composerData:<composerId>`` (cursorDiskKV): one composer, its bubbles inline
  (``conversation``) or listed (``fullConversationHeadersOnly: [{bubbleId, type}]``) with each
  bubble at ``bubbleId:<composerId>:<bubbleId>``;
* ``workbench.panel.aichat.view.aichat.chatdata`` (ItemTable): the old chat pane,
  ``{tabs: [{tabId, chatTitle, lastSendTime, bubbles: [{type: "user"|"ai", text}]}]}``.

A bubble is ``{type: 1 (user) | 2 (assistant), bubbleId, text, createdAt?, modelInfo?,
toolFormerData?}``; a tool call is its ``toolFormerData {name, params|rawArgs (JSON text),
result (JSON text), status, toolCallId}``. Each composer and each chat tab is a session. The
workspace folder is ``workspace.json`` (``{"folder": "file:///…"}``) beside a workspace store.
VS Code's own ``state.vscdb`` has the same tables and none of these keys: it is not claimed.

**CLI.** ``~/.cursor/chats/<md5 of the project path>/<agentId>/store.db`` holds one session:
``meta(key, value)``, key ``"0"`` hex-encoded JSON ``{agentId, latestRootBlobId, name, mode,
createdAt, lastUsedModel}``, and ``blobs(id, data)``, content-addressed (``id`` the sha256 of
``data`` in hex). Message blobs are JSON ``{role, id, content: [{type: text|reasoning|tool-call|
tool-result, ...}]}``; the root blob (protobuf) lists the message blobs' ids in order, as raw
32-byte fields. Read from the description in ../shared/docs/trajectory-formats-newer.md §3 and
readers of the store; no real store was available.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pipeline.ingest import sqlite_store
from pipeline.ingest.formats._common import (
    as_dict,
    as_list,
    as_str,
    as_text,
    describe,
    loads_object,
    paths_in,
    pick_task,
    unified,
)
from pipeline.ingest.formats._stores import SessionEntry, StoreFormat, Workdir, ms
from pipeline.ingest.identity import resolve_repo
from pipeline.ingest.reader import Probe, load_json
from pipeline.ingest.report import FileReport
from pipeline.ingest.sqlite_store import Store, Tables, loads, text
from pipeline.redact import sanitize
from pipeline.trajectory import Trajectory, TrajectoryBuilder
from pipeline.trajectory.builder import parse_time

_COMPOSERS = "composer.composerData"
_CHATS = "workbench.panel.aichat.view.aichat.chatdata"
_CURSOR_KEYS = "SELECT key FROM ItemTable WHERE key IN (?, ?) LIMIT 1"
_SHELL_TOOLS = {"run_terminal_cmd", "run_terminal_command", "run_terminal_command_v2", "shell", "bash",
                "terminal"}
_WORKSPACE = re.compile(r"^\s*Workspace Path: (\S.*?)\s*$", re.M)
#: Cursor's tools refusing a call: a search/replace that did not apply, arguments that did not parse.
PROTOCOL_ERRORS = re.compile(
    r"\A\s*(?:Error: )?(?:The string to replace was not found in the file|old_string not found|String not found "
    r"in file|Invalid arguments|Could not parse tool arguments|Tool .{1,100}? not found|File not found)", re.I)


class CursorIde(StoreFormat):
    name = "cursor-ide"
    agent = "cursor"
    description = "Cursor IDE state.vscdb stores (composer and chat sessions in ItemTable / cursorDiskKV)"
    locations = ("~/.config/Cursor/User/globalStorage/state.vscdb",
                 "~/.config/Cursor/User/workspaceStorage/*/state.vscdb",
                 "~/Library/Application Support/Cursor/User/globalStorage/state.vscdb",
                 "~/Library/Application Support/Cursor/User/workspaceStorage/*/state.vscdb",
                 "%APPDATA%/Cursor/User/globalStorage/state.vscdb",
                 "%APPDATA%/Cursor/User/workspaceStorage/*/state.vscdb")
    suffixes = (".vscdb",)
    priority = 5
    protocol_errors = PROTOCOL_ERRORS
    empty = "Cursor store without chats"

    def sniff(self, probe: Probe) -> bool:
        tables = sqlite_store.schema(probe)
        if {"key", "value"} <= tables.get("cursorDiskKV", frozenset()):
            return True
        return {"key", "value"} <= tables.get("ItemTable", frozenset()) and bool(
            sqlite_store.ask(probe, _CURSOR_KEYS, (_COMPOSERS, _CHATS)))

    def claims(self, tables: Tables, path: Path) -> bool:  # sniff asks the keys too
        return "cursorDiskKV" in tables or "ItemTable" in tables

    def sessions(self, store: Store, report: FileReport) -> Iterator[SessionEntry]:
        folder = _workspace_folder(store.path)
        if store.has("ItemTable", "key", "value"):
            for row in store.select("ItemTable", ("key", "value"), report, where="key IN (?, ?)",
                                    params=(_COMPOSERS, _CHATS), order="key"):
                value = _json(row.get("value"), report, row.get("key"))
                if row.get("key") == _COMPOSERS:
                    for composer in as_list(as_dict(value).get("allComposers")):
                        yield from self._composer(store, as_dict(composer), folder, report)
                else:
                    for tab in as_list(as_dict(value).get("tabs")):
                        yield from self._tab(store, as_dict(tab), folder, report)
        if store.has("cursorDiskKV", "key", "value"):
            for row in store.select("cursorDiskKV", ("key", "value"), report, where="key LIKE 'composerData:%'"):
                yield from self._composer(store, as_dict(_json(row.get("value"), report, row.get("key"))), folder,
                                          report)

    def _composer(self, store: Store, composer: dict[str, Any], folder: str | None,
                  report: FileReport) -> Iterator[SessionEntry]:
        composer_id = composer.get("composerId")
        headers = as_list(composer.get("fullConversationHeadersOnly"))
        bubbles = as_list(composer.get("conversation"))
        if not isinstance(composer_id, str) or not (bubbles or headers):
            return  # listed here, its conversation kept in the global store (read there)
        last = as_dict((bubbles or headers)[-1]).get("bubbleId")
        mark = [composer.get("lastUpdatedAt") or composer.get("createdAt"), len(bubbles or headers), last]

        def read() -> Trajectory | None:
            found = bubbles or list(_bubbles(store, composer_id, headers, report))
            chat = _Chat(store.path, composer_id, folder, report)
            return chat.read(found, composer.get("name"), composer.get("createdAt"), composer.get("lastUpdatedAt"))
        yield composer_id, mark, read

    def _tab(self, store: Store, tab: dict[str, Any], folder: str | None, report: FileReport) -> Iterator[SessionEntry]:
        tab_id, bubbles = tab.get("tabId"), as_list(tab.get("bubbles"))
        if not isinstance(tab_id, str) or not bubbles:
            return
        mark = [tab.get("lastSendTime"), len(bubbles), as_dict(bubbles[-1]).get("id")]
        yield tab_id, mark, lambda: _Chat(store.path, tab_id, folder, report).read(
            bubbles, tab.get("chatTitle"), None, tab.get("lastSendTime"))


def _bubbles(store: Store, composer_id: str, headers: list[Any], report: FileReport) -> Iterator[dict[str, Any]]:
    """The bubbles a composer lists, each from its own ``bubbleId:<composer>:<bubble>`` key, in the listed order."""
    found: dict[str, dict[str, Any]] = {}
    for row in store.select("cursorDiskKV", ("key", "value"), report, where="key LIKE ?",
                            params=(f"bubbleId:{composer_id}:%",)):
        bubble = _json(row.get("value"), report, row.get("key"))
        if isinstance(bubble, dict) and isinstance(row.get("key"), str):
            found[row["key"].rsplit(":", 1)[-1]] = bubble
    for header in headers:
        bubble_id = as_dict(header).get("bubbleId")
        if isinstance(bubble_id, str) and bubble_id in found:
            yield {**as_dict(header), **found[bubble_id]}
        elif isinstance(bubble_id, str):
            report.error(f"composer {composer_id}: bubble {bubble_id} is listed but not stored")


def _json(value: Any, report: FileReport, where: Any) -> Any:
    return loads(value, report, str(where)) if value is not None else None


def _workspace_folder(path: Path) -> str | None:
    """``workspace.json`` beside a workspace store: ``{"folder": "file:///home/me/app"}``."""
    marker = path.parent / "workspace.json"
    if not marker.is_file():
        return None
    value = load_json(marker, FileReport(path=str(marker)))
    folder = as_dict(value).get("folder")
    if not isinstance(folder, str) or not folder.startswith("file://"):
        return None
    local = unquote(urlparse(folder).path)
    return local[1:] if re.match(r"^/[A-Za-z]:/", local) else local


class _Chat:
    """One composer or chat tab: its bubbles in order."""

    def __init__(self, path: Path, session_id: str, folder: str | None, report: FileReport) -> None:
        self.session_id, self.report = session_id, report
        self.b = TrajectoryBuilder(source_format=CursorIde.name, agent=CursorIde.agent, source_path=str(path))
        self.workdir = Workdir(folder)
        self.models: Counter[str] = Counter()
        self.prompts: list[str] = []

    def read(self, bubbles: list[Any], title: Any, created: Any, updated: Any) -> Trajectory | None:
        for bubble in bubbles:
            if isinstance(bubble, dict):
                self._bubble(bubble, ms(bubble.get("createdAt")) or None)
        if not self.b.steps:
            return None
        b = self.b
        cwd = self.workdir.best()
        b.set(session_id=self.session_id, cwd=cwd, model=self.models.most_common(1)[0][0] if self.models else None,
              started_at=parse_time(created), ended_at=parse_time(updated))
        b.set(repo=resolve_repo(b.steps, cwd=sanitize(cwd) if cwd else None))
        b.task = pick_task(self.prompts) or (title if isinstance(title, str) else None)
        return b.build()

    def _bubble(self, bubble: dict[str, Any], stamp: Any) -> None:
        kind = bubble.get("type")
        body = as_str(bubble.get("text"))
        model = as_dict(bubble.get("modelInfo")).get("modelName")
        if kind in (1, "user"):
            if body.strip():
                self.b.user(body, timestamp=stamp)
                self.prompts.append(body)
            return
        if kind not in (2, "ai"):
            return
        if isinstance(model, str) and model:
            self.models[model] += 1
        thinking = as_dict(bubble.get("thinking")).get("text")
        if isinstance(thinking, str) and thinking.strip() and not body.strip():
            self.b.assistant(thinking, timestamp=stamp)
        if body.strip():
            self.b.assistant(body, timestamp=stamp)
        tool = as_dict(bubble.get("toolFormerData"))
        if tool.get("name"):
            self._tool(tool, stamp)

    def _tool(self, tool: dict[str, Any], stamp: Any) -> None:
        name = as_str(tool.get("name"))
        call_id = as_str(tool.get("toolCallId")) or None
        args = loads_object(tool.get("params")) or loads_object(tool.get("rawArgs")) or {}
        lowered = name.lower()
        command = args.get("command") if lowered in _SHELL_TOOLS and isinstance(args.get("command"), str) else None
        paths = paths_in(args) + [args[k] for k in ("relativeWorkspacePath", "target_file", "targetFile")
                                  if isinstance(args.get(k), str) and args[k]]
        for path in paths:
            self.workdir.seen(path)
        diff = None
        if isinstance(args.get("old_string"), str):
            diff = unified(paths[0] if paths else "file", args["old_string"], as_str(args.get("new_string")))
        self.b.call(name, call_id=call_id, text=command or describe(name, args), command=command, paths=paths,
                    diff=diff, timestamp=stamp)
        status = tool.get("status")
        raw = tool.get("result")
        if raw is None and status not in ("error", "cancelled"):
            return  # not answered when the store was written
        result = loads_object(raw) if isinstance(raw, str) else raw
        exit_code = None
        if isinstance(result, dict):
            found = result.get("exitCode", result.get("exitCodeV2"))
            exit_code = found if isinstance(found, int) and not isinstance(found, bool) else None
        output = as_text(result) if result is not None else as_str(raw)
        if isinstance(result, dict):
            output = next((result[k] for k in ("output", "error", "contents", "content", "text")
                           if isinstance(result.get(k), str)), output)
        is_error = status in ("error", "cancelled") or (exit_code not in (None, 0)) or None
        self.b.result(call_id=call_id, text=output or as_str(tool.get("error")) or as_str(status), exit_code=exit_code,
                      is_error=is_error, timestamp=stamp)


# -- the cursor-agent CLI ------------------------------------------------------------------------
class CursorAgent(StoreFormat):
    name = "cursor-agent"
    agent = "cursor"
    description = "cursor-agent CLI chat stores (~/.cursor/chats/<hash>/<agent>/store.db: meta, blobs)"
    locations = ("~/.cursor/chats/*/*/store.db",)
    priority = 5
    protocol_errors = PROTOCOL_ERRORS
    empty = "cursor-agent store without messages"

    def claims(self, tables: Tables, path: Path) -> bool:
        return {"key", "value"} <= tables.get("meta", frozenset()) and {"id", "data"} <= tables.get("blobs",
                                                                                                    frozenset())

    def sessions(self, store: Store, report: FileReport) -> Iterator[SessionEntry]:
        meta: dict[str, Any] = {}
        for row in store.select("meta", ("key", "value"), report, order="key"):
            decoded = _meta(row.get("value"))
            if isinstance(decoded, dict):
                meta = decoded if row.get("key") == "0" or not meta else meta
        agent_id = meta.get("agentId") if isinstance(meta.get("agentId"), str) else store.path.parent.name
        counts = next(iter(store.rows("SELECT count(*), max(rowid) FROM blobs", report)), (0, None))
        mark = [meta.get("latestRootBlobId"), *counts]
        yield agent_id, mark, lambda: _Agent(store, meta, agent_id, report).read()


def _meta(value: Any) -> Any:
    """meta values are hex-encoded JSON (older stores: plain JSON)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return None
    raw = value.strip()
    if re.fullmatch(r"(?:[0-9a-fA-F]{2})+", raw):
        try:
            raw = bytes.fromhex(raw).decode("utf-8", "replace")
        except ValueError:
            return None
    return loads_object(raw)


def _blob_ids(data: bytes, depth: int = 0) -> list[str]:
    """The 32-byte fields of a protobuf message (and its submessages), in order, as hex ids."""
    ids: list[str] = []
    i, n = 0, len(data)

    def varint() -> int | None:
        nonlocal i
        result = shift = 0
        while i < n and shift < 64:
            byte = data[i]
            i += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return result
        return None

    while i < n:
        key = varint()
        if key is None:
            return ids
        wire = key & 7
        if wire == 0:
            if varint() is None:
                return ids
        elif wire == 2:
            length = varint()
            if length is None or i + length > n:
                return ids
            value = data[i:i + length]
            i += length
            if length == 32:
                ids.append(value.hex())
            elif depth < 3 and length > 32:
                ids.extend(_blob_ids(value, depth + 1))
        elif wire == 5:
            i += 4
        elif wire == 1:
            i += 8
        else:
            return ids
    return ids


class _Agent:
    def __init__(self, store: Store, meta: dict[str, Any], agent_id: str, report: FileReport) -> None:
        self.store, self.meta, self.agent_id, self.report = store, meta, agent_id, report
        self.b = TrajectoryBuilder(source_format=CursorAgent.name, agent=CursorAgent.agent, source_path=str(store.path))
        self.workdir = Workdir()
        self.prompts: list[str] = []

    def _messages(self) -> list[dict[str, Any]]:
        messages: dict[str, dict[str, Any]] = {}
        root: bytes | None = None
        for row in self.store.select("blobs", ("id", "data"), self.report, raw=("data",)):
            blob_id, data = row.get("id"), row.get("data")
            blob_id = blob_id.lower() if isinstance(blob_id, str) else blob_id
            if isinstance(data, str):
                data = data.encode()
            if not isinstance(data, bytes):
                continue
            if blob_id == as_str(self.meta.get("latestRootBlobId")).lower():
                root = data
            if data[:1] == b"{":
                message = loads(text(data, self.report, f"blob {blob_id}"), self.report, f"blob {blob_id}")
                if isinstance(message, dict) and isinstance(message.get("role"), str):
                    messages[str(blob_id)] = message
        order = [i for i in dict.fromkeys(_blob_ids(root)) if i in messages] if root else []
        if not order:
            return list(messages.values())  # no root to follow: the order they were stored in
        return [messages[i] for i in order]

    def read(self) -> Trajectory | None:
        for message in self._messages():
            role = message.get("role")
            content = message.get("content")
            parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
            for part in parts:
                if isinstance(part, dict):
                    self._part(role, part)
        if not self.b.steps:
            return None
        b, meta = self.b, self.meta
        cwd = self.workdir.best()
        b.set(session_id=self.agent_id, cwd=cwd, model=meta.get("lastUsedModel") or None,
              started_at=parse_time(meta.get("createdAt")))
        b.set(repo=resolve_repo(b.steps, cwd=sanitize(cwd) if cwd else None))
        b.task = pick_task(self.prompts) or (meta.get("name") if isinstance(meta.get("name"), str) else None)
        return b.build()

    def _part(self, role: Any, part: dict[str, Any]) -> None:
        kind = part.get("type")
        if kind == "text":
            body = as_str(part.get("text"))
            if not body.strip():
                return
            if role == "user":
                injected = body.lstrip().startswith(("<user_info>", "<system", "<environment"))
                if injected and (found := _WORKSPACE.search(body)):
                    self.workdir.state(found.group(1))
                self.b.user(body, meta=injected)
                if not injected:
                    self.prompts.append(body)
            elif role == "assistant":
                self.b.assistant(body)
        elif kind == "tool-call":
            name = as_str(part.get("toolName")) or "tool"
            args = as_dict(part.get("args")) or as_dict(part.get("input")) or loads_object(part.get("args")) or {}
            command = args.get("command") if isinstance(args.get("command"), str) else None
            paths = paths_in(args)
            for path in paths:
                self.workdir.seen(path)
            self.workdir.state(args.get("working_directory") or args.get("cwd"))
            self.b.call(name, call_id=as_str(part.get("toolCallId")) or None, text=command or describe(name, args),
                        command=command, paths=paths)
        elif kind == "tool-result":
            result = part.get("result", part.get("output"))
            exit_code = as_dict(result).get("exitCode")
            exit_code = exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None
            is_error = bool(part.get("isError")) or exit_code not in (None, 0) or None
            self.b.result(call_id=as_str(part.get("toolCallId")) or None, text=as_text(result), exit_code=exit_code,
                          is_error=is_error)
