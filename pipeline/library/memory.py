"""Rejection memory: a draft a person rejected is not proposed again for the same evidence.

The memory is the rejected files themselves (``_rejected/<name>/SKILL.md`` for drafts,
``_rejected/_proposed/<name>/SKILL.md`` for proposed changes to approved skills): they keep
the evidence the rejection was about and, in ``metadata.reviewed``, who rejected it and why.

A later draft is *the same skill* when it has the rejected skill's name, or the same kind and
exactly the same source trajectories (a renamed draft of the same session). It comes back
only when its evidence changed materially:

* it rests on new trajectories, at least half as many again as the rejected version had
  (one new session for a one-session skill, two for a three-session ``working-in-<repo>``), or
* its outcome became ``resolved`` where the rejected version had no proof of success.

It then comes back as a candidate that says so (``metadata.reopened``), and the audit log
records the reopening. A better rewording of the same evidence does not count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from pipeline.library.model import Skill

#: New trajectories needed, relative to the rejected version's, for evidence to count as changed.
MATERIAL_GROWTH = 0.5
REVIEWED = "reviewed"
REOPENED = "reopened"


@dataclass(frozen=True)
class Rejection:
    """A rejected skill a draft matches, and what is new in the draft's evidence (empty: nothing)."""

    skill: Skill
    path: Path
    news: tuple[str, ...]


def material_news(rejected: Skill, draft: Skill) -> list[str]:
    """What changed materially in ``draft``'s evidence since ``rejected``; empty when nothing did."""
    old = set(rejected.trajectory_ids())
    new = [t for t in dict.fromkeys(draft.trajectory_ids()) if t not in old]
    news = []
    if new and len(new) >= max(1, math.ceil(len(old) * MATERIAL_GROWTH)):
        shown = ", ".join(t[:12] for t in new[:5]) + (", ..." if len(new) > 5 else "")
        plural = "trajectory" if len(new) == 1 else "trajectories"
        news.append(f"{len(new)} new {plural} ({shown}) beside the {len(old)} it was rejected on")
    if draft.outcome == "resolved" and rejected.outcome in ("failed", "unknown"):
        news.append(f"outcome now resolved (was {rejected.outcome})")
    return news


def same_skill(rejected: Skill, draft: Skill) -> bool:
    ids = set(draft.trajectory_ids())
    return rejected.name == draft.name or (
        bool(ids) and rejected.kind == draft.kind and set(rejected.trajectory_ids()) == ids)


def reopened(draft: Skill, rejection: Rejection) -> Skill:
    """The draft as a candidate that carries why it was rejected and what is new."""
    old = rejection.skill
    why = old.extra_metadata.get(REVIEWED) or "rejected"
    note = f"{why} (v{old.version}); back because: {'; '.join(rejection.news)}"
    meta = {k: v for k, v in draft.extra_metadata.items() if k not in (REVIEWED, REOPENED)}
    meta[REOPENED] = note
    return draft.model_copy(update={"name": old.name, "status": "candidate",
                                    "version": max(draft.version, old.version + 1), "extra_metadata": meta})
