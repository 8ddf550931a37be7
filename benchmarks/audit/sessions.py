"""What a trajectory shows, as the auditor reads it: the agent's changes, its checks, its scratch files.

Own definitions, independent of ``pipeline/distill``: the rules in ``rules.py`` judge a skill
against these facts, so they must not come from the code that wrote the skill. Input is the
canonical ``Trajectory`` the ingest stage builds (reading the session files is not what is measured).

* a **change** is one of the agent's own tool calls that writes a file: an edit tool (Edit, Write,
  str_replace_editor create/str_replace/insert, aider's and SWE-agent's edit, apply_patch ...), a
  call carrying a diff, or a shell command that writes (``sed -i``, a ``>`` redirect, ``tee``,
  ``patch``/``git apply``, ``cp``/``mv``/``rm``, ``git checkout -- <file>``);
* a **check** is a shell command that runs the project's tests, build, linter or type checker
  (pytest, tox, runtests.py, bin/test, npm test/build, tsc, make, cargo, go test, ...: ``is_check``),
  or aider's own /test and lint calls; a check that runs a scratch script is not a project check;
* a **failed** result: a non-zero exit code, else the format's error flag, else (formats that
  record neither, like SWE-agent) a failure printed in the output (pytest/unittest summaries,
  a traceback, ``error TS``, ``npm ERR!``, ``make: ***``);
* a **scratch script** is a script file the agent created in the session and then deleted, or left
  out of the session's final diff;
* a **harness edit** is a file in the session's final diff (the last ``diff --git`` shown) that no
  change of the agent's own ever touched (SWE-bench's ``setup.py`` pins, ``tox.ini -rA``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePosixPath

from pipeline.trajectory import Step, Trajectory

EDIT_TOOLS = {"edit", "write", "multiedit", "notebookedit", "create", "insert", "append", "apply_patch",
              "write_file", "replace", "edit_file", "edit_file_by_replace", "append_file", "str_replace",
              "str_replace_editor", "str_replace_based_edit_tool", "patch", "file_edit", "file_write",
              "create_file", "write_to_file", "insert_content", "search_replace"}
CREATE_TOOLS = {"write", "create", "write_file", "create_file", "write_to_file", "file_write"}
#: A shell command that writes a file (beyond the redirect targets found separately).
_SHELL_WRITE = re.compile(r"\bsed\s+(?:-\w+\s+)*-i|\bperl\s+-\w*i|\btee\b|\bpatch\b|\bgit\s+(?:apply|am|checkout|"
                          r"restore|stash)\b|\b(?:cp|mv|rm|unlink|touch|truncate)\s|\bwrite_text\(|\.write\(|"
                          r"open\([^)]*['\"][wa]")
_REDIRECT = re.compile(r"(?<![0-9&<>=-])(>>?)\s*(?!&)(['\"]?)([^\s;&|<>'\"()]+)\2")
_RM = re.compile(r"(?:^|[;&|(]\s*|\s)(?:rm|unlink)\s+((?:-\w+\s+)*)([^;&|)\n]+)")
_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.M)
_NEW_FILE = re.compile(r"^(?:--- /dev/null|@@ -0,0 )", re.M)
SCRIPT_SUFFIXES = {".py", ".js", ".mjs", ".cjs", ".ts", ".sh", ".bash", ".rb", ".php", ".pl", ".go", ".rs", ".c",
                   ".cpp", ".java", ".kt", ".swift", ".pony"}
PROSE_SUFFIXES = {".md", ".markdown", ".txt", ".rst", ".vtt", ".srt", ".doc", ".docx", ".pdf", ".odt", ".rtf"}
#: A command word (at the start of a segment) that runs the project's tests, build, linter or type checker.
_CHECK = re.compile(
    r"^(?:\S*/)?(?:py\.?test|pytest|tox|nox|runtests\.py)(?:\s|$)|^(?:\S*/)?bin/test\b|"
    r"^python[\d.]*\s+(?:-\S+\s+)*(?:-m\s+(?:pytest|unittest|mypy|ruff|flake8|pylint|tox|nose2?)\b|"
    r"\S*(?:runtests\.py|manage\.py\s+test|setup\.py\s+(?:test|build))\b|\S*bin/test\b)|"
    r"^(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?(?:test|build|lint|typecheck|type-check|check|tsc)\b|"
    r"^(?:npx|pnpx|bunx)\s+(?:tsc|jest|vitest|eslint|mocha|playwright\s+test)\b|"
    r"^(?:\S*/)?(?:tsc|jest|vitest|mocha|eslint|mypy|flake8|pylint|make|cmake|ninja|mvn|gradlew?|ctest|"
    r"rspec|phpunit)\b|^ruff\s+check\b|^go\s+(?:test|build|vet)\b|^cargo\s+(?:test|build|check|clippy)\b|"
    r"^dotnet\s+(?:build|test)\b|^swift\s+(?:build|test)\b|^rake\s+test\b")
_WRAPPERS = re.compile(r"^(?:(?:\w+=\S*|sudo|env|time|timeout\s+\S+|xvfb-run(?:\s+-a)?|nice|stdbuf\s+\S+)\s+)+")


def is_check(command: str) -> bool:
    """Does some part of this shell command run the project's tests, build, linter or type checker?"""
    for segment in re.split(r"&&|\|\||[;|\n]", command):
        segment = _WRAPPERS.sub("", segment.strip().lstrip("("))
        if segment and not segment.startswith("cd ") and _CHECK.search(segment):
            return True
    return False


_FAILED_OUTPUT = re.compile(
    r"^(?:FAILED|ERROR)\b|\b[1-9]\d* (?:failed|errors?)\b|^FAILED \((?:failures|errors)=|"
    r"Traceback \(most recent call last\)|\berror TS\d+|npm ERR!|^make(?:\[\d+\])?: \*\*\*|"
    r"^E\s{3}\S|command not found|No module named", re.M)
_SANDBOX_PREFIX = re.compile(r"^(?:/testbed/|/workspace/[^/]+/|/repo/|/app/|\./)")


def norm_command(command: str) -> str:
    """A command for comparing runs: whitespace collapsed, a leading ``cd <dir> &&`` dropped."""
    command = " ".join(command.split())
    return re.sub(r"^(?:cd\s+\S+\s*&&\s*)+", "", command)


def rel(path: str, cwd: str | None = None) -> str:
    """A path as the project sees it: without the session's cwd or a sandbox prefix."""
    path = path.strip().strip("'\"`")
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        path = path[len(cwd.rstrip("/")) + 1:]
    return _SANDBOX_PREFIX.sub("", path)


def failed(result: Step | None) -> bool | None:
    """Did this tool result fail? None when nothing says (no result)."""
    if result is None:
        return None
    if result.exit_code is not None:
        return result.exit_code != 0
    if result.is_error is not None:
        return result.is_error
    return bool(_FAILED_OUTPUT.search(result.text or ""))


@dataclass
class Call:
    """One tool call with its result, classified."""

    step: Step
    result: Step | None
    command: str  # the shell command, or "" for other tools
    tool: str  # lower-case tool name
    changed: set[str] = field(default_factory=set)  # files it writes (project-relative)
    created: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    is_change: bool = False

    @property
    def index(self) -> int:
        return self.step.index

    @property
    def failed(self) -> bool | None:
        return failed(self.result)

    @property
    def output(self) -> str:
        return self.result.text if self.result is not None and self.result.text else ""


class Session:
    """Facts about one trajectory, computed once."""

    def __init__(self, trajectory: Trajectory) -> None:
        self.t = trajectory
        self.cwd = trajectory.cwd or ""
        self.calls = [self._call(s) for s in trajectory.steps if s.kind == "tool_call"]

    # -- classification of single calls -----------------------------------------------------
    def _call(self, step: Step) -> Call:
        result = self.t.steps[step.result_index] if step.result_index is not None else None
        tool = (step.tool or "").lower()
        command = step.command or ""
        if not command and tool in {"test", "lint", "run"}:  # aider's /test, /lint, /run
            command = step.text or ""
        call = Call(step, result, command, tool)
        paths = {rel(p, self.cwd) for p in step.paths}
        subcommand = (step.text or "").split(None, 1)[0].lower() if step.text else ""
        if tool in EDIT_TOOLS and not (tool.startswith("str_replace") and subcommand in {"view", tool}):
            call.is_change = True
            call.changed |= paths
            if tool in CREATE_TOOLS or subcommand == "create" or (step.diff and _NEW_FILE.search(step.diff)):
                call.created |= paths
        elif step.diff:
            call.is_change = True
            call.changed |= paths
        if command:
            for match in _REDIRECT.finditer(command):
                target = rel(match.group(3), self.cwd)
                if target in {"/dev/null", "/dev/stderr", "/dev/stdout"}:
                    continue
                call.is_change = True
                call.changed.add(target)
                if match.group(1) == ">":  # ">>" appends to what may have been there
                    call.created.add(target)
            if _SHELL_WRITE.search(command):
                call.is_change = True
                call.changed |= {rel(p, self.cwd) for p in _path_tokens(command)}
            for match in _RM.finditer(command):
                call.deleted |= {rel(p, self.cwd) for p in _split(match.group(2)) if not p.startswith("-")}
        return call

    # -- session-wide facts -----------------------------------------------------------------
    def call_at(self, index: int) -> Call | None:
        """The call at this step, or the call whose result this step is."""
        for call in self.calls:
            if call.index == index or (call.result is not None and call.result.index == index):
                return call
        return None

    @cached_property
    def final_diff(self) -> str:
        """The last diff of the whole workspace the session shows (a submission or a ``git diff``)."""
        for step in reversed(self.t.steps):
            if step.kind == "tool_result" and step.text and _DIFF_FILE.search(step.text):
                return step.text
        return ""

    @cached_property
    def final_diff_files(self) -> set[str]:
        return {m.group(2) for m in _DIFF_FILE.finditer(self.final_diff)}

    @cached_property
    def created(self) -> dict[str, int]:
        """Files the agent created -> the step that first created them."""
        found: dict[str, int] = {}
        for call in self.calls:
            for path in call.created:
                found.setdefault(path, call.index)
        return found

    @cached_property
    def deleted(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for call in self.calls:
            for path in call.deleted:
                found[path] = call.index
        return found

    @cached_property
    def scratch_scripts(self) -> set[str]:
        """Script files the agent created and then deleted, or kept out of the final diff."""
        scratch = set()
        for path, made in self.created.items():
            if PurePosixPath(path).suffix not in SCRIPT_SUFFIXES:
                continue
            removed = any(_same_file(path, d) and at > made for d, at in self.deleted.items())
            left_out = bool(self.final_diff) and not any(_same_file(path, f) for f in self.final_diff_files)
            if removed or left_out:
                scratch.add(path)
        return scratch

    def runs_scratch(self, command: str) -> bool:
        names = {PurePosixPath(p).name for p in self.scratch_scripts}
        return any(PurePosixPath(token).name in names for token in _split(command))

    @cached_property
    def agent_changed(self) -> set[str]:
        """Every file any of the agent's own changes touched (project-relative)."""
        return {p for call in self.calls if call.is_change for p in call.changed}

    @cached_property
    def harness_files(self) -> set[str]:
        """Files of the final diff that none of the agent's own changes touched."""
        own = self.agent_changed
        return {f for f in self.final_diff_files if not any(_same_file(f, p) for p in own)}

    @cached_property
    def checks(self) -> list[Call]:
        return [c for c in self.calls if c.command and (c.tool in {"test", "lint"} or is_check(c.command))
                and not self.runs_scratch(c.command)]

    @cached_property
    def last_change(self) -> int:
        """The step of the agent's last change to a project file (-1: none)."""
        last = -1
        for call in self.calls:
            if call.is_change and (not call.changed or call.changed - self.scratch_scripts):
                last = call.index
        return last

    @cached_property
    def failed_check_after_last_change(self) -> Call | None:
        """The last project check after the last change, when it failed."""
        after = [c for c in self.checks if c.index > self.last_change and c.result is not None]
        return after[-1] if after and after[-1].failed else None

    @property
    def labelled_failure(self) -> bool:
        return self.t.outcome.source == "label" and self.t.outcome.status == "failed"

    @cached_property
    def is_coding(self) -> bool:
        """The session changed a file that is not prose, or ran a project check."""
        if self.checks:
            return True
        return any(PurePosixPath(p).suffix.lower() not in PROSE_SUFFIXES
                   for call in self.calls if call.is_change for p in call.changed or {"?.unknown"})


def _split(command: str) -> list[str]:
    try:
        return shlex.split(command, comments=False, posix=True)
    except ValueError:
        return command.split()


def _path_tokens(command: str) -> list[str]:
    """Tokens of a command that look like file paths (a slash or a file suffix)."""
    return [t for t in _split(command) if not t.startswith("-") and re.search(r"/|\.\w{1,5}$", t)
            and not re.search(r"[\s*?$`{}]|^s/|^\d", t)]


def _same_file(a: str, b: str) -> bool:
    a, b = a.removeprefix("./"), b.removeprefix("./")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)
