"""Lessons of ``../shared/lessons/lessons-dev.jsonl`` found in a library, as its README defines them.

* the skills of a lesson's repo: those whose ``metadata.repo`` contains the lesson's ``repo``
  (case-insensitively), or, when no skill has that repo, those whose name contains it; an empty
  ``repo`` means every skill;
* ``expect_any``: some skill of the repo contains one of the strings (the SKILL.md text with
  provenance comments stripped);
* ``never_any``: none of the repo's skills contains any of them;
* ``never_together``: no single bullet or numbered item (its prose and its code blocks) of the
  repo's skills holds both strings of a pair;
* ``bullet_with`` / ``bullet_any``: some bullet or numbered item that mentions the first string
  also holds one of the others.

A lesson is found when every condition it has holds. Strings are matched as written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from benchmarks.audit.skills import AuditedSkill, strip_provenance


@dataclass
class Lesson:
    id: str
    repo: str
    lesson: str
    expect_any: list[str]
    never_any: list[str]
    never_together: list[list[str]]
    bullet_with: str
    bullet_any: list[str]


@dataclass
class Verdict:
    lesson: Lesson
    found: bool
    why: str  # what held or what failed, with the skill that decided it


def load(path: Path) -> list[Lesson]:
    lessons = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        data = json.loads(line)
        lessons.append(Lesson(id=data["id"], repo=data.get("repo") or "", lesson=data.get("lesson", ""),
                              expect_any=list(data.get("expect_any") or []),
                              never_any=list(data.get("never_any") or []),
                              never_together=[list(p) for p in data.get("never_together") or []],
                              bullet_with=data.get("bullet_with") or "",
                              bullet_any=list(data.get("bullet_any") or [])))
    return lessons


def skills_of(repo: str, skills: list[AuditedSkill]) -> list[AuditedSkill]:
    if not repo:
        return list(skills)
    key = repo.lower()
    by_repo = [s for s in skills if key in s.repo.lower()]
    return by_repo or [s for s in skills if key in s.name.lower()]


def _text(skill: AuditedSkill) -> str:
    return strip_provenance(skill.path.read_text(encoding="utf-8", errors="replace"))


def check(lesson: Lesson, skills: list[AuditedSkill]) -> Verdict:
    """Every condition of the lesson against the skills of its repo; ``why`` names what held or every failure."""
    mine = skills_of(lesson.repo, skills)
    if not mine:
        return Verdict(lesson, False, f"no skill of repo {lesson.repo!r}")
    texts = {s.name: _text(s) for s in mine}
    bullets = [(s.name, item.full()) for s in mine for item in s.items if item.bullet]
    held, failed = [], []
    if lesson.expect_any:
        where = next(((n, x) for n, t in texts.items() for x in lesson.expect_any if x in t), None)
        if where is None:
            failed.append(f"none of {len(mine)} skill(s) of {lesson.repo or 'any repo'} contains any of "
                          f"{lesson.expect_any}")
        else:
            held.append(f"{where[1]!r} in {where[0]}")
    bad = [(n, x) for n, t in texts.items() for x in lesson.never_any if x in t]
    if bad:
        failed.append(f"{bad[0][0]} contains {bad[0][1]!r}" + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))
    for pair in lesson.never_together:
        both = next((n for n, b in bullets if all(x in b for x in pair)), None)
        if both is not None:
            failed.append(f"an item of {both} holds both {pair[0]!r} and {pair[1]!r}")
    if lesson.bullet_with:
        where_b = next((n for n, b in bullets if lesson.bullet_with in b and any(x in b for x in lesson.bullet_any)),
                       None)
        if where_b is None:
            failed.append(f"no item mentioning {lesson.bullet_with!r} holds any of {lesson.bullet_any}")
        else:
            held.append(f"an item of {where_b}")
    if failed:
        return Verdict(lesson, False, "; ".join(failed))
    return Verdict(lesson, True, "; ".join(held) or "no condition")


def check_all(lessons: list[Lesson], skills: list[AuditedSkill]) -> list[Verdict]:
    return [check(lesson, skills) for lesson in lessons]
