"""The person's corrections: a message that redirects the agent after what it did, in their words.

"don't use --no-git in those tests", "no, don't mock completion, mock the httpx library",
"use `GitTemporaryDirectory` and `import git` not os.system": the most valuable thing a session
holds, and the one no check can find. A message is a correction when it

* comes after the agent acted (a tool call before it in the session, or, for a request that
  continues an earlier one of the same launch, the session's opening message),
* opens with a redirect ("no,", "don't", "do not", "never", "stop", "instead", "not", "X is not
  acceptable") or says "use X instead of / not Y", and
* names something concrete: code (backticks, a call, a flag, a path, an identifier) or the way of
  working (tests, mocks, commits, docs, design ...).

Only the message's first line is kept, verbatim (clipped), with what the agent had just changed.
Praise ("great, but ..."), questions and one-word answers are not corrections.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pipeline.trajectory import StepKind, Trajectory

if TYPE_CHECKING:
    from pipeline.distill.analysis import Analysis

MAX_QUOTE = 240
_OPENING = re.compile(
    r"^\W*(no\b[,.!:;]?|nope\b|don'?t\b|do\s+not\b|dont\b|never\b|stop\b|please\s+(don'?t|do\s+not|stop)\b|"
    r"instead\b|rather\s+than\b|not\s+(like\s+that|that|this)\b|you\s+(should(n'?t|\s+not)|must\s+not|"
    r"mustn'?t)\b|that'?s\s+(wrong|not\s+(right|what))|wrong\b)", re.I)
_NOT_ACCEPTABLE = re.compile(r"^\W*[\w`'\".()-]+(\s+[\w`'\".()-]+)?\s+(is|are)\s+not\s+(acceptable|allowed|ok|okay)\b",
                             re.I)
_USE_INSTEAD = re.compile(r"\buse\s+\S+[^.;:!?]{0,50}?\b(instead\s+of|not|rather\s+than)\b|\binstead\s+of\s+\S+",
                          re.I)
_CODE = re.compile(r"`[^`]+`|\w\(\)|(?<!\w)--?[a-z][\w-]+|\b\w+\.\w+\b|\b[a-z]+_[a-z_]+\b|\b[a-z]+[A-Z]\w*\b|"
                   r"\b[A-Z][a-z]+[A-Z]\w*\b|/\w")
_WORK = re.compile(r"\b(tests?|mock(s|ing)?|commit(s|ting)?|docs?|document(s|ation)?|comments?|notes?|TODOs?|"
                   r"implementation|design|abstraction|refactor|lint|types?|logging|errors?|exceptions?|"
                   r"dependenc(y|ies)|import(s)?|files?|folders?|paths?|names?|api)\b", re.I)
_PRAISE = re.compile(r"^\W*(great|thanks|thank you|perfect|nice|good|ok|okay|cool|awesome|lgtm)\b", re.I)


@dataclass
class Correction:
    quote: str
    steps: list[int]
    paths: list[str] = field(default_factory=list)  # what the agent had just changed
    context: str | None = None  # "after editing tests/basic/test_main.py"


def is_correction(text: str) -> bool:
    line = first_line(text)
    if not line or len(line) > 400 or _PRAISE.match(line) or line.rstrip().endswith("?"):
        return False
    redirect = _OPENING.match(line) or _NOT_ACCEPTABLE.match(line) or _USE_INSTEAD.search(line)
    return bool(redirect) and bool(_CODE.search(line) or _WORK.search(line))


def first_line(text: str) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return " ".join(line.split())
    return ""


def follows_a_request(trajectory: Trajectory) -> bool:
    """A request that is not the first of its launch (aider: ``<launch>.<k>``, k > 1): its opening
    message answers what the agent did for the one before."""
    parent, own = trajectory.parent_session_id, trajectory.session_id or ""
    return bool(parent) and own.startswith(f"{parent}.") and own.rsplit(".", 1)[-1] not in ("", "1")


def corrections(trajectory: Trajectory, analysis: Analysis) -> list[Correction]:
    found: list[Correction] = []
    acted = False
    continues = follows_a_request(trajectory)
    first_user = True
    for step in trajectory.steps:
        if step.kind is StepKind.TOOL_CALL:
            acted = True
            continue
        if step.kind is not StepKind.USER or step.meta or not step.text.strip():
            continue
        opening = first_user
        first_user = False
        if not (acted or (opening and continues)) or not is_correction(step.text):
            continue
        found.append(correction_at(analysis, step.index, first_line(step.text)))
    return found


def correction_at(analysis: Analysis, index: int, quote: str) -> Correction:
    """The correction at step ``index`` (clipped), with what the agent had just changed (or changed next)."""
    quote = " ".join(quote.split())
    quote = quote if len(quote) <= MAX_QUOTE else quote[: MAX_QUOTE - 3].rstrip() + "..."
    before = [e for e in analysis.edits if e.call.index < index]
    after = [e for e in analysis.edits if e.call.index > index]
    touched = before[-1:] or after[:1]
    paths = [p for e in touched for p in e.paths if not analysis.is_scratch(p)][:3]
    context = None
    if paths:
        verb = "after the agent changed" if before else "the agent then changed"
        context = f"{verb} {', '.join(paths)}"
    return Correction(quote=quote, steps=[index, *(s for e in touched for s in e.steps)], paths=paths,
                      context=context)
