"""The library's mirror in the state database: skills with their provenance, and the review log.

The library's files (and ``_audit.jsonl``) are the truth; these tables are rebuilt from them on
every index, for queries. ``skills`` and ``skill_sources`` came with ``001_initial``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import duckdb

from pipeline.index import migrations
from pipeline.index.db import bulk_insert
from pipeline.library.store import StoredSkill

if TYPE_CHECKING:
    from pipeline.index.state import StateDB


def _m040_review_log(con: duckdb.DuckDBPyConnection) -> None:
    # A mirror of <library>/_audit.jsonl (the record) for queries; rebuilt from it on every index.
    con.execute("""
        CREATE TABLE review_log (
            library VARCHAR, seq INTEGER, decided_at TIMESTAMPTZ, who VARCHAR, action VARCHAR, skill VARCHAR,
            version INTEGER, status VARCHAR, target VARCHAR, before VARCHAR, after VARCHAR, reason VARCHAR,
            flags VARCHAR[], PRIMARY KEY (library, seq))""")


migrations.register(("040_review_log", _m040_review_log))


def sync_skills(state: StateDB, stored: list[StoredSkill]) -> None:
    """Mirror the library (the truth) into the skills tables, provenance included."""
    now = datetime.now(UTC)
    con = state.con
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("DELETE FROM skills")
        con.execute("DELETE FROM skill_sources")
        rows, links = [], []
        for entry in stored:
            s = entry.skill
            rows.append({"name": s.name, "path": str(entry.path), "status": s.status, "kind": s.kind,
                         "version": s.version, "confidence": s.confidence, "outcome": s.outcome,
                         "repo": s.repo, "description": s.description, "updated_at": now})
            steps: dict[str, set[int]] = {t: set() for t in s.trajectory_ids()}
            for item in [*s.procedure, *s.pitfalls, *s.verification]:
                for ev in item.evidence:
                    steps.setdefault(ev.trajectory, set()).update(ev.steps)
            links += [{"skill": s.name, "trajectory_id": t, "steps": sorted(i)} for t, i in steps.items()]
        # one bulk insert each: row-by-row INSERTs cost ~25 ms a skill, and review republishes often
        bulk_insert(con, "skills", _SKILL_COLUMNS, rows, scratch=state.scratch)
        bulk_insert(con, "skill_sources", _SKILL_SOURCE_COLUMNS, links, scratch=state.scratch)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def sync_review_log(state: StateDB, library: str, entries: list[Any]) -> None:
    """Mirror a library's audit log (``pipeline.library.audit.AuditEntry`` objects) into ``review_log``; ``seq`` is
    the line's place in the log (a log merged from two machines holds each machine's own numbers twice)."""
    con = state.con
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("DELETE FROM review_log WHERE library = ?", [library])
        bulk_insert(con, "review_log", _REVIEW_LOG_COLUMNS,
                    ({"library": library, "decided_at": e.when, **e.model_dump(exclude={"when", "prev"}), "seq": n}
                     for n, e in enumerate(entries, 1)), scratch=state.scratch)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


_SKILL_COLUMNS = {
    "name": "VARCHAR", "path": "VARCHAR", "status": "VARCHAR", "kind": "VARCHAR", "version": "INTEGER",
    "confidence": "DOUBLE", "outcome": "VARCHAR", "repo": "VARCHAR", "description": "VARCHAR",
    "updated_at": "TIMESTAMPTZ",
}
_SKILL_SOURCE_COLUMNS = {"skill": "VARCHAR", "trajectory_id": "VARCHAR", "steps": "INTEGER[]"}
_REVIEW_LOG_COLUMNS = {
    "library": "VARCHAR", "seq": "INTEGER", "decided_at": "TIMESTAMPTZ", "who": "VARCHAR", "action": "VARCHAR",
    "skill": "VARCHAR", "version": "INTEGER", "status": "VARCHAR", "target": "VARCHAR", "before": "VARCHAR",
    "after": "VARCHAR", "reason": "VARCHAR", "flags": "VARCHAR[]",
}
