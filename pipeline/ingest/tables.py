"""Ingest's tables in the state database: trajectories with their steps and redactions, per-file
watermarks, and which trajectory superseded which.

Their migrations are registered here (``001_initial`` created the first two tables with the
state database, ``pipeline.index.state``); the stages call these functions with the open
``StateDB``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import duckdb

from pipeline.index import migrations
from pipeline.index.db import bulk_insert
from pipeline.index.state import STEP_COLUMNS_001
from pipeline.ingest.watermark import Watermark
from pipeline.trajectory import Trajectory

if TYPE_CHECKING:
    from pipeline.index.state import StateDB

STEP_COLUMNS = {**STEP_COLUMNS_001, "protocol_error": "BOOLEAN"}


def _m010_watermarks(con: duckdb.DuckDBPyConnection) -> None:
    """Per-file watermarks (``pipeline.ingest.watermark``) and which trajectory superseded which.

    A session that grew is read again as a new trajectory (new content id); the old one stays,
    with its distillations, and ``trajectory_lineage`` says what replaced it.
    """
    con.execute("""
        CREATE TABLE file_watermarks (
            path VARCHAR PRIMARY KEY, size BIGINT, mtime_ns BIGINT, byte_offset BIGINT, line_no BIGINT,
            digest VARCHAR, format VARCHAR, status VARCHAR, trajectory_ids VARCHAR[], parser_state BLOB,
            reader VARCHAR, read_at TIMESTAMPTZ)""")
    con.execute("""
        CREATE TABLE trajectory_lineage (
            trajectory_id VARCHAR PRIMARY KEY, superseded_by VARCHAR, path VARCHAR, reason VARCHAR,
            superseded_at TIMESTAMPTZ)""")


def _m020_redactions(con: duckdb.DuckDBPyConnection) -> None:
    # What was redacted in each stored trajectory: kind and count per step and field, never the value.
    con.execute("""
        CREATE TABLE redactions (
            trajectory_id VARCHAR, step INTEGER, field VARCHAR, kind VARCHAR, count INTEGER)""")


def _m045_protocol_errors(con: duckdb.DuckDBPyConnection) -> None:
    # Tool results the agent's harness refused (``Step.protocol_error``): never a lesson.
    con.execute("ALTER TABLE steps ADD COLUMN protocol_error BOOLEAN DEFAULT false")


migrations.register(("010_watermarks", _m010_watermarks), ("020_redactions", _m020_redactions),
                    ("045_protocol_errors", _m045_protocol_errors))


# -- trajectories -------------------------------------------------------------------------
def known(state: StateDB, ids: Iterable[str]) -> set[str]:
    ids = list(ids)
    if not ids:
        return set()
    rows = state.con.execute("SELECT id FROM trajectories WHERE list_contains(?, id)", [ids]).fetchall()
    return {r[0] for r in rows}


def save_trajectories(state: StateDB, trajectories: list[Trajectory]) -> int:
    """Store new trajectories with their steps; ones already stored (same content id) are skipped."""
    stored = known(state, (t.id for t in trajectories))
    fresh = {t.id: t for t in trajectories if t.id not in stored}
    if not fresh:
        return 0
    now = datetime.now(UTC)
    con = state.con
    con.execute("BEGIN TRANSACTION")
    try:
        bulk_insert(con, "trajectories", _TRAJECTORY_COLUMNS,
                    (_trajectory_row(t, now) for t in fresh.values()), scratch=state.scratch)
        bulk_insert(con, "steps", STEP_COLUMNS,
                    (_step_row(t.id, s) for t in fresh.values() for s in t.steps), scratch=state.scratch)
        bulk_insert(con, "redactions", REDACTION_COLUMNS,
                    ({"trajectory_id": t.id, **r.model_dump()} for t in fresh.values() for r in t.redactions),
                    scratch=state.scratch)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return len(fresh)


_EARLIER_VERSIONS = """
    SELECT id FROM trajectories WHERE session_id = ? AND source_path = ? AND id <> ?
      AND id NOT IN (SELECT trajectory_id FROM distillations)
      AND id NOT IN (SELECT trajectory_id FROM skill_sources)
      AND id NOT IN (SELECT trajectory_id FROM trajectory_lineage)
      AND id NOT IN (SELECT superseded_by FROM trajectory_lineage WHERE superseded_by IS NOT NULL)"""


def drop_earlier_versions(state: StateDB, trajectory: Trajectory) -> int:
    """Remove the earlier versions of ``trajectory``'s session from the same file that nothing has used yet
    (not distilled, cited or linked): a session captured turn by turn at its end hooks leaves one row, not one
    per turn. Returns how many were removed."""
    if not trajectory.session_id:
        return 0
    con = state.con
    ids = [r[0] for r in con.execute(_EARLIER_VERSIONS, [str(trajectory.session_id), str(trajectory.source_path),
                                                         trajectory.id]).fetchall()]
    if ids:
        con.execute("BEGIN TRANSACTION")
        try:
            for table, column in (("steps", "trajectory_id"), ("redactions", "trajectory_id"), ("trajectories", "id")):
                con.execute(f"DELETE FROM {table} WHERE list_contains(?, {column})", [ids])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return len(ids)


def session_ids(state: StateDB, ids: Iterable[str]) -> dict[str, str | None]:
    ids = list(ids)
    rows = state.con.execute("SELECT id, session_id FROM trajectories WHERE list_contains(?, id)", [ids])
    return dict(rows.fetchall()) if ids else {}


# -- watermarks and lineage (issue 3) -------------------------------------------------------
def watermarks(state: StateDB, paths: Iterable[str]) -> dict[str, Watermark]:
    """The last watermark of each path, without the parser state (see :func:`parser_state`)."""
    paths = list(paths)
    if not paths:
        return {}
    rows = state.con.execute(
        f"SELECT {_WATERMARK_SELECT} FROM file_watermarks WHERE list_contains(?, path)", [paths]).fetchall()
    return {r[0]: _watermark(r) for r in rows}


def parser_state(state: StateDB, path: str) -> bytes | None:
    row = state.con.execute("SELECT parser_state FROM file_watermarks WHERE path = ?", [path]).fetchone()
    return bytes(row[0]) if row and row[0] is not None else None


def save_watermarks(state: StateDB, marks: Iterable[Watermark]) -> None:
    marks = list(marks)
    if not marks:
        return
    con = state.con
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("DELETE FROM file_watermarks WHERE list_contains(?, path)", [[m.path for m in marks]])
        con.executemany(
            "INSERT INTO file_watermarks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [[m.path, m.size, m.mtime_ns, m.offset, m.line, m.digest, m.format, m.status, m.trajectories,
              m.state, m.reader, m.read_at] for m in marks])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def supersede(state: StateDB, pairs: Iterable[tuple[str, str]], path: str, reason: str) -> int:
    """Record that each ``(old, new)`` trajectory is replaced; the old rows and distillations stay."""
    now = datetime.now(UTC)
    rows = [[old, new, path, reason, now] for old, new in pairs if old != new]
    if rows:
        state.con.executemany("INSERT OR REPLACE INTO trajectory_lineage VALUES (?, ?, ?, ?, ?)", rows)
    return len(rows)


def superseded(state: StateDB, ids: Iterable[str]) -> set[str]:
    ids = list(ids)
    if not ids:
        return set()
    rows = state.con.execute("SELECT trajectory_id FROM trajectory_lineage WHERE list_contains(?, trajectory_id)",
                             [ids]).fetchall()
    return {r[0] for r in rows}


def ancestors(state: StateDB, ids: Iterable[str]) -> dict[str, set[str]]:
    """For each id, every earlier version it (transitively) superseded."""
    result: dict[str, set[str]] = {}
    for start in ids:
        found: set[str] = set()
        frontier = [start]
        while frontier:
            rows = state.con.execute("SELECT trajectory_id FROM trajectory_lineage WHERE list_contains(?, "
                                     "superseded_by)", [frontier]).fetchall()
            frontier = [r[0] for r in rows if r[0] not in found and r[0] != start]
            found.update(frontier)
        result[start] = found
    return result


REDACTION_COLUMNS = {"trajectory_id": "VARCHAR", "step": "INTEGER", "field": "VARCHAR", "kind": "VARCHAR",
                     "count": "INTEGER"}

_TRAJECTORY_COLUMNS = {
    "id": "VARCHAR", "source_format": "VARCHAR", "source_path": "VARCHAR", "agent": "VARCHAR",
    "agent_version": "VARCHAR", "model": "VARCHAR", "session_id": "VARCHAR", "parent_session_id": "VARCHAR",
    "cwd": "VARCHAR", "repo": "VARCHAR", "git_branch": "VARCHAR", "started_at": "TIMESTAMPTZ",
    "ended_at": "TIMESTAMPTZ", "task": "VARCHAR", "outcome": "VARCHAR", "outcome_source": "VARCHAR",
    "outcome_evidence": "VARCHAR", "steps": "INTEGER", "tool_calls": "INTEGER", "ingested_at": "TIMESTAMPTZ",
}


def _trajectory_row(t: Trajectory, now: datetime) -> dict[str, Any]:
    row = t.model_dump(include={"id", "source_format", "source_path", "agent", "agent_version", "model",
                                "session_id", "parent_session_id", "cwd", "repo", "git_branch", "started_at",
                                "ended_at", "task"})
    row.update(outcome=t.outcome.status, outcome_source=t.outcome.source, outcome_evidence=t.outcome.evidence,
               steps=len(t.steps), tool_calls=len(t.tool_calls()), ingested_at=now)
    return row


def _step_row(trajectory_id: str, step: Any) -> dict[str, Any]:
    row = step.model_dump()
    row["idx"] = row.pop("index")
    row["ts"] = row.pop("timestamp")
    row["kind"] = str(step.kind)
    row["trajectory_id"] = trajectory_id
    return row


_WATERMARK_SELECT = ("path, size, mtime_ns, byte_offset, line_no, digest, format, status, trajectory_ids, reader, "
                     "read_at")


def _watermark(row: tuple) -> Watermark:
    path, size, mtime_ns, offset, line, digest, fmt, status, ids, reader, read_at = row
    return Watermark(path=path, size=size, mtime_ns=mtime_ns, offset=offset, line=line, digest=digest, format=fmt,
                     status=status, trajectories=list(ids or []), reader=reader, read_at=read_at)
