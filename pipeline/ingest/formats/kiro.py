"""Kiro CLI (formerly Amazon Q Developer CLI) conversations saved with ``/save``: one JSON ``ConversationState``.

``{conversation_id, history: [{user, assistant, request_metadata}], ...}`` (aws/amazon-q-developer-cli,
``crates/chat-cli/src/cli/chat/{conversation,message}.rs``). A user turn's ``content`` is one of serde's
externally tagged variants: ``{"Prompt": {"prompt"}}``, ``{"ToolUseResults": {"tool_use_results": [...]}}``,
``{"CancelledToolUses": {"prompt", "tool_use_results"}}`` (some writers flatten the inner object:
``{"Prompt": "..."}``, ``{"ToolUseResults": [...]}``). An assistant turn is ``{"Response": {message_id,
content}}`` or ``{"ToolUse": {message_id, content, tool_uses: [{id, name, orig_name, args}]}}``; a result
``{tool_use_id, content: [{"Text": str} | {"Json": value}], status: "Success" | "Error"}``. Tools:
``execute_bash`` (``{command}``; ``execute_cmd`` on Windows), ``fs_read``, ``fs_write`` (``{command: create |
str_replace | append ..., path, file_text | old_str/new_str}``), ``use_aws``, ``report_issue``.

The live store is SQLite (``data.sqlite3``, a ``conversations`` table keyed by folder): recognised, not read
yet (``pipeline.ingest.lookalikes``).
"""

from __future__ import annotations

import re
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
from pipeline.ingest.reader import Probe, load_json
from pipeline.ingest.report import FileReport
from pipeline.redact import sanitize
from pipeline.trajectory import Trajectory, TrajectoryBuilder

_SHELL_TOOLS = {"execute_bash", "execute_cmd"}
#: Kiro CLI / Q CLI refusing a call (``crates/chat-cli/src/cli/chat/tools/fs_write.rs``, ``fs_read.rs``): a
#: str_replace with no unique match, a path that is not there, arguments that did not parse.
PROTOCOL_ERRORS = re.compile(
    r"\A\s*(?:no occurrences of .{0,200}? were found|\d+ occurrences of old_str were found when only 1 is expected|"
    r"(?:The )?[Pp]ath (?:does not exist|is not a file)|Failed to validate tool parameters|Tool use was cancelled)",
    re.S)
_STATUS = re.compile(r"(?:exit[_ ]?(?:status|code)[\"']?\s*[:=]\s*[\"']?)(-?\d+)", re.I)


class KiroCli(TrajectoryFormat):
    name = "kiro-cli"
    agent = "kiro-cli"
    description = "Kiro CLI / Amazon Q Developer CLI conversations saved with /save (ConversationState JSON)"
    locations = ("<where /save wrote it>.json",)
    suffixes = (".json",)
    priority = 6
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        if probe.first_char != "{" or '"conversation_id"' not in probe.text:
            return False  # the cue first: a scan of a document's keys is for files that may be Kiro's
        fields = probe.fields
        return "conversation_id" in fields and fields.kind("history") == "array"

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        document = load_json(path, report)
        if document is None:
            return
        history = document.get("history") if isinstance(document, dict) else None
        if not isinstance(history, list):
            report.error("expected a ConversationState object with a history list")
            return
        b = TrajectoryBuilder(source_format=self.name, agent=self.agent, source_path=str(path))
        prompts: list[str] = []
        cwd: str | None = None
        for position, turn in enumerate(history):
            if isinstance(turn, dict):
                pair = turn
            elif isinstance(turn, list) and len(turn) == 2:  # older files: [user, assistant] pairs
                pair = {"user": turn[0], "assistant": turn[1]}
            else:
                report.error(f"history entry {position} is neither a turn object nor a [user, assistant] pair")
                continue
            try:
                cwd = _user(b, pair.get("user"), prompts) or cwd
                _assistant(b, pair.get("assistant"))
            except SHAPE_ERRORS as exc:
                report.error(shape_error(f"history entry {position}", exc))
        if not b.steps:
            report.status = "skipped"
            report.error("Kiro CLI conversation without messages")
            return
        b.set(session_id=document.get("conversation_id") if isinstance(document.get("conversation_id"), str) else None,
              cwd=cwd, repo=resolve_repo(b.steps, cwd=sanitize(cwd) if cwd else None))
        b.task = pick_task(prompts)
        yield b.build()


def _variant(value: Any) -> tuple[str | None, Any]:
    """serde's externally tagged enum: ``{"Variant": payload}``."""
    if isinstance(value, dict) and len(value) == 1:
        return next(iter(value.items()))
    return None, value


def _user(b: TrajectoryBuilder, user: Any, prompts: list[str]) -> str | None:
    """The user turn's steps; the working folder its environment context names, if any."""
    if not isinstance(user, dict):
        return None
    stamp = user.get("timestamp")
    kind, payload = _variant(user.get("content"))
    body = payload if isinstance(payload, dict) else {}
    prompt = payload if isinstance(payload, str) else body.get("prompt")
    results = payload if isinstance(payload, list) else body.get("tool_use_results")
    for result in results if isinstance(results, list) else []:
        if isinstance(result, dict):
            _result(b, result, stamp)
    if kind in ("Prompt", "CancelledToolUses") and isinstance(prompt, str) and prompt.strip():
        b.user(prompt, timestamp=stamp)
        prompts.append(prompt)
    env = user.get("env_context") or user.get("user_env_context")
    state = env.get("env_state") if isinstance(env, dict) and isinstance(env.get("env_state"), dict) else env
    where = state.get("current_working_directory") if isinstance(state, dict) else None
    return where if isinstance(where, str) and where else None


def _result(b: TrajectoryBuilder, result: dict[str, Any], stamp: Any) -> None:
    texts = []
    for block in result.get("content") if isinstance(result.get("content"), list) else []:
        _, value = _variant(block)
        texts.append(value if isinstance(value, str) else as_text(value))
    text = "\n".join(t for t in texts if t)
    failed = str(result.get("status") or "").lower() == "error"
    match = _STATUS.search(text[:400])
    exit_code = int(match.group(1)) if match else None
    b.result(call_id=result.get("tool_use_id") if isinstance(result.get("tool_use_id"), str) else None, text=text,
             exit_code=exit_code, is_error=failed or exit_code not in (None, 0), timestamp=stamp)


def _assistant(b: TrajectoryBuilder, assistant: Any) -> None:
    kind, body = _variant(assistant)
    if not isinstance(body, dict):
        return
    if isinstance(body.get("content"), str) and body["content"].strip():
        b.assistant(body["content"])
    if kind != "ToolUse":
        return
    for use in body.get("tool_uses") if isinstance(body.get("tool_uses"), list) else []:
        if not isinstance(use, dict):
            continue
        name = use.get("name") if isinstance(use.get("name"), str) and use["name"] else "tool"
        args = use.get("args") if isinstance(use.get("args"), dict) else {}
        command = args.get("command") if name in _SHELL_TOOLS and isinstance(args.get("command"), str) else None
        paths = paths_in(args) + [op["path"] for op in args.get("operations") or []  # fs_read's batched reads
                                  if isinstance(op, dict) and isinstance(op.get("path"), str)]
        b.call(name, call_id=use.get("id") if isinstance(use.get("id"), str) else None,
               text=command or describe(name, args), command=command, paths=paths, diff=_diff(name, args, paths))


def _diff(name: str, args: dict[str, Any], paths: list[str]) -> str | None:
    if name != "fs_write":
        return None
    path = paths[0] if paths else "file"
    if args.get("command") == "str_replace" and isinstance(args.get("old_str"), str):
        return unified(path, args["old_str"], str(args.get("new_str") or ""))
    if args.get("command") in ("create", "append") and isinstance(args.get("file_text") or args.get("new_str"), str):
        return unified(path, "", str(args.get("file_text") or args.get("new_str")))
    return None
