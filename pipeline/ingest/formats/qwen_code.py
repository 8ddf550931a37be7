"""Qwen Code chat recordings: ``~/.qwen/projects/<sanitized-cwd>/chats/<sessionId>.jsonl``.

One ``ChatRecord`` per line (``packages/core/src/services/chatRecordingService.ts``): ``{uuid,
parentUuid, sessionId, timestamp, type: user|assistant|tool_result|system, subtype?, cwd, version,
gitBranch, message?: {role, parts[]}, model?, toolCallResult?, systemPayload?}``. ``message`` is
the Gemini API's ``Content`` the CLI sent or got: user text parts, model text / ``thought`` /
``functionCall{id, name, args}`` parts, and a ``tool_result`` record's ``functionResponse{id, name,
response{output|error}}`` with the CLI's own ``toolCallResult{callId, status, resultDisplay,
errorType}`` beside it. Qwen Code is a fork of the Gemini CLI and keeps its tools
(``run_shell_command``, ``edit``, ``write_file`` ...), so their commands, diffs and refusals read
the same way (gemini_cli.py).

Records chain through ``parentUuid``; each new record hangs under the previous one, except after a
rewind, when the conversation goes on from an earlier record: the branch read is the chain from
the last conversation record back to the root, and the abandoned records are left out. Title and
source anchors re-written near the end of the file hang under the tail without being it, and
``system`` records (telemetry, compression checkpoints, slash commands) carry no steps. A
subagent's records (``isSidechain``, ``agentId``) have their own chain; they are read as sidechain
steps, in file order.

The real files seen (an anonymised live session of 0.15.0, its structure verbatim: user,
ui_telemetry and assistant records, functionCall batches, success and error tool_result records)
are quoted in tests/fixtures/qwen_code/SOURCE.md.
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
    typed_part,
)
from pipeline.ingest.formats.gemini_cli import EXIT_CODE, PROTOCOL_ERRORS, SHELL_TOOLS, edit_diff
from pipeline.ingest.identity import resolve_repo
from pipeline.ingest.reader import Probe, iter_jsonl
from pipeline.ingest.report import FileReport
from pipeline.redact import sanitize
from pipeline.trajectory import Trajectory, TrajectoryBuilder
from pipeline.trajectory.builder import parse_time

_CONVERSATION = {"user", "assistant", "tool_result"}
_TYPES = _CONVERSATION | {"system"}
#: Qwen Code's ``errorType`` for a call its harness refused (the model misused the tool).
_REFUSALS = {"invalid_tool_params", "edit_no_occurrence_found", "edit_expected_occurrence_mismatch",
             "edit_no_change", "file_not_found", "tool_not_registered", "path_not_in_workspace"}
_HOOK_CONTEXT = re.compile(r"\s*<qwen:user-prompt-submit-context>")
#: The ``provenance`` of a user record a person typed (a closed set: the CLI writes others for its goal runtime,
#: notifications and tool results, and may add more); releases before 0.24 write none.
_PERSON = {None, "real_user"}


def _is_record(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("uuid"), str) and \
        isinstance(value.get("sessionId"), str) and isinstance(value.get("type"), str) and value["type"] in _TYPES


class QwenCode(TrajectoryFormat):
    name = "qwen-code"
    agent = "qwen-code"
    description = "Qwen Code chat recordings (ChatRecord JSONL: Gemini Content parts chained by parentUuid)"
    locations = ("~/.qwen/projects/*/chats/*.jsonl", "~/.qwen/tmp/*/chats/*.jsonl")
    suffixes = (".jsonl",)
    priority = 8
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        records = [r for r in probe.records if _is_record(r)]
        if not records or len(records) < len([r for r in probe.records if isinstance(r, dict)]) / 2:
            return False
        # Claude Code's lines share uuid/sessionId/type; Qwen's message is a Gemini Content (parts).
        return any(isinstance(r.get("message"), dict) and isinstance(r["message"].get("parts"), list) or
                   "systemPayload" in r or "toolCallResult" in r for r in records)

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        records: list[tuple[int, dict[str, Any]]] = []
        for line, record in iter_jsonl(path, report):
            if _is_record(record):
                records.append((line, record))
            elif isinstance(record, dict):
                report.error("not a Qwen Code chat record (uuid, sessionId, type)", line)
            else:
                report.error(f"expected a JSON object, found {type(record).__name__}", line)
        trajectory = _build(path, _branch(records, report), report)
        if trajectory is not None:
            yield trajectory
        elif not report.errors:
            report.status = "skipped"
            report.error("Qwen Code session without messages")


def _branch(records: list[tuple[int, dict[str, Any]]], report: FileReport) -> list[tuple[int, dict[str, Any]]]:
    """The records of the branch the session ended on (plus every subagent record), in file order.

    A parent the file lacks (a line that did not parse) is taken to be the record written just before
    its child -- the recorder hangs every record under the previous one -- so one damaged line costs
    that line, not the branch."""
    main = [r for _, r in records if not r.get("isSidechain")]
    position = {r["uuid"]: index for index, r in enumerate(main)}
    tail = next((index for index in range(len(main) - 1, -1, -1) if main[index]["type"] in _CONVERSATION), None)
    if tail is None:
        return records
    kept: set[str] = set()
    index: int | None = tail
    while index is not None and main[index]["uuid"] not in kept:
        node = main[index]
        kept.add(node["uuid"])
        parent = node.get("parentUuid")
        if parent is None:
            break
        index = position.get(parent)
        if index is None:
            report.error(f"a record's parentUuid {parent!r} is not in the file; went on from the record before it")
            index = position[node["uuid"]] - 1 if position[node["uuid"]] > 0 else None
    return [(line, r) for line, r in records if r.get("isSidechain") or r["uuid"] in kept]


def _build(path: Path, records: list[tuple[int, dict[str, Any]]], report: FileReport) -> Trajectory | None:
    b = TrajectoryBuilder(source_format=QwenCode.name, agent=QwenCode.agent, source_path=str(path))
    models: Counter[str] = Counter()
    prompts: list[str] = []
    first: dict[str, Any] = {}
    last: dict[str, Any] = {}
    for line, record in records:
        if not record.get("isSidechain"):
            first = first or record
            last = record
        try:
            _record(b, record, models, prompts)
        except SHAPE_ERRORS as exc:
            report.error(shape_error(f"a {record.get('type')!r} record", exc), line)
    if not b.steps:
        return None
    cwd = first.get("cwd") if isinstance(first.get("cwd"), str) else None
    b.set(session_id=first.get("sessionId"), agent_version=first.get("version"), cwd=cwd,
          git_branch=first.get("gitBranch") if isinstance(first.get("gitBranch"), str) else None,
          model=models.most_common(1)[0][0] if models else None,
          repo=resolve_repo(b.steps, cwd=sanitize(cwd) if cwd else None),  # the redacted cwd
          started_at=parse_time(first.get("timestamp")), ended_at=parse_time(last.get("timestamp")))
    b.task = pick_task(prompts)
    return b.build()


def _parts(record: dict[str, Any]) -> list[dict[str, Any]]:
    message = record.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _text(parts: list[dict[str, Any]]) -> str:
    texts = [p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")]
    return "\n".join(t for t in texts if t.strip())


def _prompt(record: dict[str, Any], parts: list[dict[str, Any]]) -> str:
    """What the person asked: a hook's added context (skillmill's own skills among them) is not part of it.

    Qwen Code sends a UserPromptSubmit hook's ``additionalContext`` as a separate part tagged
    ``<qwen:user-prompt-submit-context>``, and records the prompt before it in ``systemPayload.displayText``
    beside ``hookContext`` (docs/users/features/hooks.md)."""
    payload = record.get("systemPayload")
    if isinstance(payload, dict) and isinstance(payload.get("hookContext"), str) and \
            isinstance(payload.get("displayText"), str):
        return payload["displayText"].strip()
    return typed_part(_text([p for p in parts
                             if not (isinstance(p.get("text"), str) and _HOOK_CONTEXT.match(p["text"]))]))


def _record(b: TrajectoryBuilder, record: dict[str, Any], models: Counter[str], prompts: list[str]) -> None:
    kind, stamp, side = record["type"], record.get("timestamp"), bool(record.get("isSidechain"))
    parts = _parts(record)
    if kind == "user" or (kind == "system" and record.get("subtype") == "mid_turn_user_message"):
        text = _prompt(record, parts)
        if text:
            person = record.get("provenance") in _PERSON and not side
            b.user(text, timestamp=stamp, meta=not person, sidechain=side)
            if person:
                prompts.append(text)
        for part in parts:  # a result sent back in a user turn (older recordings)
            if isinstance(part.get("functionResponse"), dict):
                _result(b, part["functionResponse"], {}, stamp, side)
    elif kind == "assistant":
        if isinstance(record.get("model"), str) and record["model"]:
            models[record["model"]] += 1
        text = _text(parts)
        if text:
            b.assistant(text, timestamp=stamp, sidechain=side)
        for position, part in enumerate(parts):
            if isinstance(part.get("functionCall"), dict):
                _call(b, part["functionCall"], f"{record['uuid']}:{position}", stamp, side)
    elif kind == "tool_result":
        info = record.get("toolCallResult") if isinstance(record.get("toolCallResult"), dict) else {}
        responses = [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)]
        for response in responses or [{"id": info.get("callId")}]:
            _result(b, response, info, stamp, side)


def _call(b: TrajectoryBuilder, call: dict[str, Any], fallback: str, stamp: Any, side: bool) -> None:
    name = call.get("name") if isinstance(call.get("name"), str) and call["name"] else "tool"
    args = call.get("args") if isinstance(call.get("args"), dict) else {}
    call_id = call.get("id") if isinstance(call.get("id"), str) and call["id"] else fallback
    command = args.get("command") if name in SHELL_TOOLS and isinstance(args.get("command"), str) else None
    paths = paths_in(args)
    b.call(name, call_id=call_id, text=command or describe(name, args), command=command, paths=paths,
           diff=edit_diff(name, args, None, paths), timestamp=stamp, sidechain=side)


def _result(b: TrajectoryBuilder, response: dict[str, Any], info: dict[str, Any], stamp: Any, side: bool) -> None:
    call_id = response.get("id") if isinstance(response.get("id"), str) else info.get("callId")
    body = response.get("response")
    failed = isinstance(body, dict) and "error" in body
    if isinstance(body, dict):
        text = as_text(body["error"] if failed else body.get("output", body))
    else:
        text = as_text(body) if body is not None else ""
    display = info.get("resultDisplay")
    if not text.strip() and display is not None:
        text = display if isinstance(display, str) else as_text(display)
    status = info.get("status")
    if status == "cancelled" and not text.strip():
        text = "cancelled"
    refused = info.get("errorType") in _REFUSALS
    exit_code = None
    if response.get("name") in SHELL_TOOLS or (info and "Exit Code:" in text[-400:]):
        match = EXIT_CODE.search(text)
        exit_code = int(match.group(1)) if match else None
    is_error = failed or status in ("error", "cancelled") or exit_code not in (None, 0) or refused
    index = b.result(call_id=call_id if isinstance(call_id, str) else None, text=text, exit_code=exit_code,
                     is_error=is_error, timestamp=stamp, sidechain=side)
    if refused:  # the CLI says so itself; PROTOCOL_ERRORS reads the same from texts of older versions
        b.steps[index].protocol_error = True
    if isinstance(display, dict) and isinstance(display.get("fileDiff"), str) and isinstance(call_id, str):
        b.amend_result(call_id, diff=display["fileDiff"])
