"""``skillmill scan`` as a library call: scan a checkout, write its manual, check its approved skills."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.distill.facts import RepoFact
from pipeline.library.store import Library
from pipeline.scan import manual, stale
from pipeline.scan.reader import Scan, scan

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    scan: Scan
    manual: str | None = None  # the manual's name
    result: str | None = None  # manual.write's answer ("nothing": not worth a manual), None on a dry run
    stale: dict[str, list] = field(default_factory=dict)
    note: str | None = None  # why sessions could not be consulted

    def contract(self) -> dict:
        return {**self.scan.contract(), "manual": self.manual, "result": self.result, "stale": self.stale,
                "note": self.note}


def session_facts(repo: str | None) -> tuple[list[RepoFact], str | None]:
    """What sessions showed in this repository, from the state database; none when it cannot be opened."""
    if not repo:
        return [], None
    from pipeline import settings

    if not settings.state_db_path().exists():
        return [], None
    try:
        from pipeline.distill import tables as distill_tables
        from pipeline.index.state import StateDB
        from pipeline.ingest import tables as ingest_tables  # noqa: F401  (facts skip ingest's superseded versions)

        with StateDB() as state:
            return distill_tables.facts(state, repo), None
    except Exception as exc:  # a run holding the database: the scan goes on without the sessions
        return [], f"sessions not consulted ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})"


def scan_checkout(path: str | Path, library: Library, *, write: bool = True, facts: list[RepoFact] | None = None,
                  on_file: Callable[[str], None] | None = None, by: str = "scan") -> Outcome:
    """Scan ``path``, write or update its ``working-in-<repo>`` manual (a candidate, or a proposed change to
    the approved one), and mark the approved skills of that repository that no longer fit the checkout."""
    found = scan(path, on_file=on_file)
    outcome = Outcome(found)
    if facts is None:
        facts, outcome.note = session_facts(found.repo)
    draft_existing = library.get(manual.manual(found).name) if found.repo else None
    base = library.proposal(draft_existing.skill.name) if draft_existing else None
    existing = (base or draft_existing).skill if (base or draft_existing) else None
    draft = manual.manual(found, existing, facts)
    outcome.manual = draft.name
    if existing is None and not manual.worth_writing(draft, found):
        outcome.result = "nothing"  # no manual is better than one an agent already knows by heart
    elif write:
        outcome.result = manual.write(library, draft)
    if write:
        outcome.stale = stale.refresh(library.root, found.root, found.repo, by=by, facts=facts)
    return outcome
