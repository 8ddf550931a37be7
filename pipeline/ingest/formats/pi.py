"""Pi coding agent sessions: ``~/.pi/agent/sessions/--<cwd with / as ->--/<timestamp>_<id>.jsonl``.

From the agent's session manager (badlogic/pi-mono ``packages/coding-agent/src/core/session-manager.ts``):
the first line is the header ``{"type": "session", "version": 3, "id", "timestamp", "cwd",
"parentSession"?}``; every other line an entry ``{type, id, parentId, timestamp, ...}``: ``message``
(``message`` is a pi-ai message: ``user {content: str | [text|image]}``, ``assistant {content: [text |
thinking | toolCall {id, name, arguments}], provider, model, stopReason}``, ``toolResult {toolCallId, toolName,
content, isError}``, ``bashExecution {command, output, exitCode}`` for a ``!command`` the person ran,
``custom``), ``model_change``, ``thinking_level_change``, ``compaction``, ``branch_summary``,
``custom_message``, ``label``, ``session_info``.

Entries form a tree through ``parentId``; the session's context is the path from the leaf -- the last
entry -- back to the root (``buildSessionContext``), so a branch the person left is not read. Version 1
files have no ids: they are one line after another. The bash tool fails a non-zero exit with its output and
``Command exited with code N``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats._common import (
    SHAPE_ERRORS,
    as_text,
    describe,
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
from pipeline.trajectory.builder import parse_time

_EXIT = re.compile(r"(?:Command exited with code|exit code:?) (-?\d+)\s*$", re.I)
_SHELL_TOOLS = {"bash"}
#: Pi refusing a call (``packages/coding-agent/src/core/tools/{edit,read,write}.ts`` and the agent loop's argument
#: validation): the edit found no unique match, a file that is not there, arguments its schema refused.
PROTOCOL_ERRORS = re.compile(
    r"\A\s*(?:Could not find the exact text in |Found \d+ occurrences of the text in |No changes made to |"
    r"File not found: |Validation failed for tool |Tool [\"'`]?[\w.-]+[\"'`]? not found)")


class Pi(TrajectoryFormat):
    name = "pi"
    agent = "pi"
    description = "Pi coding agent sessions (a header, then entries chained by parentId; the branch it ended on)"
    locations = ("~/.pi/agent/sessions/*/*.jsonl ($PI_CODING_AGENT_DIR/sessions)",)
    suffixes = (".jsonl",)
    priority = 7
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        records = [r for r in probe.records if isinstance(r, dict)]
        if not records:
            return False
        first = records[0]
        if first.get("type") != "session" or not isinstance(first.get("id"), str) or "cwd" not in first:
            return False
        rest = records[1:]
        return not rest or any(r.get("type") == "message" and isinstance(r.get("message"), dict) or
                               r.get("type") in ("model_change", "thinking_level_change") for r in rest)

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        header: dict[str, Any] = {}
        entries: list[tuple[int, dict[str, Any]]] = []
        for line, record in iter_jsonl(path, report):
            if not isinstance(record, dict) or not isinstance(record.get("type"), str):
                report.error("not a Pi session entry (type)", line)
            elif record["type"] == "session":
                header = header or record
            else:
                entries.append((line, record))
        b = TrajectoryBuilder(source_format=self.name, agent=self.agent, source_path=str(path))
        models: Counter[str] = Counter()
        prompts: list[str] = []
        for line, entry in _branch(entries):
            try:
                _entry(b, entry, models, prompts)
            except SHAPE_ERRORS as exc:
                report.error(shape_error(f"a {entry.get('type')!r} entry", exc), line)
        if not b.steps:
            report.status = "skipped"
            report.error("Pi session without messages")
            return
        cwd = header.get("cwd") if isinstance(header.get("cwd"), str) and header["cwd"] else None
        parent = header.get("parentSession")
        b.set(session_id=header.get("id"), cwd=cwd, model=models.most_common(1)[0][0] if models else None,
              parent_session_id=Path(parent).stem if isinstance(parent, str) and parent else None,
              repo=resolve_repo(b.steps, cwd=sanitize(cwd) if cwd else None),  # the redacted cwd
              started_at=parse_time(header.get("timestamp")))
        b.task = pick_task(prompts)
        yield b.build()


def _branch(entries: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
    """The path from the last entry back to the root, in order; every entry when they carry no ids (version 1)."""
    by_id = {e["id"]: (line, e) for line, e in entries if isinstance(e.get("id"), str)}
    if not entries or len(by_id) < len(entries):
        return entries
    path: list[tuple[int, dict[str, Any]]] = []
    node: tuple[int, dict[str, Any]] | None = entries[-1]
    seen: set[str] = set()
    while node is not None and node[1]["id"] not in seen:
        seen.add(node[1]["id"])
        path.append(node)
        parent = node[1].get("parentId")
        node = by_id.get(parent) if isinstance(parent, str) else None
    return path[::-1]


def _entry(b: TrajectoryBuilder, entry: dict[str, Any], models: Counter[str], prompts: list[str]) -> None:
    kind, stamp = entry["type"], entry.get("timestamp")
    if kind in ("compaction", "branch_summary") and isinstance(entry.get("summary"), str):
        b.user(f"[{kind.replace('_', ' ')}] {entry['summary']}", timestamp=stamp, meta=True)
        return
    if kind == "custom_message":
        text = as_text(entry.get("content"))
        if text.strip():
            b.user(text, timestamp=stamp, meta=True)  # an extension's, not the person's
        return
    if kind != "message" and not isinstance(entry.get("message"), dict):
        return  # (an entry holding a message is one, whatever a damaged ``type`` says)
    message = entry["message"]
    role = message["role"]
    content = message.get("content")
    if role == "user":
        text = _texts(content)
        if text.strip():
            b.user(text, timestamp=stamp)
            prompts.append(text)
    elif role == "assistant":
        if isinstance(message.get("model"), str) and message["model"]:
            models[message["model"]] += 1
        text = _texts(content)
        if text.strip():
            b.assistant(text, timestamp=stamp)
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "toolCall":
                _call(b, part, stamp)
    elif role == "toolResult":
        text = _texts(content)
        failed = message.get("isError") is True
        name = message.get("toolName")
        exit_code = None
        if name in _SHELL_TOOLS or (name is None and _EXIT.search(text[-200:])):
            match = _EXIT.search(text[-200:])
            exit_code = int(match.group(1)) if match else (1 if failed else 0)
        b.result(call_id=message.get("toolCallId") if isinstance(message.get("toolCallId"), str) else None,
                 text=text, exit_code=exit_code, is_error=failed or exit_code not in (None, 0), timestamp=stamp)
    elif role == "bashExecution" and isinstance(message.get("command"), str):  # `!cmd` the person ran
        command = message["command"]
        code = message.get("exitCode") if isinstance(message.get("exitCode"), int) else None
        b.call("bash", call_id=f"user-bash-{entry.get('id') or len(b.steps)}", text=command, command=command,
               timestamp=stamp)
        b.result(text=as_text(message.get("output")), exit_code=code, timestamp=stamp)
    elif role == "custom":
        text = _texts(content)
        if text.strip():
            b.user(text, timestamp=stamp, meta=True)


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = [p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text"
             and isinstance(p.get("text"), str)] if isinstance(content, list) else []
    return "\n".join(t for t in parts if t.strip())


def _call(b: TrajectoryBuilder, part: dict[str, Any], stamp: Any) -> None:
    name = part.get("name") if isinstance(part.get("name"), str) and part["name"] else "tool"
    args = part.get("arguments") if isinstance(part.get("arguments"), dict) else {}
    command = args.get("command") if name in _SHELL_TOOLS and isinstance(args.get("command"), str) else None
    paths = paths_in(args)
    b.call(name, call_id=part.get("id") if isinstance(part.get("id"), str) else None,
           text=command or describe(name, args), command=command, paths=paths, diff=_diff(name, args, paths),
           timestamp=stamp)


def _diff(name: str, args: dict[str, Any], paths: list[str]) -> str | None:
    path = paths[0] if paths else "file"
    old = args.get("oldText", args.get("old_string"))
    if name == "edit" and isinstance(old, str):
        return unified(path, old, str(args.get("newText", args.get("new_string")) or ""))
    if name == "edit" and isinstance(args.get("edits"), list):
        hunks = [unified(path, str(e.get("oldText") or ""), str(e.get("newText") or "")) for e in args["edits"]
                 if isinstance(e, dict) and isinstance(e.get("oldText"), str)]
        return "\n".join(hunks) or None
    if name == "write" and isinstance(args.get("content"), str):
        return unified(path, "", args["content"])
    return None
