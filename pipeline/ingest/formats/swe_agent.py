"""SWE-agent trajectories: ``trajectories/<user>/<run>/[<instance>/]<instance>.traj``.

One JSON object per instance: ``trajectory[]`` (one step per action: ``action``, ``observation``,
``thought``/``response``, ``state``), ``history[]`` (the messages sent to the model), ``info``
(``exit_status``, ``submission``, ``model_stats``) and, from 1.x on, ``replay_config``. Steps are
read from ``trajectory`` and, when it is empty (``function_calling_simple.traj``), from
``history``. See §3 of ../shared/docs/trajectory-formats.md.

An action is either one of SWE-agent's own commands (``open``, ``edit``, ``create``,
``str_replace_editor``, ``submit`` ...) or a shell command, which becomes a ``bash`` call.
SWE-agent records no exit codes: a shell command's is read from its observation where the
output says it beyond doubt (``_common.exit_code_from_output``: pytest's or unittest's closing
verdict, ``command not found``, a traceback as the last thing printed; or SWE-ReX's
``///PROCESS-DONE:<code>:PROCESS-DONE///`` marker, left in an output that did not end its last
line), else it stays None. ``is_error`` is set only where the observation says it for certain:
an edit the linter rejected (True) or applied (False), a command that timed out, a non-zero
exit code read as above. The final patch (``info.submission``) is the result of the ``submit`` call,
as mini-swe-agent's is; an auto-submission without a ``submit`` action gets one.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats._common import (
    SHAPE_ERRORS,
    as_dict,
    as_list,
    as_str,
    dumps,
    exit_code_from_output,
    repo_from_dirname,
    repo_from_instance,
    repo_slug,
    shape_error,
    text_of,
    unified,
    unix_newlines,
)
from pipeline.ingest.identity import resolve_repo
from pipeline.ingest.reader import Probe, load_json
from pipeline.ingest.report import FileReport
from pipeline.trajectory import Trajectory, TrajectoryBuilder

_FIRST_KEY = re.compile(r'\s*\{\s*"(?:environment|trajectory|history|info|replay_config)"\s*:')
_TRAJECTORY = re.compile(r'"trajectory"\s*:\s*\[\s*(?:\]|\{\s*"(?:action|observation|response|thought|state|'
                         r'execution_time|messages|query|extra_info)"\s*:)')
_HISTORY = re.compile(r'"history"\s*:\s*\[\s*\{\s*"(?:role|content|agent|message_type)"\s*:')
_PREDICTION = re.compile(r'"model_patch"\s*:')

#: SWE-agent's own commands (tool bundles of 0.7 and 1.x); anything else an agent typed is a shell command.
SWE_AGENT_TOOLS = frozenset({
    "open", "goto", "scroll_up", "scroll_down", "create", "edit", "insert", "search_dir", "search_file",
    "find_file", "submit", "str_replace_editor", "filemap", "set_cursors", "exit_forfeit", "decompile",
    "disassemble", "debug_start", "debug_add_breakpoint", "debug_continue", "debug_step", "debug_exec",
    "debug_stop", "connect_start", "connect_sendline", "connect_exec", "connect_stop", "view_image",
})
_EDITORS = frozenset({"edit", "insert", "create", "str_replace_editor"})
_QUOTED_ARGS = frozenset({"edit", "insert", "str_replace_editor", "open", "create"})
#: Model names SWE-agent uses for scripted runs: no language model wrote those actions.
_PSEUDO_MODELS = frozenset({"replay", "human", "human_thought", "instant_empty_submit"})
_RUN_DIR = re.compile(r"^(?P<model>[^_][^/]*?)__.+__t-[\d.]+__p-[\d.]+__c-[\d.]+__install-\d")
_COMMAND_DOC = re.compile(r"^(\w+):\n\s+docstring:", re.M)
_FILE_SHOWN = re.compile(r"\[File: (?P<path>[^\n]+?) \(\d+ lines total")
_STATE_SUFFIX = re.compile(r"\n*\(Open file: [^\n]*\)\n\(Current directory: (?P<cwd>[^\n]*)\)\n(?:bash-\$|\$)\s*$")
_PROMPT_HEAD = re.compile(r"^We're currently solving the following (?:issue within our repository|CTF challenge)\."
                          r"\s*(?:Here's the issue text:\s*)?(?:ISSUE:\s*)?")
_PR = re.compile(r"<pr_description>\s*(.*?)\s*</pr_description>", re.S)
_INSTRUCTIONS = re.compile(r"\n\s*\nINSTRUCTIONS:", re.S)
_LINE_RANGE = re.compile(r"^\d+:\d+$")

_EDIT_FAILED = re.compile(r"^(?:Your proposed edit has introduced new syntax error|ERROR:|Error:|Usage: |"
                          r"No replacement was performed)|did not appear verbatim")
_EDIT_DONE = re.compile(r"^(?:\[File: |File updated\.|Text replaced\.|Replaced \d+ occurrences|"
                        r"The file \S+ has been edited|File created successfully)")
#: SWE-agent refusing an action (in the corpus: 16 results of 281, all "Your proposed edit has
#: introduced new syntax error(s). ... This is how your edit would have looked if applied": the
#: linter rejected the edit, which was not applied). Also from its tool bundles and templates:
#: "Your edit was not applied (file not modified): ...", "Your search and replace strings are the
#: same", "No file open(ed). ...", "Usage: edit <start_line>:<end_line>", "Error: <line_number> must
#: be a number", "File <f> not found" (open), str_replace_editor's "No replacement was performed,
#: old_str `...` did not appear verbatim in <file>", "Parameter `old_str` is required ...", "The
#: path <p> does not exist", "Invalid `view_range` ..."; format and blocklist errors: "Your output
#: was not formatted correctly", "Your bash command contained syntax errors and was NOT executed",
#: "Operation '<cmd>' is not supported by this environment", "Your last output did not use any
#: tool calls", "Please always provide EXACTLY ONE action". Not refusals: the CTF flag check
#: ("Wrong flag!"), a timeout, a traceback or `command not found` from the project's commands.
PROTOCOL_ERRORS = re.compile(
    r"\A\s*(?:ERROR:\s*)?(?:Your proposed edit has introduced new syntax error|Your edit was not applied|"
    r"Your search and replace strings are the same|No file open(?:ed)?\. |Search text must not be empty|"
    r"Usage: (?:open|goto|edit|insert|create|search_dir|search_file|find_file|scroll_up|scroll_down|submit) |"
    r"Error: <\w+> must|File \S+ not found|No replacement was performed|Parameter `\w+` is required|"
    r"The path \S+ (?:is not an absolute path|does not exist|is a directory)|File already exists at|"
    r"Invalid `\w+`|Unrecognized command|No edit history found|The `view_range` parameter is not allowed|"
    r"Your output was not formatted correctly|Your bash command contained syntax errors and was NOT executed|"
    r"Operation '.{1,200}?' is not supported by this environment|Your last output did not use any tool calls|"
    r"Please always provide EXACTLY ONE)")
_TIMED_OUT = re.compile(r"EXECUTION TIMED OUT|was cancelled because it took more than \d+ seconds")
#: SWE-ReX ends each command with this marker; it shows when the output's last line had no newline.
_PROCESS_DONE = re.compile(r"///PROCESS-DONE:(\d+):PROCESS-DONE///\s*$")


class SweAgent(TrajectoryFormat):
    name = "swe-agent"
    agent = "swe-agent"
    description = "SWE-agent trajectories (.traj: 1.x and legacy 0.7, with or without function calling)"
    locations = ("trajectories/<user>/<run>/<instance_id>.traj (0.7)",
                 "trajectories/<user>/<run>/<instance_id>/<instance_id>.traj (1.x)")
    suffixes = (".traj",)
    priority = 4
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        text = probe.text
        if _predictions(probe):
            return True  # claimed to say what it is (parse reports it skipped)
        if probe.first_char != "{" or not _FIRST_KEY.match(text):
            return False
        if '"mini_version"' in text or '"trajectory_format"' in text:
            return False  # mini-swe-agent keeps "info" first too
        return bool(_TRAJECTORY.search(text) or _HISTORY.search(text))

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        predictions = _predictions(Probe.read(path))
        if predictions:
            report.status = "skipped"
            report.error(predictions)
            return
        data = load_json(path, report)
        if not isinstance(data, dict):
            if data is None and report.errors:
                return  # load_json said why
            report.error(f"expected a JSON object, found {type(data).__name__}: not a SWE-agent trajectory")
            return
        fields = {}
        for key, kind in (("trajectory", list), ("history", list), ("info", dict)):
            value = data.get(key)
            if value is not None and not isinstance(value, kind):
                report.error(f"'{key}' is a {type(value).__name__}, not a {kind.__name__}; ignored")
                value = None
            fields[key] = value or ([] if kind is list else {})
        run = _Run(path, report, fields["info"], _replay_config(data.get("replay_config"), report),
                   fields["history"])
        if fields["trajectory"]:
            run.from_trajectory(fields["trajectory"])
        else:
            run.from_history(fields["history"])
        if not any(s.kind != "user" for s in run.builder.steps):
            report.error("the trajectory has no steps: no actions in 'trajectory' or 'history'")
            return
        run.finish()
        yield run.builder.build()


def _predictions(probe: Probe) -> str | None:
    """The predictions a run writes beside its .traj files (``all_preds.jsonl``, ``preds.json``)."""
    records = probe.records
    if records and all(isinstance(r, dict) and "instance_id" in r and "model_patch" in r for r in records):
        return "SWE-agent/SWE-bench predictions (one model_patch per instance): not a trajectory"
    document = probe.document
    if isinstance(document, dict) and document and all(
            isinstance(v, dict) and "model_patch" in v for v in document.values()):
        return "SWE-agent predictions (preds.json, one model_patch per instance): not a trajectory"
    return None


def _replay_config(value: Any, report: FileReport) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            report.error("'replay_config' is a string that is not JSON; ignored")
            return {}
    return as_dict(value)


class _Run:
    """Reads one .traj into a builder: header, the prompt, then the actions and observations."""

    def __init__(self, path: Path, report: FileReport, info: dict[str, Any], config: dict[str, Any],
                 history: list[Any]) -> None:
        self.path = path
        self.report = report
        self.info = info
        self.builder = TrajectoryBuilder(source_format=SweAgent.name, agent=SweAgent.agent, source_path=str(path))
        self.history = [h for h in history if isinstance(h, dict) and not h.get("is_demo")]
        self.tools = SWE_AGENT_TOOLS | self._documented_commands()
        self.open_file: str | None = None
        self.calls: dict[str, tuple[str, str | None]] = {}  # call id -> (tool, shell command)
        self.submission = unix_newlines(as_str(info.get("submission")))
        self._header(config)
        self._prompt(config)

    # -- header and task ----------------------------------------------------------------
    def _documented_commands(self) -> set[str]:
        """Custom commands a config adds are documented in the system prompt (``name:\\n  docstring:``)."""
        system = next((h for h in self.history if h.get("role") == "system"), None)
        return set(_COMMAND_DOC.findall(text_of(system.get("content")))) if system else set()

    def _header(self, config: dict[str, Any]) -> None:
        agent = as_dict(config.get("agent"))
        statement = as_dict(config.get("problem_statement"))
        env = as_dict(config.get("env"))
        model = as_str(as_dict(agent.get("model")).get("name")) or self._model_from_run_dir()
        instance = as_str(statement.get("id")) or self.path.name.removesuffix(".traj")
        repo_config = as_dict(env.get("repo"))
        self.builder.set(
            session_id=instance,
            model=None if model in _PSEUDO_MODELS else model,
            agent_version=as_str(self.info.get("swe_agent_version")) or None,
            repo=(repo_from_instance(instance) or repo_slug(repo_config.get("github_url"))
                  or repo_slug(statement.get("github_url"))),
        )

    def _model_from_run_dir(self) -> str | None:
        """SWE-agent names a run directory ``<model>__<data>__<config>__t-..__p-..__c-..__install-N``."""
        for parent in self.path.parents[:2]:
            match = _RUN_DIR.match(parent.name)
            if match:
                return match["model"]
        return None

    def _prompt(self, config: dict[str, Any]) -> None:
        first = next((h for h in self.history if h.get("role") == "user"), None)
        prompt = self._strip_state(text_of(first.get("content"))) if first else ""
        statement = as_dict(config.get("problem_statement"))
        task = as_str(statement.get("text")).strip() or _task_from_prompt(prompt)
        if task:
            self.builder.task = task
        if prompt.strip():
            self.builder.user(prompt)
            self._first_prompt = first
        else:
            self._first_prompt = None

    def _strip_state(self, text: str) -> str:
        """History observations end with ``(Open file: ..)\\n(Current directory: ..)\\nbash-$``."""
        match = _STATE_SUFFIX.search(text)
        if not match:
            return text
        self.builder.set(cwd=match["cwd"].strip() or None)
        return text[: match.start()]

    # -- steps --------------------------------------------------------------------------
    def from_trajectory(self, steps: list[Any]) -> None:
        rendered = self._history_calls()
        for position, step in enumerate(steps):
            if not isinstance(step, dict):
                self.report.error(f"trajectory step {position} is a {type(step).__name__}, not an object; skipped")
                continue
            action = step.get("action")
            if not isinstance(action, str):
                self.report.error(f"trajectory step {position}: 'action' is a {type(action).__name__}; skipped")
                continue
            state = _state(step.get("state"))
            self.builder.set(cwd=as_str(state.get("working_dir")) or None)
            thought = as_str(step.get("thought")) or as_str(step.get("response"))
            if thought.strip():
                self.builder.assistant(thought)
            observation = unix_newlines(text_of(step.get("observation")))
            if not action.strip():
                if observation.strip():
                    self.builder.user(observation, meta=True)
                continue
            name, args, call_id = None, {}, None
            if rendered and rendered[0][0] == action:
                _, name, args, call_id = rendered.pop(0)
            opened = as_str(state.get("open_file"))
            self._call(action, name, args, call_id, observation, None if opened in ("", "n/a") else opened)
            self._result(call_id, observation)

    def _history_calls(self) -> list[tuple[str, str, dict[str, Any], str | None]]:
        """Function-calling runs keep each call's name and JSON arguments in ``history``."""
        calls = []
        for item in self.history:
            if item.get("role") != "assistant":
                continue
            for call in as_list(item.get("tool_calls"))[:1]:
                function = as_dict(as_dict(call).get("function"))
                calls.append((as_str(item.get("action")), as_str(function.get("name")) or None,
                              _arguments(function.get("arguments")), as_str(as_dict(call).get("id")) or None))
        return calls

    def from_history(self, history: list[Any]) -> None:
        for position, item in enumerate(self.history):
            if item is self._first_prompt or item.get("role") == "system":
                continue
            try:
                self._history_item(item)
            except SHAPE_ERRORS as exc:
                self.report.error(shape_error(f"history item {position}", exc))

    def _history_item(self, item: dict[str, Any]) -> None:
        role = item.get("role")
        content = self._strip_state(unix_newlines(text_of(item.get("content"))))
        if role == "assistant":
            thought = as_str(item.get("thought")) or content
            if thought.strip():
                self.builder.assistant(thought)
            calls = [as_dict(c) for c in as_list(item.get("tool_calls"))]
            for call in calls:
                function = as_dict(call.get("function"))
                name = as_str(function.get("name")) or None
                args = _arguments(function.get("arguments"))
                action = as_str(item.get("action")) if len(calls) == 1 else ""
                self._call(action or _render(name, args), name, args, as_str(call.get("id")) or None, "", None)
            if not calls and as_str(item.get("action")).strip():
                self._call(as_str(item["action"]), None, {}, None, "", None)
        elif role == "tool":
            ids = [as_str(i) for i in as_list(item.get("tool_call_ids"))]
            self._result(ids[0] if ids else None, content)
        elif self.builder.has_open_call:
            self._result(None, content)  # non-function-calling runs answer as "user"
        elif content.strip():
            self.builder.user(content, meta=True)

    # -- one action -----------------------------------------------------------------------
    def _call(self, action: str, name: str | None, args: dict[str, Any], call_id: str | None,
              observation: str, state_file: str | None) -> None:
        action = action.strip()
        first = action.split(maxsplit=1)[0] if action else ""
        tool = name or (first if first in self.tools else "bash")
        if tool == "bash":
            command = as_str(args.get("command")) or action
            self.builder.call("bash", call_id=call_id, command=command)
            self._remember(call_id, "bash", command)
            return
        # Quoted arguments matter only where they are read below (and shlex is slow on long edits).
        words = _split(action) if tool == first and not args and tool in _QUOTED_ARGS else action.split()
        paths, diff, text = self._file_args(tool, words if tool == first else [tool], args, observation,
                                            state_file, action)
        self.builder.call(tool, call_id=call_id, text=text, paths=paths, diff=diff)
        self._remember(call_id, tool, None)

    def _remember(self, call_id: str | None, tool: str, command: str | None) -> None:
        self.calls[call_id or f"#{len(self.builder.steps) - 1}"] = (tool, command)

    def _file_args(self, tool: str, words: list[str], args: dict[str, Any], observation: str,
                   state_file: str | None, action: str) -> tuple[list[str], str | None, str]:
        shown = _FILE_SHOWN.search(observation)
        current = (shown["path"] if shown else None) or state_file or self.open_file
        rest = words[1:]
        if tool in ("open", "create"):
            target = as_str(args.get("path") or args.get("filename")) or (rest[0] if rest else "")
            return ([target] if target else []), None, action
        if tool in ("goto", "scroll_up", "scroll_down", "search_file"):
            return ([current] if current else []), None, action
        if tool == "edit":
            old = args.get("search") if "search" in args else (rest[0] if len(rest) >= 2 else None)
            new = args.get("replace") if "replace" in args else (rest[1] if len(rest) >= 2 else None)
            diff = None
            if isinstance(old, str) and isinstance(new, str) and not _LINE_RANGE.match(old) and current:
                diff = unified(current, old, new)
            return ([current] if current else []), diff, action
        if tool == "insert":
            text = args.get("text") if "text" in args else (rest[0] if rest else None)
            diff = unified(current, "", text) if isinstance(text, str) and current else None
            return ([current] if current else []), diff, action
        if tool == "str_replace_editor":
            return _str_replace_editor(args, rest)
        return [], None, action

    def _result(self, call_id: str | None, observation: str) -> None:
        key = call_id if call_id in self.calls else next(reversed(self.calls), None)
        tool, command = self.calls.get(key, ("", None)) if key else ("", None)
        text = observation
        if tool == "submit" and "diff --git" in self.submission:
            text = self.submission  # the patch as SWE-agent saved it, without the pty's \r\n
        shown = _FILE_SHOWN.search(observation)
        if shown:
            self.open_file = shown["path"]
        exit_code, is_error = _status(tool, command, observation)
        self.builder.result(call_id=call_id, text=text, exit_code=exit_code, is_error=is_error)

    def finish(self) -> None:
        cwd = self.builder.fields.get("cwd")
        # SWE-bench images check the repository out at /<owner>__<repo>; other folders are the
        # harness's (a local path with its slashes turned into "__"), not a name.
        known = self.builder.fields.get("repo") or (repo_from_dirname(Path(cwd).name) if cwd else None)
        self.builder.fields["repo"] = resolve_repo(self.builder.steps, cwd=cwd, known=known, folder=False)
        status = as_str(self.info.get("exit_status"))
        has_submit = any(tool == "submit" for tool, _ in self.calls.values())
        if "diff --git" in self.submission and not has_submit:
            self.builder.call("submit", text=f"submit (autosubmitted by SWE-agent: {status or 'info.submission'})")
            self.builder.result(text=self.submission)
        if status and status.strip().lower() != "submitted":
            self.builder.user(f"SWE-agent exit status: {status}", meta=True)


def _str_replace_editor(args: dict[str, Any], rest: list[str]) -> tuple[list[str], str | None, str]:
    """``str_replace_editor <view|create|str_replace|insert|undo_edit> <path> [--old_str ..] ...``"""
    options: dict[str, Any] = dict(args)
    if not options and rest:
        options = {"command": rest[0], "path": rest[1] if len(rest) > 1 else ""}
        for flag, value in zip(rest[2::2], rest[3::2], strict=False):
            if flag.startswith("--"):
                options[flag[2:]] = value
    sub, target = as_str(options.get("command")), as_str(options.get("path"))
    diff = None
    if sub == "str_replace" and isinstance(options.get("old_str"), str):
        diff = unified(target, options["old_str"], as_str(options.get("new_str")))
    elif sub == "create" and isinstance(options.get("file_text"), str):
        diff = unified(target, "", options["file_text"])
    elif sub == "insert" and isinstance(options.get("new_str"), str):
        diff = unified(target, "", options["new_str"])
    return ([target] if target else []), diff, f"{sub} {target}".strip()


def _status(tool: str, command: str | None, observation: str) -> tuple[int | None, bool | None]:
    """Exit code and error flag, only as far as the observation says them for certain."""
    text = observation.strip()
    if _TIMED_OUT.search(text):
        return None, True
    if tool in _EDITORS:
        if _EDIT_FAILED.search(text):
            return None, True
        return None, False if _EDIT_DONE.match(text) else None
    if tool == "submit" and text == "Wrong flag!":
        return None, True  # SWE-agent's CTF mode checks the flag
    if tool == "open":
        return None, False if text.startswith("[File: ") else (True if re.match(r"^File \S+ not found", text) else None)
    if tool == "bash" and command:
        done = _PROCESS_DONE.search(text)
        code = int(done.group(1)) if done else exit_code_from_output(text)
        if code is not None:
            return code, code != 0
    return None, None


def _task_from_prompt(prompt: str) -> str:
    match = _PR.search(prompt)
    if match:
        return match.group(1)
    head = _PROMPT_HEAD.match(prompt)
    if not head:
        return ""
    body = prompt[head.end():]
    end = _INSTRUCTIONS.search(body)
    return (body[: end.start()] if end else body).strip()


def _state(value: Any) -> dict[str, Any]:
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {}
    return as_dict(value)


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {}
    return as_dict(value)


def _split(action: str) -> list[str]:
    """An action's words, as SWE-agent's shell would see them; plain split when quoting is odd."""
    if _LINE_RANGE.match(action.split(maxsplit=2)[1] if len(action.split(maxsplit=2)) > 1 else ""):
        return action.split(maxsplit=2)  # ``edit 10:12\n<new text>\nend_of_edit``: the text is not words
    try:
        return shlex.split(action)
    except ValueError:
        return action.split()


def _render(name: str | None, args: dict[str, Any]) -> str:
    if name == "bash":
        return as_str(args.get("command"))
    values = " ".join(as_str(v) if isinstance(v, str) else dumps(v) for v in args.values())
    return f"{name or 'tool'} {values}".strip()
