"""OpenHands V1 (software-agent-sdk) conversations: typed events with a ``kind``.

On disk: ``~/.openhands/conversations/<hex-id>/`` (SDK scripts: ``workspace/conversations/`` or the
``persistence_dir`` they pass) holding ``base_state.json`` (the conversation ``id``, ``agent.llm.model``,
``workspace.working_dir``, ``execution_status``) and ``events/event-<00000>[-<uuid>].json``, one event
per file; some tools keep the events as one JSONL file instead. Events are
``{id, timestamp, source: user|agent|environment, kind, ...}``:

* ``MessageEvent{llm_message{role, content[TextContent]}}``: the person's prompt or the agent's answer;
* ``ActionEvent{thought[], action{kind: ...Action, ...}, tool_name, tool_call_id, tool_call{arguments}}``:
  a tool call (``finish`` and ``think`` are conversation, not calls);
* ``ObservationEvent{observation{kind, content[], is_error, exit_code, metadata{exit_code,
  working_dir}}, tool_call_id}``, ``UserRejectObservation{rejection_reason}`` and
  ``AgentErrorEvent{error}``: the call's result;
* ``ConversationErrorEvent{code, detail}``: the run failed; ``SystemPromptEvent``, ``TokenEvent``,
  ``ConversationStateUpdateEvent``, ``Condensation*``, ``PauseEvent``: bookkeeping, no steps.

``base_state.json`` is the conversation's entry: it reads its ``events/`` folder; without one (an
``events/`` folder copied on its own) the first event file reads the folder. The other event files
are reported skipped (they are read with their conversation). ``execution_status`` ``error`` or
``stuck`` fails the run; a ``finish`` call or ``finished`` leaves the verdict to the evidence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from pipeline import voice
from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats._common import (
    as_dict,
    as_str,
    describe,
    loads_object,
    paths_in,
    pick_task,
    unified,
)
from pipeline.ingest.formats.openhands import PROTOCOL_ERRORS as V0_PROTOCOL_ERRORS
from pipeline.ingest.identity import resolve_repo
from pipeline.ingest.reader import MAX_JSON_BYTES, Probe, iter_jsonl, load_json
from pipeline.ingest.report import FileReport
from pipeline.redact import sanitize
from pipeline.trajectory import Outcome, Trajectory, TrajectoryBuilder

KINDS = frozenset({"MessageEvent", "ActionEvent", "ObservationEvent", "UserRejectObservation", "AgentErrorEvent",
                   "SystemPromptEvent", "TokenEvent", "ConversationStateUpdateEvent", "ConversationErrorEvent",
                   "Condensation", "CondensationRequest", "CondensationSummaryEvent", "PauseEvent",
                   "ConversationIterationLimitEvent", "UserActionEvent", "LLMCompletionLogEvent"})
_CONVERSATION_TOOLS = frozenset({"finish", "think"})
_SHELLS = frozenset({"terminal", "execute_bash", "bash", "BashTool", "TerminalTool"})
_FAILED_STATUS = frozenset({"error", "stuck"})
#: The SDK refusing a call (agent.py ``_get_action_event``, an AgentErrorEvent): "Tool 'x' not found.
#: Available: [...]", "Error validating tool 'x': ... Parameters provided: [...]"; and V0's file-editor
#: refusals, which its file_editor tool still answers with.
PROTOCOL_ERRORS = re.compile(rf"\A\s*(?:Tool '[^'\n]+' not found\. Available:|Error validating tool '[^'\n]+':)|"
                             rf"(?:{V0_PROTOCOL_ERRORS.pattern})")
#: Messages the SDK itself sends as the user (agent.py): the model's output was blocked by a content filter.
#: First keys of a serialized event or conversation state (pydantic writes fields in class order).
_FIRST_KEYS = frozenset({"id", "kind", "timestamp", "source", "agent", "workspace", "persistence_dir"})
_EVENT_FILE = re.compile(r"^event-(\d+)(?:-[\w-]+)?\.json$")
#: Events read at most from one conversation folder (a bound, as every reader has).
_MAX_EVENT_FILES = 100_000
_SKIP_EVENT = ("an OpenHands V1 event file: read with its conversation, from the base_state.json "
               "of the folder above events/")


class OpenHandsV1(TrajectoryFormat):
    name = "openhands-v1"
    agent = "openhands"
    description = ("OpenHands V1 / software-agent-sdk conversations: base_state.json + events/event-*.json, "
                   "or the events as JSONL")
    locations = ("~/.openhands/conversations/<id>/base_state.json",
                 "<workspace>/conversations/<id>/base_state.json (SDK persistence_dir)")
    suffixes = (".json", ".jsonl")
    priority = 4
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        if probe.first_char == "{":
            if probe.records and len(probe.records) > 1:  # JSONL of events
                return _events_only(probe.records)
            if probe.first_key not in _FIRST_KEYS:
                return False  # the cheap cue first: only then the fields, wherever they fall
            fields = probe.fields
            if fields.text("kind") in KINDS and fields.text("source") in ("user", "agent", "environment"):
                return True  # one event file
            return fields.kind("agent") == "object" and ("execution_status" in fields or "workspace" in fields) \
                and (probe.path.parent / "events").is_dir()
        if probe.first_char == "[" and probe.first_key in ("id", "kind", "timestamp", "source"):
            fields = probe.fields
            return fields.text("kind") in KINDS and fields.text("source") in ("user", "agent", "environment")
        return False

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        probe = Probe.read(path)
        state: dict[str, Any] = {}
        events: Iterable[tuple[int | None, Any]]
        if probe.first_char == "[":
            document = load_json(path, report)
            if not isinstance(document, list):
                if document is not None:
                    report.error(f"expected a JSON list of events, found {type(document).__name__}")
                return
            events = ((None, e) for e in document)
        elif probe.records and len(probe.records) > 1:
            events = iter_jsonl(path, report)
        else:
            document = load_json(path, report)
            if not isinstance(document, dict):
                if document is not None:
                    report.error(f"expected a JSON object, found {type(document).__name__}")
                return
            if as_str(document.get("kind")) in KINDS:
                if (path.parent.parent / "base_state.json").is_file() or not _first_event(path):
                    report.status = "skipped"
                    report.error(_SKIP_EVENT)
                    return
                events = _folder_events(path.parent, report)  # no base_state.json: the first event reads them all
            else:
                state = document
                events = _folder_events(path.parent / "events", report)
        conversation = _Conversation(path, state)
        for line, event in events:
            if not isinstance(event, dict):
                report.error(f"expected an event object, found {type(event).__name__}", line)
                continue
            try:
                conversation.add(event)
            except (TypeError, ValueError, AttributeError, KeyError) as exc:
                report.error(f"a {event.get('kind')!r} event: {exc}", line)
        trajectory = conversation.build()
        if trajectory is not None:
            yield trajectory
        elif not report.errors:
            report.status = "skipped"
            report.error("OpenHands V1 conversation without messages or actions")


def _events_only(records: list[Any]) -> bool:
    return all(isinstance(r, dict) and as_str(r.get("kind")) in KINDS for r in records) and any(
        as_str(r.get("source")) in ("user", "agent", "environment") for r in records)


def _first_event(path: Path) -> bool:
    """``path`` is the lowest-numbered ``event-<n>*.json`` of its folder."""
    found = _EVENT_FILE.match(path.name)
    if found is None:
        return False
    try:
        numbers = [int(m.group(1)) for p in path.parent.iterdir() if (m := _EVENT_FILE.match(p.name))]
    except OSError:
        return False
    return int(found.group(1)) == min(numbers)


def _folder_events(folder: Path, report: FileReport) -> Iterator[tuple[int | None, Any]]:
    """The events of ``events/`` in index order: ``event-<n>*.json`` files, or JSONL files of events."""
    try:
        files = sorted(p for p in folder.iterdir() if p.is_file())[:_MAX_EVENT_FILES]
    except OSError as exc:
        report.error(f"cannot list {folder.name}/: {exc.strerror or exc}")
        return
    single = sorted(((int(m.group(1)), p) for p in files if (m := _EVENT_FILE.match(p.name))), key=lambda x: x[0])
    for _, file in single:
        try:
            if file.stat().st_size > MAX_JSON_BYTES:
                report.error(f"{file.name} is larger than {MAX_JSON_BYTES} bytes; skipped")
                continue
            yield None, orjson.loads(file.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            report.error(f"{file.name}: {exc}")
    for file in files:
        if file.suffix == ".jsonl":
            yield from iter_jsonl(file, report)


class _Conversation:
    def __init__(self, path: Path, state: dict[str, Any]) -> None:
        self.b = TrajectoryBuilder(source_format=OpenHandsV1.name, agent=OpenHandsV1.agent, source_path=str(path))
        self.state = state
        self.prompts: list[str] = []
        self.calls: set[str] = set()
        self.by_action: dict[str, str] = {}  # ActionEvent id -> its tool_call_id (observations name either)
        self.skipped: set[str] = set()  # finish / think calls: conversation, their observations too
        self.cwd: str | None = None
        self.error: str | None = None
        self.status: str | None = None

    def add(self, event: dict[str, Any]) -> None:
        kind = as_str(event.get("kind"))
        stamp = event.get("timestamp")
        if kind == "MessageEvent":
            message = as_dict(event.get("llm_message"))
            text = _text(message.get("content"))
            if not text.strip():
                return
            if as_str(event.get("source")) == "user" or message.get("role") == "user":
                harness = voice.is_harness(text)
                self.b.user(text, timestamp=stamp, meta=harness)
                if not harness:
                    self.prompts.append(text)
            else:
                self.b.assistant(text, timestamp=stamp)
        elif kind == "ActionEvent":
            self._action(event, stamp)
        elif kind in ("ObservationEvent", "UserRejectObservation", "AgentErrorEvent"):
            self._observation(kind, event, stamp)
        elif kind == "ConversationErrorEvent":
            detail = as_str(event.get("detail")) or as_str(event.get("code")) or "conversation error"
            self.error = self.error or detail
            self.b.user(f"[conversation error] {detail}", timestamp=stamp, meta=True)
        elif kind == "ConversationStateUpdateEvent" and event.get("key") == "execution_status":
            self.status = as_str(event.get("value")) or self.status

    def _action(self, event: dict[str, Any], stamp: Any) -> None:
        thought = _text(event.get("thought"))
        if thought.strip():
            self.b.assistant(thought, timestamp=stamp)
        name = as_str(event.get("tool_name")) or as_str(as_dict(event.get("tool_call")).get("name")) or "tool"
        call_id = as_str(event.get("tool_call_id")) or as_str(event.get("id")) or None
        action = as_dict(event.get("action"))
        args = {k: v for k, v in action.items() if k != "kind"} or loads_object(
            as_dict(event.get("tool_call")).get("arguments")) or {}
        if name in _CONVERSATION_TOOLS:
            if call_id:
                self.skipped.add(call_id)
                self.by_action[as_str(event.get("id"))] = call_id
            message = as_str(args.get("message"))
            if name == "finish" and message.strip():
                self.b.assistant(message, timestamp=stamp)
            return
        command = as_str(args.get("command")) if name in _SHELLS or as_str(action.get("kind")).startswith(
            ("Terminal", "ExecuteBash", "Bash")) else ""
        paths = paths_in(args)
        self.b.call(name, call_id=call_id, text=command or describe(name, args), command=command or None,
                    paths=paths, diff=_diff(args, paths), timestamp=stamp)
        if call_id:
            self.calls.add(call_id)
            if as_str(event.get("id")):
                self.by_action[as_str(event.get("id"))] = call_id

    def _observation(self, kind: str, event: dict[str, Any], stamp: Any) -> None:
        call_id = as_str(event.get("tool_call_id")) or self.by_action.get(as_str(event.get("action_id"))) or None
        if call_id in self.skipped:
            return
        if call_id is not None and call_id not in self.calls:
            call_id = None  # answers a call not in the file: pairs with the latest open one, if any
        if kind == "UserRejectObservation":
            reason = as_str(event.get("rejection_reason")) or "rejected"
            self.b.result(call_id=call_id, text=f"Action rejected: {reason}", is_error=True, timestamp=stamp)
            return
        if kind == "AgentErrorEvent":
            self.b.result(call_id=call_id, text=as_str(event.get("error")), is_error=True, timestamp=stamp)
            return
        observation = as_dict(event.get("observation"))
        metadata = as_dict(observation.get("metadata"))
        code = observation.get("exit_code", metadata.get("exit_code"))
        exit_code = code if isinstance(code, int) and not isinstance(code, bool) and code >= 0 else None
        self.cwd = self.cwd or as_str(metadata.get("working_dir")) or None
        failed = observation.get("is_error")
        text = _text(observation.get("content")) or as_str(observation.get("output"))
        self.b.result(call_id=call_id, text=text, exit_code=exit_code,
                      is_error=failed if isinstance(failed, bool) and (failed or exit_code is None) else None,
                      timestamp=stamp)

    def build(self) -> Trajectory | None:
        b = self.b
        if not b.steps:
            return None
        state = self.state
        agent = as_dict(state.get("agent"))
        cwd = as_str(as_dict(state.get("workspace")).get("working_dir")) or self.cwd
        b.set(session_id=as_str(state.get("id")) or None, model=as_str(as_dict(agent.get("llm")).get("model")) or None,
              cwd=cwd or None, repo=resolve_repo(b.steps, cwd=sanitize(cwd) if cwd else None))
        status = as_str(state.get("execution_status")) or self.status or ""
        if self.error is not None or status.lower() in _FAILED_STATUS:
            why = f"execution status {status}" if status.lower() in _FAILED_STATUS else f"error: {self.error}"
            b.outcome = Outcome(status="failed", source="heuristic", evidence=f"the conversation ended on an {why}"[:300])
        b.task = pick_task(self.prompts)
        return b.build()


def _text(content: Any) -> str:
    """Text of TextContent parts (``[{type: text, text}]``), a string, or None."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(as_str(p.get("text")) if isinstance(p, dict) else as_str(p) for p in content).strip()
    return ""


def _diff(args: dict[str, Any], paths: list[str]) -> str | None:
    path = paths[0] if paths else "file"
    command = as_str(args.get("command"))
    if command == "str_replace" and isinstance(args.get("old_str"), str):
        return unified(path, args["old_str"], as_str(args.get("new_str")))
    if command == "create" and isinstance(args.get("file_text"), str):
        return unified(path, "", args["file_text"])
    return None
