"""Codex CLI headless captures: ``codex exec --json`` (what CI jobs and wrappers keep of a run).

One ``ThreadEvent`` per line on stdout (codex-rs ``exec/src/exec_events.rs``): ``thread.started``
(``thread_id``, the rollout's session id), ``turn.started``, ``item.started`` / ``item.updated`` /
``item.completed`` (``item{id, type, ...}``), ``turn.completed{usage}``, ``turn.failed{error}``
and ``error{message}``. Item types: ``agent_message`` / ``reasoning`` / ``plan`` (``text``),
``command_execution{command, aggregated_output, exit_code, status}``, ``file_change{changes[{path,
kind}], status}``, ``mcp_tool_call{server, tool, arguments, result{content}, error{message},
status}``, ``collab_tool_call{tool, prompt, status}``, ``web_search{query, action}``, ``todo_list``
and ``error{message}``. The first releases (``--experimental-json``) said ``item_type`` for
``type``, ``assistant_message`` for ``agent_message`` and ``session.created{session_id}`` for
``thread.started``; those are read too.

The stream holds neither the prompt, the model, the working directory nor timestamps: the task is
unknown unless the run asked for input. A tool call is its item (an item started and completed is
one call); a turn that failed, or the stream's fatal error, fails the run. The same thread's rollout
under ``~/.codex/sessions`` (unless the run was ``--ephemeral``) is read by the rollout reader.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats._common import add_record, as_text, describe, paths_in
from pipeline.ingest.formats.codex import PROTOCOL_ERRORS, shell_command
from pipeline.ingest.reader import Probe, iter_jsonl
from pipeline.ingest.report import FileReport
from pipeline.trajectory import Outcome, Trajectory, TrajectoryBuilder

_EVENTS = {"thread.started", "session.created", "turn.started", "turn.completed", "turn.failed", "item.started",
           "item.updated", "item.completed", "item.plan.delta", "request_user_input", "error"}
_TEXT_ITEMS = {"agent_message", "assistant_message", "plan"}


class CodexExecJson(TrajectoryFormat):
    name = "codex-exec-json"
    agent = "codex"
    description = "Codex CLI headless runs captured with codex exec --json (JSONL thread events on stdout)"
    locations = ("<CI artifact>: codex exec --json <prompt> > <file>.jsonl",)
    suffixes = (".jsonl", ".json", ".log", ".ndjson")
    priority = 8
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        records = probe.records
        if not records or not all(isinstance(r, dict) and isinstance(r.get("type"), str) and r["type"] in _EVENTS
                                  for r in records):
            return False
        return any(r["type"] in ("thread.started", "session.created") or (
            r["type"].startswith("item.") and isinstance(r.get("item"), dict)) for r in records)

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        run = _Run(path)
        for line, record in iter_jsonl(path, report):
            add_record(record, line, report, run.add, "event")
        trajectory = run.build()
        if trajectory is not None:
            yield trajectory
        elif not report.errors:
            report.status = "skipped"
            report.error("codex exec --json capture without messages or tool calls (the run ended before the "
                         "model answered)")


class _Run:
    def __init__(self, path: Path) -> None:
        self.b = TrajectoryBuilder(source_format=CodexExecJson.name, agent=CodexExecJson.agent, source_path=str(path))
        self.called: set[str] = set()
        self.done: set[str] = set()
        self.failure: str | None = None

    def add(self, event: dict[str, Any], line: int) -> None:
        kind = event.get("type")
        if kind in ("thread.started", "session.created"):
            thread = event.get("thread_id") or event.get("session_id")
            self.b.set(session_id=thread if isinstance(thread, str) else None)
        elif kind in ("item.started", "item.updated", "item.completed"):
            item = event.get("item")
            if isinstance(item, dict):
                self._item(item, done=kind == "item.completed")
        elif kind == "turn.failed":
            error = event.get("error")
            message = as_text(error.get("message")) if isinstance(error, dict) else as_text(error)
            self._failed(message or "turn failed")
        elif kind == "error":
            self._failed(as_text(event.get("message")) or "error")
        elif kind == "request_user_input":
            questions = event.get("questions")
            asked = [as_text(q.get("question")) for q in questions if isinstance(q, dict)] if isinstance(
                questions, list) else []
            if any(asked):
                self.b.assistant("\n".join(q for q in asked if q))

    def _failed(self, message: str) -> None:
        self.failure = self.failure or message
        self.b.user(f"[turn failed] {message}", meta=True)

    def _item(self, item: dict[str, Any], *, done: bool) -> None:
        item_id = item.get("id") if isinstance(item.get("id"), str) else None
        kind = item.get("type") if isinstance(item.get("type"), str) else item.get("item_type")
        if kind in _TEXT_ITEMS:
            text = as_text(item.get("text"))
            if done and text.strip():
                self.b.assistant(text)
        elif kind == "error":
            if done and as_text(item.get("message")).strip():
                self.b.user(f"[error] {as_text(item.get('message'))}", meta=True)
        elif kind in ("command_execution", "file_change", "mcp_tool_call", "collab_tool_call", "web_search"):
            key = item_id or f"item-{len(self.called)}"
            if key in self.done:
                return  # the same item completed again (a resumed thread replaying it)
            if key not in self.called:
                self._call(kind, key, item)
            if done:
                self._result(kind, key, item)
        # reasoning, todo_list: what the model thought and planned, not an action

    def _call(self, kind: str, key: str, item: dict[str, Any]) -> None:
        self.called.add(key)
        if kind == "command_execution":
            raw = item.get("command")
            command = _unwrap(raw) if isinstance(raw, str) else None
            self.b.call("exec_command", call_id=key, text=command or "exec_command", command=command)
        elif kind == "file_change":
            changes = item.get("changes") if isinstance(item.get("changes"), list) else []
            paths = [c["path"] for c in changes if isinstance(c, dict) and isinstance(c.get("path"), str)]
            kinds = [f"{c.get('kind')} {c['path']}" for c in changes if isinstance(c, dict)
                     and isinstance(c.get("path"), str)]
            self.b.call("apply_patch", call_id=key, text="apply_patch " + ", ".join(kinds), paths=paths)
        elif kind == "mcp_tool_call":
            server, tool = item.get("server"), item.get("tool")
            name = f"mcp__{server}__{tool}" if isinstance(server, str) and isinstance(tool, str) else "mcp_tool"
            args = item.get("arguments") if isinstance(item.get("arguments"), dict) else {}
            self.b.call(name, call_id=key, text=describe(name, args) if args else name, paths=paths_in(args))
        elif kind == "collab_tool_call":
            tool = item.get("tool") if isinstance(item.get("tool"), str) else "collab"
            prompt = as_text(item.get("prompt"))
            self.b.call(tool, call_id=key, text=f"{tool} {prompt}".strip())
        else:
            action = item.get("action") if isinstance(item.get("action"), dict) else {}
            query = as_text(item.get("query")) or as_text(action.get("query") or action.get("url"))
            self.b.call("web_search", call_id=key, text=f"web_search {query}".strip())

    def _result(self, kind: str, key: str, item: dict[str, Any]) -> None:
        self.done.add(key)
        status = item.get("status") if isinstance(item.get("status"), str) else None
        failed = status in ("failed", "declined") or None
        if kind == "command_execution":
            code = item.get("exit_code")
            code = code if isinstance(code, int) and not isinstance(code, bool) else None
            text = as_text(item.get("aggregated_output"))
            if status == "declined":
                text = text or "command declined"
            self.b.result(call_id=key, text=text, exit_code=code, is_error=failed)
        elif kind == "mcp_tool_call":
            error = item.get("error")
            result = item.get("result")
            if isinstance(error, dict) and as_text(error.get("message")):
                self.b.result(call_id=key, text=as_text(error.get("message")), is_error=True)
            else:
                content = result.get("content") if isinstance(result, dict) else None
                self.b.result(call_id=key, text=as_text(content), is_error=failed)
        else:
            self.b.result(call_id=key, text=f"{kind.replace('_', ' ')} {status or 'completed'}", is_error=failed)

    def build(self) -> Trajectory | None:
        if not self.b.steps:
            return None
        if self.failure is not None:
            self.b.outcome = Outcome(status="failed", source="heuristic",
                                     evidence=f"the run ended on an error: {self.failure[:200]}")
        return self.b.build()


def _unwrap(command: str) -> str | None:
    """The command itself, out of the ``/bin/bash -lc '<command>'`` codex runs it in."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command or None
    inner, _ = shell_command("shell", {"command": words})
    return inner or command or None
