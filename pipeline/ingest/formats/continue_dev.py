"""Continue.dev sessions: ``~/.continue/sessions/<sessionId>.json`` (``$CONTINUE_GLOBAL_DIR`` moves it).

A session is one JSON document ``{sessionId, title, workspaceDirectory, history, mode?,
chatModelTitle?, usage?}``; ``history`` holds ``ChatHistoryItem`` s ``{message{role, content, id,
toolCalls?}, contextItems[], editorState, promptLogs?[{modelTitle, completionOptions{model},
prompt, completion}], toolCallState? | toolCallStates?[], reasoning?{text, startAt, endAt}}``
(core/index.d.ts). User content is a string or a list of parts, often beginning with the
highlighted code as a fenced block; attached files are ``contextItems`` (listed, their content
left out). In agent mode an assistant message carries ``toolCalls[{id, function{name,
arguments}}]`` and its item the ``ToolCallState`` (``status`` generating | generated | calling |
done | errored | canceled, ``output[]`` context items); a later ``{role: "tool", toolCallId}``
message repeats the output. Messages have no timestamps: the session's ``dateCreated`` comes from
the index ``sessions.json`` beside it (epoch ms, as a string), which is itself skipped.
The file is rewritten whole as the chat goes on, so a changed session is read again whole.
See §4 of ../shared/docs/trajectory-formats-newer.md.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats._common import (
    SHAPE_ERRORS,
    as_dict,
    as_list,
    as_str,
    describe,
    exit_code_from_output,
    loads_object,
    paths_in,
    pick_task,
    shape_error,
    text_of,
    unified,
)
from pipeline.ingest.identity import resolve_repo
from pipeline.ingest.reader import Probe, load_json
from pipeline.ingest.report import FileReport
from pipeline.trajectory import Trajectory, TrajectoryBuilder
from pipeline.trajectory.builder import parse_time

_SESSION_KEYS = ("sessionId", "title", "workspaceDirectory", "history", "mode", "chatModelTitle", "usage")
_INDEX_START = re.compile(r'\A\s*\[\s*\{\s*"sessionId"\s*:\s*"[^"]*"\s*,\s*"title"\s*:')
_INDEX = "Continue session index (sessions.json: a title and creation time per session, not a trajectory)"
_SHELL = {"run_terminal_command"}
#: Argument names of Continue's built-in tools for the file or folder they touch.
_PATH_ARGS = ("filepath", "dirPath", "directory_path", "dir_path")
_EXIT = re.compile(r"exit(?:ed with)? code:? (-?\d+)", re.I)
_DONE = {"done", "errored", "canceled"}
#: Continue refusing a tool call before it ran (core/tools/parseArgs.ts, core/edit/searchAndReplace):
#: a missing or malformed argument, an edit whose old string is not in the file or is not unique.
PROTOCOL_ERRORS = re.compile(
    r"`\w+` argument is required|Argument `?\w+`? (?:is required|must not be empty|must be a valid number|"
    r"must be a boolean)|Edit at index \d+: (?:string not found in file|String .*? appears \d+ times in the file)|"
    r"Failed to parse tool call arguments", re.S)


def is_session(probe: Probe) -> bool:
    if probe.first_char != "{" or probe.first_key not in _SESSION_KEYS:
        return False
    fields = probe.fields
    return (fields.kind("sessionId") == "string" and fields.kind("history") == "array"
            and ("workspaceDirectory" in fields or "title" in fields))


def is_index(probe: Probe) -> bool:
    return probe.first_char == "[" and bool(_INDEX_START.match(probe.text)) and '"dateCreated"' in probe.text[:4096]


class ContinueSessions(TrajectoryFormat):
    name = "continue"
    agent = "continue"
    description = "Continue.dev chat and agent sessions (one JSON document per session; sessions.json is the index)"
    locations = ("${CONTINUE_GLOBAL_DIR:-~/.continue}/sessions/*.json",
                 "%USERPROFILE%\\.continue\\sessions\\*.json (Windows)")
    suffixes = (".json",)
    priority = 4
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        return is_session(probe) or is_index(probe)

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        if is_index(Probe.read(path)):
            report.status = "skipped"
            report.error(_INDEX)
            return
        session = load_json(path, report)
        if session is None:
            return
        if not isinstance(session, dict) or not isinstance(session.get("history"), list):
            report.error("not a Continue session (an object with a 'history' list expected)")
            return
        trajectory = _Session(path, session, report).read()
        if trajectory is not None:
            yield trajectory


class _Session:
    def __init__(self, path: Path, session: dict[str, Any], report: FileReport) -> None:
        self.path = path
        self.session = session
        self.report = report
        self.b = TrajectoryBuilder(source_format=ContinueSessions.name, agent=ContinueSessions.agent,
                                   source_path=str(path))
        self.models: Counter[str] = Counter()
        self.prompts: list[str] = []
        self.answered: set[str] = set()
        self.tools: dict[str, str] = {}

    def read(self) -> Trajectory | None:
        for index, item in enumerate(self.session["history"]):
            try:
                self._item(item)
            except SHAPE_ERRORS as exc:
                self.report.error(shape_error(f"history item {index}", exc))
        if not self.b.steps:
            if not self.report.errors:
                self.report.status = "skipped"
                self.report.error("Continue session without messages")
            return None
        return self._build()

    def _item(self, item: Any) -> None:
        if not isinstance(item, dict):
            raise TypeError(f"expected an object, found {type(item).__name__}")
        message = as_dict(item.get("message"))
        role = as_str(message.get("role")).replace("\ufffd", "")  # bytes that were not UTF-8 lose no message
        reasoning = as_dict(item.get("reasoning"))
        stamp = reasoning.get("startAt") if isinstance(reasoning.get("startAt"), int | float) else None
        for log in as_list(item.get("promptLogs")):
            log = as_dict(log)
            model = as_str(as_dict(log.get("completionOptions")).get("model")) or as_str(log.get("modelTitle"))
            if model:
                self.models[model.removeprefix("Autodetect - ")] += 1
        if role == "user":
            text = text_of(message.get("content"))
            if text.strip():
                self.prompts.append(_asked(text))
                self.b.user(text, timestamp=stamp)
            attached = [_context_name(c) for c in as_list(item.get("contextItems"))]
            if any(attached):
                self.b.user("[context: " + ", ".join(a for a in attached if a) + "]", timestamp=stamp, meta=True)
        elif role == "assistant":
            text = text_of(message.get("content"))
            if text.strip():
                self.b.assistant(text, timestamp=stamp)
            states = [as_dict(s) for s in as_list(item.get("toolCallStates"))] or \
                ([as_dict(item["toolCallState"])] if isinstance(item.get("toolCallState"), dict) else [])
            calls = [as_dict(c) for c in as_list(message.get("toolCalls"))] or \
                [as_dict(s.get("toolCall")) for s in states]
            for call in calls:
                self._call(call, stamp)
            for state in states:
                self._state(state, stamp)
        elif role == "tool":
            call_id = as_str(message.get("toolCallId"))
            if call_id and call_id not in self.answered:
                self.answered.add(call_id)
                self._result(call_id, text_of(message.get("content")), None, stamp)

    def _call(self, call: dict[str, Any], stamp: Any) -> None:
        function = as_dict(call.get("function"))
        name = as_str(function.get("name")) or "tool"
        call_id = as_str(call.get("id")) or None
        args = loads_object(function.get("arguments")) or {}
        command = as_str(args.get("command")) if name in _SHELL else ""
        paths = [as_str(args[k]) for k in _PATH_ARGS if as_str(args.get(k))] + paths_in(args)
        if call_id:
            self.tools[call_id] = name
        self.b.call(name, call_id=call_id, text=command or describe(name, args), command=command or None,
                    paths=paths, diff=_diff(name, args, paths[0] if paths else "file"), timestamp=stamp)

    def _state(self, state: dict[str, Any], stamp: Any) -> None:
        call_id = as_str(state.get("toolCallId")) or as_str(as_dict(state.get("toolCall")).get("id"))
        status = state.get("status")
        if not call_id or status not in _DONE or call_id in self.answered:
            return  # still generating, awaiting approval or running when the session was saved
        self.answered.add(call_id)
        outputs = [as_dict(o) for o in as_list(state.get("output"))]
        text = "\n\n".join(as_str(o.get("content")) for o in outputs if as_str(o.get("content")))
        if status == "canceled":
            text = text or "canceled"
        found = next((_EXIT.search(as_str(o.get("status"))) for o in outputs if _EXIT.search(as_str(o.get("status")))),
                     None)
        exit_code = int(found.group(1)) if found else None
        self._result(call_id, text, exit_code, stamp, is_error=True if status in ("errored", "canceled") else None)

    def _result(self, call_id: str, text: str, exit_code: int | None, stamp: Any, is_error: bool | None = None) -> None:
        if exit_code is None and self.tools.get(call_id) in _SHELL:
            exit_code = exit_code_from_output(text)
        self.b.result(call_id=call_id, text=text, exit_code=exit_code, is_error=is_error, timestamp=stamp)

    def _build(self) -> Trajectory:
        session, b = self.session, self.b
        cwd = as_str(session.get("workspaceDirectory")) or None
        model = self.models.most_common(1)[0][0] if self.models else as_str(session.get("chatModelTitle")) or None
        session_id = as_str(session.get("sessionId")) or self.path.stem
        b.set(session_id=session_id, cwd=cwd, model=model, started_at=parse_time(_created(self.path, session_id)))
        b.set(repo=resolve_repo(b.steps, cwd=cwd))
        b.task = pick_task(self.prompts)
        return b.build()


#: Code the person highlighted, put before their words: ```` ```py model.py (4-10) ```` ... ```` ``` ````.
_HIGHLIGHT = re.compile(r"\A\s*```[\w+-]* (?P<where>[^\n`]+)\n.*?\n```[ \t]*(?:\n|\Z)", re.S)


def _asked(text: str) -> str:
    """The person's words of a prompt, after the code they highlighted (named at the end), for the task."""
    where: list[str] = []
    while found := _HIGHLIGHT.match(text):
        where.append(found.group("where").strip())
        text = text[found.end():]
    words = text.strip()
    if not where or not words:
        return text if not where else ", ".join(where)
    return f"{words} (in {', '.join(where)})"


def _context_name(item: Any) -> str:
    item = as_dict(item)
    name, where = as_str(item.get("name")), as_str(item.get("description"))
    return f"{name} ({where})" if name and where and where != name else name or where


def _diff(name: str, args: dict[str, Any], path: str) -> str | None:
    if name == "create_new_file" and isinstance(args.get("contents"), str):
        return unified(path, "", args["contents"])
    if name == "single_find_and_replace" and isinstance(args.get("old_string"), str):
        return unified(path, args["old_string"], as_str(args.get("new_string")))
    if name == "multi_edit":
        edits = [as_dict(e) for e in as_list(args.get("edits"))]
        parts = [unified(path, as_str(e.get("old_string")), as_str(e.get("new_string"))) for e in edits]
        return "\n".join(p for p in parts if p) or None
    if name == "edit_existing_file" and isinstance(args.get("changes"), str):
        return unified(path, "", args["changes"])
    return None


def _created(path: Path, session_id: str) -> int | None:
    """``dateCreated`` of this session in the index beside it (a string of epoch ms)."""
    index = path.parent / "sessions.json"
    try:
        stat = index.stat()
    except OSError:
        return None
    return _index_dates(str(index), stat.st_mtime_ns, stat.st_size).get(session_id)


@lru_cache(maxsize=4)
def _index_dates(index: str, _mtime: int, _size: int) -> dict[str, int]:
    """The index read once for all the sessions beside it (until it changes)."""
    entries = load_json(Path(index), FileReport(path=index))
    dates: dict[str, int] = {}
    for entry in entries if isinstance(entries, list) else []:
        entry = as_dict(entry)
        created = as_str(entry.get("dateCreated"))
        if isinstance(entry.get("sessionId"), str) and created.isdigit():
            dates[entry["sessionId"]] = int(created)
    return dates
