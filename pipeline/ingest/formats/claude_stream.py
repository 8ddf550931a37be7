"""Claude Code headless captures: ``claude -p --output-format stream-json`` (what CI jobs keep).

One SDK message per line (Agent SDK ``SDKMessage``): ``system`` ``init`` first (``session_id``,
``cwd``, ``model``, ``claude_code_version``, ``tools``), then ``assistant`` and ``user`` messages
holding the Anthropic API message (``message``: text, ``tool_use``, ``tool_result`` blocks) with
``parent_tool_use_id`` (the Task call a subagent's message belongs to, else null) and, on tool
results, ``tool_use_result``; last a ``result`` (``subtype`` ``success`` or ``error_max_turns`` /
``error_max_budget_usd`` / ``error_during_execution``, ``is_error``, ``num_turns``, ``result``,
``permission_denials``). ``stream_event`` partial messages (``--include-partial-messages``) and
the other ``system`` subtypes (hooks, status, ``compact_boundary``) add nothing the whole messages
do not. anthropics/claude-code-action keeps the same messages as one JSON array in
``$RUNNER_TEMP/claude-execution-output.json``; that is read too.

The messages carry no timestamps, and the prompt itself is not echoed (unless the run replayed
user messages): the task is then the init's, unknown. Blocks are read by the Claude Code
transcript reader's session (``claude_code._Session``): the same tool calls, results, exit codes
and refusals. A subagent's messages (``parent_tool_use_id`` set) are its own trajectory, linked to
the session, as in transcripts. A run stopped by a limit is failed by the agent's own word.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats._common import SHAPE_ERRORS, as_str, shape_error
from pipeline.ingest.formats.claude_code import _MAIN, PROTOCOL_ERRORS, _Session
from pipeline.ingest.identity import Identity
from pipeline.ingest.outcome import exit_status_outcome
from pipeline.ingest.reader import Probe, iter_jsonl, load_json
from pipeline.ingest.report import FileReport
from pipeline.trajectory import Trajectory

_TYPES = {"system", "assistant", "user", "result", "stream_event", "tool_progress", "auth_status", "tool_use_summary",
          "rate_limit_event", "keep_alive", "control_request", "control_response", "prompt_suggestion"}


class ClaudeStreamJson(TrajectoryFormat):
    name = "claude-code-stream-json"
    agent = "claude-code"
    description = ("Claude Code headless runs captured with --output-format stream-json (JSONL), and "
                   "claude-code-action's execution file (the same messages as a JSON array)")
    locations = ("<CI artifact>: claude -p --output-format stream-json --verbose > <file>.jsonl",
                 "$RUNNER_TEMP/claude-execution-output.json (anthropics/claude-code-action)")
    suffixes = (".jsonl", ".json")
    priority = 9
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        if probe.first_char == "[":
            fields = probe.fields  # the array's first message, however long it is
            return (fields.text("type") == "system" and fields.text("subtype") == "init"
                    and fields.kind("session_id") == "string")
        records = probe.records
        # Every line an SDK message (``type``, no rollout ``payload``), most of them of the known types:
        # newer releases add message types, which the reader skips.
        if not records or not all(isinstance(r, dict) and isinstance(r.get("type"), str) and "payload" not in r
                                  for r in records):
            return False
        if sum(r["type"] in _TYPES for r in records) * 2 <= len(records):
            return False
        return any(r.get("type") == "system" and r.get("subtype") == "init" and isinstance(r.get("session_id"), str)
                   for r in records)

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        with path.open("rb") as handle:
            array = handle.read(4096).lstrip()[:1] == b"["
        if array:
            messages = load_json(path, report)
            if messages is None and report.errors:
                return
            if not isinstance(messages, list):
                report.error(f"expected a JSON array of messages, found {type(messages).__name__}")
                return
            numbered: Iterable[tuple[int | None, Any]] = ((None, m) for m in messages)
        else:
            numbered = iter_jsonl(path, report)
        run = _Run(path)
        for line, message in numbered:
            if not isinstance(message, dict):
                report.error(f"expected a JSON object, found {type(message).__name__}", line)
                continue
            try:
                run.add(message)
            except SHAPE_ERRORS as exc:
                report.error(shape_error(f"a {message.get('type')!r} message", exc), line)
        trajectories = run.trajectories()
        if not trajectories and not report.errors:
            report.status = "skipped"
            report.error("Claude Code stream-json capture without messages (the run ended before the model answered)")
        yield from trajectories


class _Run:
    """One headless run: its header from ``init``, one session per agent (main, each subagent)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header: dict[str, Any] = {}
        self.model: str | None = None
        self.sessions: dict[str, _Session] = {}
        self.result: dict[str, Any] | None = None

    def add(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "system" and message.get("subtype") == "init":
            self.header = {"sessionId": as_str(message.get("session_id")) or None,
                           "cwd": as_str(message.get("cwd")) or None,
                           "version": as_str(message.get("claude_code_version")) or None}
            self.model = as_str(message.get("model")) or None
        elif kind in ("assistant", "user"):
            body = message.get("message")
            if not isinstance(body, dict):
                return
            parent = as_str(message.get("parent_tool_use_id"))
            group = f"subagent-{parent}" if parent else _MAIN
            entry = {**self.header, "type": kind, "message": body}
            entry["sessionId"] = entry.get("sessionId") or as_str(message.get("session_id")) or None
            if message.get("tool_use_result") is not None:
                entry["toolUseResult"] = message["tool_use_result"]
            if message.get("isSynthetic") is True or message.get("isReplay") is True:
                entry["isMeta"] = message.get("isSynthetic") is True
            if kind == "assistant" and message.get("error"):
                entry["isApiErrorMessage"] = True
            session = self.sessions.get(group)
            if session is None:
                session = self.sessions[group] = _Session(self.path, group, ClaudeStreamJson.name)
            session.add(entry, kind, as_str(message.get("uuid")) or None, body)
        elif kind == "result":
            self.result = message

    def trajectories(self) -> list[Trajectory]:
        ordered = sorted(self.sessions.values(), key=lambda s: s.group != _MAIN)
        main = self.sessions.get(_MAIN)
        identity = Identity()
        cwd = self.header.get("cwd")
        identity.folder(cwd)
        for session in ordered:
            identity.read(session.builder.steps, cwd)
        built = []
        for session in ordered:
            if not session.builder.steps:
                continue
            if self.model and not session.models and session is main:
                session.models[self.model] = 1
            if session is main and self.result is not None:
                self._ended(session)
            built.append(session.build(identity.repo))
        return built

    def _ended(self, session: _Session) -> None:
        """The run's own verdict: a limit or an error stopped it (``result.subtype``)."""
        result = self.result or {}
        subtype = as_str(result.get("subtype"))
        if subtype and subtype != "success":
            session.builder.outcome = exit_status_outcome(subtype)
            errors = [as_str(e) for e in result.get("errors") or [] if as_str(e)]
            note = f"[run ended: {subtype}] " + "; ".join(errors)
            session.builder.user(note.strip(), meta=True)
