"""Read a trajectory as a sequence of understood actions: the shared input of both distillers.

Each tool call becomes an :class:`Event` (purpose, abstracted command, files, success and the
error it printed). A call the agent's harness refused (``Step.protocol_error``: an edit block
that did not match, a file not read first) is neither a failure nor a success: the agent misused
its tools, the project said nothing.

A :class:`Fix` pairs a failing run of a check with **the next run of the same check** (same
program, same targets; flags may differ). When that run no longer shows the error, what changed
in between fixed it: installs, build steps or variables (``environment``), the command's own
flags (``command``), or edits (``code``). A plain retry with nothing changed fixed nothing, a
mix of edits and installs does not say which one did, and an edit that guts the failing test is
never a fix: none of these pair.
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass, field
from typing import Literal

from pipeline.distill.abstraction import Abstractor
from pipeline.ingest.verification import Verification, is_test_path
from pipeline.ingest.verification import analyze as verify
from pipeline.trajectory import Step, Trajectory
from pipeline.trajectory.commands import CHECKS, Purpose, classify, error_signature, segments

#: Failures of these purposes are worth pairing with what fixed them; a grep finding nothing is not.
_PAIRED_PURPOSES = CHECKS | {Purpose.RUN, Purpose.INSTALL}
#: Output plumbing: what a command's output is cut to or kept in, not what it runs (POSIX shells and PowerShell:
#: ``| tail -20``, ``2>&1 | Out-File logs\x.txt``, ``| Select-Object -Last 20``, ``| tee log.txt``).
_NOISE_PIPES = re.compile(r"\s*(2>&1|\|\s*(head|tail)(\s+-n)?\s+-?\d+|\|\s*(head|tail)\b|>\s*/dev/null"
                          r"|\|\s*(?:Out-File|Tee-Object|tee)(?:\s+-\w+)*\s+[^\s|;&]+|\|\s*Select-Object\s+-(?:Last|First)\s+\d+"
                          r"|\|\s*(?:Out-String|Out-Host|Out-Null)\b)\s*", re.I)
_SELECTOR = re.compile(r"(::|/|\.py$|\.[jt]sx?$|^test_\w+|^\w+_tests?$|^tests?\.\w+|^[\w]+(\.[\w]+){2,}$|^-k$)")
_ENV_SETTING = re.compile(r"^\s*(export\s+\w+=|(source|\.)\s+\S*(venv|activate|env)\S*|conda\s+activate\b|"
                          r"(pyenv|nvm|asdf)\s+(use|local|shell|global)\b|ulimit\b)")
#: An error that says a test's expectation failed: installing something is not what fixes that.
_ASSERTION = re.compile(r"\bAssertionError\b|^(FAILED|FAIL:)\s|\bassert\b|expected .* (to|but)", re.I)
_SKIP_ADDED = re.compile(r"^\+.*(@pytest\.mark\.skip|@unittest\.skip|\bpytest\.skip\(|\b(it|describe|test)\.skip\(|"
                         r"\bxit\(|\bxdescribe\(|def _+skip_?test_|\bskipTest\()", re.M)

FixKind = Literal["environment", "command", "code"]


@dataclass
class Event:
    call: Step
    result: Step | None
    purpose: Purpose
    command: str | None  # abstracted
    paths: list[str]  # abstracted
    ok: bool | None  # None: no result to judge, or the harness refused the call
    error: str | None  # abstracted error line, when it failed
    protocol: bool = False  # the harness refused the call (``Step.protocol_error``)

    @property
    def steps(self) -> list[int]:
        return [self.call.index] + ([self.result.index] if self.result else [])

    @property
    def check(self) -> str | None:
        """Which check this run is: its program and targets, flags and output trimming left out."""
        return check_key(self.command) if self.command else None


@dataclass
class Fix:
    """A failure, the next run of the same check that no longer shows it, and what changed between."""

    failed: Event
    after: Event
    between: list[Event] = field(default_factory=list)
    kind: FixKind = "code"

    @property
    def steps(self) -> list[int]:
        return sorted({*self.failed.steps, *self.after.steps, *(s for e in self.between for s in e.steps)})

    @property
    def remedy(self) -> list[Event]:
        """The events that changed the environment (installs, builds, variables), for an environment fix."""
        return [e for e in self.between if _changes_environment(e)]


@dataclass
class Analysis:
    trajectory: Trajectory
    abstract: Abstractor
    events: list[Event]

    def of(self, *purposes: Purpose) -> list[Event]:
        return [e for e in self.events if e.purpose in purposes]

    @functools.cached_property
    def verification(self) -> Verification:
        """What outcome inference knows: the change's files, the project checks, scratch files."""
        return verify(self.trajectory)

    @functools.cached_property
    def _scratch(self) -> frozenset[str]:
        removed: set[str] = set()
        for event in self.events:
            if event.command and re.match(r"^rm\b", event.command):
                try:
                    removed.update(w for w in shlex.split(event.command.split("\n", 1)[0])[1:]
                                   if not w.startswith("-"))
                except ValueError:
                    continue
        removed |= {self.abstract.path(p) for p in self.verification.scratch}
        return frozenset(p.removeprefix("./") for p in removed)

    def scratch_files(self) -> frozenset[str]:
        """Files the agent created for itself and ran or removed again (reproduction scripts)."""
        return self._scratch

    def is_scratch(self, path: str) -> bool:
        return _temporary(path) or path.removeprefix("./") in self._scratch

    @property
    def edits(self) -> list[Event]:
        """Edits that took effect on project files (scratch, temporary and path-less ones left out)."""
        return [e for e in self.of(Purpose.EDIT)
                if e.ok is not False and not e.protocol and any(not self.is_scratch(p) for p in e.paths)]

    @property
    def last_edit_index(self) -> int:
        return max((e.call.index for e in self.edits), default=-1)

    @property
    def first_edit_index(self) -> int:
        return min((e.call.index for e in self.edits), default=-1)

    @functools.cached_property
    def submitted(self) -> dict[str, str]:
        """Per-file diffs of a submitted patch (mini-swe-agent, SWE-agent): the final change."""
        for event in reversed(self.of(Purpose.SUBMIT)):
            text = event.result.text if event.result else ""
            if "diff --git" in text:
                return split_patch(text)
        return {}

    def fixes(self) -> list[Fix]:
        """Each failure paired with the next run of the same check that no longer shows it (see module)."""
        found: list[Fix] = []
        failing: dict[str, int] = {}  # check -> position of its latest failing run
        for position, event in enumerate(self.events):
            key = event.check
            if key is None or event.protocol or event.ok is None or event.purpose not in _PAIRED_PURPOSES:
                continue
            start = failing.get(key)
            if start is not None:
                failed = self.events[start]
                if event.ok is False and event.error == failed.error:
                    failing[key] = position  # the same failure again: what fixed it comes later
                    continue
                del failing[key]
                fix = self._pair(failed, event, self.events[start + 1:position])
                if fix is not None:
                    found.append(fix)
            if event.ok is False and event.error:
                failing[key] = position
        return found

    def _pair(self, failed: Event, after: Event, between: list[Event]) -> Fix | None:
        edits = [e for e in between if e.purpose is Purpose.EDIT and e.ok is not False and not e.protocol]
        environment = [e for e in between if _changes_environment(e)]
        if any(self._guts_a_test(e, failed) for e in edits):
            return None  # emptying or skipping the failing test is never a fix
        if edits and environment:
            return None  # an edit and an install both happened: which one fixed it is unknown
        if edits:
            return Fix(failed, after, between, "code")
        if environment:
            if failed.error and _ASSERTION.search(failed.error):
                return None  # a test's expectation does not start holding because something was installed
            return Fix(failed, after, between, "environment")
        if failed.command != after.command and _flags(failed.command) != _flags(after.command):
            return Fix(failed, after, between, "command")
        return None  # run again with nothing changed: transient, or the output was misread

    def _guts_a_test(self, edit: Event, failed: Event) -> bool:
        """An edit that deletes, comments out or skips test code (unless the task was about that test)."""
        tests = [p for p in edit.paths if is_test_path(p)]
        if not tests or any(_named_in_task(self.trajectory, p) for p in tests):
            return False
        if edit.command and re.match(r"^(rm|git\s+rm|truncate)\b", edit.command):
            return True
        diff = edit.call.diff or ""
        if _SKIP_ADDED.search(diff):
            return True
        removed = [line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")
                   and _code_line(line[1:])]
        added = [line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")
                 and _code_line(line[1:])]
        return len(removed) >= 2 and len(added) * 2 <= len(removed)


def _code_line(line: str) -> bool:
    text = line.strip()
    return bool(text) and not text.startswith(("#", "//", "/*", "*", "<!--"))


def _named_in_task(trajectory: Trajectory, path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0]
    task = trajectory.task or ""
    return bool(name and name in task) or (len(stem) > 6 and stem in task)


def _changes_environment(event: Event) -> bool:
    if event.ok is not True or not event.command:
        return False
    if event.purpose is Purpose.INSTALL or event.purpose is Purpose.BUILD:
        return True
    return bool(_ENV_SETTING.match(event.command))


def _flags(command: str | None) -> tuple[str, ...]:
    words = _words(command or "")
    return tuple(w for w in words if w.startswith("-"))


def _words(command: str) -> list[str]:
    line = _NOISE_PIPES.sub(" ", " && ".join(segments(command))).strip()
    try:
        return shlex.split(line)
    except ValueError:
        return line.split()


def check_key(command: str) -> str:
    """``python3 -m pytest tests/a.py -q | tail -5`` -> ``python -m pytest tests/a.py``: what a run checks.

    Flags go (a retry with another flag is the same check), ``-m <module>`` stays, and the
    spellings of one runner meet (``python3 x.py``, ``python x.py``, ``./x.py``).
    """
    words = _words(command)
    kept: list[str] = []
    for position, word in enumerate(words):
        previous = words[position - 1] if position else ""
        if word.startswith("-"):
            if word in ("-m", "-k") and position + 1 < len(words):
                kept.append(word)
            continue
        if previous.startswith("-") and previous not in ("-m", "-k") and "=" not in previous \
                and not _SELECTOR.search(word):
            continue  # a flag's value (``-p no:cacheprovider``, ``--parallel 1``)
        kept.append(word.removeprefix("./"))
    if kept and re.fullmatch(r"python(3(\.\d+)?)?|py", kept[0]):
        kept[0] = "python"
        if len(kept) > 1 and kept[1].endswith(".py"):
            kept.pop(0)  # ``python tests/runtests.py`` and ``./tests/runtests.py`` run the same script
    return " ".join(kept) if kept else command.strip()


_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/\S+$", re.M)


def split_patch(patch: str) -> dict[str, str]:
    starts = list(_DIFF_FILE.finditer(patch))
    return {m.group(1): patch[m.start(): starts[i + 1].start() if i + 1 < len(starts) else len(patch)].strip()
            for i, m in enumerate(starts)}


def _temporary(path: str) -> bool:
    return path.startswith(("<tmp>", "/tmp/", "/dev/"))


def program(command: str) -> str:
    """The first two words of the command's significant segment: ``python -m``, ``npm run``."""
    segs = segments(command)
    words = (segs[0] if segs else command).split()
    return " ".join(words[:2])


_RUNNER = re.compile(r"(^|/)(py\.?test|pytest|runtests\.py|tox|nox|jest|vitest|mocha|unittest|rspec|phpunit|"
                     r"test|tests|check|ctest)$")
_OPTION_WITH_VALUE = re.compile(r"^-[a-zA-Z]$")
#: Options whose value picks tests by name (pytest ``-k``, jest/vitest ``-t``): part of the selection.
_SELECTING = ("-k", "-t")


def template(command: str) -> str:
    """A command with its instance-specific selectors replaced: ``pytest <tests> -q``.

    Test selectors are the positional arguments after the runner (``pytest``, ``runtests.py``,
    ``npm test`` ...): test files, node ids, module labels. Output trimming (``| tail``) goes.
    """
    line = _NOISE_PIPES.sub(" ", " && ".join(segments(command))).strip()
    try:
        words = shlex.split(line)
    except ValueError:
        return line
    out: list[str] = []
    after_runner = False
    for position, word in enumerate(words):
        if word in ("&&", "||", ";", "|"):
            after_runner = False
            out.append(word)
            continue
        previous = words[position - 1] if position else ""
        selector = (after_runner and not word.startswith("-") and
                    (not _OPTION_WITH_VALUE.match(previous) or previous in _SELECTING))
        if selector or (position and _SELECTOR.search(word) and not word.startswith("-")
                        and not _is_script(words, position)):
            if previous in _SELECTING and out and out[-1] == previous:
                out.pop()
            if not (out and out[-1] == "<tests>"):
                out.append("<tests>")
            continue
        out.append(shlex.quote(word))
        after_runner = after_runner or bool(_RUNNER.search(word))
    return " ".join(out)


def _is_script(words: list[str], position: int) -> bool:
    # ``python tests/runtests.py x``: the script itself is not a selector, its arguments are.
    return position == 0 or (words[position].endswith((".py", ".js", ".ts")) and (
        words[position - 1].startswith(("python", "node", "ts-node", "npx")) or words[position - 1] in ("run", "exec")))


def analyze(trajectory: Trajectory) -> Analysis:
    abstract = Abstractor(trajectory.cwd)
    events: list[Event] = []
    for call in trajectory.tool_calls():  # subagent (sidechain) work counts: it ran in the same repo
        action = classify(call)
        result = trajectory.result_of(call)
        protocol = bool(result is not None and result.protocol_error)
        ok = None if protocol else _succeeded(result)
        error = None
        if ok is False and result is not None:
            error = error_signature(result.text) or (result.text.strip().splitlines() or [""])[0][:200]
            error = abstract(error) if error else None
        events.append(Event(call=call, result=result, purpose=action.purpose,
                            command=abstract(action.command) if action.command else None,
                            paths=[abstract.path(p) for p in action.paths], ok=ok, error=error, protocol=protocol))
    return Analysis(trajectory, abstract, events)


def _succeeded(result: Step | None) -> bool | None:
    if result is None:
        return None
    if result.exit_code is not None:
        return result.exit_code == 0
    if result.is_error is not None:
        return not result.is_error
    return None
