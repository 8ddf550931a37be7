"""GitHub Copilot CLI session state: ``$COPILOT_HOME/session-state/<sessionId>/events.jsonl``.

``COPILOT_HOME`` defaults to ``~/.copilot`` on every platform (``%USERPROFILE%\\.copilot`` on
Windows); builds before 1.0 wrote the same events to ``session-state/<sessionId>.jsonl``. Beside
the log lie ``workspace.yaml`` (id, cwd, summary) and ``checkpoints/`` (compaction summaries as
Markdown): both repeat what the events hold and are not read.

One event per line, ``{type, data, id, timestamp, parentId}`` (the SDK's generated
``session-events.ts``; ``agentId`` marks a sub-agent's events in newer builds, ``parentToolCallId``
in ``data`` in 1.0.x). The log is only appended to -- a resumed session adds ``session.resume``
and goes on in the same file, a rewind is not persisted -- so it is read incrementally.

* ``session.start`` / ``session.resume``: ``context`` holds cwd, git root, branch and
  ``repository`` (``owner/name`` from the remote); ``copilotVersion``.
* ``user.message``: ``content`` is what the person typed (``transformedContent`` adds reminders).
* ``assistant.message``: the text and ``toolRequests[] {toolCallId, name, arguments}``.
* ``tool.execution_start`` / ``tool.execution_complete {success, result {content,
  detailedContent}, error {message}, model}``, joined by ``toolCallId``.

Shell tools (``bash``, ``powershell``) end their output with ``<exited with exit code N>``. A
command still running after its wait, or started with ``mode: async``, answers "still running"
/ "started in background" with a ``shellId``; its exit code comes later, from
``read_bash``/``read_powershell`` (``<command with id: N exited with exit code N>``) or a
``system.notification`` ``{kind: {type: shell_completed, shellId, exitCode}}``, and is put on the
command's own result. Sub-agent steps stay in the session as ``sidechain`` steps.
"""

from __future__ import annotations

import pickle
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats._common import (
    add_record,
    as_dict,
    as_list,
    as_text,
    describe,
    expect,
    loads_object,
    paths_in,
    pick_task,
    unified,
)
from pipeline.ingest.identity import resolve_repo
from pipeline.ingest.reader import Checkpoint, Probe, iter_jsonl
from pipeline.ingest.report import FileReport
from pipeline.redact import Sanitized, sanitize
from pipeline.trajectory import Trajectory, TrajectoryBuilder
from pipeline.trajectory.builder import parse_time

_SHELLS = {"bash", "powershell"}
#: Tools that talk to a shell session a shell tool left running (by ``shellId``).
_POLLS = {"read_bash", "read_powershell", "write_bash", "write_powershell", "stop_bash", "stop_powershell"}
_EXITED = re.compile(r"<(?:command with id: (?P<id>[^\s>]+) )?exited with exit code (?P<code>-?\d+)>\s*\Z")
_RUNNING = re.compile(r"<command (?:with shellId: (?P<waited>[^\s>]+) is still running|"
                      r"started in background with shellId: (?P<started>[^\s>]+)>)")
_DRIVE = re.compile(r"^[A-Za-z]:/")
#: ``session.start``, ``tool.execution_complete``, ``abort`` ...: newer builds add namespaces
#: (``permission``, ``elicitation``, ``external_tool`` ...), so the shape is checked, not a list.
_EVENT_TYPE = re.compile(r"^[a-z][a-z_]*(?:\.[a-z_]+)*$")
#: Copilot CLI refusing a tool call (in the corpus: 3 results of 354 -- "No match found" twice,
#: "Tool 'task_complete' does not exist." once; "Command not executed. The 'Stop-Process' command
#: must specify ..." is its shell guard). From the 1.0.10 bundle (``app.js``): the edit tool's
#: "No match found" / "Multiple matches found" / "Invalid inputs: ..." / "No changes made: old_str
#: and new_str are the same", the file tools' "Path does not exist" / "Path already exists" / "Path
#: not absolute" / "Path not provided" / "Parent directory does not exist" / "UNC path blocked",
#: "Tool '<name>' does not exist", "Tool call arguments are missing". Not refusals: a command that
#: ran and exited non-zero, an MCP server's own error, rg rejecting an argument.
PROTOCOL_ERRORS = re.compile(
    r"\A\s*(?:No match found|Multiple matches found|Invalid inputs: |No changes made: old_str and new_str|"
    r"Path (?:does not exist|already exists|not absolute|not provided)|Parent directory \S.* does not exist|"
    r"Parent directory does not exist|UNC path blocked|Tool '[^'\n]{1,200}' does not exist|"
    r"Tool call arguments are missing|Command not executed\.)")


class CopilotCli(TrajectoryFormat):
    name = "copilot-cli"
    agent = "copilot-cli"
    description = "GitHub Copilot CLI session state (events.jsonl, read as it grows; sub-agents as sidechain steps)"
    locations = ("${COPILOT_HOME:-~/.copilot}/session-state/*/events.jsonl",
                 "${COPILOT_HOME:-~/.copilot}/session-state/*.jsonl")
    suffixes = (".jsonl",)
    priority = 8
    incremental = True
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        if not probe.records or not isinstance(probe.records[0], dict):
            return False
        records = [r for r in probe.records[:4] if isinstance(r, dict)]
        for record in records:
            kind, data = record.get("type"), record.get("data")
            if not isinstance(kind, str) or not isinstance(data, dict) or not _EVENT_TYPE.match(kind):
                return False
            if kind in ("session.start", "session.resume") and (
                    data.get("producer") == "copilot-agent" or "copilotVersion" in data or "resumeTime" in data):
                return True
        first = records[0]  # a log that lost its first line: the event envelope alone
        return all(key in first for key in ("id", "timestamp", "parentId")) and "sessionId" not in first

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        return self._read(path, report, None)

    def resume(self, path: Path, report: FileReport, checkpoint: Checkpoint) -> Iterator[Trajectory]:
        """Continue an events.jsonl that grew: the pickled ``_Session`` (its builder, open calls and
        shell sessions) as it stood after the last complete line reads only the appended lines."""
        return self._read(path, report, checkpoint)

    def _read(self, path: Path, report: FileReport, checkpoint: Checkpoint | None) -> Iterator[Trajectory]:
        session = pickle.loads(checkpoint.state) if checkpoint and checkpoint.state else _Session(path)
        snapshot = None
        for line, record in iter_jsonl(path, report, checkpoint=checkpoint):
            if checkpoint is not None and snapshot is None and line > checkpoint.line:
                snapshot = pickle.dumps(session)  # a last line without its newline: resume from before it
            add_record(record, line, report, session.add, "event")
        if checkpoint is not None:
            checkpoint.state = snapshot or pickle.dumps(session)
        trajectory = session.build()
        if trajectory is not None:
            yield trajectory
        elif not report.errors:
            report.status = "skipped"
            report.error("Copilot CLI session without messages (started and left)")


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _clean(value: Any) -> Sanitized | None:
    """An id or name the session keeps between reads: redacted before it is held (and pickled)."""
    return sanitize(value) if isinstance(value, str) and value else None


class _Session:
    """One events.jsonl: the builder plus what pairs calls, results and shell sessions."""

    def __init__(self, path: Path) -> None:
        self.b = TrajectoryBuilder(source_format=CopilotCli.name, agent=CopilotCli.agent, source_path=str(path))
        self.calls: dict[Sanitized, Sanitized] = {}       # call id -> tool name
        self.shell_of_poll: dict[Sanitized, Sanitized] = {}  # poll call id -> the shellId it named
        self.shells: dict[Sanitized, Sanitized] = {}      # shellId -> the command's call id
        self.user_calls: set[Sanitized] = set()           # the person's own `!cmd` runs
        self.models: Counter[Sanitized] = Counter()
        self.fallback_model: Sanitized | None = None
        self.remote: Sanitized | None = None
        self.prompts: list[int] = []
        self.started: Any = None
        self.last_stamp: Any = None

    def add(self, event: dict[str, Any], line: int) -> None:
        kind = expect(event, "type", str)
        data = expect(event, "data", dict) or {}
        stamp = event.get("timestamp")
        if isinstance(stamp, str):
            self.last_stamp = stamp
        side = bool(_str(event.get("agentId")) or _str(data.get("parentToolCallId")))
        handler = _HANDLERS.get(kind or "")
        if handler is not None:
            getattr(self, handler)(data, stamp, side)

    # -- session ---------------------------------------------------------------------------
    def _start(self, data: dict[str, Any], stamp: Any, side: bool) -> None:
        self.started = self.started or data.get("startTime") or stamp
        self.b.set(session_id=_str(data.get("sessionId")), agent_version=_str(data.get("copilotVersion")))
        self._context(as_dict(data.get("context")), stamp, side)
        self.fallback_model = self.fallback_model or _clean(data.get("selectedModel"))

    def _context(self, context: dict[str, Any], stamp: Any, side: bool) -> None:
        self.b.set(cwd=_str(context.get("cwd")), git_branch=_str(context.get("branch")))
        repository = _str(context.get("repository"))
        if repository and not self.remote:
            self.remote = sanitize("/".join(repository.split("/")[-2:]))  # Azure DevOps: org/project/repo

    def _model_change(self, data: dict[str, Any], stamp: Any, side: bool) -> None:
        self.fallback_model = _clean(data.get("newModel")) or self.fallback_model

    def _shutdown(self, data: dict[str, Any], stamp: Any, side: bool) -> None:
        self.fallback_model = self.fallback_model or _clean(data.get("currentModel"))

    def _notice(self, data: dict[str, Any], stamp: Any, side: bool) -> None:
        message = _str(data.get("message"))
        if message:
            self.b.user(f"[error] {message}", timestamp=stamp, meta=True, sidechain=side)

    def _compaction(self, data: dict[str, Any], stamp: Any, side: bool) -> None:
        summary = _str(data.get("summaryContent"))
        if summary:
            self.b.user(f"[compaction summary]\n{summary}", timestamp=stamp, meta=True, sidechain=side)

    def _notification(self, data: dict[str, Any], stamp: Any, side: bool) -> None:
        content = _str(data.get("content"))
        if content:
            self.b.user(content, timestamp=stamp, meta=True, sidechain=side)
        kind = as_dict(data.get("kind"))
        code = kind.get("exitCode")
        if kind.get("type") == "shell_completed" and isinstance(code, int) and not isinstance(code, bool):
            self._shell_exited(_clean(kind.get("shellId")), code)

    # -- people and the model --------------------------------------------------------------
    def _user(self, data: dict[str, Any], stamp: Any, side: bool) -> None:
        text = expect(data, "content", str, "user.message") or ""
        if not text.strip():
            return  # autopilot's continuation nudges carry no words of the person's
        source = _str(data.get("source"))
        meta = bool(source and source != "user") or data.get("isAutopilotContinuation") is True
        index = self.b.user(text, timestamp=stamp, meta=meta, sidechain=side)
        if not meta and not side:
            self.prompts.append(index)

    def _assistant(self, data: dict[str, Any], stamp: Any, side: bool) -> None:
        text = expect(data, "content", str, "assistant.message") or ""
        model = _clean(data.get("model"))
        if model:
            self.models[model] += 1
        if text.strip():
            self.b.assistant(text, timestamp=stamp, sidechain=side)
        for request in as_list(data.get("toolRequests")):
            if isinstance(request, dict):
                self._call(request.get("toolCallId"), request.get("name"), request.get("arguments"), stamp, side)

    # -- tools -----------------------------------------------------------------------------
    def _user_requested(self, data: dict[str, Any], stamp: Any, side: bool) -> None:
        call_id = _clean(data.get("toolCallId"))
        if call_id:
            self.user_calls.add(call_id)

    def _tool_start(self, data: dict[str, Any], stamp: Any, side: bool) -> None:
        self._call(data.get("toolCallId"), data.get("toolName"), data.get("arguments"), stamp, side)

    def _call(self, raw_id: Any, raw_name: Any, raw_args: Any, stamp: Any, side: bool) -> None:
        call_id = _clean(raw_id)
        if call_id is not None and (call_id in self.calls or call_id in self.user_calls):
            return  # the request was seen; this is its start (or the person's own command)
        name = _str(raw_name) or "tool"
        args = loads_object(raw_args) or {}
        command = args["command"] if name in _SHELLS and isinstance(args.get("command"), str) else None
        paths = [self._relative(p) for p in paths_in(args)]
        self.b.call(name, call_id=_str(raw_id), text=command or describe(name, args), command=command,
                    paths=paths, diff=_diff(name, args, paths), timestamp=stamp, sidechain=side)
        if call_id is None:
            return
        self.calls[call_id] = sanitize(name)
        shell_id = _clean(args.get("shellId"))
        if shell_id and name in _POLLS:
            self.shell_of_poll[call_id] = shell_id
        elif shell_id and command:
            self.shells[shell_id] = call_id  # an async command named by the model

    def _relative(self, path: str) -> str:
        """``D:\\repo\\src\\a.rs`` in a session run in ``D:\\repo`` -> ``src/a.rs``."""
        cwd = self.b.fields.get("cwd")
        if not cwd:
            return path
        flat, root = path.replace("\\", "/"), cwd.replace("\\", "/").rstrip("/") + "/"
        windows = bool(_DRIVE.match(root))
        if (flat.lower() if windows else flat).startswith(root.lower() if windows else root):
            return flat[len(root):] or path
        return path

    def _tool_complete(self, data: dict[str, Any], stamp: Any, side: bool) -> None:
        raw_id = _str(data.get("toolCallId"))
        call_id = _clean(raw_id)
        if call_id in self.user_calls:
            return
        model = _clean(data.get("model"))
        if model:
            self.models[model] += 1
        tool = self.calls.get(call_id) if call_id else None
        text, failed = _result(data)
        exit_code = None
        shell = as_dict(data.get("shellExecution")).get("exitCode")
        exited = _EXITED.search(text[-200:])
        if tool in _SHELLS:
            exit_code = shell if isinstance(shell, int) and not isinstance(shell, bool) else (
                int(exited["code"]) if exited else None)
            running = _RUNNING.search(text[-600:]) if exit_code is None else None
            shell_id = _clean(running["waited"] or running["started"]) if running else None
            if shell_id and call_id:
                self.shells[shell_id] = call_id
        elif tool in _POLLS and exited and call_id:
            self._shell_exited(self.shell_of_poll.get(call_id) or _clean(exited["id"]), int(exited["code"]))
        is_error = True if failed else (None if tool in _SHELLS else False)  # a shell's: its exit code
        self.b.result(call_id=raw_id, text=text, exit_code=exit_code, is_error=is_error, timestamp=stamp,
                      sidechain=side)

    def _shell_exited(self, shell_id: Sanitized | None, code: int) -> None:
        """A command that went on running has ended: its result gets the exit code."""
        owner = self.shells.get(shell_id) if shell_id else None
        if owner is not None:
            self.b.amend_result(owner, exit_code=code)

    # -- result ----------------------------------------------------------------------------
    def build(self) -> Trajectory | None:
        b = self.b
        if not b.steps:
            return None
        model = self.models.most_common(1)[0][0] if self.models else self.fallback_model
        b.set(model=model)
        cwd = b.fields.get("cwd")  # redacted already
        b.set(repo=resolve_repo(b.steps, cwd=cwd, remote=self.remote))
        stamps = [t for t in (parse_time(self.started), parse_time(self.last_stamp)) if t is not None]
        stamps += [s.timestamp for s in b.steps if s.timestamp is not None]
        if stamps:
            b.set(started_at=min(stamps), ended_at=max(stamps))
        b.task = pick_task([b.steps[i].text for i in self.prompts])
        return b.build()


_HANDLERS = {
    "session.start": "_start", "session.resume": "_start", "session.context_changed": "_context",
    "session.model_change": "_model_change", "session.shutdown": "_shutdown", "session.error": "_notice",
    "session.compaction_complete": "_compaction", "system.notification": "_notification",
    "user.message": "_user", "assistant.message": "_assistant", "tool.user_requested": "_user_requested",
    "tool.execution_start": "_tool_start", "tool.execution_complete": "_tool_complete",
}


def _result(data: dict[str, Any]) -> tuple[str, bool]:
    """(text the model was given, whether the tool failed) of a ``tool.execution_complete``."""
    error = data.get("error")
    failed = data.get("success") is False or error is not None
    if error is not None:
        message = as_dict(error).get("message") if isinstance(error, dict) else error
        text = message if isinstance(message, str) else as_text(message)
        if text:
            return text, True
    result = as_dict(data.get("result"))
    content = result.get("content")
    text = content if isinstance(content, str) else as_text(content) if content is not None else ""
    if not text:
        detailed = result.get("detailedContent")
        text = detailed if isinstance(detailed, str) else as_text(result.get("contents"))
    return text, failed


def _diff(name: str, args: dict[str, Any], paths: list[str]) -> str | None:
    """A unified diff of what an edit tool was asked to change (``edit``, ``create``, 1.0's
    ``str_replace_editor``)."""
    path = paths[0] if paths else "file"
    old, new = args.get("old_str"), args.get("new_str")
    if name in ("edit", "str_replace_editor") and isinstance(old, str):
        return unified(path, old, new if isinstance(new, str) else "")
    text = args.get("file_text")
    if name in ("create", "str_replace_editor") and isinstance(text, str):
        return unified(path, "", text)
    return None
