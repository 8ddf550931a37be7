"""Gemini CLI chat recordings: ``~/.gemini/tmp/<projectHash>/chats/session-<ts>-<id8>.json(l)``.

Two layouts. Legacy: one JSON ``ConversationRecord`` ``{sessionId, projectHash, startTime,
lastUpdated, messages[]}``. Current: an append log, first line the metadata, then one
``MessageRecord`` per line (a message written again with the same ``id`` replaces the earlier
copy in place: tool results are added that way), ``{"$set": {...}}`` metadata updates (a ``messages``
list there replaces the history) and ``{"$rewindTo": "<id>"}``, which drops that message and all
after it (``chatRecordingService.rewindTo``). Messages are therefore held until the end of the
file before steps are built.

A ``ToolCallRecord`` holds the call *and* its result, so each gives a call step and a result
step. cwd is not recorded, only ``projectHash`` = sha256(project root): a directory the tools
touched whose hash matches it is the cwd; nothing is guessed beyond that.

Bare histories: the Gemini API's ``Content`` list ``[{role: user|model, parts[]}]`` that ``/chat
save <tag>`` writes to ``checkpoint-<tag>.json`` beside ``chats/`` (older releases: the list
itself; newer: ``{"history": [...], "authType": ...}``). A model part ``functionCall{id?, name,
args}`` is a call, a user part ``functionResponse{id?, name, response{output|error}}`` its result
(paired by id, else the oldest open call of that name); ``thought`` parts are skipped, and the
opening context the CLI sends ("This is the Gemini CLI. We are setting up the context ...") is
a meta step. No session id, model or time is in the file.

Newer homes name the project folder (``~/.gemini/tmp/<project-name>/``) in place of the
sha256 of its path and keep the project root in ``.project_root`` there: that is the cwd.

``logs.json`` beside ``chats/`` only lists the person's prompts (no model output, no tool
calls) for sessions whose recordings hold them too: it is reported skipped, with that reason.
See §7 of ../shared/docs/trajectory-formats.md.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from pipeline import voice
from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats._common import (
    SHAPE_ERRORS,
    BadShape,
    as_text,
    describe,
    expect,
    paths_in,
    pick_task,
    shape_error,
    typed_part,
    unified,
)
from pipeline.ingest.identity import resolve_repo
from pipeline.ingest.reader import Probe, iter_jsonl, load_json
from pipeline.ingest.report import FileReport
from pipeline.redact import sanitize
from pipeline.trajectory import Trajectory, TrajectoryBuilder
from pipeline.trajectory.builder import parse_time

_PRETTY_RECORD = re.compile(r'^\s*\{\s*"(sessionId|kind|startTime|lastUpdated|projectHash)"\s*:')
_PROMPT_LOG = re.compile(r'^\s*\[\s*\{\s*"sessionId"\s*:\s*"[^"]*"\s*,\s*"messageId"\s*:')
EXIT_CODE = re.compile(r"Exit Code: (-?\d+)")
_ABSOLUTE = re.compile(r"(?:^|[\s'\"`(:=])(/[\w.@+-]+(?:/[\w.@+-]+)+)")
#: Result texts kept (their first bytes) to look for the project root when the arguments hold none.
_MAX_RESULT_HEADS = 200
SHELL_TOOLS = {"run_shell_command", "shell"}
#: Gemini CLI refusing a tool call (none in the corpus: its 27 results include 1 error, `ls` of a
#: missing directory, which ran). From gemini-cli's edit/read/write tools and their parameter
#: validation: "Failed to edit, 0 occurrences found for old_string in <file>", "Failed to edit,
#: could not find the string to replace.", "Failed to edit, Expected 1 occurrence but found 2 ...",
#: "No changes to apply. The old_string and new_string are identical", "File already exists,
#: cannot create: <file>", "File not found: <file>", "Path is a directory", "File path must be
#: absolute", "params must have required property 'file_path'", "Tool \"x\" not found in registry".
#: Not refusals: a shell command's non-zero "Exit Code", a cancelled call.
PROTOCOL_ERRORS = re.compile(
    r"\A\s*(?:Error: )?(?:Failed to edit,|No changes to apply\. The (?:old_string and new_string|new content) "
    r"(?:are|is) identical|File already exists, cannot create|Failed to edit\. Attempted to create a file that "
    r"already exists|File not found(?:\. Cannot apply edit|: )|Path is a directory|File path must be (?:absolute|"
    r"within)|(?:The '\w+' parameter|Path) must be absolute|params must have required property|params/\S+ must|"
    r"Tool \"[^\"]+\" not found in registry)")
#: ``{"history": [{"role": "user", "parts": ...`` (SWE-agent's ``history`` holds ``{role, content}``).
_HISTORY = re.compile(r'^\s*\{\s*"history"\s*:\s*\[\s*(?:\]\s*,\s*"authType"|'
                      r'\{\s*(?:"role"\s*:\s*"(?:user|model)"\s*,\s*)?"parts"\s*:)')
_CONTEXT_CWD = re.compile(r"I'm currently working in the directory: (\S[^\n]*)|Workspace Directories:\*\*\s*\n\s*- (\S[^\n]*)")
_ASSISTANT_TYPES = {"gemini", "model"}
#: A hook's reply added to the user's message (hookSystem: ``<hook_context>...</hook_context>``).
_HOOK_CONTEXT = re.compile(r"<hook_context>.*?(?:</hook_context>|\Z)", re.S)
_NOTICE_TYPES = {"info", "error", "warning"}
#: Directories whose hash we try against projectHash; bounded so a huge session stays cheap.
_MAX_CWD_CANDIDATES = 2000
_SKIP_LOG = ("Gemini CLI prompt log (logs.json): only the person's prompts, no model answers or tool calls; "
             "the sessions are read from chats/session-*.json(l)")


class GeminiCli(TrajectoryFormat):
    name = "gemini-cli"
    agent = "gemini-cli"
    description = "Gemini CLI chat recordings (legacy .json ConversationRecord, .jsonl with $set / $rewindTo)"
    locations = ("~/.gemini/tmp/*/chats/session-*.json", "~/.gemini/tmp/*/chats/session-*.jsonl",
                 "~/.gemini/tmp/*/chats/*/*.jsonl", "~/.gemini/tmp/*/checkpoint-*.json")
    suffixes = (".json", ".jsonl")
    priority = 8
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        text = probe.text
        if _PROMPT_LOG.match(text):
            return '"type"' in text
        if _HISTORY.match(text):
            return True
        if probe.first_char == "[" and probe.first_key in ("role", "parts"):
            fields = probe.fields
            return fields.text("role") in ("user", "model") and fields.kind("parts") == "array"
        if _PRETTY_RECORD.match(text) and all(f'"{key}"' in text for key in ("sessionId", "projectHash", "messages")):
            return True  # a ConversationRecord, pretty-printed or longer than the probe
        first = probe.records[0] if probe.records and _PRETTY_RECORD.match(text) else None
        return (isinstance(first, dict) and isinstance(first.get("sessionId"), str)
                and isinstance(first.get("projectHash"), str))

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        head = Probe.read(path).head
        if _PROMPT_LOG.match(head.decode("utf-8", errors="replace")):
            report.status = "skipped"
            report.error(_SKIP_LOG)
            return
        chat = _Chat()
        if head.lstrip()[:1] == b"[" or _HISTORY.match(head.decode("utf-8", errors="replace")):
            document = load_json(path, report)
            if document is None:
                return
            history = document.get("history") if isinstance(document, dict) else document
            if not isinstance(history, list):
                report.error(f"expected a list of Content ({{role, parts}}), found {type(history).__name__}")
                return
            trajectory = _history(path, history, report)
            if trajectory is not None:
                yield trajectory
            elif not report.errors:
                report.status = "skipped"
                report.error("Gemini CLI saved chat without messages")
            return
        if head.lstrip().split(b"\n", 1)[0].strip() == b"{":  # pretty-printed legacy JSON
            document = load_json(path, report)
            if document is None:
                return
            if not isinstance(document, dict):
                report.error(f"expected a JSON object, found {type(document).__name__}")
                return
            chat.add(document, None, report)
        else:
            for line, record in iter_jsonl(path, report):
                chat.add(record, line, report)
        trajectory = chat.build(path, report)
        if trajectory is not None:
            yield trajectory
        elif not report.errors:
            report.status = "skipped"
            report.error("Gemini CLI session without messages (opened and left, or rewound to the start)")


class _Chat:
    """The session as the recorder holds it: metadata plus messages in order, by id."""

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}
        self.messages: dict[str, tuple[int | None, dict[str, Any]]] = {}
        self.models: Counter[str] = Counter()
        self.prompts: list[str] = []
        self.seen_paths: list[str] = []
        self.result_heads: list[str] = []

    def add(self, record: Any, line: int | None, report: FileReport) -> None:
        if not isinstance(record, dict):
            report.error(f"expected a JSON object, found {type(record).__name__}", line)
            return
        if "$rewindTo" in record:
            self._rewind(record["$rewindTo"], line, report)
        elif "$set" in record:
            update = record["$set"]
            if not isinstance(update, dict):
                report.error(f"'$set' should be an object, found {type(update).__name__}", line)
                return
            self._metadata(update, line, report)
        elif isinstance(record.get("id"), str):
            self.messages[record["id"]] = (line, record)  # same id: replaced, keeping its place
        elif "sessionId" in record or "projectHash" in record:
            self._metadata(record, line, report)
        else:
            report.error("neither a message (id), metadata, $set nor $rewindTo record", line)

    def _metadata(self, update: dict[str, Any], line: int | None, report: FileReport) -> None:
        messages = update.get("messages")
        self.meta.update({k: v for k, v in update.items() if k != "messages"})
        if messages is None:
            return
        if not isinstance(messages, list):
            report.error(f"'messages' should be a list, found {type(messages).__name__}", line)
            return
        self.messages = {}
        for position, message in enumerate(messages):
            if isinstance(message, dict) and isinstance(message.get("id"), str):
                self.messages[message["id"]] = (line, message)
            elif isinstance(message, dict):  # legacy records without ids still count
                self.messages[f"#{position}"] = (line, message)
            else:
                report.error(f"message {position} is not an object", line)

    def _rewind(self, target: Any, line: int | None, report: FileReport) -> None:
        if not isinstance(target, str) or target not in self.messages:
            report.error(f"$rewindTo names a message that is not in the session ({target!r}); ignored", line)
            return
        ids = list(self.messages)
        for message_id in ids[ids.index(target):]:
            del self.messages[message_id]

    # -- steps -------------------------------------------------------------------------
    def build(self, path: Path, report: FileReport) -> Trajectory | None:
        b = TrajectoryBuilder(source_format=GeminiCli.name, agent=GeminiCli.agent, source_path=str(path))
        for line, message in self.messages.values():
            try:
                self._message(b, message)
            except SHAPE_ERRORS as exc:
                report.error(shape_error(f"a {message.get('type')!r} message", exc), line)
        if not b.steps:
            return None
        meta = self.meta
        cwd = _cwd(meta, self.seen_paths, self.result_heads) or _project_root(path)
        b.set(session_id=meta.get("sessionId") if isinstance(meta.get("sessionId"), str) else None,
              model=self.models.most_common(1)[0][0] if self.models else None, cwd=cwd,
              repo=resolve_repo(b.steps, cwd=sanitize(cwd) if cwd else None),  # the redacted cwd
              started_at=parse_time(meta.get("startTime")), ended_at=parse_time(meta.get("lastUpdated")))
        if meta.get("kind") == "subagent":
            b.set(parent_session_id=path.parent.name)
        b.task = pick_task(self.prompts)
        return b.build()

    def _message(self, b: TrajectoryBuilder, message: dict[str, Any]) -> None:
        kind = expect(message, "type", str)
        stamp = message.get("timestamp")
        content = message["content"] if "content" in message else message.get("parts")
        text = as_text(content)
        if kind == "user":
            shown = as_text(message.get("displayContent")) if message.get("displayContent") else None
            if _HOOK_CONTEXT.search(text):  # what a BeforeAgent hook added: the CLI's (and maybe a checkout's)
                b.user(" ".join(m.group(0) for m in _HOOK_CONTEXT.finditer(text)), timestamp=stamp, meta=True)
                text = _HOOK_CONTEXT.sub("", text).strip()
            if shown is not None and shown.strip() and shown.strip() != text.strip():
                text = shown  # what the person typed (newer releases keep it beside what was sent)
            if text.strip():
                typed = typed_part(text)  # the files an @path named are the CLI's, not the person's words
                b.user(typed, timestamp=stamp)
                if typed != text:
                    b.user(text[len(typed):].strip(), timestamp=stamp, meta=True)
                self.prompts.append(typed)
        elif kind in _ASSISTANT_TYPES:
            model = expect(message, "model", str)
            if model:
                self.models[model] += 1
            if text.strip():
                b.assistant(text, timestamp=stamp)
            calls = expect(message, "toolCalls", list) or []
            for call in calls:
                if not isinstance(call, dict):
                    raise BadShape(f"a toolCalls entry should be an object, found {type(call).__name__}")
                self._tool(b, call, stamp)
        elif kind in _NOTICE_TYPES and text.strip():
            b.user(f"[{kind}] {text}", timestamp=stamp, meta=True)  # from the CLI, not a person

    def _tool(self, b: TrajectoryBuilder, call: dict[str, Any], stamp: Any) -> None:
        name = expect(call, "name", str, "tool call") or "tool"
        args = expect(call, "args", dict, f"tool call {name!r}") or {}
        call_id = expect(call, "id", str, f"tool call {name!r}")
        stamp = call.get("timestamp") or stamp
        command = args.get("command") if name in SHELL_TOOLS and isinstance(args.get("command"), str) else None
        paths = paths_in(args)
        if isinstance(args.get("paths"), list):
            paths += [p for p in args["paths"] if isinstance(p, str)]
        self.seen_paths += [p for p in paths if p.startswith("/")]
        b.call(name, call_id=call_id, text=command or describe(name, args), command=command, paths=paths,
               diff=edit_diff(name, args, call.get("resultDisplay"), paths), timestamp=stamp)
        status = call.get("status")
        if status in (None, "scheduled", "validating", "executing", "awaiting_approval"):
            return  # never ran to an end: the call stays open
        text, failed = _result(call)
        if len(self.result_heads) < _MAX_RESULT_HEADS:
            self.result_heads.append(text[:4000])
        exit_code = None
        if command is not None:
            match = EXIT_CODE.search(text)
            exit_code = int(match.group(1)) if match else (0 if status == "success" and not failed else None)
        is_error = failed or status != "success" or exit_code not in (None, 0)
        b.result(call_id=call_id, text=text, exit_code=exit_code, is_error=is_error, timestamp=stamp)


def _history(path: Path, history: list[Any], report: FileReport) -> Trajectory | None:
    """A bare ``[{role, parts}]`` history: calls from model parts, results from user parts."""
    b = TrajectoryBuilder(source_format=GeminiCli.name, agent=GeminiCli.agent, source_path=str(path))
    prompts: list[str] = []
    open_calls: dict[str, list[str]] = {}  # tool name -> ids of its calls not answered yet, oldest first
    cwd = _project_root(path)  # else the directory the CLI's opening context names
    for position, content in enumerate(history):
        parts = content.get("parts") if isinstance(content, dict) else None
        if not isinstance(parts, list):
            report.error(f"history entry {position} is not a Content ({{role, parts}})")
            continue
        role = content.get("role")
        texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
                 and not p.get("thought")]
        text = "\n".join(t for t in texts if t.strip())
        if role == "model":
            if text:
                b.assistant(text)
            for part in parts:
                call = part.get("functionCall") if isinstance(part, dict) else None
                if isinstance(call, dict):
                    _history_call(b, call, f"{position}:{len(b.steps)}", open_calls)
        elif role == "user":
            if text:
                meta = voice.is_harness(text)
                b.user(text, meta=meta)
                if not meta:
                    prompts.append(text)
                elif cwd is None and (found := _CONTEXT_CWD.search(text)):
                    cwd = (found.group(1) or found.group(2)).strip()
            for part in parts:
                response = part.get("functionResponse") if isinstance(part, dict) else None
                if isinstance(response, dict):
                    _history_result(b, response, open_calls)
    if not b.steps:
        return None
    b.set(cwd=cwd, repo=resolve_repo(b.steps, cwd=sanitize(cwd) if cwd else None))
    b.task = pick_task(prompts)
    return b.build()


def _history_call(b: TrajectoryBuilder, call: dict[str, Any], fallback: str,
                  open_calls: dict[str, list[str]]) -> None:
    name = call.get("name") if isinstance(call.get("name"), str) and call["name"] else "tool"
    args = call.get("args") if isinstance(call.get("args"), dict) else {}
    call_id = call.get("id") if isinstance(call.get("id"), str) and call["id"] else f"{name}-{fallback}"
    command = args.get("command") if name in SHELL_TOOLS and isinstance(args.get("command"), str) else None
    paths = paths_in(args)
    b.call(name, call_id=call_id, text=command or describe(name, args), command=command, paths=paths,
           diff=edit_diff(name, args, None, paths))
    open_calls.setdefault(name, []).append(call_id)


def _history_result(b: TrajectoryBuilder, response: dict[str, Any], open_calls: dict[str, list[str]]) -> None:
    name = response.get("name") if isinstance(response.get("name"), str) else "tool"
    waiting = open_calls.get(name) or []
    call_id = response.get("id") if isinstance(response.get("id"), str) and response["id"] in waiting else (
        waiting[0] if waiting else None)
    if call_id in waiting:
        waiting.remove(call_id)
    body = response.get("response")
    failed = isinstance(body, dict) and "error" in body
    if isinstance(body, dict):
        text = as_text(body["error"] if failed else body.get("output", body.get("llmContent", body)))
    else:
        text = as_text(body)
    exit_code = None
    if name in SHELL_TOOLS:
        match = EXIT_CODE.search(text)
        exit_code = int(match.group(1)) if match else None
    b.result(call_id=call_id, text=text, exit_code=exit_code,
             is_error=failed or exit_code not in (None, 0))  # the response says whether the tool failed


def _project_root(path: Path) -> str | None:
    """``.project_root`` of a named project folder: ``<folder>/chats/<file>`` or ``<folder>/<checkpoint>``."""
    for folder in (path.parent, path.parent.parent):
        marker = folder / ".project_root"
        try:
            if marker.is_file() and marker.stat().st_size < 4096:
                root = marker.read_text(encoding="utf-8", errors="replace").strip()
                return root if root.startswith(("/", "~")) or (len(root) > 2 and root[1] == ":") else None
        except OSError:
            return None
    return None


def _result(call: dict[str, Any]) -> tuple[str, bool]:
    """Result text of a ToolCallRecord and whether the tool reported an error in it."""
    parts = call.get("result")
    failed = False
    texts: list[str] = []
    for part in parts if isinstance(parts, list) else [parts] if isinstance(parts, dict) else []:
        response = part.get("functionResponse", {}).get("response") if isinstance(part, dict) else None
        if isinstance(response, dict):
            if "error" in response:
                failed = True
                texts.append(as_text(response["error"]))
            else:
                texts.append(as_text(response.get("output", response)))
        elif part is not None:
            texts.append(as_text(part))
    text = "\n".join(t for t in texts if t)
    if not text:
        display = call.get("resultDisplay")
        text = display if isinstance(display, str) else as_text(display) if display else ""
    if call.get("status") == "cancelled" and not text:
        text = "cancelled"
    return text, failed


def edit_diff(name: str, args: dict[str, Any], display: Any, paths: list[str]) -> str | None:
    """The diff of an edit or write call: the result's ``fileDiff``, else one made from the arguments
    (the Gemini CLI's edit tools, which its fork Qwen Code keeps)."""
    if isinstance(display, dict) and isinstance(display.get("fileDiff"), str):
        return display["fileDiff"]
    path = paths[0] if paths else "file"
    if name in ("replace", "edit", "smart_edit") and isinstance(args.get("old_string"), str):
        return unified(path, args["old_string"], str(args.get("new_string") or ""))
    if name == "write_file" and isinstance(args.get("content"), str):
        return unified(path, "", args["content"])
    return None


def _cwd(meta: dict[str, Any], seen: list[str], results: list[str]) -> str | None:
    """The project root: the recorded workspace directories, else a touched directory whose sha256 is projectHash."""
    directories = meta.get("directories")
    if isinstance(directories, list) and directories and isinstance(directories[0], str):
        return directories[0]
    target = meta.get("projectHash")
    if not isinstance(target, str):
        return None
    tried: set[str] = set()

    def search(paths: Iterable[str]) -> str | None:
        for path in paths:
            for candidate in (path, *map(str, PurePosixPath(path).parents)):
                if candidate in tried or candidate == "/" or len(tried) >= _MAX_CWD_CANDIDATES:
                    continue
                tried.add(candidate)
                if hashlib.sha256(candidate.encode()).hexdigest() == target:
                    return candidate
        return None

    # Paths the tools were given first; the ones printed in their results only when those do not tell.
    return search(seen) or search(p for text in results for p in _ABSOLUTE.findall(text))
