"""Kimi CLI sessions: ``~/.kimi/sessions/<md5(work dir)>/<session id>/context.jsonl``.

The model's context, one line each (``kimi_cli/soul/context.py``): ``{"role": "_system_prompt",
"content"}``, ``{"role": "_checkpoint", "id"}`` before each turn, ``{"role": "_usage",
"token_count"}``, and the messages themselves as kosong ``Message`` models: ``{role: user|assistant|
tool, content: str | [{type: text|think|image_url ...}], tool_calls?: [{type: function, id,
function: {name, arguments: "<JSON>"}}], tool_call_id?}``. What the CLI adds is wrapped in
``<system>...</system>`` text parts (``soul/message.py``): a tool's own message (``Command executed
successfully.``, ``Command failed with exit code: 1.``), ``<system>ERROR</system>`` before a failed
tool's message, ``CHECKPOINT N`` user messages. A revert to a checkpoint rotates the file to
``context_N.jsonl`` and rewrites ``context.jsonl`` up to that checkpoint, so a rotated copy is an
abandoned branch: it is reported skipped when the session's ``context.jsonl`` is beside it.

Nothing in the file says where the session ran: the folder above it is the md5 of the work
directory, which ``~/.kimi/kimi.json`` lists (``work_dirs[].path``); else a directory the tools
touched whose md5 matches. ``wire.jsonl`` beside it logs the same turns as UI events; it is
reported skipped. Subagents keep their own context under ``<session>/subagents/<id>/``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats._common import (
    SHAPE_ERRORS,
    describe,
    loads_object,
    paths_in,
    pick_task,
    shape_error,
    unified,
)
from pipeline.ingest.identity import resolve_repo
from pipeline.ingest.reader import Probe, iter_jsonl
from pipeline.ingest.report import FileReport
from pipeline.redact import sanitize
from pipeline.trajectory import Trajectory, TrajectoryBuilder

_META_ROLES = {"_system_prompt", "_checkpoint", "_usage"}
_ROLES = _META_ROLES | {"user", "assistant", "tool", "system"}
#: What the CLI wraps what it adds in: its own notes, and the reminders a hook's context becomes.
_SYSTEM = re.compile(r"\A\s*<(system|system-reminder)>(.*?)</\1>\s*\Z", re.S)
_EXIT = re.compile(r"Command failed with exit code: (-?\d+)")
#: How a background task ended, in the user message the CLI writes for it (kimi_cli/notifications/llm.py).
_NOTIFICATION = re.compile(r"\A\s*<notification\b.*?(?:Task ID: |source_id=\")(?P<task>[\w.-]+).*?\bExit code: (?P<code>-?\d+)",
                           re.S)
_ROTATED = re.compile(r"^context_\d+\.jsonl$")
_SHELL_TOOLS = {"Shell", "bash"}
#: kimi.json is small; one larger than this is not read.
_MAX_METADATA = 4 << 20
#: Kimi CLI refusing a call (``kimi_cli/tools/file/replace.py``, ``write.py``, ``read.py``, ``shell``): the message
#: is the result's first note. Not refusals: ``Command failed with exit code``, a person's rejection.
PROTOCOL_ERRORS = re.compile(
    r"\A\s*(?:No replacements were made\. The old string was not found|`[^`\n]*` (?:is not an absolute path|is "
    r"outside the working directory|does not exist\.|is not a file\.)|You must read `[^`\n]*` with the ReadFile tool "
    r"before editing it|Command cannot be empty\.|Error (?:parsing|validating) JSON arguments|Tool `[^`\n]*` not found)")
_SKIP_WIRE = ("Kimi CLI event log (wire.jsonl): the UI's view of the turns that context.jsonl beside it holds; the "
              "session is read from context.jsonl")


class KimiCli(TrajectoryFormat):
    name = "kimi-cli"
    agent = "kimi-cli"
    description = "Kimi CLI sessions (context.jsonl: the model's messages, checkpoints and tool results)"
    locations = ("~/.kimi/sessions/*/*/context.jsonl", "~/.kimi/sessions/*/*.jsonl (before 0.50)",
                 "~/.kimi/sessions/*/*/subagents/*/context.jsonl")
    suffixes = (".jsonl",)
    priority = 7
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        records = [r for r in probe.records if isinstance(r, dict)]
        if not records:
            return False
        first = records[0]
        if first.get("type") == "metadata" and "protocol_version" in first:
            return probe.path.name == "wire.jsonl" or (probe.path.parent / "context.jsonl").is_file()
        roles = [r.get("role") for r in records]
        return all(isinstance(role, str) and role in _ROLES for role in roles) and roles[0] in _META_ROLES

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        if path.name == "wire.jsonl" or _is_wire(path):
            report.status = "skipped"
            report.error(_SKIP_WIRE)
            return
        if _ROTATED.match(path.name) and (path.parent / "context.jsonl").is_file():
            report.status = "skipped"
            report.error("an earlier copy of this Kimi CLI session, set aside by a revert or /clear; the session is "
                         "read from context.jsonl beside it")
            return
        b = TrajectoryBuilder(source_format=self.name, agent=self.agent, source_path=str(path))
        prompts: list[str] = []
        touched: list[str] = []
        background: dict[str, str] = {}  # a background task's id -> the call that started it
        for line, record in iter_jsonl(path, report):
            if not isinstance(record, dict) or not isinstance(record.get("role"), str) or record["role"] not in _ROLES:
                report.error("not a Kimi CLI context record (role)", line)
                continue
            try:
                _message(b, record, prompts, touched, background)
            except SHAPE_ERRORS as exc:
                report.error(shape_error(f"a {record.get('role')!r} message", exc), line)
        if not b.steps:
            report.status = "skipped"
            report.error("Kimi CLI session without messages")
            return
        session_dir, session_id, parent = _session_dir(path)
        cwd = _work_dir(session_dir.parent.name if session_dir else path.parent.name,
                        session_dir.parent.parent.parent if session_dir else path.parent.parent.parent, touched)
        b.set(session_id=session_id, parent_session_id=parent, cwd=cwd,
              repo=resolve_repo(b.steps, cwd=sanitize(cwd) if cwd else None))  # the redacted cwd
        b.task = pick_task(prompts)
        yield b.build()


def _is_wire(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            first = loads_object(handle.readline(65536).decode("utf-8", errors="replace"))
    except OSError:
        return False
    return bool(first) and first.get("type") == "metadata" and "protocol_version" in first


def _parts(content: Any) -> list[tuple[str, str]]:
    """(kind, text) of each part: ``system`` for the CLI's ``<system>`` wrappers, ``text`` for the rest."""
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    found: list[tuple[str, str]] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
            continue  # think, image_url, audio: not said
        wrapped = _SYSTEM.match(part["text"])
        found.append(("system", wrapped.group(2).strip()) if wrapped else ("text", part["text"]))
    return found


def _message(b: TrajectoryBuilder, record: dict[str, Any], prompts: list[str], touched: list[str],
             background: dict[str, str] | None = None) -> None:
    background = {} if background is None else background
    role = record["role"]
    if role in _META_ROLES:
        return
    parts = _parts(record.get("content"))
    said = "\n".join(text for kind, text in parts if kind == "text" and text.strip())
    if role == "user":
        if (done := _NOTIFICATION.search(said)) and done.group("task") in background:
            # a background task ended (notifications/llm.py): its exit code belongs to the call that started it
            b.amend_result(background[done.group("task")], exit_code=int(done.group("code")))
        if said.strip():
            b.user(said)  # (the CLI's words when they are a notification: voice.HARNESS_OPENERS)
            if not said.lstrip().startswith("<notification"):
                prompts.append(said)
        elif parts:  # CHECKPOINT n, injected reminders: from the CLI, not a person
            b.user("\n".join(text for _, text in parts), meta=True)
    elif role == "assistant":
        if said.strip():
            b.assistant(said)
        for call in record.get("tool_calls") or []:
            _call(b, call, touched)
    elif role == "tool":
        notes = [text for kind, text in parts if kind == "system"]
        failed = any(note == "ERROR" for note in notes)
        exit_code = None
        for note in notes:
            if match := _EXIT.search(note):
                exit_code = int(match.group(1))
        if exit_code is None and notes and notes[0] == "Command executed successfully.":
            exit_code = 0
        call_id = record.get("tool_call_id") if isinstance(record.get("tool_call_id"), str) else None
        started = any(note.startswith("Command started in background") for note in notes)
        if started and call_id and (task := re.search(r"\btask_id:\s*(\S+)", said)):
            background[task.group(1)] = call_id  # no result yet: its notification tells how it ended
        text = "\n".join(t for t in [*[n for n in notes if n != "ERROR"], said] if t)
        b.result(call_id=call_id, text=text, exit_code=exit_code,
                 is_error=None if started and not failed else failed or exit_code not in (None, 0))


def _call(b: TrajectoryBuilder, call: Any, touched: list[str]) -> None:
    if not isinstance(call, dict):
        return
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    name = function.get("name") if isinstance(function.get("name"), str) and function["name"] else "tool"
    raw = function.get("arguments")
    args = loads_object(raw) if isinstance(raw, str) else raw if isinstance(raw, dict) else None
    args = args or {}
    command = args.get("command") if name in _SHELL_TOOLS and isinstance(args.get("command"), str) else None
    paths = paths_in(args)
    touched += [p for p in paths if p.startswith("/")]
    b.call(name, call_id=call.get("id") if isinstance(call.get("id"), str) else None,
           text=command or describe(name, args), command=command, paths=paths, diff=_diff(name, args, paths))


def _diff(name: str, args: dict[str, Any], paths: list[str]) -> str | None:
    path = paths[0] if paths else "file"
    if name == "StrReplaceFile":
        edits = args.get("edit")
        edits = edits if isinstance(edits, list) else [edits]
        hunks = [unified(path, str(e.get("old") or ""), str(e.get("new") or "")) for e in edits
                 if isinstance(e, dict) and isinstance(e.get("old"), str)]
        return "\n".join(hunks) or None
    if name == "WriteFile" and isinstance(args.get("content"), str) and args.get("mode", "overwrite") == "overwrite":
        return unified(path, "", args["content"])
    return None


def _session_dir(path: Path) -> tuple[Path | None, str | None, str | None]:
    """The session's folder (its name is the session id), this file's session id and its parent's (a
    subagent's folder is ``<session>/subagents/<agent id>/``)."""
    folder = path.parent
    if folder.parent.name == "subagents":
        session = folder.parent.parent
        return session, folder.name, session.name
    if path.name == "context.jsonl" or _ROTATED.match(path.name):
        return folder, folder.name, None
    return None, path.stem, None  # before 0.50: <session id>.jsonl straight in the work dir's folder


def _work_dir(digest: str, share: Path, touched: list[str]) -> str | None:
    """The work directory whose md5 (``digest``) names the sessions' folder: from ``<share>/kimi.json``,
    else a directory the tools touched."""
    metadata = share / "kimi.json"  # <share dir>/sessions/<md5>/...
    try:
        if metadata.is_file() and metadata.stat().st_size <= _MAX_METADATA:
            for entry in orjson.loads(metadata.read_bytes()).get("work_dirs") or []:
                where = entry.get("path") if isinstance(entry, dict) else None
                if isinstance(where, str) and hashlib.md5(where.encode()).hexdigest() == digest:  # noqa: S324
                    return where
    except (OSError, orjson.JSONDecodeError, AttributeError):
        pass
    tried: set[str] = set()
    for touched_path in touched:
        for candidate in (touched_path, *map(str, PurePosixPath(touched_path).parents)):
            if candidate in tried or candidate == "/":
                continue
            tried.add(candidate)
            if hashlib.md5(candidate.encode()).hexdigest() == digest:  # noqa: S324 (Kimi's own naming)
                return candidate
    return None
