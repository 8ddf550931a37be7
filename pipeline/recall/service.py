"""Refreshing the recall index from the library, the indexed folders and the state database.

Two callers: the run's index stage (it owns the state database) and ``skillmill index`` (it
opens the state database briefly if no run holds it, and otherwise works from what the
previous index carried: its folders and feedback).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline import settings
from pipeline.errors import IndexError_, SkillFileError
from pipeline.library.store import Library, StoredSkill
from pipeline.recall import feedback, pending, semantic
from pipeline.recall.index import IndexedSkill, PublishReport, normalize_folder, publish


def refresh(stored: list[StoredSkill], *, con: Any = None, add: list[str | Path] | None = None,
            forget: list[str | Path] | None = None, target: Path | None = None) -> PublishReport:
    """Publish a new index; ``con`` is the state database when the caller owns it."""
    known: dict[str, str | None] = {}
    events = None
    forget_paths = [normalize_folder(f) for f in forget or []]
    if con is not None:
        feedback.drain(con)
        known = dict(con.execute("SELECT path, repo FROM recall_folders").fetchall())
        for path in forget_paths:
            con.execute("DELETE FROM recall_folders WHERE path = ?", [path])
            known.pop(path, None)
        events = feedback.stored(con)
    spec = semantic.configured()
    embedder = semantic.load(spec) if spec else None
    report = publish((IndexedSkill.of(s) for s in stored), target, add_folders=add or [],
                     forget_folders=forget_paths, known_folders=known, events=events, embedder=embedder)
    if con is not None:
        now = datetime.now(UTC)
        for path, count in report.folders.items():
            con.execute("INSERT INTO recall_folders VALUES (?, NULL, ?, ?, ?) ON CONFLICT (path) DO UPDATE "
                        "SET indexed_at = excluded.indexed_at, skills = excluded.skills", [path, now, now, count])
    return report


def reindex(library: Path | None = None, *, add: list[str | Path] | None = None,
            forget: list[str | Path] | None = None) -> PublishReport:
    """``skillmill index``: our library plus indexed folders, with the state database if it is free."""
    from pipeline.index.state import StateDB

    lib = Library(library or settings.library_dir())
    errors: list[dict[str, str]] = []

    def report_error(file: Path, error: SkillFileError) -> None:
        errors.append({"path": str(file), "reason": error.message})

    with pending.publishing(lib):  # a decision killed before its republish is published now
        stored = list(lib.entries(on_error=report_error))
        try:
            state = StateDB()
        except IndexError_:
            if forget:
                raise IndexError_("a skillmill run holds the state database, so a folder cannot be forgotten now",
                                  hint="try again when the run has finished") from None
            state = None  # a run is writing: its own index stage will record the folders and feedback
        try:
            report = refresh(stored, con=state.con if state else None, add=add, forget=forget)
        finally:
            if state is not None:
                state.close()
    report.errors = errors + report.errors
    return report
