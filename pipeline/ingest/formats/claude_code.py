"""Claude Code session transcripts: ``~/.claude/projects/<cwd-slug>/<sessionId>.jsonl``.

One JSON entry per line. Assistant API responses are split over several lines sharing
``message.id``; tool results come back as *user* entries holding ``tool_result`` blocks.
Entry types we do not use (file-history-snapshot, queue-operation, attachment, the 2.1.x
additions ...) are skipped, never fatal. See ../shared/docs/trajectory-formats.md §1.
"""

from __future__ import annotations

import difflib
import json
import pickle
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.reader import Checkpoint, Probe, iter_jsonl
from pipeline.ingest.report import FileReport
from pipeline.trajectory import Trajectory, TrajectoryBuilder
from pipeline.trajectory.commands import is_shell_tool

_ENTRY_TYPES = {"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation",
                "progress", "attachment"}
_EXIT_CODE = re.compile(r"^Exit code (\d+)")
_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_INJECTED = ("<local-command-stdout>", "<local-command-stderr>", "<system-reminder>", "<command-message>",
             "Caveat: The messages below were generated", "<user-prompt-submit-hook>", "<bash-stdout>",
             "<bash-input>", "<bash-stderr>")
_PATH_KEYS = ("file_path", "notebook_path", "path")
#: Built-in slash commands that manage the session rather than ask for work.
_SESSION_COMMANDS = {"/clear", "/compact", "/model", "/cost", "/help", "/login", "/logout", "/status", "/config",
                     "/resume", "/exit", "/mcp", "/memory", "/permissions", "/doctor", "/context", "/hooks",
                     "/agents", "/ide", "/vim", "/terminal-setup", "/add-dir", "/bug", "/release-notes",
                     "/export", "/usage", "/rewind", "/statusline", "/output-style", "/todos", "/plugin"}


class ClaudeCode(TrajectoryFormat):
    name = "claude-code"
    agent = "claude-code"
    description = "Claude Code session transcripts (JSONL, one entry per line)"
    locations = ("~/.claude/projects/*/*.jsonl", "~/.claude/projects/*/*/subagents/agent-*.jsonl")
    suffixes = (".jsonl",)
    priority = 10

    def sniff(self, probe: Probe) -> bool:
        for record in probe.records:
            if not isinstance(record, dict):
                return False
            kind = record.get("type")
            if kind in ("user", "assistant", "system") and "sessionId" in record and "uuid" in record:
                return True
            if kind == "summary" and "leafUuid" in record:
                return True
            if kind == "file-history-snapshot" and "messageId" in record:
                continue
            if kind not in _ENTRY_TYPES:
                return False
        return False

    incremental = True

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        return self._read(path, report, None)

    def resume(self, path: Path, report: FileReport, checkpoint: Checkpoint) -> Iterator[Trajectory]:
        """Incremental hook (watermarks, issue 3): continue a growing session where the last read stopped.

        Claude Code only appends to a session file. The whole ``_Session`` (builder, open calls,
        de-duplication keys) is pickled into ``checkpoint.state`` as it stood after the last
        *complete* line, and the next read unpickles it and feeds only the appended lines, so calls
        pair across the boundary and the task stays the first request. The caller
        (``pipeline.ingest.watermark``) checks that the already-read bytes are unchanged and that the
        state was written by this same code; otherwise it reads the file whole.
        """
        return self._read(path, report, checkpoint)

    def _read(self, path: Path, report: FileReport, checkpoint: Checkpoint | None) -> Iterator[Trajectory]:
        session = pickle.loads(checkpoint.state) if checkpoint and checkpoint.state else _Session(path)
        snapshot = None
        for line, record in iter_jsonl(path, report, checkpoint=checkpoint):
            if checkpoint is not None and snapshot is None and line > checkpoint.line:
                snapshot = pickle.dumps(session)  # a last line without newline: resume from before it
            if not isinstance(record, dict):
                report.error(f"expected a JSON object, found {type(record).__name__}", line)
                continue
            try:
                session.add(record)
            except (TypeError, AttributeError, ValueError, KeyError) as exc:
                report.error(f"unexpected shape of a {record.get('type')!r} entry: {exc}", line)
        if checkpoint is not None:
            checkpoint.state = snapshot or pickle.dumps(session)
        if session.builder.steps:
            yield session.build()


class _Session:
    def __init__(self, path: Path) -> None:
        self.builder = TrajectoryBuilder(source_format=ClaudeCode.name, agent=ClaudeCode.agent,
                                         source_path=str(path))
        self.models: dict[str, int] = {}
        self.seen_blocks: set[str] = set()
        self.call_tools: dict[str, str] = {}
        self.all_sidechain = True
        self.agent_id: str | None = None

    def add(self, entry: dict[str, Any]) -> None:
        kind = entry.get("type")
        if kind not in ("user", "assistant"):
            return
        b = self.builder
        b.set(session_id=entry.get("sessionId"), cwd=entry.get("cwd"), git_branch=entry.get("gitBranch"),
              agent_version=entry.get("version"))
        sidechain = bool(entry.get("isSidechain"))
        self.all_sidechain &= sidechain
        self.agent_id = self.agent_id or entry.get("agentId")
        message = entry.get("message") or {}
        stamp = entry.get("timestamp")
        if kind == "assistant":
            self._assistant(message, stamp, sidechain)
        else:
            self._user(entry, message, stamp, sidechain)

    def _assistant(self, message: dict[str, Any], stamp: Any, sidechain: bool) -> None:
        model = message.get("model")
        if model and model != "<synthetic>":
            self.models[model] = self.models.get(model, 0) + 1
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for position, block in enumerate(content or []):
            if not isinstance(block, dict):
                continue
            # zlib.crc32, not hash(): the key must match across processes when a read resumes.
            key = block.get("id") or f"{message.get('id')}:{position}:{zlib.crc32(str(block.get('text')).encode())}"
            if key in self.seen_blocks:
                continue  # the same block written again by a later line of the same response
            self.seen_blocks.add(key)
            btype = block.get("type")
            if btype == "text" and (block.get("text") or "").strip():
                self.builder.assistant(block["text"], timestamp=stamp, sidechain=sidechain)
            elif btype == "tool_use":
                self._tool_use(block, stamp, sidechain)

    def _tool_use(self, block: dict[str, Any], stamp: Any, sidechain: bool) -> None:
        name = str(block.get("name") or "tool")
        args = block.get("input") if isinstance(block.get("input"), dict) else {}
        paths = [str(args[k]) for k in _PATH_KEYS if isinstance(args.get(k), str)]
        command = args.get("command") if is_shell_tool(name) and isinstance(args.get("command"), str) else None
        diff = _edit_diff(name, args, paths[0] if paths else "file")
        text = command or _describe(name, args)
        call_id = block.get("id")
        self.call_tools[str(call_id)] = name
        self.builder.call(name, call_id=call_id, text=text, command=command, paths=paths, diff=diff,
                          timestamp=stamp, sidechain=sidechain)

    def _user(self, entry: dict[str, Any], message: dict[str, Any], stamp: Any, sidechain: bool) -> None:
        content = message.get("content")
        meta = bool(entry.get("isMeta") or entry.get("isCompactSummary"))
        if isinstance(content, str):
            self._user_text(content, stamp, meta, sidechain)
            return
        for block in content or []:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "tool_result":
                self._tool_result(block, entry.get("toolUseResult"), stamp, sidechain)
            elif btype == "text":
                self._user_text(str(block.get("text") or ""), stamp, meta, sidechain)
            elif btype in ("image", "document"):
                self.builder.user(f"[{btype}]", timestamp=stamp, meta=meta, sidechain=sidechain)

    def _user_text(self, text: str, stamp: Any, meta: bool, sidechain: bool) -> None:
        if not text.strip():
            return
        name = _COMMAND_NAME.search(text)
        if name:  # a slash command: keep "/name args" as what the person asked
            args = _COMMAND_ARGS.search(text)
            command = name.group(1).strip()
            text = f"{command} {args.group(1).strip() if args else ''}".strip()
            meta = meta or command in _SESSION_COMMANDS
        elif text.lstrip().startswith(_INJECTED):
            meta = True
        self.builder.user(text, timestamp=stamp, meta=meta, sidechain=sidechain)

    def _tool_result(self, block: dict[str, Any], extra: Any, stamp: Any, sidechain: bool) -> None:
        call_id = block.get("tool_use_id")
        text = _result_text(block.get("content"))
        is_error = bool(block.get("is_error"))
        exit_code = None
        if is_shell_tool(self.call_tools.get(str(call_id))):
            match = _EXIT_CODE.match(text)
            exit_code = int(match.group(1)) if match else (1 if is_error else 0)
            if isinstance(extra, dict) and extra.get("interrupted"):
                exit_code = exit_code or 130
        self.builder.result(call_id=call_id, text=text, exit_code=exit_code, is_error=is_error,
                            timestamp=stamp, sidechain=sidechain)
        if isinstance(extra, dict) and isinstance(extra.get("structuredPatch"), list):
            diff = _structured_patch(extra.get("filePath"), extra["structuredPatch"])
            if diff and call_id:
                self.builder.amend_result(str(call_id), diff=diff)

    def build(self) -> Trajectory:
        b = self.builder
        if self.models:
            b.set(model=max(self.models, key=lambda m: self.models[m]))
        if self.all_sidechain and self.agent_id:
            # A subagent file (agent-*.jsonl): its own trajectory, linked to the parent session.
            b.fields["parent_session_id"] = b.fields.get("session_id")
            b.fields["session_id"] = f"agent-{self.agent_id}"
        cwd = b.fields.get("cwd")
        if cwd:
            b.set(repo=Path(cwd).name or None)
        return b.build()


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, dict):
                parts.append(str(item.get("text") or (f"[{item.get('type')}]" if item.get("type") else "")))
            else:
                parts.append(str(item))
        return "\n".join(p for p in parts if p)
    return "" if content is None else str(content)


def _describe(name: str, args: dict[str, Any]) -> str:
    for key in ("pattern", "query", "url", "description", "prompt", "file_path", "path", "notebook_path"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return f"{name} {value}"
    return f"{name} {json.dumps(args, ensure_ascii=False, default=str)[:500]}"


def _edit_diff(name: str, args: dict[str, Any], path: str) -> str | None:
    lowered = name.lower()
    if lowered == "edit" and isinstance(args.get("old_string"), str):
        return _unified(path, args["old_string"], str(args.get("new_string") or ""))
    if lowered == "multiedit" and isinstance(args.get("edits"), list):
        return "\n".join(_unified(path, str(e.get("old_string", "")), str(e.get("new_string", "")))
                         for e in args["edits"] if isinstance(e, dict))
    if lowered == "write" and isinstance(args.get("content"), str):
        return _unified(path, "", args["content"])
    return None


def _unified(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{path}", f"b/{path}", lineterm="", n=1)
    return "\n".join(lines)


def _structured_patch(path: Any, hunks: list[Any]) -> str | None:
    out = [f"--- a/{path}", f"+++ b/{path}"]
    for hunk in hunks:
        if not isinstance(hunk, dict):
            continue
        out.append(f"@@ -{hunk.get('oldStart')},{hunk.get('oldLines')} +{hunk.get('newStart')},{hunk.get('newLines')} @@")
        out.extend(str(line) for line in hunk.get("lines") or [])
    return "\n".join(out) if len(out) > 2 else None
