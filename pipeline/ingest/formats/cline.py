"""Cline task folders, and those of its forks Roo Code and Kilo Code.

A task is a folder ``<globalStorage>/<extension id>/tasks/<task id>/`` (the VS Code extension ids
``saoudrizwan.claude-dev``, ``rooveterinaryinc.roo-cline``, ``kilocode.kilo-code``; the Cline CLI
keeps ``~/.cline/data/tasks/``) holding:

* ``api_conversation_history.json`` -- the model transcript, Anthropic-style messages
  (``{role, content}``; newer builds add ``ts`` and ``modelInfo``; Roo's newest wrap them as
  ``{"version": 2, "messages": [...]}`` with AI-SDK parts). It is the entry point: one trajectory
  per folder, read from it;
* ``ui_messages.json`` -- the UI's events (``{ts, type: say|ask, say|ask, text,
  conversationHistoryIndex}``): the only timestamps of older builds, joined to the transcript by
  ``conversationHistoryIndex`` (an event with index ``k`` happened while ``api[k + 1]`` was made),
  and the exit code of a command where newer builds record one;
* ``task_metadata.json`` -- the model per plan/act switch and, in newer builds, the version;
* ``context_history.json`` -- context-window truncations (what the model no longer saw).

The files beside the transcript are read through it and reported skipped on their own. Tool uses
and their results are read by ``cline_tools``; the first user message holds the task in
``<task>`` (Roo: ``<user_message>``) and ``<environment_details>`` with the working directory.
Files are rewritten whole as the task goes on, so a changed one is read again whole.
See §1 of ../shared/docs/trajectory-formats-newer.md.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats._common import (
    SHAPE_ERRORS,
    as_dict,
    as_list,
    as_str,
    expect,
    loads_object,
    pick_task,
    shape_error,
)
from pipeline.ingest.formats.cline_tools import (
    KNOWN_TOOLS,
    RESULT_HEADER,
    call_fields,
    human_words,
    result_status,
    scan,
)
from pipeline.ingest.identity import resolve_repo
from pipeline.ingest.reader import Probe, load_json
from pipeline.ingest.report import FileReport
from pipeline.trajectory import Trajectory, TrajectoryBuilder
from pipeline.trajectory.builder import parse_time

#: VS Code extension id (the globalStorage folder) -> the agent.
EXTENSIONS = {"saoudrizwan.claude-dev": "cline", "rooveterinaryinc.roo-cline": "roo-code",
              "kilocode.kilo-code": "kilo-code"}
_EDITORS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")


def _locations() -> tuple[str, ...]:
    tail = "tasks/*/api_conversation_history.json"
    found = []
    for extension in EXTENSIONS:
        found += [f"~/.config/{editor}/User/globalStorage/{extension}/{tail}" for editor in _EDITORS]
        found += [f"~/Library/Application Support/{editor}/User/globalStorage/{extension}/{tail}"
                  for editor in _EDITORS]
        found += [f"~/.vscode-server/data/User/globalStorage/{extension}/{tail}",
                  f"${{APPDATA}}/Code/User/globalStorage/{extension}/{tail} (Windows)"]
    return ("~/.cline/data/tasks/*/api_conversation_history.json (Cline CLI)", *found)


_API_START = re.compile(r'\A\s*\[\s*\{\s*"(?:role|content|ts|id)"\s*:')
_ROO_V2_START = re.compile(r'\A\s*\{\s*"version"\s*:\s*2\s*,\s*"messages"\s*:\s*\[\s*\{')
_FIRST_USER = re.compile(r'"role"\s*:\s*"user"')
#: The first prompt as these agents wrap it (Cline ``<task>``, Roo ``<user_message>``), or the
#: environment block every prompt carries.
_PROMPT_CUE = re.compile(r'"(?:text|content)"\s*:\s*"\s*(?:<task>|<user_message>)\\n|<environment_details>\\n#')
_UI_START = re.compile(r'\A\s*\[\s*\{\s*"ts"\s*:\s*\d{10,}\s*,\s*"type"\s*:\s*"(?:say|ask)"\s*,\s*"(?:say|ask)"\s*:')
_CONTEXT_START = re.compile(r'\A\s*\[\s*\[\s*\d+\s*,\s*\[\s*\d+\s*,\s*\[\s*\[\s*\d+\s*,\s*\[\s*\[\s*\d{10,}\s*,\s*"')
_METADATA_KEYS = ("files_in_context", "model_usage", "environment_history")
_HISTORY_KEYS = ("id", "ts", "task", "tokensIn", "tokensOut")
_SKIPPED = {
    "ui": "part of a Cline task (its UI event log; read through api_conversation_history.json beside it)",
    "metadata": "part of a Cline task (its metadata: model, files in context; read through "
                "api_conversation_history.json beside it)",
    "context": "part of a Cline task (its context-window truncations; read through api_conversation_history.json "
               "beside it)",
    "history": "Cline task index (taskHistory.json / history_item.json): a summary per task, not a trajectory; "
               "each task is read from its folder",
}
#: A result block that is the harness speaking again, not more of the tool's output.
_HARNESS = re.compile(r"\A\s*\[(?:TASK RESUMPTION\]|ERROR\] You did not use a tool)")
_CWD = re.compile(r"# Current (?:Working|Workspace) Directory \((?P<cwd>[^)\n]+)\) Files")
_RESUMED_CWD = re.compile(r"The current working directory is now '(?P<cwd>[^'\n]+)'")
#: The harness refusing a tool use (responses.ts of Cline; Roo's apply_diff): the agent misused its
#: tools, the project did not fail. A denial by the person, a failed command or MCP call are not.
PROTOCOL_ERRORS = re.compile(
    r"\A\s*(?:\[ERROR\] )?(?:Missing value for required parameter|Invalid JSON argument used with|"
    r"Tool \[[\w-]+\] was not executed because a tool has already been used|This tool cannot be used in PLAN MODE|"
    r"Access to .{1,300}? is blocked by the \.\w+ignore file|"
    r"The tool execution failed with the following error:\s*<error>\s*(?:The SEARCH block|File processing incomplete|"
    r"Missing value for required parameter)|"
    r"<error_details>\s*(?:No sufficiently similar match found|Search and replace content are identical)|"
    r"Unable to apply diff|\w+ tried to use \w+ without value for required parameter)")


def file_kind(probe: Probe) -> str | None:
    """api | ui | metadata | context | history, from the content of a task folder's file."""
    text = probe.text
    if probe.first_char == "[":
        if _UI_START.match(text):
            return "ui"
        if _CONTEXT_START.match(text):
            return "context"
        if _API_START.match(text) and _FIRST_USER.search(text[:8192]) and _PROMPT_CUE.search(text):
            return "api"
        if probe.first_key == "id" and all(k in probe.fields for k in _HISTORY_KEYS):
            return "history"
        return None
    if probe.first_char != "{":
        return None
    if _ROO_V2_START.match(text) and _FIRST_USER.search(text[:8192]) and _PROMPT_CUE.search(text):
        return "api"
    if probe.first_key in _METADATA_KEYS and probe.fields.kind(probe.first_key) == "array":
        return "metadata"
    if probe.first_key == "id" and all(k in probe.fields for k in _HISTORY_KEYS):
        return "history"
    return None


class ClineTasks(TrajectoryFormat):
    name = "cline"
    agent = "cline"
    description = ("Cline / Roo Code / Kilo Code task folders (api_conversation_history.json, read with "
                   "ui_messages.json and task_metadata.json beside it)")
    locations = _locations()
    suffixes = (".json",)
    priority = 6
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        return file_kind(probe) is not None

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        kind = file_kind(Probe.read(path))
        if kind in _SKIPPED:
            report.status = "skipped"
            report.error(_SKIPPED[kind])
            return
        data = load_json(path, report)
        if data is None:
            return
        if isinstance(data, dict) and isinstance(data.get("messages"), list):
            data = data["messages"]  # Roo's versioned envelope
        if not isinstance(data, list):
            report.error(f"expected a JSON list of messages, found {type(data).__name__}")
            return
        trajectory = _Task(path, data, report).read()
        if trajectory is not None:
            yield trajectory


@dataclass
class _Result:
    """The blocks answering one XML tool use, from its ``[tool] Result:`` header on."""

    tool: str | None
    call_id: str
    texts: list[str] = field(default_factory=list)


class _Task:
    def __init__(self, path: Path, messages: list[Any], report: FileReport) -> None:
        self.path = path
        self.messages = messages
        self.report = report
        self.agent = next((EXTENSIONS[p] for p in path.parts if p in EXTENSIONS), ClineTasks.agent)
        self.b = TrajectoryBuilder(source_format=ClineTasks.name, agent=self.agent, source_path=str(path))
        self.ui = _UiFacts.read(path.parent / "ui_messages.json", report)
        self.metadata = self._sibling("task_metadata.json")
        self.known = KNOWN_TOOLS | _headers(messages)
        self.pending: list[tuple[str, str]] = []  # unanswered calls of the last assistant message: (tool, id)
        self.tools: dict[str, str] = {}  # native call id -> tool name
        self.prompts: list[str] = []
        self.models: Counter[str] = Counter()
        self.cwd: str | None = None

    def _sibling(self, name: str) -> dict[str, Any]:
        path = self.path.parent / name
        if not path.is_file():
            return {}
        sub = FileReport(path=str(path))
        value = load_json(path, sub)
        for error in sub.errors:
            self.report.error(f"{name} beside it: {error.reason}")
        return value if isinstance(value, dict) else {}

    def read(self) -> Trajectory | None:
        for index, message in enumerate(self.messages):
            try:
                self._message(index, message)
            except SHAPE_ERRORS as exc:
                self.report.error(shape_error(f"message {index}", exc))
        if not self.b.steps:
            if not self.report.errors:
                self.report.status = "skipped"
                self.report.error("Cline task without messages")
            return None
        return self._build()

    # -- messages ----------------------------------------------------------------------------------
    def _message(self, index: int, message: Any) -> None:
        if not isinstance(message, dict):
            raise TypeError(f"expected an object, found {type(message).__name__}")
        stamp = message.get("ts") if isinstance(message.get("ts"), int | float) else self.ui.stamps.get(index - 1)
        info = as_dict(message.get("modelInfo"))
        if isinstance(info.get("modelId"), str) and info["modelId"]:
            self.models[info["modelId"]] += 1
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else expect(message, "content", list)
        blocks = [b for b in blocks or [] if isinstance(b, dict)]
        role = as_str(message.get("role")).replace("\ufffd", "")  # bytes that were not UTF-8 lose no message
        if message.get("isSummary") or message.get("isTruncationMarker"):
            text = "\n".join(as_str(b.get("text")) for b in blocks if b.get("type") == "text")
            self.b.user(f"[context condensed] {text}".strip(), timestamp=stamp, meta=True)
        elif role == "assistant":
            self._assistant(index, blocks, stamp)
        elif role == "user":
            self._user(index, blocks, stamp)
        elif role == "tool":  # Roo v2: the results of the previous assistant message
            for block in blocks:
                self._native_result(block, stamp)
        # a standalone {"type": "reasoning", "encrypted_content"} item holds nothing readable

    def _assistant(self, index: int, blocks: list[dict[str, Any]], stamp: Any) -> None:
        self.pending = []
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                found = scan(expect(block, "text", str, "text block") or "", self.known)
                if found.prose:
                    self.b.assistant(found.prose, timestamp=stamp)
                for use in found.uses:
                    call_id = f"xml-{index}-{len(self.pending)}"
                    self._call(use.name, use.params, call_id, stamp)
                    self.pending.append((use.name, call_id))
            elif kind in ("tool_use", "tool-call"):
                name = as_str(block.get("name") or block.get("toolName")) or "tool"
                call_id = as_str(block.get("id") or block.get("toolCallId")) or f"native-{index}-{len(self.tools)}"
                raw = block.get("input") if "input" in block else block.get("args")
                params = raw if isinstance(raw, dict) else loads_object(raw) or {}
                self.tools[call_id] = name
                self._call(name, params, call_id, stamp)
                self.pending.append((name, call_id))  # newer Cline answers it with a "[tool] Result:" text

    def _call(self, name: str, params: dict[str, Any], call_id: str, stamp: Any) -> None:
        fields = call_fields(name, params)
        self.b.call(name, call_id=call_id, text=fields.text, command=fields.command, paths=fields.paths,
                    diff=fields.diff, timestamp=stamp)

    def _user(self, index: int, blocks: list[dict[str, Any]], stamp: Any) -> None:
        result: _Result | None = None
        for block in blocks:
            kind = block.get("type")
            if kind in ("tool_result", "tool-result"):
                result = self._finish(result, index, stamp)
                self._native_result(block, stamp)
                continue
            if kind == "image":
                if result is not None:
                    result.texts.append("[image]")
                else:
                    self.b.user("[image]", timestamp=stamp, meta=True)
                continue
            if kind != "text":
                continue
            text = expect(block, "text", str, "text block") or ""
            if text.lstrip().startswith("<environment_details>"):
                result = self._finish(result, index, stamp)
                self._environment(text)
            elif header := RESULT_HEADER.match(text.lstrip()):
                result = self._finish(result, index, stamp)
                result = _Result(tool=header.group("tool"), call_id=self._pair(header.group("tool"), index))
                if (rest := header.group("rest")) and rest.strip():
                    result.texts.append(rest)
            elif result is not None and not _HARNESS.match(text):
                result.texts.append(text)
            else:
                result = self._finish(result, index, stamp)
                self._said(text, stamp)
        self._finish(result, index, stamp)
        self.pending = []  # XML calls left unanswered stay open

    def _pair(self, tool: str, index: int) -> str:
        """The XML call a ``[tool] Result:`` header answers: the first open one of that name."""
        for position, (name, call_id) in enumerate(self.pending):
            if name == tool:
                del self.pending[position]
                return call_id
        return self.pending.pop(0)[1] if self.pending else f"unasked-{index}-{tool}"

    def _finish(self, result: _Result | None, index: int, stamp: Any) -> None:
        if result is None:
            return None
        text = "\n\n".join(t for t in result.texts if t.strip())
        exit_code, is_error = result_status(result.tool, text)
        if exit_code is None and result.tool == "execute_command" and self._commands_in(index) == 1:
            exit_code = self.ui.exits.get(index - 1)  # newer Cline records it on the command_output event
        self.b.result(call_id=result.call_id, text=text, exit_code=exit_code, is_error=is_error, timestamp=stamp)
        for part in result.texts:
            self._person(human_words(part, in_result=True), stamp)
        return None

    def _commands_in(self, index: int) -> int:
        message = self.messages[index] if 0 <= index < len(self.messages) else None
        blocks = message.get("content") if isinstance(message, dict) else None
        if not isinstance(blocks, list):
            return 0
        return sum(1 for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)
                   and b["text"].startswith("[execute_command for "))

    def _native_result(self, block: dict[str, Any], stamp: Any) -> None:
        call_id = as_str(block.get("tool_use_id") or block.get("toolCallId")) or None
        self.pending = [(name, open_id) for name, open_id in self.pending if open_id != call_id]
        content = block.get("content") if "content" in block else block.get("output")
        texts = _texts(content)
        text = "\n\n".join(texts)
        tool = self.tools.get(call_id or "") or as_str(block.get("toolName")) or None
        exit_code, is_error = result_status(tool, text)
        if block.get("is_error") is True or (isinstance(content, dict) and content.get("type") == "error-text"):
            is_error = True
        self.b.result(call_id=call_id, text=text, exit_code=exit_code, is_error=is_error, timestamp=stamp)
        for part in texts:
            self._person(human_words(part, in_result=True), stamp)

    def _said(self, text: str, stamp: Any) -> None:
        words = human_words(text)
        if words is not None:
            self._person(words, stamp)
            if self.cwd is None and (found := _RESUMED_CWD.search(text)):
                self.cwd = found.group("cwd")
        elif text.strip():
            self.b.user(text, timestamp=stamp, meta=True)  # the harness: a resumption, a reminder
            if self.cwd is None and (found := _RESUMED_CWD.search(text)):
                self.cwd = found.group("cwd")

    def _person(self, words: str | None, stamp: Any) -> None:
        if words:
            self.prompts.append(words)
            self.b.user(words, timestamp=stamp)

    def _environment(self, text: str) -> None:
        if self.cwd is None and (found := _CWD.search(text)):
            self.cwd = found.group("cwd").strip()

    # -- the task ---------------------------------------------------------------------------------
    def _build(self) -> Trajectory:
        b, metadata = self.b, self.metadata
        usage = [as_str(as_dict(u).get("model_id")) for u in as_list(metadata.get("model_usage"))]
        models = Counter(m for m in usage if m) or self.models or self.ui.models
        environments = [as_dict(e) for e in as_list(metadata.get("environment_history"))]
        version = next((as_str(e.get("cline_version")) for e in reversed(environments) if e.get("cline_version")),
                       None)
        b.set(session_id=self.path.parent.name, model=models.most_common(1)[0][0] if models else None,
              agent_version=version or None, cwd=self.cwd, started_at=parse_time(self.ui.first),
              ended_at=parse_time(self.ui.last))
        b.set(repo=resolve_repo(b.steps, cwd=b.fields.get("cwd")))
        b.task = pick_task(self.prompts)
        return b.build()


@dataclass
class _UiFacts:
    """What ``ui_messages.json`` adds: when each transcript message was made, exit codes, the model."""

    stamps: dict[int, int] = field(default_factory=dict)
    exits: dict[int, int] = field(default_factory=dict)
    models: Counter[str] = field(default_factory=Counter)
    first: int | None = None
    last: int | None = None

    @classmethod
    def read(cls, path: Path, report: FileReport) -> _UiFacts:
        facts = cls()
        if not path.is_file():
            return facts
        sub = FileReport(path=str(path))
        events = load_json(path, sub)
        for error in sub.errors:
            report.error(f"ui_messages.json beside it: {error.reason}")
        for event in events if isinstance(events, list) else []:
            if isinstance(event, dict):
                facts._add(event)
        return facts

    def _add(self, event: dict[str, Any]) -> None:
        ts, index = event.get("ts"), event.get("conversationHistoryIndex")
        if not isinstance(ts, int) or isinstance(ts, bool):
            return
        self.first = ts if self.first is None else min(self.first, ts)
        self.last = ts if self.last is None else max(self.last, ts)
        if isinstance(index, int) and not isinstance(index, bool):
            self.stamps.setdefault(index, ts)
            code = event.get("exitCode")
            if "command_output" in (event.get("say"), event.get("ask")) and isinstance(code, int) \
                    and not isinstance(code, bool):
                self.exits[index] = code
        model = as_dict(event.get("modelInfo")).get("modelId")
        if isinstance(model, str) and model:
            self.models[model] += 1


def _headers(messages: list[Any]) -> frozenset[str]:
    """Tool names the harness answered in this task: XML tags worth reading beyond the known ones."""
    names = set()
    for message in messages:
        content = message.get("content") if isinstance(message, dict) and message.get("role") == "user" else None
        for block in content if isinstance(content, list) else []:
            text = block.get("text") if isinstance(block, dict) else None
            if isinstance(text, str) and text.startswith("[") and (found := RESULT_HEADER.match(text.strip())):
                names.add(found.group("tool"))
    return frozenset(names)


def _texts(content: Any) -> list[str]:
    """The text pieces of a tool result: a string, Anthropic blocks, or an AI-SDK output ``{type, value}``."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, dict):
        value = content.get("value") if "value" in content else content.get("text")
        return _texts(value) if isinstance(value, str | list) else [as_str(value)] if value is not None else []
    texts: list[str] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            if part.get("type") == "image":
                texts.append("[image]")
            else:
                texts += _texts(part.get("text") if "text" in part else part.get("value"))
    return texts
