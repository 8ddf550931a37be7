"""OpenHands (V0) event streams, in the three shapes found on disk.

* an exported trajectory: a JSON list of serialized events (``id, timestamp, source,
  action|observation, args|extras+content, cause, tool_call_metadata``);
* evaluation harness ``output.jsonl``: one row per instance with ``instance_id``,
  ``instruction``, ``instance``, ``metadata.llm_config``, ``history[]`` and
  ``test_result.git_patch`` (``test_result.report.resolved`` once SWE-bench evaluation ran);
* GitHub resolver ``output.jsonl``: one row per issue with ``issue``, ``git_patch``,
  ``history[]`` of older events (arguments inlined, no ``id``/``source``/``cause``) and
  ``success``, an outcome label.

Every row of an ``output.jsonl`` is its own trajectory. Actions that act on the environment
(``run``, ``run_ipython``, ``read``, ``write``, ``edit``, ``browse``, MCP calls ...) are tool
calls; ``message``, ``think`` and ``finish`` are conversation; ``system``, ``recall``, agent
state changes and condensation are bookkeeping and left out. An observation answers the action
its ``cause`` names (in the older schema: the action before it). ``run`` observations carry the
exit code (``extras.metadata.exit_code``; -1 means still running at the timeout, so no code).
The patch the harness collected becomes the result of a final ``submit`` call, as SWE-agent's
and mini-swe-agent's submissions are. See §5 of ../shared/docs/trajectory-formats.md.

The V0 server's own store, ``~/.openhands/sessions/<id>/``, keeps one file per event
(``events/<n>.json``) and pages of 25 of them (``event_cache/<start>-<end>.json``, a JSON list
of events, written once a page is full). A session is read from its first page, ``0-25.json``:
every page in order, then the event files past the last page; the other pages are reported
skipped.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.fields import Fields
from pipeline.ingest.formats._common import (
    SHAPE_ERRORS,
    as_dict,
    as_str,
    dumps,
    repo_from_instance,
    shape_error,
    text_of,
    unified,
    unix_newlines,
)
from pipeline.ingest.identity import resolve_repo
from pipeline.ingest.reader import Probe, iter_jsonl, load_json
from pipeline.ingest.report import FileReport
from pipeline.trajectory import Outcome, Trajectory, TrajectoryBuilder

_LIST_START = re.compile(r'\s*\[\s*\{')
_CACHE_PAGE = re.compile(r"^(\d+)-(\d+)\.json$")
_SOURCE = re.compile(r'"source"\s*:\s*"(?:user|agent|environment)"')
_EVENT_KIND = re.compile(r'"(?:action|observation)"\s*:\s*"[a-z_]+"')
_HISTORY = re.compile(r'"history"\s*:\s*\[\s*[\]{]')
_ROW_ID = re.compile(r'"(?:instance_id|issue_type)"\s*:')
_EVAL_METADATA = re.compile(r'"agent_class"\s*:\s*"\w*Agent"')

#: Actions that are not tool calls: conversation (handled) and bookkeeping (skipped).
CONVERSATION = frozenset({"message", "think", "finish", "reject"})
BOOKKEEPING = frozenset({"system", "recall", "change_agent_state", "condensation", "condensation_request",
                         "null", "pause", "resume", "stop", "start", "agent_state_changed"})
_SKIPPED_OBSERVATIONS = frozenset({"null", "agent_state_changed", "recall", "think", "condense", "delegate_start"})
#: Serialization keys around an event's own fields; older events inline their args / extras beside them.
_ENVELOPE = frozenset({"id", "timestamp", "source", "message", "cause", "action", "observation", "args", "extras",
                       "tool_call_metadata", "llm_metrics", "timeout", "success", "hidden"})
_DEFAULT_TOOL = {"run": "execute_bash", "run_ipython": "execute_ipython_cell", "browse": "browser",
                 "browse_interactive": "browser"}
_EDITORS = frozenset({"str_replace_editor", "edit_file", "file_editor"})
#: OpenHands' agentskills helpers, called from IPython cells by older CodeAct agents.
AGENTSKILLS = frozenset({"open_file", "goto_line", "scroll_down", "scroll_up", "search_dir", "search_file",
                         "find_file", "create_file", "edit_file_by_replace", "insert_content_at_line",
                         "append_file", "edit_file_by_line", "parse_pdf", "parse_docx", "parse_latex",
                         "parse_pptx", "parse_audio", "parse_image", "parse_video"})
_PATH_FIRST = frozenset({"open_file", "create_file", "edit_file_by_replace", "insert_content_at_line",
                         "append_file", "edit_file_by_line"})
_SKILL_EDITS = frozenset({"create_file", "edit_file_by_replace", "insert_content_at_line", "append_file",
                          "edit_file_by_line"})
_SKILL_CALL = re.compile(r"^\s*(\w+)\(\s*(?:(?:file_name|path|filename)\s*=\s*)?(['\"])(.*?)\2", re.S)
_EDITOR_COMMAND = re.compile(r"'command':\s*'(\w+)'")
_IPYTHON_ERROR = re.compile(r"^-{20,}\n\S*(?:Error|Exception)\w*\s+Traceback \(most recent call last\)", re.M)
_SKILL_ERROR = re.compile(r"^\[(?:Your proposed edit has introduced new syntax error|No exact match found in|"
                          r"Error:|File .* not found)")
#: OpenHands refusing a tool call (in the corpus: 35 results of 138). Its file editor answers
#: "ERROR:\n" and then "No replacement was performed, old_str `...` did not appear verbatim in
#: <file>." (13), "No replacement was performed. Multiple occurrences of old_str ..." (4),
#: "Parameter `old_str` is required for command: str_replace." (5), "Invalid `view_range`
#: parameter: ..." (1), "Invalid `new_str` parameter: ... must be different." (1); older agentskills
#: answer "[Your proposed edit has introduced new syntax error(s). ...]" (8, the edit was not
#: applied) or "[No exact match found in <file> for ...]" (3). Also: "Invalid `path` parameter",
#: "The path <p> does not exist", "File already exists at", "Unrecognized command", "No edit history
#: found", and function-call validation ("Parameter 'command' is expected to be one of [...]",
#: "Missing required argument", "Tool <x> is not registered"). Not refusals: a command's exit code,
#: `make` or `cmake` failing, `bash: ponyc: command not found` (the project's tool is missing).
PROTOCOL_ERRORS = re.compile(
    r"\A\s*(?:ERROR:\s*)?(?:No replacement was performed|Invalid `\w+` parameter|Parameter `\w+` is required|"
    r"The path \S+ (?:is not an absolute path|does not exist)|File already exists at|Unrecognized command|"
    r"No edit history found|The `view_range` parameter is not allowed|Parameter '\w+' is expected to be one of|"
    r"Missing required argument|Invalid JSON in tool call arguments|Tool \S+ is not registered|"
    r"\[(?:Your proposed edit has introduced new syntax error|No exact match found in ))")
_JUPYTER_CWD = re.compile(r"\[Jupyter current working directory: ([^\]\n]+)\]")
_ISSUE = re.compile(r"<issue_description>\s*(.*?)\s*</issue_description>", re.S)


class OpenHands(TrajectoryFormat):
    name = "openhands"
    agent = "openhands"
    description = ("OpenHands V0 event streams: exported trajectories (JSON list of events) and "
                   "evaluation / GitHub resolver output.jsonl rows")
    locations = ("<exported trajectory>.json (UI: Export trajectory)",
                 "evaluation/evaluation_outputs/outputs/<dataset>/<agent>/<model>_maxiter_<n>/output.jsonl",
                 "<resolver output dir>/output.jsonl",
                 "~/.openhands/sessions/<id>/event_cache/0-25.json (V0 server store)")
    suffixes = (".json", ".jsonl")
    priority = 3
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        text = probe.text
        if probe.first_char == "[":
            start = text[:8192]
            if _LIST_START.match(text) and _SOURCE.search(start) and _EVENT_KIND.search(start):
                return True
            # The first event is longer than that: exports begin with the system prompt (13 KB and
            # more) before the event's "action", so judge it by its fields, wherever they fall.
            return probe.first_key in _ENVELOPE and _is_event(probe.fields)
        if probe.first_char == "{":
            return bool(_HISTORY.search(text) and _ROW_ID.search(text)) or bool(_EVAL_METADATA.search(text))
        return False

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        with path.open("rb") as handle:
            first = handle.read(4096).lstrip()[:1]
        if first == b"[":
            page = _CACHE_PAGE.match(path.name) if path.parent.name == "event_cache" else None
            if page is not None and page.group(1) != "0":
                report.status = "skipped"
                report.error(f"a page of an OpenHands session's event cache: read with the session's first page, "
                             f"{path.parent.name}/0-{int(page.group(2)) - int(page.group(1))}.json")
                return
            events = _session_events(path, report) if page is not None else load_json(path, report)
            if events is None and report.errors:
                return  # load_json said why
            if not isinstance(events, list):
                report.error(f"expected a JSON list of events, found {type(events).__name__}")
                return
            stream = _Stream(path, report, where="event")
            stream.events(events)
            if stream.has_steps:
                yield stream.build()
            else:
                report.error("the event list holds no messages or actions")
            return
        for line, row in iter_jsonl(path, report):
            if not isinstance(row, dict):
                report.error(f"expected a JSON object (one run per line), found {type(row).__name__}", line)
                continue
            trajectory = _row(path, report, line, row)
            if trajectory is not None:
                yield trajectory


def _session_events(first: Path, report: FileReport) -> list[Any] | None:
    """A V0 session's events: its cache pages in order, then the event files written after the last page."""
    pages = sorted((int(m.group(1)), p) for p in first.parent.glob("*.json") if (m := _CACHE_PAGE.match(p.name)))
    events: list[Any] = []
    for _, page in pages:
        loaded = load_json(page, report)
        if isinstance(loaded, list):
            events += loaded
        elif loaded is not None:
            report.error(f"{page.name}: expected a JSON list of events, found {type(loaded).__name__}")
    seen = {e.get("id") for e in events if isinstance(e, dict) and isinstance(e.get("id"), int)}
    after = max(seen, default=-1)
    folder = first.parent.parent / "events"
    singles = sorted((int(p.stem), p) for p in folder.glob("*.json") if p.stem.isdigit()) if folder.is_dir() else []
    for number, single in singles:
        if number > after:
            loaded = load_json(single, report)
            if isinstance(loaded, dict):
                events.append(loaded)
    return events


def _is_event(fields: Fields) -> bool:
    return (fields.text("source") in ("user", "agent", "environment")
            and (fields.kind("action") == "string" or fields.kind("observation") == "string"))


def _row(path: Path, report: FileReport, line: int, row: dict[str, Any]) -> Trajectory | None:
    history = row.get("history")
    if not isinstance(history, list):
        report.error(f"'history' is a {type(history).__name__}, not a list of events; row skipped", line)
        return None
    stream = _Stream(path, report, where=f"line {line}: event", line=line)
    b = stream.builder
    instance = as_dict(row.get("instance"))
    issue = as_dict(row.get("issue"))
    metadata = as_dict(row.get("metadata"))
    instance_id = as_str(row.get("instance_id")) or as_str(instance.get("instance_id"))
    if issue:
        owner, repo = as_str(issue.get("owner")), as_str(issue.get("repo"))
        b.set(repo=f"{owner}/{repo}" if owner and repo else None,
              session_id=f"{owner}/{repo}#{as_str(issue.get('number'))}" if owner and repo else None)
        title, body = as_str(issue.get("title")), as_str(issue.get("body"))
        b.task = f"{title}\n\n{body}".strip() or None
    b.set(session_id=instance_id or None, repo=as_str(instance.get("repo")) or repo_from_instance(instance_id),
          model=as_str(as_dict(metadata.get("llm_config")).get("model")) or None)
    statement = as_str(instance.get("problem_statement")).strip()
    instruction = as_str(row.get("instruction"))
    issue_text = _ISSUE.search(instruction)
    b.task = b.task or statement or (issue_text.group(1) if issue_text else instruction.strip()) or None
    stream.events(history)
    if not stream.has_steps:
        report.error("the row's history holds no messages or actions; row skipped", line)
        return None
    test_result = as_dict(row.get("test_result"))
    patch = unix_newlines(as_str(test_result.get("git_patch")) or as_str(row.get("git_patch")))
    if patch.strip():
        b.call("submit", text="submit (the workspace's git diff, collected by the harness after the run)")
        b.result(text=patch)
    error = as_str(row.get("error"))
    if error:
        b.user(f"OpenHands harness error: {error}", meta=True)
    b.outcome = _label(row, test_result, report, line)
    return stream.build()


def _label(row: dict[str, Any], test_result: dict[str, Any], report: FileReport, line: int) -> Outcome | None:
    """The resolver's ``success`` and a SWE-bench evaluation's ``report.resolved`` are verdicts."""
    if "success" in row and "issue" in row:
        success = row["success"]
        if isinstance(success, bool):
            why = as_str(row.get("result_explanation")).strip().splitlines()
            return Outcome(status="resolved" if success else "failed", source="label",
                           evidence=f"OpenHands resolver success={str(success).lower()}"
                                    + (f": {why[0][:200]}" if why else ""))
        if success is not None:
            report.error(f"'success' is a {type(success).__name__}, not a boolean; outcome label ignored", line)
    verdict = as_dict(test_result.get("report"))
    if isinstance(verdict.get("resolved"), bool) and not verdict.get("error_eval"):
        resolved = verdict["resolved"]
        return Outcome(status="resolved" if resolved else "failed", source="label",
                       evidence=f"OpenHands SWE-bench evaluation: resolved={str(resolved).lower()}")
    return None


class _Stream:
    """Turns events into builder steps; pairs observations with the actions that caused them."""

    def __init__(self, path: Path, report: FileReport, where: str, line: int | None = None) -> None:
        self.builder = TrajectoryBuilder(source_format=OpenHands.name, agent=OpenHands.agent, source_path=str(path))
        self.report = report
        self.where = where
        self.line = line
        self.call_of: dict[Any, str | None] = {}  # action event id -> call id
        self.pending: dict[str | None, tuple[str, dict[str, Any]]] = {}  # call id -> (tool, the action's args)
        self.models: Counter[str] = Counter()
        self.seen_agent = False
        self._calls = 0

    @property
    def has_steps(self) -> bool:
        return bool(self.builder.steps)

    def events(self, events: list[Any]) -> None:
        for position, event in enumerate(events):
            if not isinstance(event, dict):
                self.report.error(f"{self.where} {position} is a {type(event).__name__}, not an object; skipped",
                                  self.line)
                continue
            try:
                if isinstance(event.get("action"), str):
                    self._action(event)
                elif isinstance(event.get("observation"), str):
                    self._observation(event)
            except SHAPE_ERRORS as exc:
                self.report.error(shape_error(f"{self.where} {position}", exc), self.line)

    # -- actions ---------------------------------------------------------------------------
    def _action(self, event: dict[str, Any]) -> None:
        kind = event["action"]
        args = event["args"] if isinstance(event.get("args"), dict) else {
            k: v for k, v in event.items() if k not in _ENVELOPE}
        meta = as_dict(event.get("tool_call_metadata"))
        model = as_str(as_dict(meta.get("model_response")).get("model"))
        if model:
            self.models[model] += 1
        stamp = event.get("timestamp")
        source = as_str(event.get("source"))
        if kind in BOOKKEEPING:
            return
        if kind == "message":
            text = as_str(args.get("content")) or as_str(event.get("message"))
            from_user = source == "user" if source else not self.seen_agent
            if text.strip():
                (self.builder.user if from_user else self.builder.assistant)(text, timestamp=stamp)
            self.seen_agent |= not from_user
            return
        self.seen_agent = True
        thought = as_str(args.get("thought"))
        if kind in CONVERSATION:
            final = as_str(args.get("final_thought")) or as_str(event.get("message")) or thought
            completed = as_str(args.get("task_completed"))
            if completed:  # the agent's own verdict, kept as it said it: not an outcome label
                final = f"[finish: task_completed={completed}] {final}"
            if final.strip():
                self.builder.assistant(final, timestamp=stamp)
            return
        if thought.strip():
            self.builder.assistant(thought, timestamp=stamp)
        self._tool_call(kind, args, meta, event, stamp)

    def _tool_call(self, kind: str, args: dict[str, Any], meta: dict[str, Any], event: dict[str, Any],
                   stamp: Any) -> None:
        self._calls += 1
        call_id = as_str(meta.get("tool_call_id")) or (
            f"event-{event['id']}" if event.get("id") is not None else None)
        if call_id is not None and call_id in self.pending:
            call_id = f"{call_id}#{self._calls}"  # replayed runs reuse ids; keep pairs apart
        tool = as_str(meta.get("function_name")) or _DEFAULT_TOOL.get(kind, kind)
        path = as_str(args.get("path"))
        command, paths, diff, text = None, [path] if path else [], None, ""
        if kind == "run":
            command = as_str(args.get("command"))
        elif kind == "run_ipython":
            text = as_str(args.get("code"))
            skill = _SKILL_CALL.match(text)
            if skill and skill.group(1) in AGENTSKILLS:
                tool = skill.group(1)
                if tool in _PATH_FIRST:
                    paths = [skill.group(3)]
        elif kind in ("read", "edit", "write"):
            sub = as_str(args.get("command")) or _editor_command(args) or ("view" if kind == "read" else kind)
            text = f"{sub} {path}".strip() if tool in _EDITORS else f"{kind} {path}".strip()
            if kind == "write" and isinstance(args.get("content"), str):
                diff = unified(path, "", args["content"])
        elif kind in ("browse", "browse_interactive"):
            text = as_str(args.get("url")) or as_str(args.get("browser_actions"))
        elif kind == "call_tool_mcp":
            tool = as_str(args.get("name")) or tool
            text = f"{tool} {dumps(args.get('arguments'))[:500]}"
        else:
            text = f"{tool} {dumps({k: v for k, v in args.items() if k != 'thought'})[:500]}"
        self.builder.call(tool, call_id=call_id, command=command or None, text=text or command or tool,
                          paths=paths, diff=diff, timestamp=stamp)
        if event.get("id") is not None:
            self.call_of[event["id"]] = call_id
        self.pending[call_id] = (tool, args)

    # -- observations ----------------------------------------------------------------------
    def _observation(self, event: dict[str, Any]) -> None:
        kind = event["observation"]
        extras = event["extras"] if isinstance(event.get("extras"), dict) else {
            k: v for k, v in event.items() if k not in _ENVELOPE and k != "content"}
        content = unix_newlines(text_of(event.get("content")))
        stamp = event.get("timestamp")
        cause = event.get("cause")
        meta = as_dict(event.get("tool_call_metadata"))
        if cause is not None and cause in self.call_of:
            call_id = self.call_of.pop(cause)
        elif cause is None and "id" not in event and self.builder.has_open_call:
            call_id = None  # older schema: the observation follows its action
        elif cause is None and as_str(meta.get("tool_call_id")) in self.pending:
            call_id = as_str(meta.get("tool_call_id"))
        else:
            if kind not in _SKIPPED_OBSERVATIONS and cause is None and content.strip():
                self.builder.user(f"[{kind}] {content}", timestamp=stamp, meta=True)  # e.g. a malformed call
            return  # the observation of a message, a thought or another non-tool action
        tool, args = self.pending.pop(call_id, ("", {}))
        exit_code, is_error = _status(kind, content, extras, event)
        if is_error is None and tool in _SKILL_EDITS and content.startswith("[File: "):
            is_error = False  # agentskills print the edited file back only when the edit was applied
        if kind == "run" and exit_code is None:
            suffix = as_str(as_dict(extras.get("metadata")).get("suffix")).strip()
            content = f"{content}\n{suffix}" if suffix else content
        jupyter = _JUPYTER_CWD.search(content) if kind == "run_ipython" else None
        cwd = as_str(as_dict(extras.get("metadata")).get("working_dir")) or (jupyter.group(1) if jupyter else "")
        self.builder.set(cwd=cwd or None)
        self.builder.result(call_id=call_id, text=content, exit_code=exit_code, is_error=is_error, timestamp=stamp)
        diff = _edit_diff(kind, content, extras, args)
        if diff and call_id is not None and is_error is not True:
            self.builder.amend_result(call_id, diff=diff)

    def build(self) -> Trajectory:
        if self.models:
            self.builder.set(model=self.models.most_common(1)[0][0])
        # /workspace is where OpenHands mounts whatever it works on: not a name
        b = self.builder
        b.fields["repo"] = resolve_repo(b.steps, cwd=b.fields.get("cwd"), known=b.fields.get("repo"), folder=False)
        return b.build()


def _status(kind: str, content: str, extras: dict[str, Any], event: dict[str, Any]) -> tuple[int | None, bool | None]:
    """Exit code and error flag, from what the observation states."""
    if kind == "run":
        code = as_dict(extras.get("metadata")).get("exit_code", extras.get("exit_code"))
        if isinstance(code, int) and not isinstance(code, bool) and code >= 0:
            return code, code != 0
        return None, None  # -1: still running when the timeout hit, no exit code yet
    if kind in ("error", "user_rejected"):
        return None, True
    if kind in ("read", "edit"):
        return None, content.lstrip().startswith("ERROR:")
    if kind == "run_ipython":
        return None, True if (_IPYTHON_ERROR.search(content) or _SKILL_ERROR.match(content.lstrip())) else None
    if kind == "browse" and isinstance(extras.get("error"), bool):
        return None, extras["error"]
    return None, None


def _editor_command(args: dict[str, Any]) -> str | None:
    match = _EDITOR_COMMAND.search(as_str(args.get("translated_ipython_code")))
    return match.group(1) if match else None


def _edit_diff(kind: str, content: str, extras: dict[str, Any], args: dict[str, Any]) -> str | None:
    """The diff the editor reported; older versions put it in the observation's content."""
    if kind != "edit":
        return None
    diff = as_str(extras.get("diff"))
    if diff.strip():
        return diff
    if content.startswith("--- ") and "\n+++ " in content:
        return content
    path = as_str(args.get("path"))
    if as_str(args.get("command")) == "str_replace" and isinstance(args.get("old_str"), str):
        return unified(path, args["old_str"], as_str(args.get("new_str")))
    if isinstance(args.get("file_text"), str):
        return unified(path, "", args["file_text"])
    return None
