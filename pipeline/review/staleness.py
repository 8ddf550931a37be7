"""Approved skills marked stale (``pipeline/scan/stale.py``), for the top of the review queue."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.library.store import Library
from pipeline.scan import marks


@dataclass(frozen=True)
class Stale:
    name: str
    reasons: list[dict]
    checkout: str
    checked: str
    proposal: bool  # a newer version (a scan's or the sessions') waits as a proposed change

    def contract(self) -> dict:
        return {"name": self.name, "status": "approved", "stale": [r.get("text", "") for r in self.reasons],
                "checkout": self.checkout, "checked": self.checked, "proposed_change": self.proposal}


def stale(library: Library, repo: str | None = None) -> list[Stale]:
    """The approved skills marked stale that are still approved, in name order."""
    out = []
    for name, mark in sorted(marks.load(library.root).items()):
        if not mark.get("reasons") or not (library.root / name / "SKILL.md").is_file():
            continue
        if repo:
            stored = library.get(name)
            if stored is None or not stored.skill.repo or \
                    stored.skill.repo.rsplit("/", 1)[-1].lower() != repo.rsplit("/", 1)[-1].lower():
                continue
        out.append(Stale(name, list(mark["reasons"]), str(mark.get("checkout", "")), str(mark.get("checked", "")),
                         (library.root / "_proposed" / name / "SKILL.md").is_file()))
    return out
