"""The index stage: what agents read, published from the library (the truth).

A run ends with :func:`index` (mirror the skills and the audit log into the state database,
publish a fresh recall index with its indexed folders and feedback); a review decision, or the
repair of one killed before its publish, takes the same path through :func:`republish`, called
by ``pipeline.agents.publish`` with the re-export into agents' folders. When a run holds the
state database, only the recall index is republished; the run mirrors everything when it finishes.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.errors import IndexError_, SkillFileError
from pipeline.index.state import STATE_DB_LOCK, StateDB
from pipeline.library import tables as library_tables
from pipeline.library.store import Library
from pipeline.recall import pending
from pipeline.recall.service import refresh
from pipeline.summary import RunError, RunSummary


def index(state: StateDB, library: Library, summary: RunSummary) -> int:
    """Mirror the library into the state DB and publish a fresh recall index (with indexed folders)."""

    def report(file: Path, error: SkillFileError) -> None:
        if not any(e.path == str(file) for e in summary.errors):  # the write stage may have said it already
            summary.errors.append(RunError(path=str(file), reason=error.message))

    with pending.publishing(library):  # what a decision killed before its republish left behind is published too
        stored = list(library.entries(on_error=report))
        library_tables.sync_skills(state, stored)
        library_tables.sync_review_log(state, str(library.root), library.audit.entries())
        return refresh(stored, con=state.con).skills


def republish(library: Library) -> int:
    """Rebuild what agents read from the library's files; returns the number of skills indexed."""
    import duckdb

    try:
        with STATE_DB_LOCK:
            state = StateDB()
    except (IndexError_, duckdb.Error):  # a run is writing: publish what agents read, the run mirrors the rest
        # ``refresh`` without the state database keeps the folders and feedback the last index carried.
        with pending.publishing(library):
            return refresh(list(library.entries(on_error=lambda *_: None))).skills
    try:
        return index(state, library, RunSummary(library=str(library.root)))  # clears recall.pending
    finally:
        with STATE_DB_LOCK:
            state.close()
