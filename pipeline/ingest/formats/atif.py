"""ATIF, the Agent Trajectory Interchange Format (Harbor / Terminal-Bench), v1.0 to v1.8.

One JSON document: ``{schema_version, session_id, agent{name, version, model_name}, steps[{step_id,
source: system|user|agent, message, tool_calls[{tool_call_id, function_name, arguments}],
observation{results[{source_call_id, content}]}, metrics, extra}], final_metrics,
subagent_trajectories[]}``. A call's result may sit in the same step or a later one; results are
joined to calls by ``source_call_id`` and each call is followed by its result. A result with no
call (a system-initiated run) becomes context, not a tool call. Each embedded subagent trajectory
is a trajectory of its own, linked to its parent session.

Files that only look like ATIF are read too: ``"schema_version": "1.4"``, ``agent.model`` instead
of ``model_name``, calls written as ``{id, name, arguments}`` and their results as system steps
"Tool result for <id>" holding ``{content, result{success}}``. Harbor keeps the verdict beside
the trial: ``result.json`` (``verifier_result.rewards.reward``) and ``verifier/reward.txt``; a
reward of 1 is ``resolved``, less is ``failed``. See §9 of ../shared/docs/trajectory-formats.md.

A call's exit code and failure may also sit in the *step's* ``extra`` (v1.5+, Harbor's converters):
``tool_call_details{<call id>: {metadata{exit_code}, status}}`` for a step of several calls,
``tool_metadata{exit_code}`` / ``tool_result_metadata{is_error}`` / ``status`` for a step of one,
and a call's own ``extra{exit_code, is_error, status}``; a ``status`` of ``failed`` (or
``error`` / ``declined``) is a failure. The observation result's own ``extra`` wins over these.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats import (
    claude_code,
    codex,
    gemini_cli,
    mini_swe_agent,
    opencode,
    openhands,
    swe_agent,
)
from pipeline.ingest.formats._common import (
    SHAPE_ERRORS,
    as_dict,
    as_list,
    as_str,
    dumps,
    shape_error,
    text_of,
    unified,
)
from pipeline.ingest.identity import resolve_repo
from pipeline.ingest.reader import Probe, load_json
from pipeline.ingest.report import FileReport
from pipeline.trajectory import Outcome, Trajectory, TrajectoryBuilder
from pipeline.trajectory.commands import is_shell_tool

_VERSION = re.compile(r'"schema_version"\s*:\s*"(?:ATIF-)?v?1\.\d+"')
_DECLARED = re.compile(r"ATIF-v\d")
_AGENT = re.compile(r'"agent"\s*:\s*\{')
_SESSION = re.compile(r'"session_id"\s*:')
_RESULT_FOR = re.compile(r"^Tool result for (\S+)\s*$")
_EXIT_CODE = re.compile(r"^Exit code (-?\d+)\b")
_EXIT_SECTION = re.compile(r"^\[exit_code\]\s*\n?\s*(-?\d+)\s*$", re.M)
_TRIAL = re.compile(r'"trial_name"\s*:')
_VERIFIER = re.compile(r'"verifier_result"\s*:')
_PATH_KEYS = ("file_path", "path", "notebook_path", "filename")
#: Nesting of subagent trajectories we follow; deeper ones are reported, not read.
MAX_DEPTH = 8
#: ATIF carries another harness's tool results (Harbor converts Claude Code, Codex, Gemini CLI,
#: OpenHands, mini-swe-agent, SWE-agent, OpenCode ... runs), so their refusals are refusals here:
#: the union of those formats' patterns, each anchored at the start of the result. None in the
#: corpus (11 results; its one tool error, "EACCES: permission denied, mkdir '/app'", is the file
#: system refusing a Write, not the harness).
PROTOCOL_ERRORS = re.compile("|".join(f"(?:{module.PROTOCOL_ERRORS.pattern})" for module in (
    claude_code, codex, gemini_cli, openhands, mini_swe_agent, swe_agent, opencode)))


class Atif(TrajectoryFormat):
    name = "atif"
    agent = "atif"
    description = "ATIF trajectories v1.0-v1.8 (Harbor, Terminal-Bench and converters), non-conformant ones too"
    locations = ("<job>/<trial>/agent/trajectory.json (Harbor; result.json and verifier/reward.txt in <trial>)",
                 "*.atif.json")
    suffixes = (".json",)
    priority = 2
    protocol_errors = PROTOCOL_ERRORS

    def declared(self, probe: Probe) -> bool:
        """``"schema_version": "ATIF-v1.x"`` at the top: ATIF whatever else the file carries (Harbor's
        OpenHands-to-ATIF output keeps ``"agent_class": "CodeActAgent"`` in the agent's metadata)."""
        return (probe.first_char == "{" and b'"schema_version"' in probe.head
                and bool(_DECLARED.match(probe.fields.text("schema_version") or "")))

    def sniff(self, probe: Probe) -> bool:
        text = probe.text
        if _trial_result(probe):
            return True  # claimed to say what it is (parse reports it skipped)
        return (probe.first_char == "{" and bool(_VERSION.search(text)) and bool(_AGENT.search(text))
                and bool(_SESSION.search(text)))

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        if _trial_result(Probe.read(path)):
            report.status = "skipped"
            report.error("Harbor trial result (the outcome label of agent/trajectory.json): not a trajectory")
            return
        data = load_json(path, report)
        if data is None and report.errors:
            return  # load_json said why
        if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
            found = type(data.get("steps")).__name__ if isinstance(data, dict) else type(data).__name__
            report.error(f"ATIF needs an object with a 'steps' list; found {found}")
            return
        main = True
        for trajectory in _read(data, path, report, parent=None, depth=0):
            if main:
                trajectory.outcome = harbor_label(path) or trajectory.outcome
                main = False
            yield trajectory


def _trial_result(probe: Probe) -> bool:
    text = probe.text
    return (probe.first_char == "{" and bool(_TRIAL.search(text)) and bool(_VERIFIER.search(text))
            and not re.search(r'"steps"\s*:', text))


def _read(data: dict[str, Any], path: Path, report: FileReport, parent: str | None,
          depth: int) -> Iterator[Trajectory]:
    """The trajectory and, after it, its embedded subagent trajectories (depth first)."""
    where = f"subagent trajectory {as_str(data.get('session_id')) or '?'}: " if parent else ""
    steps = data.get("steps")
    if not isinstance(steps, list):
        report.error(f"{where}'steps' is a {type(steps).__name__}, not a list; skipped")
        return
    reader = _Reader(data, path, report, where)
    reader.read(steps)
    if reader.builder.steps:
        trajectory = reader.build(parent)
        yield trajectory
    else:
        report.error(f"{where}no steps")
        trajectory = None
    subagents = data.get("subagent_trajectories")
    if subagents is None:
        return
    if not isinstance(subagents, list):
        report.error(f"{where}'subagent_trajectories' is a {type(subagents).__name__}, not a list; ignored")
        return
    if subagents and depth >= MAX_DEPTH:
        report.error(f"{where}subagent trajectories nested deeper than {MAX_DEPTH}; not read")
        return
    session = trajectory.session_id if trajectory else as_str(data.get("session_id")) or None
    for position, sub in enumerate(subagents):
        if not isinstance(sub, dict):
            report.error(f"{where}subagent trajectory {position} is a {type(sub).__name__}; skipped")
            continue
        yield from _read(sub, path, report, parent=session, depth=depth + 1)


class _Reader:
    def __init__(self, data: dict[str, Any], path: Path, report: FileReport, where: str) -> None:
        agent = as_dict(data.get("agent"))
        self.report = report
        self.where = where
        self.builder = TrajectoryBuilder(source_format=Atif.name, agent=as_str(agent.get("name")) or "unknown",
                                         source_path=str(path))
        self.builder.set(session_id=as_str(data.get("session_id")) or as_str(data.get("trajectory_id")) or None,
                         agent_version=as_str(agent.get("version")) or None)
        self.declared_model = as_str(agent.get("model_name")) or as_str(agent.get("model"))
        self.models: Counter[str] = Counter()
        cwds = as_list(as_dict(agent.get("extra")).get("cwds"))
        self.builder.set(cwd=as_str(cwds[0]) if cwds else None)
        self.results: dict[str, list[dict[str, Any]]] = {}
        self.calls_seen: set[str] = set()
        #: What a step's (or a call's) ``extra`` says of a call's result: (exit code, is_error).
        self.facts: dict[str, tuple[int | None, bool | None]] = {}

    def read(self, steps: list[Any]) -> None:
        called = self._collect_results(steps)
        for position, step in enumerate(steps):
            if not isinstance(step, dict):
                self.report.error(f"{self.where}step {position} is a {type(step).__name__}, not an object; skipped")
                continue
            try:
                self._step(step, called)
            except SHAPE_ERRORS as exc:
                self.report.error(shape_error(f"{self.where}step {position}", exc))
        for call_id, left in self.results.items():  # a call answered more than once
            for result in left:
                self._context(result, step_stamp=None, sidechain=False, note=f"another result for call {call_id}")

    def _collect_results(self, steps: list[Any]) -> set[str]:
        """Results by call id, wherever they are; and the ids of all calls, to tell the rest apart."""
        called: set[str] = set()
        for step in steps:
            if not isinstance(step, dict):
                continue
            calls = as_list(step.get("tool_calls"))
            for call in calls:
                call_id = _call_id(call)
                if call_id:
                    called.add(call_id)
                    facts = _step_facts(as_dict(step.get("extra")), call, len(calls))
                    if facts != (None, None):
                        self.facts[call_id] = facts
        for step in steps:
            if not isinstance(step, dict):
                continue
            for result in _results(step):
                call_id = as_str(result.get("source_call_id"))
                if call_id in called:
                    self.results.setdefault(call_id, []).append(result)
        return called

    def _step(self, step: dict[str, Any], called: set[str]) -> None:
        source = as_str(step.get("source"))
        extra = as_dict(step.get("extra"))
        stamp = step.get("timestamp")
        sidechain = extra.get("is_sidechain") is True
        self.builder.set(cwd=as_str(extra.get("cwd")) or None)
        message = text_of(step.get("message"))
        calls = [c for c in as_list(step.get("tool_calls")) if isinstance(c, dict)]
        unpaired = [r for r in _results(step) if as_str(r.get("source_call_id")) not in called]
        if len(calls) == len(unpaired) and all(not r.get("source_call_id") for r in unpaired):
            for call, result in zip(calls, unpaired, strict=True):  # results listed in call order, ids left out
                call_id = _call_id(call) or f"step-{step.get('step_id')}-{calls.index(call)}"
                self.results.setdefault(call_id, []).append(result)
                call.setdefault("tool_call_id", call_id)
            unpaired = []
        if source == "agent":
            model = as_str(step.get("model_name"))
            if model and not sidechain:
                self.models[model] += 1
            if message.strip() and not (calls and _RESULT_FOR.match(message)):
                self.builder.assistant(message, timestamp=stamp, sidechain=sidechain)
        elif source == "user":
            if message.strip():
                self.builder.user(message, timestamp=stamp, meta=step.get("is_copied_context") is True,
                                  sidechain=sidechain)
        elif message.strip() and not _RESULT_FOR.match(message):  # system (or an unknown source)
            self.builder.user(message, timestamp=stamp, meta=True, sidechain=sidechain)
        for call in calls:
            self._call(call, stamp, sidechain)
        for result in unpaired:
            self._context(result, stamp, sidechain)

    def _call(self, call: dict[str, Any], stamp: Any, sidechain: bool) -> None:
        call_id = _call_id(call)
        if call_id and call_id in self.calls_seen:
            return  # converters that give each event a step write a call again beside its result
        if call_id:
            self.calls_seen.add(call_id)
        name = as_str(call.get("function_name")) or as_str(call.get("name")) or "tool"
        args = _arguments(call.get("arguments"))
        paths = [as_str(args[k]) for k in _PATH_KEYS if isinstance(args.get(k), str)]
        command = as_str(args.get("command")) if is_shell_tool(name) else ""
        text = command or f"{name} {dumps(args)[:500]}"
        self.builder.call(name, call_id=call_id or None, text=text, command=command or None, paths=paths,
                          diff=_args_diff(name, args, paths[0] if paths else "file"), timestamp=stamp,
                          sidechain=sidechain)
        pending = self.results.get(call_id or "", [])
        if pending:
            self._result(call_id, name, pending.pop(0), stamp, sidechain)
            if not pending:
                del self.results[call_id]

    def _result(self, call_id: str | None, tool: str, result: dict[str, Any], stamp: Any, sidechain: bool) -> None:
        text, is_error, exit_code = _result_text(result)
        step_code, step_error = self.facts.get(call_id or "", (None, None))
        exit_code = exit_code if exit_code is not None else step_code
        is_error = is_error if is_error is not None else step_error
        if exit_code is None and is_shell_tool(tool):
            match = _EXIT_CODE.match(text)
            exit_code = int(match.group(1)) if match else None
        refs = [as_str(as_dict(r).get("session_id")) or as_str(as_dict(r).get("trajectory_id"))
                for r in as_list(result.get("subagent_trajectory_ref"))]
        if any(refs):
            text = f"{text}\n[subagent trajectories: {', '.join(r for r in refs if r)}]".strip()
        self.builder.result(call_id=call_id, text=text, exit_code=exit_code, is_error=is_error,
                            timestamp=result.get("_timestamp", stamp), sidechain=sidechain)

    def _context(self, result: dict[str, Any], step_stamp: Any, sidechain: bool, note: str = "") -> None:
        text, _, _ = _result_text(result)
        if text.strip() or note:
            self.builder.user(f"[{note}] {text}" if note else text, timestamp=step_stamp, meta=True,
                              sidechain=sidechain)

    def build(self, parent: str | None) -> Trajectory:
        model = self.models.most_common(1)[0][0] if self.models else self.declared_model
        self.builder.set(model=model or None)
        if parent:
            self.builder.fields["parent_session_id"] = parent
        self.builder.set(repo=resolve_repo(self.builder.steps, cwd=self.builder.fields.get("cwd")))
        return self.builder.build()


def _args_diff(name: str, args: dict[str, Any], path: str) -> str | None:
    """The change an edit call asks for, when its arguments spell it out (Edit / Write style)."""
    old = args.get("old_string", args.get("old_str"))
    new = args.get("new_string", args.get("new_str"))
    if isinstance(old, str) and isinstance(new, str):
        return unified(path, old, new)
    content = args.get("content", args.get("file_text"))
    if name.lower() in ("write", "write_file", "create", "create_file") and isinstance(content, str):
        return unified(path, "", content)
    return None


def _call_id(call: Any) -> str:
    call = as_dict(call)
    return as_str(call.get("tool_call_id")) or as_str(call.get("id"))


def _results(step: dict[str, Any]) -> list[dict[str, Any]]:
    """A step's observation results; the non-conformant form puts one result in a system step."""
    observation = as_dict(step.get("observation"))
    results = [r for r in as_list(observation.get("results")) if isinstance(r, dict)]
    match = _RESULT_FOR.match(text_of(step.get("message")))
    if not results and match and ("content" in observation or "result" in observation):
        outcome = as_dict(observation.get("result"))
        results = [{"source_call_id": match.group(1), "content": observation.get("content"),
                    "extra": {"is_error": not outcome["success"]} if isinstance(outcome.get("success"), bool)
                    else {}, "_timestamp": step.get("timestamp")}]
    return results


def _result_text(result: dict[str, Any]) -> tuple[str, bool | None, int | None]:
    extra = as_dict(result.get("extra"))
    metadata = as_dict(extra.get("tool_result_metadata"))
    raw = metadata.get("raw_tool_result")
    content = result.get("content")
    if isinstance(raw, dict) and "content" in raw:
        content = raw["content"]  # Harbor keeps the text the agent saw here, without its own sections
    elif isinstance(raw, str):
        content = raw
    if isinstance(content, dict) and "output" in content:
        text = "\n".join(p for p in (f"$ {as_str(content.get('command'))}" if content.get("command") else "",
                                     as_str(content.get("output"))) if p)
    else:
        text = text_of(content)
    is_error = next((v for v in (extra.get("is_error"), metadata.get("is_error"), as_dict(raw).get("is_error"))
                     if isinstance(v, bool)), None)
    code = extra.get("exit_code", metadata.get("exit_code"))
    if not isinstance(code, int) or isinstance(code, bool):
        section = _EXIT_SECTION.search(text_of(result.get("content")))
        code = int(section.group(1)) if section else None
    return text, is_error, code


_FAILED = frozenset({"failed", "error", "declined", "errored"})


def _step_facts(extra: dict[str, Any], call: Any, calls: int) -> tuple[int | None, bool | None]:
    """(exit code, is_error) of one call as its step's ``extra`` or its own ``extra`` records them."""
    own = as_dict(as_dict(call).get("extra"))
    details = as_dict(as_dict(extra.get("tool_call_details")).get(_call_id(call)))
    places = [own, details, as_dict(details.get("metadata"))]
    if calls == 1:  # a step of one call: the step's own facts are that call's
        places += [as_dict(extra.get("tool_metadata")), as_dict(extra.get("tool_result_metadata")), extra]
    code = next((v for p in places if isinstance(v := p.get("exit_code"), int) and not isinstance(v, bool)), None)
    error = next((v for p in places if isinstance(v := p.get("is_error"), bool)), None)
    if error is None:
        status = next((as_str(p.get("status")).lower() for p in places if isinstance(p.get("status"), str)), "")
        error = True if status in _FAILED else None
    return code, error


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {"input": value}
    return value if isinstance(value, dict) else ({"input": value} if value is not None else {})


def harbor_label(path: Path) -> Outcome | None:
    """Harbor's verdict for ``<trial>/agent/trajectory.json``: ``<trial>/result.json``, else
    ``<trial>/verifier/reward.txt`` (also looked for beside the file itself)."""
    trials = [path.parent] + ([path.parent.parent] if path.parent.name == "agent" else [])
    for trial in trials:
        outcome = _from_result_json(trial / "result.json")
        if outcome is not None:
            return outcome
    for trial in trials:
        outcome = _from_reward_txt(trial / "verifier" / "reward.txt")
        if outcome is not None:
            return outcome
    return None


def _from_result_json(path: Path) -> Outcome | None:
    try:
        data = orjson.loads(path.read_bytes()) if path.is_file() else None
    except (OSError, orjson.JSONDecodeError):
        return None
    rewards = as_dict(as_dict(as_dict(data).get("verifier_result")).get("rewards"))
    reward = rewards.get("reward")
    if not isinstance(reward, int | float) or isinstance(reward, bool):
        return None
    return _verdict(float(reward), f"Harbor {path.parent.name}/result.json")


def _from_reward_txt(path: Path) -> Outcome | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip() if path.is_file() else ""
        reward = float(text.split()[0]) if text else None
    except (OSError, ValueError):
        return None
    return None if reward is None else _verdict(reward, f"Harbor {path.parent.parent.name}/verifier/reward.txt")


def _verdict(reward: float, where: str) -> Outcome:
    status = "resolved" if reward >= 1 else "failed"
    return Outcome(status=status, source="label", evidence=f"{where}: reward {reward:g}")
