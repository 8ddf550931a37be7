"""Default-deny batch approval: which skills a batch (``review approve --all``, the page's bulk
button) may approve, and why the others wait to be approved by name.

A skill joins a batch only when it has no risk flag and every command in it -- procedure,
pitfall and verification commands, and command lines in backticks in its prose -- is an
ordinary project command (``pipeline.safety.ordinary``: the repository's tests, build and lint,
its own files, read-only looks, installs of named packages from the default index), and its prose
is plain (``pipeline.safety.plain``: no web address, no path outside the checkout, no command
written inline that is not ordinary -- an agent follows "run ~/.cache/x/bootstrap first" without
backticks). Anything else is approved by name, after the reviewer has read the lines listed here. So is a skill learned
only from sessions nobody verified, with no check in it that passed.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.distill.risk import places
from pipeline.library.model import Skill
from pipeline.review.flags import Flag
from pipeline.safety.ordinary import looks_like_command, why_not_ordinary
from pipeline.safety.plain import why_not_plain
from pipeline.safety.prose import code_spans


def batch_refusals(skill: Skill, flags: Sequence[Flag]) -> list[str]:
    """Why SKILL may not be approved in a batch (empty: it may), each reason with where it is."""
    return list(dict.fromkeys([f"{f.where}: {f.code}: {f.message}" for f in flags] + held(skill)))


def held(skill: Skill) -> list[str]:
    """Why an unflagged SKILL still waits to be approved by name: its sources, its commands, its prose."""
    return evidence_refusals(skill) + command_refusals(skill) + prose_refusals(skill)


def evidence_refusals(skill: Skill) -> list[str]:
    """A generated skill whose sessions all ended unverified, and that shows no check that passed.

    Nobody and nothing said such a session worked: a person reads it before an agent does.
    A manual's commands and environment fixes, and a skill's verification items, are checks that passed.
    """
    if not skill.generated or not skill.sources or any(s.outcome == "resolved" for s in skill.sources):
        return []
    # A manual's commands ran clean, and each environment fix is a command that passed after the change.
    checked = bool(skill.verification) or (skill.kind == "repo" and bool(skill.procedure or skill.pitfalls))
    if checked:
        return []
    outcomes = ", ".join(sorted({s.outcome for s in skill.sources}))
    return [f"sources: learned only from sessions whose outcome is {outcomes}, with no check that passed"]


def command_lines(skill: Skill) -> list[tuple[str, str]]:
    """(where, line) for every command line a batch judges: the commands of procedure, pitfalls and
    verification, and the command lines in backticks (or shell blocks) of the prose."""
    found: list[tuple[str, str]] = []
    for place in places(skill):
        if not place.text:
            continue
        if place.command:
            found.append((place.where, place.text))
        else:
            found += [(place.where, span) for span in code_spans(place.text) if looks_like_command(span)]
    return found


def command_refusals(skill: Skill) -> list[str]:
    """The lines of SKILL that are not ordinary project commands, each with where it is and why."""
    reasons: dict[str, str] = {}  # why -> where it is first
    for where, line in command_lines(skill):
        for why in why_not_ordinary(line):
            reasons.setdefault(why, where)
    return [f"{where}: not an ordinary project command: {why}" for why, where in reasons.items()]


def prose_refusals(skill: Skill) -> list[str]:
    """What the prose of SKILL names that an agent could act on unseen (a web address, a path outside the checkout,
    a command written inline that is not ordinary), each with where it is."""
    reasons: dict[str, str] = {}
    for place in places(skill):
        if place.text and not place.command and place.where != "name":
            for why in why_not_plain(place.text):
                reasons.setdefault(why, place.where)
    return [f"{where}: prose that is not plain: {why}" for why, where in reasons.items()]


def batchable(skill: Skill, flags: Sequence[Flag]) -> bool:
    return not batch_refusals(skill, flags)
