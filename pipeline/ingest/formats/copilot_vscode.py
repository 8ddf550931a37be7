"""VS Code GitHub Copilot Chat sessions: ``<user dir>/workspaceStorage/<hash>/chatSessions/<id>.json``.

The user dir is ``~/.config/Code/User`` (Linux), ``~/Library/Application Support/Code/User``
(macOS), ``%APPDATA%\\Code\\User`` (Windows), ``Code - Insiders`` for the Insiders build; chats
opened in an empty window go to ``globalStorage/emptyWindowChatSessions/``. Three shapes, one
object (``ISerializableChatData``, ``chatModel.ts`` in microsoft/vscode):

* ``<id>.json``: the whole session, ``{version, sessionId, creationDate, requests[...]}``;
* ``<id>.jsonl`` (VS Code >= 1.10x): an append log (``objectMutationLog.ts``): ``{"kind":0,"v":
  {...}}`` is the whole state, then ``kind`` 1 sets the value at key path ``k``, 2 truncates the
  array at ``k`` to ``i`` (when given) and appends the items of ``v``, 3 deletes ``k``. It is
  replayed, and resumed from the replayed state when it grows; VS Code compacts it to one
  snapshot now and then, which reads as a rewritten file;
* "Chat: Export Chat..." writes the object (without sessionId and dates) to a ``chat.json``.

Per request: ``message.text`` is the prompt; ``response[]`` the parts as the chat view showed
them: markdown (no ``kind`` or ``markdownContent``), ``inlineReference``, ``textEditGroup`` (the
edits a tool made), ``toolInvocationSerialized {toolId, toolCallId, invocationMessage,
pastTenseMessage, isConfirmed, isComplete, resultDetails, toolSpecificData}`` -- terminal calls
carry ``commandLine``, ``terminalCommandOutput`` and ``terminalCommandState.exitCode`` in newer
builds. ``result.metadata`` holds the model's side: ``toolCallRounds[].toolCalls[] {name,
arguments, id}`` and ``toolCallResults {<id>: prompt-tsx tree}``. The two ids need not match (the
UI's is a UUID in 2025 builds), so calls pair by id, else by order. No cwd is recorded: it is
``workspace.json`` beside ``chatSessions/`` when there is one, else the folder the files the
session touched share. Thinking parts are not kept (often only an encrypted id).
"""

from __future__ import annotations

import pickle
import posixpath
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import orjson

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats._common import (
    SHAPE_ERRORS,
    as_dict,
    as_list,
    begin_patch,
    describe,
    expect,
    loads_object,
    paths_in,
    pick_task,
    shape_error,
    unified,
)
from pipeline.ingest.identity import relative_to, resolve_repo
from pipeline.ingest.reader import Checkpoint, Probe, iter_jsonl, load_json
from pipeline.ingest.report import FileReport
from pipeline.trajectory import Trajectory, TrajectoryBuilder
from pipeline.trajectory.builder import parse_time

#: Keys only a chat session's top level has (with ``requests``).
_SESSION_KEYS = frozenset({"responderUsername", "requesterUsername", "initialLocation", "creationDate"})
_SESSION_KEY = re.compile(r'"(?:responderUsername|requesterUsername|initialLocation|creationDate)"\s*:')
_REQUESTS = re.compile(r'"requests"\s*:\s*\[')
#: Keys a session (or its mutation log) opens with, when its head holds no other cue.
_FIRST_KEYS = frozenset({"kind", "version", "sessionId", *_SESSION_KEYS})
_LOG_START = re.compile(r'\s*\{\s*"kind"\s*:\s*0\s*,\s*"v"\s*:\s*\{')
_INVOCATIONS = frozenset({"toolInvocationSerialized", "toolInvocation"})
_MARKDOWN = frozenset({"markdownContent", "markdownVuln"})
#: VS Code's ToolConfirmKind: 0 Denied, 5 Skipped (the call did not run).
_NOT_RUN = {0: "denied by the user", 5: "skipped by the user"}
_DRIVE = re.compile(r"^/?([A-Za-z]):/")
#: The empty code block the view shows where a ``codeblockUri`` / ``textEditGroup`` (an edit) goes.
_EMPTY_FENCE = re.compile(r"```[\w-]*\s*```\n?")
#: Copilot Chat's tools refusing a call: the text the model was given (copilot-chat's tool
#: calling loop wraps a tool's exception as "ERROR while calling tool: ..."; apply_patch reports a
#: patch that does not apply). The agent misused the tool; nothing was run or changed.
PROTOCOL_ERRORS = re.compile(r"\A\s*(?:ERROR while calling tool\b|Applying patch failed with error\b)")
_USER_DIRS = ("~/.config/Code/User", "~/.config/Code - Insiders/User", "~/Library/Application Support/Code/User",
              "~/Library/Application Support/Code - Insiders/User", "${APPDATA}/Code/User",
              "${APPDATA}/Code - Insiders/User")


class CopilotVscode(TrajectoryFormat):
    name = "copilot-vscode"
    agent = "copilot-vscode"
    description = ("VS Code GitHub Copilot Chat sessions (chatSessions/*.json, the *.jsonl mutation log read as "
                   "it grows, Export Chat files)")
    locations = (*(f"{d}/workspaceStorage/*/chatSessions/*.json*" for d in _USER_DIRS),
                 *(f"{d}/globalStorage/emptyWindowChatSessions/*.json*" for d in _USER_DIRS),
                 "<exported chat>.json (Chat: Export Chat...)")
    suffixes = (".json", ".jsonl")
    priority = 6
    incremental = True
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        if probe.first_char != "{":
            return False
        text = probe.text
        if _REQUESTS.search(text) and _SESSION_KEY.search(text) and (
                probe.first_key != "kind" or _LOG_START.match(text)):
            return True  # the keys are in the head (as VS Code writes them: requests after the header)
        if not (_REQUESTS.search(text) or _SESSION_KEY.search(text) or probe.first_key in _FIRST_KEYS):
            return False  # no cue in the head: the whole document is not scanned for one
        fields = probe.fields
        if probe.first_key == "kind":  # the mutation log's first entry: the whole session
            kind, value = fields.get("kind"), fields.get("v")
            return (kind is not None and kind.text == "0" and value is not None and value.kind == "object"
                    and "requests" in value.keys and bool(_SESSION_KEYS & set(value.keys)))
        return fields.kind("requests") == "array" and any(key in fields for key in _SESSION_KEYS)

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        return self._read(path, report, None)

    def resume(self, path: Path, report: FileReport, checkpoint: Checkpoint) -> Iterator[Trajectory]:
        """A ``.jsonl`` log goes on from the replayed state pickled after its last complete line;
        a ``.json`` document is rewritten whole by VS Code, so it is read whole (no state kept)."""
        return self._read(path, report, checkpoint)

    def _read(self, path: Path, report: FileReport, checkpoint: Checkpoint | None) -> Iterator[Trajectory]:
        if Probe.read(path).first_key == "kind":
            log = pickle.loads(checkpoint.state) if checkpoint and checkpoint.state else _Log()
            snapshot = None
            for line, entry in iter_jsonl(path, report, checkpoint=checkpoint):
                if checkpoint is not None and snapshot is None and line > checkpoint.line:
                    snapshot = pickle.dumps(log)  # a last line without its newline: resume from before it
                log.apply(entry, line, report)
            if checkpoint is not None:
                checkpoint.state = snapshot or pickle.dumps(log)
            session = log.state
        else:
            session = load_json(path, report)
            if session is None:
                return
        if not isinstance(session, dict):
            report.error(f"expected a chat session object, found {type(session).__name__}")
            return
        trajectory = _Chat(path, report).read(session)
        if trajectory is not None:
            yield trajectory
        elif not report.errors:
            report.status = "skipped"
            report.error("VS Code chat session without requests (opened and left)")


class _Log:
    """The state an ``objectMutationLog`` describes, replayed entry by entry."""

    def __init__(self) -> None:
        self.state: Any = None

    def apply(self, entry: Any, line: int, report: FileReport) -> None:
        if not isinstance(entry, dict):
            report.error(f"expected a JSON object, found {type(entry).__name__}", line)
            return
        kind, keys, value = entry.get("kind"), entry.get("k"), entry.get("v")
        if kind == 0:
            self.state = value
            return
        if kind not in (1, 2, 3):
            report.error(f"unknown mutation kind {kind!r}; skipped", line)
            return
        if not isinstance(keys, list) or (not keys and kind != 1):
            report.error(f"a kind {kind} entry: 'k' should be a non-empty key path", line)
            return
        if not keys:
            self.state = value
            return
        parent = self._walk(keys[:-1])
        last = keys[-1]
        if not _holds(parent, last, kind == 1):
            report.error(f"a kind {kind} entry: key path {_shown(keys)} is not in the session; skipped", line)
            return
        if kind == 1:
            if isinstance(parent, list) and last == len(parent):
                parent.append(value)
            else:
                parent[last] = value
        elif kind == 3:
            del parent[last]
        else:
            target = parent[last]
            if not isinstance(target, list):
                report.error(f"a push to {_shown(keys)}, which is a {type(target).__name__}; skipped", line)
                return
            start = entry.get("i")
            if isinstance(start, int) and not isinstance(start, bool) and start >= 0:
                del target[start:]
            if isinstance(value, list):
                target.extend(value)

    def _walk(self, keys: list[Any]) -> Any:
        node = self.state
        for key in keys:
            if not _holds(node, key, False):
                return None
            node = node[key]
        return node


def _holds(node: Any, key: Any, settable: bool) -> bool:
    """Is ``node[key]`` there (or, ``settable``, may a value be put there)?"""
    if isinstance(node, dict):
        return isinstance(key, str) and (settable or key in node)
    if isinstance(node, list):
        return isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(node) + settable
    return False


def _shown(keys: list[Any]) -> str:
    return orjson.dumps(keys[:8], default=str).decode()[:200]


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _markdown(value: Any) -> str:
    """A MarkdownString (``{value}``) or a plain string."""
    if isinstance(value, str):
        return value
    return value["value"] if isinstance(value, dict) and isinstance(value.get("value"), str) else ""


def _uri_path(uri: Any) -> str | None:
    """The file path of a URI object (``{fsPath, path, scheme}``) or string (``file:///a/b``)."""
    if isinstance(uri, dict):
        for key in ("fsPath", "path"):
            if isinstance(uri.get(key), str) and uri[key]:
                return uri[key]
        uri = uri.get("external")
    if not isinstance(uri, str) or "://" not in uri:
        return None
    parsed = urlparse(uri)
    path = unquote(parsed.path)
    return path if path.startswith("/") else None


def _tree_text(node: Any) -> str:
    """The text of a prompt-tsx tree (``toolCallResults``): its text leaves, in order."""
    out: list[str] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            if isinstance(item.get("text"), str):
                if item.get("lineBreakBefore") is True and out and not out[-1].endswith("\n"):
                    out.append("\n")  # a new line, unless the text already is at one
                out.append(item["text"])
            for key in ("node", "children", "value", "content"):
                child = item.get(key)
                if isinstance(child, str) and key == "value":
                    out.append(child)  # a LanguageModelTextPart
                elif isinstance(child, dict | list):
                    stack.append(child)
    return "".join(out)


class _Chat:
    """One session object into one trajectory."""

    def __init__(self, path: Path, report: FileReport) -> None:
        self.path, self.report = path, report
        self.b = TrajectoryBuilder(source_format=CopilotVscode.name, agent=CopilotVscode.agent,
                                   source_path=str(path))
        self.models: Counter[str] = Counter()
        self.prompts: list[int] = []
        self.cwd: str | None = None
        self.text: list[str] = []

    def read(self, session: dict[str, Any]) -> Trajectory | None:
        b = self.b
        requests = [r for r in as_list(session.get("requests")) if isinstance(r, dict)]
        if not requests:
            if not isinstance(session.get("requests"), list):
                self.report.error("'requests' should be a list of requests")
            return None
        self.cwd = _workspace_folder(self.path) or _shared_folder(requests)
        b.set(session_id=_str(session.get("sessionId")) or _str(_metadata(requests[0]).get("sessionId")), cwd=self.cwd)
        for number, request in enumerate(requests, start=1):
            try:
                self._request(request)
            except SHAPE_ERRORS as exc:
                self.report.error(shape_error(f"request {number}", exc))
            self._flush()
        if not b.steps:
            return None
        b.set(model=self.models.most_common(1)[0][0] if self.models else None,
              repo=resolve_repo(b.steps, cwd=self.cwd))
        stamps = [parse_time(session.get("creationDate")), parse_time(session.get("lastMessageDate")),
                  *(parse_time(r.get("timestamp")) for r in requests), _finished(requests[-1])]
        stamps = [s for s in stamps if s is not None]
        if stamps:
            b.set(started_at=min(stamps), ended_at=max(stamps))
        b.task = pick_task([b.steps[i].text for i in self.prompts])
        return b.build()

    def _request(self, request: dict[str, Any]) -> None:
        b, stamp = self.b, request.get("timestamp")
        message = expect(request, "message", dict) or {}
        text = expect(message, "text", str, "message") or ""
        if text.strip():
            self.prompts.append(b.user(text, timestamp=stamp))
        model = _str(request.get("modelId"))
        if model:
            self.models[model] += 1
        agent = as_dict(request.get("agent"))
        b.set(agent_version=_str(agent.get("extensionVersion")))
        metadata = _metadata(request)
        model_calls = [c for r in as_list(metadata.get("toolCallRounds")) if isinstance(r, dict)
                       for c in as_list(r.get("toolCalls")) if isinstance(c, dict)]
        outputs = as_dict(metadata.get("toolCallResults"))
        parts = [p for p in (expect(request, "response", list) or []) if isinstance(p, dict)]
        invocations = [p for p in parts if p.get("kind") in _INVOCATIONS]
        paired = _pair(invocations, model_calls)
        last_call: str | None = None
        for part in parts:
            kind = part.get("kind")
            if kind is None or kind in _MARKDOWN:
                self.text.append(_markdown(part.get("value") if "value" in part else part.get("content")))
            elif kind == "inlineReference":
                self.text.append(self._reference(part))
            elif kind in _INVOCATIONS:
                self._flush()
                last_call = self._invocation(part, paired.get(id(part)), outputs)
            elif kind == "textEditGroup" and last_call is not None:
                self._edits(part, last_call)
        self._flush()
        used = {id(c) for c in paired.values()}
        for call in model_calls:  # the model asked, the chat view shows no invocation
            if id(call) not in used:
                self._invocation({}, call, outputs)
        error = as_dict(as_dict(request.get("result")).get("errorDetails"))
        if _str(error.get("message")):
            b.user(f"[error] {error['message']}", timestamp=stamp, meta=True)
        if request.get("isCanceled") is True:
            b.user("[request canceled by the user]", timestamp=stamp, meta=True)

    def _flush(self) -> None:
        """The markdown gathered since the last tool call, as one answer (the view streams it in
        fragments; its parts carry no time of their own)."""
        text = _EMPTY_FENCE.sub("", "".join(self.text)).strip()
        self.text = []
        if text:
            self.b.assistant(text)

    def _reference(self, part: dict[str, Any]) -> str:
        name = _str(part.get("name"))
        reference = part.get("inlineReference")
        path = _uri_path(as_dict(reference).get("uri") or reference)
        shown = name or (self._relative(path) if path else None) or _str(as_dict(reference).get("name"))
        return f"`{shown}`" if shown else ""

    def _relative(self, path: str) -> str:
        flat = path.replace("\\", "/")
        return relative_to(flat, self.cwd) or path

    def _invocation(self, part: dict[str, Any], call: dict[str, Any] | None, outputs: dict[str, Any]) -> str:
        """One tool call and its result; returns the id the steps hold."""
        call = call or {}
        raw_args = call.get("arguments")
        args = loads_object(raw_args) or {}
        name = _str(call.get("name")) or _str(part.get("toolId")) or "tool"
        specific = as_dict(part.get("toolSpecificData"))
        command = _terminal_command(specific) or (args["command"] if isinstance(args.get("command"), str)
                                                  and "terminal" in name.lower() else None)
        paths = [self._relative(p) for p in paths_in(args)]
        diff = None
        patch = args.get("input") if isinstance(args.get("input"), str) and "*** Begin Patch" in args["input"] else None
        if patch:
            patched, diff = begin_patch(patch)
            for path in patched:
                relative = self._relative(path)
                paths.append(relative)
                if diff and relative != path:
                    diff = diff.replace(f"a/{path}\n", f"a/{relative}\n").replace(f"b/{path}\n", f"b/{relative}\n")
        elif isinstance(args.get("oldString"), str) and paths:
            diff = unified(paths[0], args["oldString"], args.get("newString") or "")
        elif isinstance(args.get("content"), str) and paths and "create" in name.lower():
            diff = unified(paths[0], "", args["content"])
        invocation = _markdown(part.get("invocationMessage"))
        for uri in as_dict(as_dict(part.get("invocationMessage")).get("uris")).values():
            found = _uri_path(uri)
            if found:
                paths.append(self._relative(found))
        if command:
            text = command
        elif patch:
            text = f"{name} {' '.join(dict.fromkeys(paths))}"
        else:
            text = describe(name, args) if args else invocation or name
        call_id = _str(part.get("toolCallId")) or _str(call.get("id"))
        self.b.call(name, call_id=call_id, text=text, command=command, paths=paths, diff=diff)
        self._result(part, call, outputs, call_id, command)
        return call_id or ""

    def _result(self, part: dict[str, Any], call: dict[str, Any], outputs: dict[str, Any], call_id: str | None,
                command: str | None) -> None:
        confirmed = part.get("isConfirmed")
        refused = _NOT_RUN.get(as_dict(confirmed).get("type")) if isinstance(confirmed, dict) else (
            "denied by the user" if confirmed is False else None)
        model_id = _str(call.get("id"))
        output = outputs.get(model_id) if model_id else None
        text = _tree_text(output.get("content")) if isinstance(output, dict) else ""
        specific = as_dict(part.get("toolSpecificData"))
        details = part.get("resultDetails")
        if not text:
            text = _str(as_dict(specific.get("terminalCommandOutput")).get("text")) or _details_text(details)
        if not text and refused:
            text = f"[{refused}]"
        if not text and part:
            text = _markdown(part.get("pastTenseMessage"))
        if not text and (not part or part.get("isComplete") is False):
            return  # never answered: the call stays open
        code = as_dict(specific.get("terminalCommandState")).get("exitCode")
        exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
        failed = bool(refused) or as_dict(details).get("isError") is True or bool(PROTOCOL_ERRORS.match(text))
        is_error = True if failed else (None if command and exit_code is None else False)
        self.b.result(call_id=call_id, text=text, exit_code=exit_code, is_error=is_error)

    def _edits(self, part: dict[str, Any], call_id: str) -> None:
        """A ``textEditGroup`` after a call: the file it edited, and what it wrote when the call
        gave no diff of its own."""
        path = _uri_path(part.get("uri"))
        if not path or not call_id:
            return
        relative = self._relative(path)
        added = [e["text"] for group in as_list(part.get("edits")) for e in as_list(group)
                 if isinstance(e, dict) and isinstance(e.get("text"), str)]
        self.b.amend_result(call_id, paths=[relative],
                            diff=unified(relative, "", "".join(added)) if any(added) else None)


def _metadata(request: dict[str, Any]) -> dict[str, Any]:
    return as_dict(as_dict(request.get("result")).get("metadata"))


def _finished(request: dict[str, Any]) -> Any:
    """When the last request's answer was done: its timestamp plus ``timings.totalElapsed``."""
    stamp = request.get("timestamp")
    elapsed = as_dict(as_dict(request.get("result")).get("timings")).get("totalElapsed")
    if isinstance(stamp, int | float) and isinstance(elapsed, int | float) and not isinstance(elapsed, bool):
        return parse_time(stamp + elapsed)
    return None


def _pair(invocations: list[dict[str, Any]], calls: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The model-side call of each chat-view invocation: the one with its id, else the next in order."""
    by_id = {c["id"]: c for c in calls if isinstance(c.get("id"), str)}
    paired: dict[int, dict[str, Any]] = {}
    for part in invocations:
        match = by_id.get(_str(part.get("toolCallId")) or "")
        if match is not None:
            paired[id(part)] = match
    used = {id(c) for c in paired.values()}
    rest = iter([c for c in calls if id(c) not in used])
    for part in invocations:
        if id(part) not in paired:
            match = next(rest, None)
            if match is None:
                break
            paired[id(part)] = match
    return paired


def _terminal_command(specific: dict[str, Any]) -> str | None:
    if specific.get("kind") not in ("terminal", "terminal2"):
        return None
    line = specific.get("commandLine")
    if isinstance(line, dict):
        return _str(line.get("userEdited")) or _str(line.get("toolEdited")) or _str(line.get("original"))
    return _str(line) or _str(specific.get("command"))


def _details_text(details: Any) -> str:
    """``resultDetails {input, output[{value, isText}]}`` (MCP and other tools): the output's text."""
    values = [o.get("value") for o in as_list(as_dict(details).get("output")) if isinstance(o, dict)]
    return "\n".join(v for v in values if isinstance(v, str))


def _workspace_folder(path: Path) -> str | None:
    """``workspaceStorage/<hash>/workspace.json`` ``{"folder": "file:///..."}`` beside ``chatSessions/``."""
    if path.parent.name != "chatSessions":
        return None
    try:
        data = orjson.loads((path.parent.parent / "workspace.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return _local(_uri_path(as_dict(data).get("folder")))


def _shared_folder(requests: list[dict[str, Any]]) -> str | None:
    """The folder every file the session touched lies in (at least two levels deep): attached
    files, tool arguments, edits and references -- not instructions files, which may live elsewhere."""
    found: list[str] = []
    for request in requests:
        for variable in as_list(as_dict(request.get("variableData")).get("variables")):
            if isinstance(variable, dict) and variable.get("kind") == "file":
                value = as_dict(variable.get("value"))
                found.append(_uri_path(value.get("uri") or value) or "")
        for part in as_list(request.get("response")):
            part = as_dict(part)
            if part.get("kind") in ("textEditGroup", "codeblockUri"):
                found.append(_uri_path(part.get("uri")) or "")
            elif part.get("kind") == "inlineReference":
                reference = part.get("inlineReference")
                found.append(_uri_path(as_dict(reference).get("uri") or reference) or "")
        for rounds in as_list(_metadata(request).get("toolCallRounds")):
            for call in as_list(as_dict(rounds).get("toolCalls")):
                found += paths_in(loads_object(as_dict(call).get("arguments")) or {})
    folders = [posixpath.dirname(p.replace("\\", "/")) for p in found if p]
    folders = [f for f in folders if f.startswith("/") or _DRIVE.match(f)]
    if not folders:
        return None
    try:
        common = posixpath.commonpath(folders)
    except ValueError:
        return None
    return _local(common) if len([p for p in common.split("/") if p]) >= 2 else None


def _local(path: str | None) -> str | None:
    """``/c:/Users/x`` (a Windows file URI's path) -> ``c:/Users/x``."""
    if not path:
        return None
    drive = _DRIVE.match(path)
    return path[1:] if drive and path.startswith("/") else path
