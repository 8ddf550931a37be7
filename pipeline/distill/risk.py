"""Risk flags written into skills: ``metadata.flags``, from the one rule set in ``pipeline.safety``.

Whatever distilled the skill (a model or the zero-LLM distiller), its commands came from a
session and are about to be handed to other agents. The flags do not block anything here;
they are written into the skill as ``metadata.flags`` (rule ids, comma-separated, sorted:
``curl-pipe-shell``, ``exfiltration``, ``persistence`` ... see ``pipeline.safety.findings``),
where review (``skillmill review list --flagged``) shows them and batch approval refuses them.
Review reads the same rules through ``findings`` below, so the two never disagree.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pipeline.library.model import Skill
from pipeline.safety.findings import Finding
from pipeline.safety.prose import scan_command_text, scan_text
from pipeline.safety.rules import scan_commands

FLAGS_KEY = "flags"


@dataclass(frozen=True)
class Place:
    """One text of a skill: where it is ("procedure 2 command"), the text, and whether it is a command line."""

    where: str
    text: str
    command: bool


def places(skill: Skill) -> Iterator[Place]:
    """Every text of the skill an agent reads, in reading order."""
    yield Place("name", skill.name, False)
    yield Place("description", skill.description, False)
    yield Place("title", skill.title, False)
    for number, item in enumerate(skill.procedure, 1):
        yield Place(f"procedure {number}", item.text, False)
        if item.command:
            yield Place(f"procedure {number} command", item.command, True)
    for number, pitfall in enumerate(skill.pitfalls, 1):
        yield Place(f"pitfall {number}", " ".join(filter(None, [pitfall.symptom, pitfall.cause, pitfall.fix])), False)
        if pitfall.command:
            yield Place(f"pitfall {number} command", pitfall.command, True)
    for number, item in enumerate(skill.verification, 1):
        yield Place(f"verification {number}", item.text, False)
        if item.command:
            yield Place(f"verification {number} command", item.command, True)
    if skill.notes:
        yield Place("notes", skill.notes, False)


def findings(skill: Skill) -> list[tuple[str, Finding]]:
    """(where, finding) for every risk in the skill's text, in reading order.

    Command lines are read together, so a download in one step and its run in a later one count.
    """
    texts = [p for p in places(skill) if p.text]
    commands = [p for p in texts if p.command]
    across = dict(zip((p.where for p in commands), scan_commands([p.text for p in commands]), strict=True))
    found: list[tuple[str, Finding]] = []
    for place in texts:
        if place.command:
            own = scan_command_text(place.text)
            found += [(place.where, f) for f in own]
            found += [(place.where, f) for f in across[place.where] if f not in own]
        else:
            found += [(place.where, f) for f in scan_text(place.text)]
    return found


def skill_text(skill: Skill) -> list[str]:
    parts: list[str] = [skill.description, skill.title, skill.notes]
    for item in [*skill.procedure, *skill.verification]:
        parts += [item.text, item.command or ""]
    for pitfall in skill.pitfalls:
        parts += [pitfall.symptom, pitfall.cause or "", pitfall.fix, pitfall.command or ""]
    return parts


def flags(skill: Skill) -> list[str]:
    """The rule ids the skill's text breaks, sorted (what ``metadata.flags`` holds)."""
    return sorted({f.rule for _, f in findings(skill)})


def flag(skill: Skill) -> Skill:
    """The skill with ``metadata.flags`` set to what it holds now (removed when nothing is risky)."""
    found = flags(skill)
    meta = dict(skill.extra_metadata)
    if found:
        meta[FLAGS_KEY] = ",".join(found)
    else:
        meta.pop(FLAGS_KEY, None)
    return skill if meta == skill.extra_metadata else skill.model_copy(update={"extra_metadata": meta})
