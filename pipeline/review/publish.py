"""After a decision, agents must see it: republish the recall index from the library.

The same path a run ends with (``stages.index``: mirror skills and the audit log into the
state database, publish a fresh recall index). When a run holds the state database right
now, only the recall index is republished; the run mirrors everything when it finishes.
"""

from __future__ import annotations

from pipeline.errors import IndexError_
from pipeline.library import Library
from pipeline.recall.index import IndexedSkill, publish
from pipeline.summary import RunSummary


def republish(library: Library) -> int:
    """Rebuild what agents read from the library's files; returns the number of skills indexed."""
    from pipeline import stages
    from pipeline.index.state import StateDB

    try:
        state = StateDB()
    except IndexError_:  # a run is writing: publish what agents read, the run mirrors the rest
        return publish(IndexedSkill.of(s) for s in library.entries(on_error=lambda *_: None))
    with state:
        return stages.index(state, library, RunSummary(library=str(library.root)))
