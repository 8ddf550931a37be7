"""OpenCode legacy storage trees: ``~/.local/share/opencode/storage/``.

A session is spread over many small files: ``session/<projectID>/<ses>.json`` (directory,
version, times, parentID), ``message/<ses>/<msg>.json`` (role, model, cwd, times) and
``part/<msg>/<prt>.json`` (text, tool calls with their ``state``, patches, step markers). The
session file is the entry point: its messages and their parts are read from the sibling
``message/`` and ``part/`` folders of the storage root (the layout of OpenCode before it moved
to SQLite; the older ``session/info|message|part/<ses>/...`` nesting is read as well). Message
and part files met on their own are reported skipped: they are read through their session.

A tool part holds the call and, once ``state.status`` is ``completed`` or ``error``, its result:
``bash`` keeps the exit code in ``state.metadata.exit``, ``edit`` a unified diff in
``state.metadata.diff``. Ids are time-ordered, so files sort by (created time, id).
A session is read whole, so its files together are held to the size limit of one JSON
document (``reader.MAX_JSON_BYTES``) and refused past it, like a single document would be.
See §8 of ../shared/docs/trajectory-formats.md.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.ingest import reader
from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats._common import (
    SHAPE_ERRORS,
    as_text,
    describe,
    expect,
    paths_in,
    pick_task,
    shape_error,
    unified,
)
from pipeline.ingest.identity import resolve_repo
from pipeline.ingest.reader import Probe, load_json
from pipeline.ingest.report import FileReport
from pipeline.redact import sanitize
from pipeline.trajectory import Trajectory, TrajectoryBuilder
from pipeline.trajectory.builder import parse_time

#: Bounds for one session, so a damaged tree cannot make a run read without end.
MAX_MESSAGES = 20_000
MAX_PARTS_PER_MESSAGE = 5_000
_SHELL_TOOLS = {"bash", "shell"}
_SKIPPED = {
    "message": "part of an OpenCode session (a message; read through its session file)",
    "part": "part of an OpenCode session (a message part; read through its session file)",
    "project": "OpenCode project record (storage/project), not a session",
    "session_diff": "OpenCode session's file diffs (storage/session_diff; the session's edits are read from its parts)",
}
#: ``session_diff/ses_<id>.json`` of OpenCode 1.x: a list of ``{file, before, after, additions, deletions}``.
_DIFF_KEYS = {"file", "before", "after"}
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$", re.M)
#: OpenCode refusing a tool call (no real session in the corpus). A tool part in state ``error``
#: holds its message: "oldString not found in content", "Found multiple matches for oldString.
#: Provide more surrounding lines ...", "oldString and newString must be different", "You must read
#: the file <f> before overwriting it. Use the Read tool first", "File <f> has been modified since it
#: was last read", "The <tool> tool was called with invalid arguments: ...", "Model tried to call
#: unavailable tool '<x>'", "File <f> not found"; often after "Error: ". Not refusals: a bash part
#: that completed with a non-zero exit, the person rejecting a permission request.
PROTOCOL_ERRORS = re.compile(
    r"\A\s*(?:Error: )?(?:oldString not found in content|Found (?:multiple|\d+) matches for oldString|"
    r"oldString and newString must be different|You must read (?:the )?file .{1,300}? before overwriting it|"
    r"File .{1,300}? has been modified since it was last read|The \w+ tool was called with invalid arguments|"
    r"Model tried to call unavailable tool|File (?:.{1,300}? )?not found)")


class _TooLarge(Exception):
    """The session's files add up to more than one JSON document may hold (``reader.MAX_JSON_BYTES``)."""


def record_kind(value: Any) -> str | None:
    """session | message | part | project, from the keys of an OpenCode storage record."""
    if not isinstance(value, dict) or not isinstance(value.get("id"), str):
        return None
    if isinstance(value.get("messageID"), str) and isinstance(value.get("sessionID"), str) and "type" in value:
        return "part"
    if isinstance(value.get("sessionID"), str) and value.get("role") in ("user", "assistant"):
        return "message"
    if isinstance(value.get("worktree"), str) and isinstance(value.get("time"), dict):
        return "project"
    if (isinstance(value.get("time"), dict) and "role" not in value and "sessionID" not in value
            and (isinstance(value.get("directory"), str) or isinstance(value.get("projectID"), str))):
        return "session"
    return None


def is_session_diff(path: Path, value: Any) -> bool:
    """A ``storage/session_diff/ses_<id>.json`` file: a list of per-file diffs (empty when nothing was edited).

    Its items say what it is; an empty list is only told apart by where it lies, inside a storage tree
    that has the session folders beside it.
    """
    if not isinstance(value, list):
        return False
    if value:
        return all(isinstance(item, dict) and item.keys() >= _DIFF_KEYS for item in value[:50])
    storage = path.parent.parent
    return (path.parent.name == "session_diff" and path.name.startswith("ses_")
            and (storage / "session").is_dir() and (storage / "message").is_dir())


def _head_kind(text: str) -> str | None:
    """The same, from the first bytes of a file too large for the probe to parse (a big tool output)."""
    head = text[:2000]
    if '"sessionID"' in head and '"messageID"' in head and '"type"' in head:
        return "part"
    if '"sessionID"' in head and re.search(r'"role"\s*:\s*"(user|assistant)"', head):
        return "message"
    return None


class OpenCodeStorage(TrajectoryFormat):
    name = "opencode"
    agent = "opencode"
    description = "OpenCode legacy storage trees (storage/session|message|part/*.json; the session file is read)"
    locations = ("~/.local/share/opencode/storage/session/**/*.json",)
    suffixes = (".json",)
    priority = 6
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        if probe.first_char == "[":
            return probe.document is not None and is_session_diff(probe.path, probe.document)
        if probe.first_char != "{":
            return False
        if probe.document is not None:
            return record_kind(probe.document) is not None
        return _head_kind(probe.text) is not None

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        head = Probe.read(path)
        if head.document is None and (kind := _head_kind(head.text)):
            report.status = "skipped"
            report.error(_SKIPPED[kind])
            return
        session = load_json(path, report)
        if session is None:
            return
        kind = "session_diff" if is_session_diff(path, session) else record_kind(session)
        if kind in _SKIPPED:
            report.status = "skipped"
            report.error(_SKIPPED[kind])
            return
        if kind != "session":
            report.error("not an OpenCode session record (id, time and directory or projectID expected)")
            return
        trajectory = _Session(path, session, report).read()
        if trajectory is not None:
            yield trajectory


class _Session:
    #: The format name its trajectories carry (OpenCode's SQLite store and its export read through it too).
    source_format = "opencode"

    def __init__(self, path: Path, info: dict[str, Any], report: FileReport) -> None:
        self.path = path
        self.info = info
        self.report = report
        self.b = TrajectoryBuilder(source_format=self.source_format, agent=OpenCodeStorage.agent,
                                   source_path=str(path))
        self.models: Counter[str] = Counter()
        self.prompts: list[str] = []
        self.root: str | None = None
        # A session is one document split over many files and is held whole while it is read: the
        # files together get the limit of a single JSON document, checked before each folder is read.
        self.limit = reader.MAX_JSON_BYTES
        self.size = path.stat().st_size

    def read(self) -> Trajectory | None:
        try:
            return self._read()
        except _TooLarge:
            self.report.error(f"session {self.info['id']}: its files hold at least {self.size} bytes, "
                              f"larger than the {self.limit}-byte limit for JSON documents (an OpenCode session "
                              "is one document split over files); not read")
            return None

    def _read(self) -> Trajectory | None:
        session_id = self.info["id"]
        folders = _folders(self.path, session_id)
        if folders is None and self.path.stem != session_id and (folders := _folders(self.path, self.path.stem)):
            # OpenCode names the file after the session: a damaged id still finds its messages
            self.report.error(f"session id {session_id!r} names no message folder; read as {self.path.stem}, "
                              "its file name")
            self.info = {**self.info, "id": self.path.stem}
            session_id = self.path.stem
        if folders is None:
            storage = self.path.parent.parent.parent
            self.report.error(f"no messages for session {session_id}: expected {storage}/message/{session_id}/")
            return None
        message_dir, part_dir = folders
        for message in self._messages(message_dir):
            try:
                self._message(message, self._parts(message, part_dir(message["id"])))
            except SHAPE_ERRORS as exc:
                self.report.error(shape_error(f"message {message['id']}", exc))
        return self._finish()

    def _finish(self) -> Trajectory | None:
        if not self.b.steps:
            if not self.report.errors:
                self.report.status = "skipped"
                self.report.error("OpenCode session without messages (opened and left)")
            return None
        return self._build()

    # -- reading the tree ----------------------------------------------------------------
    def _load_folder(self, folder: Path, limit: int, listed: list[Any] | None) -> list[dict[str, Any]]:
        """Every JSON record in ``folder``, in the listed order, then by (created time, id)."""
        try:
            with os.scandir(folder) as found:
                entries = sorted((e for e in found if e.name.endswith(".json") and e.is_file(follow_symlinks=False)),
                                 key=lambda e: e.name)
        except OSError as exc:
            self.report.error(f"cannot list {folder}: {exc.strerror or exc}")
            return []
        if len(entries) > limit:
            self.report.error(f"{folder} holds {len(entries)} files; only the first {limit} are read")
            entries = entries[:limit]
        self._charge(entries)
        records = []
        for entry in entries:
            sub = FileReport(path=entry.path)
            record = load_json(Path(entry.path), sub)
            for error in sub.errors:
                self.report.error(f"{entry.name}: {error.reason}")
            if isinstance(record, dict) and isinstance(record.get("id"), str):
                records.append(record)
            elif record is not None:
                self.report.error(f"{entry.name}: not an OpenCode record with an id")
        order = {name: i for i, name in enumerate(listed or []) if isinstance(name, str)}
        return sorted(records, key=lambda r: (order.get(r["id"], len(order)), _created(r), r["id"]))

    def _charge(self, entries: list[os.DirEntry[str]]) -> None:
        """Count these files against the session's limit before any of them is read."""
        for entry in entries:
            try:
                self.size += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue  # gone since the listing: load_json reports it
            if self.size > self.limit:
                raise _TooLarge

    def _parts(self, message: dict[str, Any], folder: Path) -> list[dict[str, Any]]:
        listed = message.get("parts") if isinstance(message.get("parts"), list) else None
        return self._load_folder(folder, MAX_PARTS_PER_MESSAGE, listed) if folder.is_dir() else []

    def _messages(self, folder: Path) -> list[dict[str, Any]]:
        listed = self.info.get("messages") if isinstance(self.info.get("messages"), list) else None
        return self._load_folder(folder, MAX_MESSAGES, listed)

    # -- steps -----------------------------------------------------------------------------
    def _message(self, message: dict[str, Any], parts: list[dict[str, Any]]) -> None:
        role = message.get("role")
        stamp = _created(message) or None
        model = expect(message, "modelID", str)
        if not model and isinstance(message.get("model"), dict):
            model = message["model"].get("modelID")
        if role == "assistant" and isinstance(model, str) and model:
            self.models[model] += 1
        where = expect(message, "path", dict) or {}
        self.b.set(cwd=where.get("cwd") if isinstance(where.get("cwd"), str) else None)
        self.root = self.root or (where.get("root") if isinstance(where.get("root"), str) else None)
        for part in parts:
            self._part(role, part, stamp)
        error = message.get("error")
        if role == "assistant" and isinstance(error, dict):
            name = error.get("name") or "error"
            detail = as_text((error.get("data") or {}).get("message") if isinstance(error.get("data"), dict) else "")
            self.b.user(f"[{name}] {detail}".strip(), timestamp=stamp, meta=True)

    def _part(self, role: Any, part: dict[str, Any], stamp: Any) -> None:
        kind = part.get("type")
        if kind == "text":
            text = expect(part, "text", str, "text part") or ""
            if not text.strip():
                return
            if role == "user":
                synthetic = bool(part.get("synthetic")) or bool(part.get("ignored"))
                self.b.user(text, timestamp=stamp, meta=synthetic)
                if not synthetic:
                    self.prompts.append(text)
            else:
                self.b.assistant(text, timestamp=stamp)
        elif kind == "file" and role == "user":
            name = part.get("filename") or part.get("url") or "file"
            self.b.user(f"[file: {name}]", timestamp=stamp, meta=True)
        elif kind == "tool":
            self._tool(part, stamp)

    def _tool(self, part: dict[str, Any], stamp: Any) -> None:
        name = expect(part, "tool", str, "tool part") or "tool"
        call_id = expect(part, "callID", str, "tool part") or part["id"]
        state = expect(part, "state", dict, "tool part") or {}
        args = expect(state, "input", dict, "tool state") or {}
        times = state.get("time") if isinstance(state.get("time"), dict) else {}
        metadata = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
        lowered = name.lower()
        command = args.get("command") if lowered in _SHELL_TOOLS and isinstance(args.get("command"), str) else None
        paths = paths_in(args)
        patch = args.get("patchText") if isinstance(args.get("patchText"), str) else None
        if patch:
            paths += _PATCH_FILE.findall(patch)
        self.b.call(name, call_id=call_id, text=command or describe(name, args), command=command, paths=paths,
                    diff=_diff(lowered, args, metadata, paths), timestamp=times.get("start") or stamp)
        status = state.get("status")
        if status not in ("completed", "error"):
            return  # pending or running when the session was saved: the call stays open
        end = times.get("end") or times.get("start") or stamp
        if status == "error":
            self.b.result(call_id=call_id, text=as_text(state.get("error")) or "error", is_error=True, timestamp=end)
            return
        exit_code = metadata.get("exit") if command is not None else None
        exit_code = exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None
        self.b.result(call_id=call_id, text=as_text(state.get("output")), exit_code=exit_code,
                      is_error=exit_code not in (None, 0) or None, timestamp=end)

    def _build(self) -> Trajectory:
        info, b = self.info, self.b
        times = info.get("time") if isinstance(info.get("time"), dict) else {}
        directory = info.get("directory") if isinstance(info.get("directory"), str) else None
        b.set(session_id=info["id"], agent_version=info.get("version") if isinstance(info.get("version"), str) else None,
              parent_session_id=info.get("parentID") if isinstance(info.get("parentID"), str) else None,
              cwd=directory, model=self.models.most_common(1)[0][0] if self.models else None,
              started_at=parse_time(times.get("created")), ended_at=parse_time(times.get("updated")))
        # path.root is the project's worktree (its git root), path.cwd where the agent ran; both redacted
        root = sanitize(self.root) if self.root else None
        b.set(repo=resolve_repo(b.steps, cwd=b.fields.get("cwd"), git_root=root))
        b.task = pick_task(self.prompts)
        return b.build()


def _folders(path: Path, session_id: str) -> tuple[Path, Any] | None:
    """(message folder, part folder of a message) for the storage layouts OpenCode has used."""
    storage = path.parent.parent.parent  # storage/session/<projectID>/<ses>.json
    if (storage / "message" / session_id).is_dir():
        return storage / "message" / session_id, lambda message_id: storage / "part" / message_id
    older = path.parent.parent  # storage/session/info/<ses>.json
    if (older / "message" / session_id).is_dir():
        return older / "message" / session_id, lambda message_id: older / "part" / session_id / message_id
    return None


def _created(record: dict[str, Any]) -> Any:
    time = record.get("time")
    value = time.get("created") if isinstance(time, dict) else None
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _diff(tool: str, args: dict[str, Any], metadata: dict[str, Any], paths: list[str]) -> str | None:
    if isinstance(metadata.get("diff"), str) and metadata["diff"].strip():
        return metadata["diff"]
    path = paths[0] if paths else "file"
    if tool == "edit" and isinstance(args.get("oldString"), str):
        return unified(path, args["oldString"], str(args.get("newString") or ""))
    if tool == "write" and isinstance(args.get("content"), str):
        return unified(path, "", args["content"])
    if tool == "patch" and isinstance(args.get("patchText"), str):
        return args["patchText"]
    return None
