"""What a session changed and how it checked it: the facts outcome inference weighs.

* the **change**: the files the work consists of (the submitted patch when there is one, else
  the files edited and kept), leaving out scratch files the agent wrote for itself (created,
  then run as a script or removed), tests and docs; and the steps that changed them (editor
  tools, ``sed -i``, redirections, and scripts the agent wrote to patch a file);
* the **checks**: project tests, builds and linters (not ad-hoc scripts), each with its result,
  whether it failed the same way before the change (a failure that is not the change's), and
  whether it covers the changed code (its targets name a changed module, or it runs everything);
* **rewritten tests**: existing lines of test files the final change alters;
* the person's **reactions**: "thanks, works" / "it still fails" at the start of their messages.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from pipeline.trajectory import Step, StepKind, Trajectory
from pipeline.trajectory.commands import CHECKS, Action, Purpose, classify, edited_paths, first_line, segments

_TEST_PATH = re.compile(r"(^|/)(tests?|testing|__tests__|spec|specs)/|(^|/)(test_[^/]*|[^/]*_test\.\w+|"
                        r"[^/]*\.(test|spec)\.\w+|[^/]*Tests?\.java|conftest\.py)$")
_DOC_PATH = re.compile(r"(^|/)docs?/|\.(md|rst|txt|adoc)$|(^|/)(CHANGES|CHANGELOG|AUTHORS|LICENSE)[^/]*$", re.I)
_SCRIPT_RUN = re.compile(r"^(python3?|node|ruby|bash|sh|deno\s+run|ts-node|perl)\s+(?:-\S+\s+)*([^\s;&|]+)")
_WRITES_FILE = re.compile(r"open\([^)]*['\"][wa]\+?['\"]|\.write_text\(|\.write\(|writeFileSync|fs\.writeFile|"
                          r"sed\s+-i|>\s*\S")
_GENERIC = {"src", "lib", "core", "utils", "util", "app", "pkg", "internal", "main", "common", "base", "index",
            "init", "tests", "test", "testing", "source", "python", "packages", "modules", "helpers"}
_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/\S+$", re.M)
_CREATES = re.compile(r"(?<![0-9&<>])>(?!>)\s*([^\s;&|<>]+)")
_GIT_REVERT = re.compile(r"^git\s+(checkout|restore|stash|reset|apply|am|revert)\b")

#: A person's verdict opens their message; later sentences are usually the next request.
_NEGATIVE = re.compile(
    r"^\W*(no\b[,.!]|nope\b|wrong\b|that'?s (not|wrong)|this is wrong|(it|this|that)?\s*(still\s+)?"
    r"(doesn'?t|does not|didn'?t|did not|isn'?t|is not|won'?t)\s+work|not working|still\s+(fails?|failing|broken|"
    r"errors?|not|the same|doesn'?t|crash)|(it'?s|this is)?\s*(still\s+)?broken|(the\s+)?(tests?|build)\s+(still\s+)?"
    r"fail|revert\b|undo\b|roll ?back|\S+( \S+)? is not acceptable|you broke)", re.I)
_POSITIVE = re.compile(
    r"^\W*(thanks|thank you|thx|great|perfect|awesome|excellent|nice|good job|well done|lgtm|looks good|"
    r"(it |that |this )?works|that fixed it|fixed,|all good|ship it)\b(?![^.!\n]{0,40}\bbut\b)", re.I)


@dataclass
class Check:
    """A project test, build or lint run, and what came of it."""

    call: Step
    passed: bool
    covers_change: bool
    preexisting: bool = False

    @property
    def command(self) -> str:
        return (self.call.command or self.call.text).split("\n", 1)[0][:120]


@dataclass
class Verification:
    files: set[str] = field(default_factory=set)
    change_steps: list[int] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    adhoc_after_change: int = 0
    #: Ad-hoc runs after the last change whose result says neither way (no exit code recorded).
    adhoc_unread: int = 0
    rewritten_tests: list[str] = field(default_factory=list)
    submitted: Step | None = None
    patch: dict[str, str] | None = None
    reactions: list[tuple[Step, str]] = field(default_factory=list)
    scratch: set[str] = field(default_factory=set)  # files the agent wrote for itself, then ran or removed

    @property
    def first_change(self) -> int:
        return self.change_steps[0] if self.change_steps else -1

    @property
    def last_change(self) -> int:
        return self.change_steps[-1] if self.change_steps else -1


def is_test_path(path: str) -> bool:
    return bool(_TEST_PATH.search(path))


def split_patch(patch: str) -> dict[str, str]:
    """``{file: its part of the diff}`` of a ``git diff`` text."""
    starts = list(_DIFF_FILE.finditer(patch))
    return {m.group(1): patch[m.start(): starts[i + 1].start() if i + 1 < len(starts) else len(patch)]
            for i, m in enumerate(starts)}


def _same_file(a: str, b: str) -> bool:
    a, b = a.strip("'\"").removeprefix("./"), b.strip("'\"").removeprefix("./")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _ok(result: Step | None) -> bool | None:
    if result is None:
        return None
    if result.exit_code is not None:
        return result.exit_code == 0
    return None if result.is_error is None else not result.is_error


_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")


def _command_lines(command: str) -> list[str]:
    """The shell lines of a command, heredoc bodies left out (``cat <<EOF > f ... EOF\npython f``)."""
    lines, end = [], None
    for line in command.splitlines():
        if end is not None:
            end = None if line.strip() == end else end
            continue
        lines.append(line)
        marker = _HEREDOC.search(line)
        end = marker.group(1) if marker else None
    return lines


def _scripts_run(command: str) -> list[str]:
    """Files a command runs as programs (``python x.py``, ``bash x.sh``), on any of its lines."""
    found = []
    for line in _command_lines(command):
        for seg in segments(line):
            run = _SCRIPT_RUN.match(seg)
            if run:
                found.append(run.group(2).removeprefix("./"))
    return found


def _removed_files(command: str) -> list[str]:
    words: list[str] = []
    for seg in segments(command):
        if seg.startswith("rm "):
            try:
                words += [w for w in shlex.split(seg)[1:] if not w.startswith("-")]
            except ValueError:
                continue
    return words


def _tokens(command: str) -> list[str]:
    try:
        return shlex.split(" ".join(segments(command)))
    except ValueError:
        return " ".join(segments(command)).split()


def _keywords(path: str) -> set[str]:
    """Names a test of this file would likely mention: the module and its package."""
    p = PurePosixPath(path)
    names = {p.stem.strip("_").lower()} | {part.strip("_").lower() for part in p.parts[-3:-1]}
    return {n for n in names if len(n) > 2 and n not in _GENERIC}


def analyze(trajectory: Trajectory) -> Verification:
    v = Verification()
    calls = trajectory.tool_calls()
    cwd = (trajectory.cwd or "").rstrip("/") + "/" if trajectory.cwd else ""
    created: dict[str, Step] = {}  # files the session itself brought into being (`cat > f`, Write)
    touched: set[str] = set()
    scripts_run: set[str] = set()
    removed: set[str] = set()
    # What each call does, worked out once: classify() parses shell commands (shlex) and the
    # passes below ask it up to five times per call.
    actions = {call.index: classify(call) for call in calls}
    for call in calls:
        command = call.command or ""
        purpose = actions[call.index].purpose
        if purpose is Purpose.SUBMIT:
            v.submitted = call
        new = _CREATES.findall(first_line(command)) if command else []
        if (call.tool or "").lower() == "write":
            new += call.paths
        for path in (p.removeprefix("./") for p in new):
            if path not in touched:
                created[path] = call
        touched.update(p.removeprefix("./") for p in [*new, *(edited_paths(command) if command else [])])
        removed.update(p.removeprefix("./") for p in _removed_files(command))
        scripts_run.update(_scripts_run(command))
    if v.submitted is not None:
        result = trajectory.result_of(v.submitted)
        text = result.text if result else ""
        if "diff --git" in text:
            v.patch = split_patch(text)
        elif result is not None and _ok(result) and not text.strip():
            v.patch = {}  # the submission printed nothing: an empty change

    throwaway = [c for c in created if c in scripts_run or c in removed]
    v.scratch = set(throwaway)

    def scratch(path: str) -> bool:
        """Written by the session for itself: run as a script or removed again (``a.b`` module labels too)."""
        path = path.removeprefix("./")
        if path.startswith(("/tmp/", "/dev/")) and not (cwd and path.startswith(cwd)):
            return True
        forms = {path} | ({path.replace(".", "/") + ".py"} if re.fullmatch(r"\w+(\.\w+)+", path) else set())
        return any(_same_file(form, c) for form in forms for c in throwaway)

    if v.patch is not None:
        kept = {f for f in v.patch if not scratch(f)}
    else:
        edited = {p for c in calls for p in actions[c.index].paths if actions[c.index].purpose is Purpose.EDIT}
        kept = {p for p in edited if not scratch(p) and p.removeprefix("./") not in removed}
    v.files = {f for f in kept if not is_test_path(f) and not _DOC_PATH.search(f)}
    if v.files and v.patch:
        v.rewritten_tests = sorted(f for f, diff in v.patch.items() if is_test_path(f) and re.search(
            r"^-(?!--)\s*\S", diff, re.M))
    v.files = v.files or kept  # a change of only tests or docs is still the work to judge

    v.change_steps = [c.index for c in calls if _changes_code(trajectory, c, actions[c.index], v.files, created)]

    for call in calls:
        check = _check(trajectory, call, actions[call.index], v, created, scratch)
        if check is not None:
            v.checks.append(check)
        elif call.index > v.last_change >= 0 and actions[call.index].purpose is Purpose.RUN:
            ran = _ok(trajectory.result_of(call))
            v.adhoc_after_change += ran is True
            v.adhoc_unread += ran is None
    for check in v.checks:  # a failure the project had before the change is not the change's
        check.preexisting = not check.passed and any(
            o.call.command == check.call.command and not o.passed and o.call.index < v.first_change
            for o in v.checks)

    tool_seen = False
    for step in trajectory.steps:
        tool_seen = tool_seen or step.kind is StepKind.TOOL_CALL
        if tool_seen and step.kind is StepKind.USER and not step.meta:
            verdict = reaction(step.text)
            if verdict:
                v.reactions.append((step, verdict))
    return v


def reaction(text: str) -> str | None:
    """``positive`` / ``negative`` when a message opens with a verdict on the work (English only)."""
    opening = text.strip()[:160]
    if _NEGATIVE.search(opening):
        return "negative"
    return "positive" if _POSITIVE.search(opening) else None


def _changes_code(trajectory: Trajectory, call: Step, action: Action, files: set[str],
                  created: dict[str, Step]) -> bool:
    """True for a call that changed one of the change's files (and did not fail)."""
    if _ok(trajectory.result_of(call)) is False:
        return False
    command = call.command or ""
    touches = any(_same_file(p, f) for p in action.paths for f in files)
    if action.purpose is Purpose.EDIT and touches:
        return True
    if action.purpose is Purpose.VCS:  # `git checkout file`, `git stash`: a revert is a change too
        return bool(_GIT_REVERT.match(command)) and (touches or any(f in command for f in files))
    for script in _scripts_run(command):  # a script the agent wrote to patch a file
        maker = created.get(script)
        body = (maker.command or "").split("\n", 1)[-1] if maker else ""
        if any(PurePosixPath(f).name in body for f in files) and _WRITES_FILE.search(body):
            return True
    return False


def _check(trajectory: Trajectory, call: Step, action: Action, v: Verification, created: dict[str, Step],
           scratch: Callable[[str], bool]) -> Check | None:
    """The call as a project check, or None (not a check, ad-hoc, or no result to judge)."""
    purpose = action.purpose
    command = call.command or ""
    if purpose is Purpose.RUN:  # only running one of the project's own test files counts
        scripts = _scripts_run(command)
        if not (scripts and is_test_path(scripts[0]) and scripts[0] not in created):
            return None
    elif purpose not in CHECKS:
        return None
    passed = _ok(trajectory.result_of(call))
    if passed is None:
        return None
    # What it runs: paths, node ids and module labels after the runner (not the runner script).
    selectors = [t for t in _tokens(command)[1:] if not t.startswith("-")
                 and ("/" in t or "." in t or "::" in t or t.endswith("_tests"))
                 and not (t.endswith(("runtests.py", "manage.py")) or t.startswith("bin/"))]
    if purpose in CHECKS and selectors and all(scratch(t.split("::")[0]) for t in selectors):
        return None  # `pytest test_repro.py`: the agent's own script
    keywords = set().union(*(_keywords(f) for f in v.files)) if v.files else set()
    covers = not selectors or not keywords or any(k in t.lower() for t in selectors for k in keywords)
    return Check(call=call, passed=passed, covers_change=covers)
