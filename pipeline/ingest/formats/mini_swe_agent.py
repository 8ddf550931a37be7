"""mini-swe-agent trajectories: ``<instance>.traj.json``.

Either ``{"info", "messages", "trajectory_format", "instance_id"}`` (v1 and v1.1) or a bare
list of messages. Each assistant message holds one ```bash block; the next user message
answers with ``<returncode>N</returncode><output>...</output>`` -- an explicit exit code.
A SWE-bench ``report.json`` beside the file is an outcome label. See §4 of
../shared/docs/trajectory-formats.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.fields import Fields
from pipeline.ingest.identity import resolve_repo
from pipeline.ingest.outcome import exit_status_outcome
from pipeline.ingest.reader import Probe, load_json
from pipeline.ingest.report import FileReport
from pipeline.trajectory import Outcome, Trajectory, TrajectoryBuilder

# mini-swe-agent's own action regex; any fenced block only when no bash block exists.
_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.S)
_ANY_BLOCK = re.compile(r"```\w*\s*\n(.*?)\n```", re.S)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_OUTPUT = re.compile(r"<output>\n?(.*?)</output>", re.S)
_EXCEPTION = re.compile(r"<exception>(.*?)</exception>", re.S)
_OUTPUT_HEAD = re.compile(r"<output_head>\n?(.*?)</output_head>.*?<output_tail>\n?(.*?)</output_tail>", re.S)
_PR = re.compile(r"<pr_description>\s*(?:Consider the following PR description:\s*)?(.*?)</pr_description>", re.S)
_ISSUE = re.compile(r"^Please solve this issue:\s*(.*?)(?:\n\nYou can execute bash commands|\Z)", re.S)
_SUBMIT = re.compile(r"COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT|MINI_SWE_AGENT_FINAL_OUTPUT")
_INSTANCE = re.compile(r"^(?P<owner>[\w.-]+?)__(?P<repo>[\w.-]+)-\d+$")
#: mini-swe-agent refusing an action (none in the corpus: there its format errors -- "Please always
#: provide EXACTLY ONE action in triple backticks, found 2 actions." -- come back as messages
#: without a returncode, which are read as harness notes, not results). From its 2.x templates and
#: tool-call parsing, where they can answer a call: "action was not executed" (returncode -1, an
#: earlier action of the same response ended the step), "No tool calls found in the response",
#: "Unknown tool '<x>'", "Missing 'command' argument in bash tool call", "Error parsing tool call
#: arguments", the format error itself. Not refusals: a command's non-zero returncode, a timeout.
PROTOCOL_ERRORS = re.compile(
    r"\A\s*(?:action was not executed|Please always provide EXACTLY ONE action|No tool calls found in the response|"
    r"Unknown tool '|Missing 'command' argument in bash tool call|Error parsing tool call arguments|Format error:)")


#: The top-level keys of a run, in any order.
_KEYS = frozenset({"info", "messages", "trajectory_format", "instance_id"})


class MiniSweAgent(TrajectoryFormat):
    name = "mini-swe-agent"
    agent = "mini-swe-agent"
    description = "mini-swe-agent trajectories (.traj.json, v1 / v1.1, dict or bare message list)"
    locations = ("<output dir>/<instance>/<instance>.traj.json",)
    suffixes = (".json",)
    priority = 5
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        text = probe.text
        if probe.first_char == "{":
            if len(probe.records) > 1:
                return False  # JSONL
            marked = '"mini_version"' in text or '"trajectory_format": "mini-swe-agent' in text
            if marked and '"messages"' in text:
                return True
            # A key it writes first, the rest past the head: ``info`` holding a big submitted patch,
            # or long ``messages`` before the version.
            return probe.first_key in _KEYS and _marked(probe.fields)
        if probe.first_char == "[":
            return bool(re.match(r'\s*\[\s*\{\s*"role"\s*:\s*"system"', text)) and "<returncode>" in text
        return False

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        data = load_json(path, report)
        if data is None:
            return
        if isinstance(data, list):
            info: dict[str, Any] = {}
            messages, instance_id = data, None
        elif isinstance(data, dict) and isinstance(data.get("messages"), list):
            info = data.get("info") if isinstance(data.get("info"), dict) else {}
            messages, instance_id = data["messages"], data.get("instance_id")
        else:
            report.error("no 'messages' list: not a mini-swe-agent trajectory")
            return
        builder = TrajectoryBuilder(source_format=self.name, agent=self.agent, source_path=str(path))
        _header(builder, info, instance_id, path)
        for position, message in enumerate(messages):
            if not isinstance(message, dict):
                report.error(f"message {position} is not an object")
                continue
            _message(builder, message)
        if not builder.steps:
            report.error("the trajectory has no messages")
            return
        builder.outcome = _label(path, instance_id) or exit_status_outcome(_exit_status(info, messages))
        # /testbed is the harness's folder, not a name: the instance id names the repository
        builder.fields["repo"] = resolve_repo(builder.steps, cwd=builder.fields.get("cwd"),
                                              known=builder.fields.get("repo"), folder=False)
        yield builder.build()


def _marked(fields: Fields) -> bool:
    """A messages list, and mini-swe-agent's version beside it or in ``info``."""
    if fields.kind("messages") != "array":
        return False
    info = fields.get("info")
    return ((fields.text("trajectory_format") or "").startswith("mini-swe-agent")
            or (info is not None and "mini_version" in info.keys))


def _header(builder: TrajectoryBuilder, info: dict[str, Any], instance_id: Any, path: Path) -> None:
    config = info.get("config") if isinstance(info.get("config"), dict) else {}
    model = config.get("model") if isinstance(config.get("model"), dict) else {}
    env = config.get("environment") if isinstance(config.get("environment"), dict) else {}
    instance = str(instance_id) if instance_id else _instance_from_name(path)
    match = _INSTANCE.match(instance or "")
    builder.set(model=model.get("model_name"), agent_version=info.get("mini_version"),
                cwd=env.get("cwd"), session_id=instance,
                repo=f"{match['owner']}/{match['repo']}" if match else None)


def _instance_from_name(path: Path) -> str | None:
    name = path.name
    for suffix in (".traj.json", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return None


def _message(builder: TrajectoryBuilder, message: dict[str, Any]) -> None:
    role = message.get("role")
    content = _content_text(message.get("content"))
    extra = message.get("extra") if isinstance(message.get("extra"), dict) else {}
    if role == "system":
        return
    if role == "assistant":
        thought, commands = _split_action(content, extra)
        if thought:
            builder.assistant(thought)
        for command in commands:
            builder.call("bash", command=command)
        return
    if role == "exit":
        return  # v1.1 terminal record: exit status and submission, already in ``info``
    # user / tool: the task, an observation, a format error, or the final submission
    code = _RETURNCODE.search(content)
    if code and builder.steps:
        builder.result(text=_observation(content), exit_code=int(code.group(1)))
    elif builder.task is None and not any(s.kind == "user" for s in builder.steps):
        builder.task = _task(content)
        builder.user(content)
    elif builder.has_open_call and _SUBMIT.search(builder.steps[-1].command or ""):
        builder.result(text=content, exit_code=0)  # the submitted diff answers the submit command
    else:
        builder.user(content, meta=True)  # format-error feedback from the harness, not a person


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) if isinstance(c, dict) else str(c) for c in content)
    return "" if content is None else orjson.dumps(content).decode()


def _split_action(content: str, extra: dict[str, Any]) -> tuple[str, list[str]]:
    actions = extra.get("actions")
    if isinstance(actions, list) and actions:
        commands = [str(a.get("command")) for a in actions if isinstance(a, dict) and a.get("command")]
    else:
        # The harness runs a message's action only when it holds exactly one block;
        # otherwise it answers with a format error and nothing is executed.
        blocks = _BASH_BLOCK.findall(content) or _ANY_BLOCK.findall(content)
        commands = [blocks[0].strip()] if len(blocks) == 1 else []
    thought = _BASH_BLOCK.sub("", content).strip()
    thought = re.sub(r"^THOUGHT:\s*", "", thought)
    return thought, commands


def _observation(content: str) -> str:
    """The command's output; 2.x puts why a command did not run (or was killed) before it."""
    exception = _EXCEPTION.search(content)
    if exception:
        rest = _observation(content[: exception.start()] + content[exception.end():]).strip()
        return f"{exception.group(1).strip()}\n{rest}".strip()
    head_tail = _OUTPUT_HEAD.search(content)
    if head_tail:
        return f"{head_tail.group(1)}\n[... output elided by the agent ...]\n{head_tail.group(2)}"
    output = _OUTPUT.search(content)
    return output.group(1) if output else _RETURNCODE.sub("", content).strip()


def _task(content: str) -> str:
    for pattern in (_PR, _ISSUE):
        match = pattern.search(content)
        if match and match.group(1).strip():
            return match.group(1).strip()
    return content.strip()


def _exit_status(info: dict[str, Any], messages: list[Any]) -> str | None:
    """``info.exit_status`` (v1), or the v1.1 terminal ``exit`` message's."""
    status = info.get("exit_status")
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    if not status and last.get("role") == "exit" and isinstance(last.get("extra"), dict):
        status = last["extra"].get("exit_status")
    return str(status) if status else None


def _label(path: Path, instance_id: Any) -> Outcome | None:
    """The SWE-bench harness verdict beside the trajectory, if there is one."""
    name = path.name.removesuffix(".traj.json").removesuffix(".json")
    for candidate in (path.with_name(f"{name}.report.json"), path.with_name("report.json")):
        if not candidate.is_file():
            continue
        try:
            report = orjson.loads(candidate.read_bytes())
        except (orjson.JSONDecodeError, OSError):
            continue
        if isinstance(report, dict) and instance_id in report and isinstance(report[instance_id], dict):
            report = report[instance_id]
        if isinstance(report, dict) and isinstance(report.get("resolved"), bool):
            status = "resolved" if report["resolved"] else "failed"
            return Outcome(status=status, source="label",
                           evidence=f"SWE-bench report {candidate.name}: resolved={report['resolved']}")
    return None
