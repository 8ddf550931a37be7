"""Codex CLI rollouts: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl``.

Every line is ``{"timestamp", "type", "payload"}`` (``RolloutLine``): ``session_meta`` (cwd, git,
CLI version), ``turn_context`` (the model), ``response_item`` (what the model saw and did:
messages, ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` / ``web_search_call`` and
their ``*_output``) and ``event_msg`` (what the UI saw: the clean ``user_message``,
``exec_command_end`` with the exit code, ``patch_apply_end`` with the applied diff).

0.118 and later add: ``world_state`` lines (the model's context: AGENTS.md, environments; no
steps), ``tool_search_call`` / ``tool_search_output`` and ``image_generation_call`` items,
``mcp_tool_call_end`` / ``dynamic_tool_call_response`` with the call's success (an MCP call
whose ``function_call`` is not in the file is taken from the event's ``invocation``),
``turn_aborted`` (the person interrupted the turn: a meta step), ``error`` and
``task_complete.error`` (the turn ended on an error: a meta step), ``thread_name_updated`` (the
thread's name, the task when no prompt is readable), and ``session_meta`` of forked or sub-agent
threads (``forked_from_id`` / ``parent_thread_id``: the parent session).

Why the joins: ``response_item`` user messages carry injected context (AGENTS.md,
``<environment_context>``, permissions), so the human prompt comes from ``event_msg/user_message``;
0.1xx unified exec answers "Process running with session ID N" and the exit code only arrives
later in ``exec_command_end`` (joined by ``call_id``); 0.77 ``shell`` answers with JSON in a
string, ``{"output": ..., "metadata": {"exit_code": N}}``. Rollouts from before ``RolloutLine``
(a bare session header, then bare response items) are read too. See §2 of
../shared/docs/trajectory-formats.md.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from pipeline import voice
from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats._common import (
    BadShape,
    add_record,
    as_text,
    begin_patch,
    describe,
    expect,
    loads_object,
    paths_in,
    pick_task,
    repo_slug,
    unified,
)
from pipeline.ingest.identity import resolve_repo
from pipeline.ingest.reader import Probe, iter_jsonl
from pipeline.ingest.report import FileReport
from pipeline.redact import sanitize
from pipeline.trajectory import Trajectory, TrajectoryBuilder
from pipeline.trajectory.builder import parse_time

_LINE_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted", "world_state",
               "inter_agent_communication", "inter_agent_communication_metadata"}
_RESPONSE_TYPES = {"message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
                   "custom_tool_call_output", "local_shell_call", "web_search_call", "ghost_snapshot",
                   "tool_search_call", "tool_search_output", "image_generation_call"}
_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call",
          "image_generation_call"}
_ROLLOUT_HEAD = re.compile(rb'^\s*\{\s*"timestamp"\s*:\s*"[^"]*"\s*,\s*"type"\s*:\s*"(session_meta|response_item|'
                           rb'event_msg|turn_context|compacted)"')
#: Tools that run a shell command and whose output holds (or is joined to) an exit code.
_SHELLS = {"exec_command", "shell", "shell_command", "local_shell", "container.exec"}
_SHELL_BINARIES = {"bash", "sh", "zsh", "dash", "ksh", "fish"}
_IDE_REQUEST = "## My request for Codex:"
_EXIT = re.compile(r"^(?:Exit code|Process exited with code):?\s*(-?\d+)\s*$", re.M)
_RUNNING = re.compile(r"^Process running with session ID (\d+)\s*$", re.M)
_HEADER_END = "\nOutput:\n"
#: Codex refusing a tool call (in the corpus: 1 result of 897, "write_stdin failed: stdin is
#: closed for this session; rerun exec_command with tty=true to keep stdin open"; most of the
#: corpus is redacted). From codex-rs' tool handlers: "apply_patch verification failed: Failed to
#: find expected lines in <file>" (a patch that did not apply), "apply_patch handler received
#: invalid patch input", "Invalid patch: ...", "failed to parse function arguments: ...",
#: "unsupported call: <tool>", "write_stdin failed: Unknown process id <n>"; after a unified-exec
#: header ("Exit code: 1 / Wall time: ... / Output:") too. Not refusals: a command exiting non-zero,
#: the sandbox or the person declining ("rejected by user").
PROTOCOL_ERRORS = re.compile(
    r"\A\s*(?:(?:Exit code: -?\d+|Wall time: [^\n]*|Output:)\n)*(?:apply_patch verification failed|"
    r"apply_patch handler received|[Ii]nvalid patch|failed to parse (?:function|tool_search) arguments|"
    r"unsupported (?:call|custom tool call|payload)|write_stdin failed|[Uu]nknown process id)")


class CodexRollout(TrajectoryFormat):
    name = "codex"
    agent = "codex"
    description = "Codex CLI rollouts (JSONL lines: session_meta, turn_context, response_item, event_msg)"
    locations = ("~/.codex/sessions/**/rollout-*.jsonl", "~/.codex/archived_sessions/**/rollout-*.jsonl")
    suffixes = (".jsonl",)
    priority = 8
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        if _ROLLOUT_HEAD.match(probe.head):
            return True  # also when the first line (base instructions) is longer than the probe
        records = probe.records
        if not records or not isinstance(records[0], dict):
            return False
        first = records[0]
        # "type" may hold any JSON value: a list or an object is not hashable, so test for a string
        # before the set lookup (a sniff must answer for any input, never raise).
        if _str_in(first.get("type"), _LINE_TYPES) and isinstance(first.get("payload"), dict):
            return True
        # Before RolloutLine: a session header, then bare response items.
        return ("type" not in first and isinstance(first.get("id"), str) and "timestamp" in first
                and ("instructions" in first or "git" in first)
                and all(isinstance(r, dict) and (_str_in(r.get("type"), _RESPONSE_TYPES) or "record_type" in r)
                        for r in records[1:]))

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        rollout = _Rollout(path)
        for line, record in iter_jsonl(path, report):
            add_record(record, line, report, rollout.add, "line")
        for line, reason in rollout.problems:
            report.error(reason, line)
        trajectory = rollout.build()
        if trajectory is not None:
            yield trajectory
        elif not report.errors:
            report.status = "skipped"
            report.error("Codex session without messages or tool calls (opened and left, or metadata only)")


def _str_in(value: Any, names: set[str]) -> bool:
    return isinstance(value, str) and value in names


class _Rollout:
    def __init__(self, path: Path) -> None:
        self.b = TrajectoryBuilder(source_format=CodexRollout.name, agent=CodexRollout.agent, source_path=str(path))
        self.models: Counter[str] = Counter()
        self.prompts: list[str] = []
        self.problems: list[tuple[int, str]] = []
        self.first = True
        self.stamps: list[datetime] = []
        self.first_stamp: str | None = None
        self.last_stamp: str | None = None
        self.cwd: str | None = None
        self.repo: str | None = None
        # Human prompts: response_item user messages only count in files without user_message events.
        self.saw_user_event = False
        self.pending_users: list[tuple[str, Any]] = []
        # Tool call bookkeeping, all by call_id.
        self.tools: dict[str, str] = {}
        self.answered: set[str] = set()
        self.facts: dict[str, dict[str, Any]] = {}  # exit codes / errors that came before the output
        self.ended: dict[str, str] = {}  # exec_command_end output that came before the output
        self.waiting: dict[str, list[Any]] = {}  # still-running exec: [text, timestamp, exit code]
        self.exec_sessions: dict[str, str] = {}  # unified-exec session id -> the exec_command's call_id
        self.stdin_session: dict[str, str] = {}  # write_stdin call_id -> session id it polls
        self.searches: dict[str, str] = {}  # web_search_end results by query (the end comes before the item)
        self.thread_name: str | None = None

    # -- dispatch ----------------------------------------------------------------------
    def add(self, record: dict[str, Any], line: int) -> None:
        first, self.first = self.first, False
        kind = record.get("type")
        if "payload" not in record:
            if first and kind is None and "id" in record:
                self._session_meta(record, record.get("timestamp"))
            elif isinstance(kind, str) and kind in _RESPONSE_TYPES:
                self._response(record, None, line)
            elif "record_type" not in record:
                raise BadShape("neither a rollout line (type + payload) nor a Codex response item")
            return
        payload = record["payload"]
        if not isinstance(payload, dict):
            raise BadShape(f"'payload' should be an object, found {type(payload).__name__}")
        stamp = record.get("timestamp")
        if isinstance(stamp, str):  # parsed once at the end: lines are written in time order
            self.first_stamp = self.first_stamp or stamp
            self.last_stamp = stamp
        if kind == "session_meta":
            self._session_meta(payload, stamp)
        elif kind == "turn_context":
            self._turn_context(payload)
        elif kind == "response_item":
            self._response(payload, stamp, line)
        elif kind == "event_msg":
            self._event(payload, stamp)
        # compacted, world_state, inter-agent records: context for the model, no new steps.

    def _session_meta(self, meta: dict[str, Any], stamp: Any) -> None:
        git = expect(meta, "git", dict) or {}
        self.cwd = self.cwd or expect(meta, "cwd", str)
        url = git.get("repository_url")  # redacted first: a slug cut from a URL loses the URL's shape
        self.repo = self.repo or repo_slug(sanitize(url) if isinstance(url, str) else None)
        # First value wins (``set``): a fork copies its parent's lines after its own header.
        parent = meta.get("forked_from_id") or meta.get("parent_thread_id")
        self.b.set(session_id=expect(meta, "id", str), agent_version=expect(meta, "cli_version", str),
                   parent_session_id=parent if isinstance(parent, str) and parent else None,
                   cwd=self.cwd, git_branch=git.get("branch") if isinstance(git.get("branch"), str) else None)
        started = parse_time(meta.get("timestamp")) or parse_time(stamp)
        if started is not None:
            self.stamps.append(started)

    def _turn_context(self, turn: dict[str, Any]) -> None:
        model = expect(turn, "model", str)
        if not model:
            settings = (turn.get("collaboration_mode") or {}).get("settings") if isinstance(
                turn.get("collaboration_mode"), dict) else None
            model = settings.get("model") if isinstance(settings, dict) else None
        if isinstance(model, str) and model:
            self.models[model] += 1
        self.cwd = self.cwd or expect(turn, "cwd", str)

    def _response(self, item: dict[str, Any], stamp: Any, line: int) -> None:
        kind = item.get("type")
        if kind == "message":
            role = item.get("role")
            text = as_text(item.get("content"))
            if role == "assistant":
                self._flush_users()
                if text.strip():
                    self.b.assistant(text, timestamp=stamp)
            elif role == "user" and not self.saw_user_event and text.strip() and not voice.is_harness(text):
                self.pending_users.append((text, stamp))
        elif kind in _CALLS:
            self._flush_users()
            self._call(kind, item, stamp, line)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._output(item, stamp)
        elif kind == "tool_search_output":
            self._tool_search_output(item, stamp)

    def _event(self, event: dict[str, Any], stamp: Any) -> None:
        kind = event.get("type")
        if kind == "user_message":
            self._user_message(event, stamp)
        elif kind == "exec_command_end":
            self._exec_end(event, stamp)
        elif kind == "patch_apply_end":
            self._patch_end(event)
        elif kind == "mcp_tool_call_end":
            self._mcp_end(event, stamp)
        elif kind == "dynamic_tool_call_response":
            call_id = expect(event, "call_id", str, kind)
            if call_id and isinstance(event.get("success"), bool):
                self._fact(call_id, is_error=not event["success"])
        elif kind == "web_search_end":
            query = event.get("query")
            results = event.get("results")
            if isinstance(query, str) and isinstance(results, list):
                self.searches[query] = "\n".join(
                    " ".join(str(r[k]) for k in ("title", "url") if isinstance(r.get(k), str))
                    for r in results if isinstance(r, dict))
        elif kind in ("task_complete", "turn_aborted", "error"):
            self._flush_waiting()
            error = event.get("error") if kind == "task_complete" else event
            if kind == "turn_aborted":
                reason = event.get("reason")
                self.b.user(f"[turn aborted: {reason if isinstance(reason, str) else 'unknown'}]", timestamp=stamp,
                            meta=True)
            elif isinstance(error, dict) and isinstance(error.get("message"), str) and error["message"].strip():
                self.b.user(f"[turn ended on an error] {error['message']}", timestamp=stamp, meta=True)
        elif kind == "thread_name_updated":
            name = event.get("thread_name")
            self.thread_name = name.strip() if isinstance(name, str) and name.strip() else self.thread_name

    # -- people ------------------------------------------------------------------------
    def _user_message(self, event: dict[str, Any], stamp: Any) -> None:
        self.saw_user_event = True
        self.pending_users.clear()
        self._flush_waiting()
        text = expect(event, "message", str, "user_message") or ""
        images = sum(len(v) for k in ("images", "local_images") if isinstance(v := event.get(k), list))
        if images:
            text = f"{text}\n[{images} image{'s' if images > 1 else ''} attached]".strip()
        if not text.strip():
            return
        meta = event.get("kind") not in (None, "plain") or voice.is_harness(text)
        self.b.user(text, timestamp=stamp, meta=meta)
        if not meta:
            self.prompts.append(_request(text))

    def _flush_users(self) -> None:
        if self.saw_user_event:
            return
        for text, stamp in self.pending_users:
            self.b.user(text, timestamp=stamp)
            self.prompts.append(_request(text))
        self.pending_users.clear()

    # -- tool calls ----------------------------------------------------------------------
    def _call(self, kind: str, item: dict[str, Any], stamp: Any, line: int) -> None:
        call_id = expect(item, "call_id", str, kind) or (
            expect(item, "id", str, kind) if kind == "local_shell_call" else None)
        if kind == "web_search_call":
            self._web_search(item, call_id, stamp)
            return
        if kind == "tool_search_call":
            args = loads_object(item.get("arguments")) or {}
            self.b.call("tool_search", call_id=call_id, text=describe("tool_search", args) if args else "tool_search",
                        timestamp=stamp)
            if call_id:
                self.tools[call_id] = "tool_search"
            return
        if kind == "image_generation_call":
            self._image_generation(item, stamp)
            return
        if call_id is not None and call_id in self.tools:
            return  # already read: the same call written again, or taken from its mcp_tool_call_end
        if kind == "local_shell_call":
            name, raw, args = "local_shell", None, expect(item, "action", dict, kind) or {}
        else:
            name = expect(item, "name", str, kind) or "tool"
            namespace = item.get("namespace")
            if isinstance(namespace, str) and namespace and not name.startswith(namespace):
                name = namespace + name if namespace.endswith(("_", ".", "/")) else f"{namespace}.{name}"
            raw = item.get("arguments") if kind == "function_call" else item.get("input")
            args = loads_object(raw) or {}
        lowered = name.lower()
        command, patch = shell_command(lowered, args)
        if lowered == "apply_patch":
            patch = raw if isinstance(raw, str) and "*** Begin Patch" in raw else (
                args.get("input") if isinstance(args.get("input"), str) else None)
        paths, diff = begin_patch(patch) if patch else (paths_in(args), None)
        if command:
            text = command
        elif args:
            text = describe(name, args)
        else:
            text = f"{name} {raw if isinstance(raw, str) else ''}".strip()
        self.b.call(name, call_id=call_id, text=text, command=command, paths=paths, diff=diff, timestamp=stamp)
        if call_id is None:
            self.problems.append((line, f"{kind} {name!r} without a call_id: its output cannot be paired"))
            return
        self.tools[call_id] = lowered
        if lowered == "write_stdin" and args.get("session_id") is not None:
            self.stdin_session[call_id] = str(args["session_id"])

    def _web_search(self, item: dict[str, Any], call_id: str | None, stamp: Any) -> None:
        action = expect(item, "action", dict, "web_search_call") or {}
        query = action.get("query") or action.get("url") or action.get("pattern") or ""
        self.b.call("web_search", call_id=call_id, text=f"web_search {query}".strip(), timestamp=stamp)
        # The results went to the model; newer rollouts list their titles in web_search_end.
        status = item.get("status") if isinstance(item.get("status"), str) else "unknown"
        found = self.searches.pop(query, "") if isinstance(query, str) else ""
        self.b.result(call_id=call_id, text=f"web search {status}\n{found}".strip(),
                      is_error=status == "failed" or None, timestamp=stamp)
        if call_id:
            self.answered.add(call_id)

    def _image_generation(self, item: dict[str, Any], stamp: Any) -> None:
        call_id = item.get("id") if isinstance(item.get("id"), str) else None
        prompt = item.get("revised_prompt") if isinstance(item.get("revised_prompt"), str) else ""
        self.b.call("image_generation", call_id=call_id, text=f"image_generation {prompt}".strip(), timestamp=stamp)
        status = item.get("status") if isinstance(item.get("status"), str) else "unknown"
        # ``result`` is the image itself (base64): only its status is worth keeping.
        self.b.result(call_id=call_id, text=f"image generation {status}", is_error=status == "failed" or None,
                      timestamp=stamp)
        if call_id:
            self.answered.add(call_id)

    def _tool_search_output(self, item: dict[str, Any], stamp: Any) -> None:
        call_id = expect(item, "call_id", str, "tool_search_output")
        if call_id is not None and call_id in self.answered:
            return
        names = []
        for tool in item.get("tools") or []:
            if isinstance(tool, dict):
                inner = tool.get("tools") if isinstance(tool.get("tools"), list) else [tool]
                names += [t["name"] for t in inner if isinstance(t, dict) and isinstance(t.get("name"), str)]
        status = item.get("status")
        text = "tools found: " + ", ".join(names) if names else "no tools found"
        if call_id is None:
            self.b.result(text=text, timestamp=stamp)
        else:
            self._answer(call_id, text, is_error=status == "failed" or None, stamp=stamp)

    def _mcp_end(self, event: dict[str, Any], stamp: Any) -> None:
        """An MCP call's end: its success, and the call itself when its ``function_call`` is not in the file."""
        result = event.get("result")
        call_id = expect(event, "call_id", str, "mcp_tool_call_end")
        failed = isinstance(result, dict) and ("Err" in result or (
            isinstance(result.get("Ok"), dict) and result["Ok"].get("isError") is True))
        if call_id is None:
            return
        invocation = event.get("invocation")
        if call_id not in self.tools and isinstance(invocation, dict):
            server, tool = invocation.get("server"), invocation.get("tool")
            name = f"mcp__{server}__{tool}" if isinstance(server, str) and isinstance(tool, str) else "mcp_tool"
            args = invocation.get("arguments") if isinstance(invocation.get("arguments"), dict) else {}
            self.b.call(name, call_id=call_id, text=describe(name, args) if args else name, paths=paths_in(args),
                        timestamp=stamp)
            self.tools[call_id] = name.lower()
            if isinstance(result, dict):
                ok = result.get("Ok")
                text = as_text(ok.get("content")) if isinstance(ok, dict) else as_text(result.get("Err"))
                self._answer(call_id, text, is_error=failed, stamp=stamp)
            return
        if failed:
            self._fact(call_id, is_error=True)

    def _output(self, item: dict[str, Any], stamp: Any) -> None:
        call_id = expect(item, "call_id", str, str(item.get("type")))
        output = item.get("output")
        text, exit_code, is_error = _read_output(output)
        if call_id is None:
            self.b.result(text=text, exit_code=exit_code, is_error=is_error, timestamp=stamp)
            return
        if call_id in self.answered:
            return  # the same output written again (resumed session replaying history)
        tool = self.tools.get(call_id, "")
        if tool in _SHELLS:
            header_code, body = _exec_header(text)
            exit_code = exit_code if exit_code is not None else header_code
            if call_id in self.ended:
                text = self.ended.pop(call_id) or body
            elif exit_code is None and (running := _RUNNING.search(text.split(_HEADER_END, 1)[0])):
                # Unified exec still running: the exit code comes with exec_command_end.
                self.waiting[call_id] = [body, stamp, None]
                self.exec_sessions[running.group(1)] = call_id
                return
            else:
                text = body
            self._answer(call_id, text, exit_code=exit_code, is_error=is_error, stamp=stamp)
            return
        if tool == "write_stdin":
            header_code, body = _exec_header(text)
            owner = self.exec_sessions.get(self.stdin_session.get(call_id, ""))
            if owner in self.waiting and header_code is not None:
                self.waiting[owner][2] = header_code
                self.waiting[owner][0] = (self.waiting[owner][0] + "\n" + body).strip()
        if tool == "apply_patch" and exit_code is not None:
            is_error, exit_code = exit_code != 0, None  # not a shell command: success only
        self._answer(call_id, text, exit_code=exit_code, is_error=is_error, stamp=stamp)

    def _answer(self, call_id: str, text: str, *, exit_code: int | None = None, is_error: bool | None = None,
                stamp: Any = None) -> None:
        facts = self.facts.pop(call_id, {})
        exit_code = facts.get("exit_code", exit_code)
        is_error = facts.get("is_error", is_error)
        self.b.result(call_id=call_id, text=text, exit_code=exit_code, is_error=is_error, timestamp=stamp)
        self.answered.add(call_id)

    def _fact(self, call_id: str, **facts: Any) -> None:
        """A late fact about a call: amend its result, or keep it until the result comes."""
        facts = {k: v for k, v in facts.items() if v is not None}
        if not facts:
            return
        if call_id in self.answered:
            self.b.amend_result(call_id, **facts)
        else:
            self.facts.setdefault(call_id, {}).update(facts)

    def _exec_end(self, event: dict[str, Any], stamp: Any) -> None:
        call_id = expect(event, "call_id", str, "exec_command_end")
        if call_id is None or call_id not in self.tools:
            return  # a command the person ran themselves (``!cmd``), not a tool call
        exit_code = expect(event, "exit_code", int, "exec_command_end")
        failed = True if exit_code is None and event.get("status") == "failed" else None
        output = event.get("aggregated_output")
        if not isinstance(output, str):
            output = "\n".join(s for k in ("stdout", "stderr") if isinstance(s := event.get(k), str) and s)
        if call_id in self.waiting:
            text, _, polled = self.waiting.pop(call_id)
            self._answer(call_id, output if output.strip() else text,
                         exit_code=exit_code if exit_code is not None else polled, is_error=failed, stamp=stamp)
            return
        if call_id not in self.answered:
            self.ended[call_id] = output
        self._fact(call_id, exit_code=exit_code, is_error=failed)

    def _patch_end(self, event: dict[str, Any]) -> None:
        call_id = expect(event, "call_id", str, "patch_apply_end")
        changes = expect(event, "changes", dict, "patch_apply_end") or {}
        if call_id is None:
            return
        paths, diffs = [], []
        for absolute, change in changes.items():
            path = self._relative(str(absolute))
            paths.append(path)
            if isinstance(change, dict):
                if isinstance(change.get("unified_diff"), str):
                    diffs.append(f"--- a/{path}\n+++ b/{path}\n{change['unified_diff']}")
                elif isinstance(change.get("content"), str):
                    diffs.append(unified(path, "", change["content"]))
        if call_id in self.tools:
            self.b.amend_result(call_id, paths=paths, diff="\n".join(diffs) or None)
        success = event.get("success")
        self._fact(call_id, is_error=(not success) if isinstance(success, bool) else None)

    def _relative(self, path: str) -> str:
        if self.cwd and path.startswith(self.cwd.rstrip("/") + "/"):
            return path[len(self.cwd.rstrip("/")) + 1:]
        return path

    def _flush_waiting(self) -> None:
        for call_id, (text, stamp, polled) in list(self.waiting.items()):
            self._answer(call_id, text, exit_code=polled, stamp=stamp)
        self.waiting.clear()

    # -- result ------------------------------------------------------------------------
    def build(self) -> Trajectory | None:
        self._flush_users()
        self._flush_waiting()
        b = self.b
        if not b.steps:
            return None
        if self.models:
            b.set(model=self.models.most_common(1)[0][0])
        b.set(cwd=self.cwd)
        cwd = b.fields.get("cwd")  # redacted, so its last part cannot be half of a credential
        b.set(repo=resolve_repo(b.steps, cwd=cwd, remote=self.repo))
        stamps = [*self.stamps, *(s.timestamp for s in b.steps if s.timestamp is not None),
                  *(t for t in (parse_time(self.first_stamp), parse_time(self.last_stamp)) if t is not None)]
        if stamps:
            b.set(started_at=min(stamps), ended_at=max(stamps))
        b.task = pick_task(self.prompts) or self.thread_name
        return b.build()


def _request(text: str) -> str:
    """The person's words in an IDE prompt that also lists open files ("## My request for Codex:")."""
    head, found, request = text.partition(_IDE_REQUEST)
    return request.strip() if found and request.strip() else text.strip()


def shell_command(tool: str, args: dict[str, Any]) -> tuple[str | None, str | None]:
    """(shell command, apply_patch text) of a call's arguments."""
    if tool not in _SHELLS:
        return None, None
    value = args.get("cmd") if tool == "exec_command" else None
    if value is None:
        value = args.get("command")
    if isinstance(value, str):
        return value or None, None
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        if value[0] == "apply_patch" and len(value) > 1:
            return None, value[1]  # old Codex applied patches through the shell tool
        if len(value) >= 3 and PurePosixPath(value[0]).name in _SHELL_BINARIES and value[1] in ("-lc", "-c"):
            return value[2], None
        return shlex.join(value), None
    return None, None


def _read_output(output: Any) -> tuple[str, int | None, bool | None]:
    """(text, exit code, is_error) of a ``*_output`` payload in any of its serializations."""
    if isinstance(output, dict):
        success = output.get("success")
        return as_text(output.get("content", output)), None, (not success) if isinstance(success, bool) else None
    if isinstance(output, list):
        return as_text(output), None, None
    text = output if isinstance(output, str) else ("" if output is None else str(output))
    wrapped = loads_object(text) if text.startswith("{") else None
    if wrapped is not None and isinstance(wrapped.get("output"), str) and isinstance(wrapped.get("metadata"), dict):
        code = wrapped["metadata"].get("exit_code")
        return wrapped["output"], code if isinstance(code, int) and not isinstance(code, bool) else None, None
    return text, None, None


def _exec_header(text: str) -> tuple[int | None, str]:
    """Exit code and body of a "Chunk ID / Wall time / Process exited with code N / Output:" answer."""
    head, found, body = text.partition(_HEADER_END)
    if not found or len(head) > 400:
        return None, text
    match = _EXIT.search(head)
    return (int(match.group(1)) if match else None), body
