"""Read a trajectory as a sequence of understood actions: the shared input of both distillers.

Each tool call becomes an :class:`Event` (purpose, abstracted command, files, success and
the error it printed). Pitfalls are failures followed by a later success of the same kind
of action, with what happened in between as the fix.
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass, field

from pipeline.distill.abstraction import Abstractor
from pipeline.trajectory import Step, Trajectory
from pipeline.trajectory.commands import CHECKS, Purpose, classify, error_signature, segments

#: Failures of these purposes are worth a pitfall; a grep finding nothing is not.
_PITFALL_PURPOSES = CHECKS | {Purpose.RUN, Purpose.INSTALL, Purpose.EDIT, Purpose.OTHER}
_NOISE_PIPES = re.compile(r"\s*(2>&1|\|\s*(head|tail)(\s+-n)?\s+-?\d+|\|\s*(head|tail)\b|>\s*/dev/null)\s*")
_SELECTOR = re.compile(r"(::|/|\.py$|\.[jt]sx?$|^test_\w+|^\w+_tests?$|^tests?\.\w+|^[\w]+(\.[\w]+){2,}$|^-k$)")


@dataclass
class Event:
    call: Step
    result: Step | None
    purpose: Purpose
    command: str | None  # abstracted
    paths: list[str]  # abstracted
    ok: bool | None
    error: str | None  # abstracted error line, when it failed

    @property
    def steps(self) -> list[int]:
        return [self.call.index] + ([self.result.index] if self.result else [])


@dataclass
class Fix:
    failed: Event
    succeeded: Event
    between: list[Event] = field(default_factory=list)

    @property
    def steps(self) -> list[int]:
        return sorted({*self.failed.steps, *self.succeeded.steps, *(s for e in self.between for s in e.steps)})


@dataclass
class Analysis:
    trajectory: Trajectory
    abstract: Abstractor
    events: list[Event]

    def of(self, *purposes: Purpose) -> list[Event]:
        return [e for e in self.events if e.purpose in purposes]

    @property
    def edits(self) -> list[Event]:
        """Edits that took effect, scratch files and path-less file operations left out."""
        scratch = self.scratch_files()
        return [e for e in self.of(Purpose.EDIT)
                if e.ok is not False and any(p not in scratch and not _temporary(p) for p in e.paths)]

    @property
    def last_edit_index(self) -> int:
        return max((e.call.index for e in self.edits), default=-1)

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
        return frozenset(removed)

    def scratch_files(self) -> frozenset[str]:
        """Files the agent created for itself and removed again (reproduction scripts)."""
        return self._scratch

    @functools.cached_property
    def submitted(self) -> dict[str, str]:
        """Per-file diffs of a submitted patch (mini-swe-agent, SWE-agent): the final change."""
        for event in reversed(self.of(Purpose.SUBMIT)):
            text = event.result.text if event.result else ""
            if "diff --git" in text:
                return split_patch(text)
        return {}

    def fixes(self) -> list[Fix]:
        """Failures followed, later, by a success of the same action (same program or target)."""
        found: list[Fix] = []
        used: set[int] = set()
        for i, failed in enumerate(self.events):
            if failed.ok is not False or failed.purpose not in _PITFALL_PURPOSES or i in used:
                continue
            for j in range(i + 1, len(self.events)):
                later = self.events[j]
                if later.ok and _same_action(failed, later):
                    between = [e for e in self.events[i + 1:j] if e.ok is not False and (
                        e.purpose in (Purpose.EDIT, Purpose.INSTALL, Purpose.OTHER, Purpose.RUN) or
                        (e.purpose is Purpose.EXPLORE and set(e.paths) & set(failed.paths)))]
                    found.append(Fix(failed, later, between))
                    used.update(range(i, j))  # retries of the same failure collapse into one fix
                    break
        return found


_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/\S+$", re.M)


def split_patch(patch: str) -> dict[str, str]:
    starts = list(_DIFF_FILE.finditer(patch))
    return {m.group(1): patch[m.start(): starts[i + 1].start() if i + 1 < len(starts) else len(patch)].strip()
            for i, m in enumerate(starts)}


def _temporary(path: str) -> bool:
    return path.startswith(("<tmp>", "/tmp/", "/dev/"))


def _same_action(a: Event, b: Event) -> bool:
    if a.purpose is not b.purpose:
        return False
    if a.command and b.command:
        return program(a.command) == program(b.command)
    return bool(set(a.paths) & set(b.paths)) or (not a.paths and a.call.tool == b.call.tool)


def program(command: str) -> str:
    """The first two words of the command's significant segment: ``python -m``, ``npm run``."""
    segs = segments(command)
    words = (segs[0] if segs else command).split()
    return " ".join(words[:2])


_RUNNER = re.compile(r"(^|/)(py\.?test|pytest|runtests\.py|tox|nox|jest|vitest|mocha|unittest|rspec|phpunit|"
                     r"test|tests|check|ctest)$")
_OPTION_WITH_VALUE = re.compile(r"^-[a-zA-Z]$")


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
                    (not _OPTION_WITH_VALUE.match(previous) or previous == "-k"))
        if selector or (position and _SELECTOR.search(word) and not word.startswith("-")
                        and not _is_script(words, position)):
            if previous == "-k" and out and out[-1] == "-k":
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
        ok = _succeeded(result)
        error = None
        if ok is False and result is not None:
            error = error_signature(result.text) or (result.text.strip().splitlines() or [""])[0][:200]
            error = abstract(error) if error else None
        events.append(Event(call=call, result=result, purpose=action.purpose,
                            command=abstract(action.command) if action.command else None,
                            paths=[abstract.path(p) for p in action.paths], ok=ok, error=error))
    return Analysis(trajectory, abstract, events)


def _succeeded(result: Step | None) -> bool | None:
    if result is None:
        return None
    if result.exit_code is not None:
        return result.exit_code == 0
    if result.is_error is not None:
        return not result.is_error
    return None
