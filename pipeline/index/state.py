"""The pipeline's own database: trajectories, steps, distillations, repo facts, skills, runs.

One process writes it (the run); everything an agent reads at task start comes from the
separate, atomically published recall index (``recall.py``), so readers never meet a lock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import orjson

from pipeline import settings
from pipeline.distill.facts import RepoFact
from pipeline.index.db import bulk_insert, connect, migrate
from pipeline.index.llm import migrate_030_llm
from pipeline.ingest.watermark import Watermark
from pipeline.library.store import StoredSkill
from pipeline.recall.feedback import MIGRATIONS as recall_migrations
from pipeline.trajectory import Trajectory

#: The steps table as migration 001 created it (a migration's schema never changes afterwards).
_STEP_COLUMNS_001 = {
    "trajectory_id": "VARCHAR", "idx": "INTEGER", "kind": "VARCHAR", "ts": "TIMESTAMPTZ", "tool": "VARCHAR",
    "call_id": "VARCHAR", "command": "VARCHAR", "paths": "VARCHAR[]", "diff": "VARCHAR", "exit_code": "INTEGER",
    "is_error": "BOOLEAN", "text": "VARCHAR", "text_size": "INTEGER", "call_index": "INTEGER",
    "result_index": "INTEGER", "sidechain": "BOOLEAN", "meta": "BOOLEAN",
}
STEP_COLUMNS = {**_STEP_COLUMNS_001, "protocol_error": "BOOLEAN"}


def _m001_initial(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""
        CREATE TABLE trajectories (
            id VARCHAR PRIMARY KEY, source_format VARCHAR, source_path VARCHAR, agent VARCHAR,
            agent_version VARCHAR, model VARCHAR, session_id VARCHAR, parent_session_id VARCHAR, cwd VARCHAR,
            repo VARCHAR, git_branch VARCHAR, started_at TIMESTAMPTZ, ended_at TIMESTAMPTZ, task VARCHAR,
            outcome VARCHAR, outcome_source VARCHAR, outcome_evidence VARCHAR, steps INTEGER,
            tool_calls INTEGER, ingested_at TIMESTAMPTZ)""")
    columns = ", ".join(f"{k} {v}" for k, v in _STEP_COLUMNS_001.items())
    con.execute(f"CREATE TABLE steps ({columns}, PRIMARY KEY (trajectory_id, idx))")
    con.execute("""
        CREATE TABLE distillations (
            trajectory_id VARCHAR, distiller VARCHAR, version VARCHAR, reason VARCHAR, skills VARCHAR[],
            distilled_at TIMESTAMPTZ, PRIMARY KEY (trajectory_id, distiller, version))""")
    con.execute("""
        CREATE TABLE repo_facts (
            trajectory_id VARCHAR, repo VARCHAR, kind VARCHAR, template VARCHAR, fact JSON)""")
    con.execute("""
        CREATE TABLE skills (
            name VARCHAR PRIMARY KEY, path VARCHAR, status VARCHAR, kind VARCHAR, version INTEGER,
            confidence DOUBLE, outcome VARCHAR, repo VARCHAR, description VARCHAR, updated_at TIMESTAMPTZ)""")
    con.execute("""
        CREATE TABLE skill_sources (skill VARCHAR, trajectory_id VARCHAR, steps INTEGER[])""")
    con.execute("""
        CREATE TABLE runs (
            id VARCHAR PRIMARY KEY, started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ, exit_code INTEGER,
            summary JSON)""")


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


def _m040_review_log(con: duckdb.DuckDBPyConnection) -> None:
    # A mirror of <library>/_audit.jsonl (the record) for queries; rebuilt from it on every index.
    con.execute("""
        CREATE TABLE review_log (
            library VARCHAR, seq INTEGER, decided_at TIMESTAMPTZ, who VARCHAR, action VARCHAR, skill VARCHAR,
            version INTEGER, status VARCHAR, target VARCHAR, before VARCHAR, after VARCHAR, reason VARCHAR,
            flags VARCHAR[], PRIMARY KEY (library, seq))""")


def _m020_redactions(con: duckdb.DuckDBPyConnection) -> None:
    # What was redacted in each stored trajectory: kind and count per step and field, never the value.
    con.execute("""
        CREATE TABLE redactions (
            trajectory_id VARCHAR, step INTEGER, field VARCHAR, kind VARCHAR, count INTEGER)""")


def _m045_protocol_errors(con: duckdb.DuckDBPyConnection) -> None:
    # Tool results the agent's harness refused (``Step.protocol_error``): never a lesson.
    con.execute("ALTER TABLE steps ADD COLUMN protocol_error BOOLEAN DEFAULT false")


MIGRATIONS = [
    ("001_initial", _m001_initial),
    ("010_watermarks", _m010_watermarks),
    ("020_redactions", _m020_redactions),
    ("030_llm", migrate_030_llm),
    ("040_review_log", _m040_review_log),
    ("045_protocol_errors", _m045_protocol_errors),
]
MIGRATIONS += recall_migrations  # 05x_: indexed folders, skill feedback (pipeline.recall.feedback)


class StateDB:
    """The writer's view of ``skillmill.duckdb``. Use as a context manager."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or settings.state_db_path()
        self.con = connect(self.path)
        self._depth = 0
        migrate(self.con, MIGRATIONS)

    def __enter__(self) -> StateDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.con.close()

    @property
    def scratch(self) -> Path:
        return self.path.parent / "tmp"

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction for the block; a block inside another joins it.

        A run killed inside the block leaves none of its writes: the next run finds the work
        undone and does it again (``stages.write`` relies on this).
        """
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self.con.execute("BEGIN TRANSACTION")
        self._depth = 1
        try:
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        else:
            self.con.execute("COMMIT")
        finally:
            self._depth = 0

    # -- trajectories -------------------------------------------------------------------
    def known(self, ids: Iterable[str]) -> set[str]:
        ids = list(ids)
        if not ids:
            return set()
        rows = self.con.execute("SELECT id FROM trajectories WHERE list_contains(?, id)", [ids]).fetchall()
        return {r[0] for r in rows}

    def save_trajectories(self, trajectories: list[Trajectory]) -> int:
        """Store new trajectories with their steps; ones already stored (same content id) are skipped."""
        stored = self.known(t.id for t in trajectories)
        fresh = {t.id: t for t in trajectories if t.id not in stored}
        if not fresh:
            return 0
        now = datetime.now(UTC)
        self.con.execute("BEGIN TRANSACTION")
        try:
            bulk_insert(self.con, "trajectories", _TRAJECTORY_COLUMNS,
                        (_trajectory_row(t, now) for t in fresh.values()), scratch=self.scratch)
            bulk_insert(self.con, "steps", STEP_COLUMNS,
                        (_step_row(t.id, s) for t in fresh.values() for s in t.steps), scratch=self.scratch)
            bulk_insert(self.con, "redactions", REDACTION_COLUMNS,
                        ({"trajectory_id": t.id, **r.model_dump()} for t in fresh.values() for r in t.redactions),
                        scratch=self.scratch)
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        return len(fresh)

    # -- distillations ------------------------------------------------------------------
    def distilled(self, ids: Iterable[str], distiller: str, version: str) -> set[str]:
        rows = self.con.execute(
            "SELECT trajectory_id FROM distillations WHERE distiller = ? AND version = ? "
            "AND list_contains(?, trajectory_id)", [distiller, version, list(ids)]).fetchall()
        return {r[0] for r in rows}

    def save_distillation(self, trajectory_id: str, distiller: str, version: str, reason: str | None,
                          skills: list[str], facts: list[RepoFact]) -> None:
        with self.transaction():
            self.con.execute("DELETE FROM distillations WHERE trajectory_id = ? AND distiller = ?",
                             [trajectory_id, distiller])
            self.con.execute("INSERT INTO distillations VALUES (?, ?, ?, ?, ?, ?)",
                             [trajectory_id, distiller, version, reason, skills, datetime.now(UTC)])
            self.con.execute("DELETE FROM repo_facts WHERE trajectory_id = ?", [trajectory_id])
            for fact in facts:
                self.con.execute("INSERT INTO repo_facts VALUES (?, ?, ?, ?, ?)",
                                 [fact.trajectory, fact.repo, fact.kind, fact.template, fact.model_dump_json()])

    def save_distillations(self, done: list[tuple[str, str | None, list[str], list[RepoFact]]], distiller: str,
                           version: str) -> int:
        """:meth:`save_distillation` for many ``(trajectory_id, reason, skills, facts)`` at once.

        Four statements instead of four per trajectory (~14 ms each: 11 s for 800 trajectories).
        """
        if not done:
            return 0
        ids = [d[0] for d in done]
        now = datetime.now(UTC)
        with self.transaction():
            self.con.execute("DELETE FROM distillations WHERE distiller = ? AND list_contains(?, trajectory_id)",
                             [distiller, ids])
            bulk_insert(self.con, "distillations", _DISTILLATION_COLUMNS,
                        ({"trajectory_id": i, "distiller": distiller, "version": version, "reason": reason,
                          "skills": skills, "distilled_at": now} for i, reason, skills, _ in done), scratch=self.scratch)
            self.con.execute("DELETE FROM repo_facts WHERE list_contains(?, trajectory_id)", [ids])
            bulk_insert(self.con, "repo_facts", _REPO_FACT_COLUMNS,
                        ({"trajectory_id": f.trajectory, "repo": f.repo, "kind": f.kind, "template": f.template,
                          "fact": f.model_dump_json()} for *_, facts in done for f in facts), scratch=self.scratch)
        return len(done)

    def facts(self, repo: str) -> list[RepoFact]:
        """Facts of every repo with the same name (``owner/x`` and a checkout folder ``x``), from
        current trajectories only (a superseded version would count a session twice)."""
        name = repo.rsplit("/", 1)[-1].lower()
        rows = self.con.execute(
            "SELECT fact FROM repo_facts WHERE lower(regexp_extract(repo, '[^/]*$')) = ? AND trajectory_id NOT IN "
            "(SELECT trajectory_id FROM trajectory_lineage) ORDER BY trajectory_id", [name])
        return [RepoFact.model_validate_json(r[0]) for r in rows.fetchall()]

    def facts_of_kind(self, *kinds: str) -> list[RepoFact]:
        """Facts of these kinds in every repository (current trajectories only): what generalizes."""
        rows = self.con.execute(
            "SELECT fact FROM repo_facts WHERE list_contains(?, kind) AND trajectory_id NOT IN "
            "(SELECT trajectory_id FROM trajectory_lineage) ORDER BY trajectory_id", [list(kinds)])
        return [RepoFact.model_validate_json(r[0]) for r in rows.fetchall()]

    # -- skills -------------------------------------------------------------------------
    def sync_skills(self, stored: list[StoredSkill]) -> None:
        """Mirror the library (the truth) into the skills tables, provenance included."""
        now = datetime.now(UTC)
        self.con.execute("BEGIN TRANSACTION")
        try:
            self.con.execute("DELETE FROM skills")
            self.con.execute("DELETE FROM skill_sources")
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
            bulk_insert(self.con, "skills", _SKILL_COLUMNS, rows, scratch=self.scratch)
            bulk_insert(self.con, "skill_sources", _SKILL_SOURCE_COLUMNS, links, scratch=self.scratch)
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    def sync_review_log(self, library: str, entries: list[Any]) -> None:
        """Mirror a library's audit log (``pipeline.library.audit.AuditEntry`` objects) into ``review_log``."""
        self.con.execute("BEGIN TRANSACTION")
        try:
            self.con.execute("DELETE FROM review_log WHERE library = ?", [library])
            bulk_insert(self.con, "review_log", _REVIEW_LOG_COLUMNS,
                        ({"library": library, "decided_at": e.when, **e.model_dump(exclude={"when", "prev"})}
                         for e in entries), scratch=self.scratch)
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    # -- watermarks and lineage (issue 3) -------------------------------------------------
    def watermarks(self, paths: Iterable[str]) -> dict[str, Watermark]:
        """The last watermark of each path, without the parser state (see :meth:`parser_state`)."""
        paths = list(paths)
        if not paths:
            return {}
        rows = self.con.execute(
            f"SELECT {_WATERMARK_SELECT} FROM file_watermarks WHERE list_contains(?, path)", [paths]).fetchall()
        return {r[0]: _watermark(r) for r in rows}

    def parser_state(self, path: str) -> bytes | None:
        row = self.con.execute("SELECT parser_state FROM file_watermarks WHERE path = ?", [path]).fetchone()
        return bytes(row[0]) if row and row[0] is not None else None

    def save_watermarks(self, marks: Iterable[Watermark]) -> None:
        marks = list(marks)
        if not marks:
            return
        self.con.execute("BEGIN TRANSACTION")
        try:
            self.con.execute("DELETE FROM file_watermarks WHERE list_contains(?, path)", [[m.path for m in marks]])
            self.con.executemany(
                "INSERT INTO file_watermarks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [[m.path, m.size, m.mtime_ns, m.offset, m.line, m.digest, m.format, m.status, m.trajectories,
                  m.state, m.reader, m.read_at] for m in marks])
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    def session_ids(self, ids: Iterable[str]) -> dict[str, str | None]:
        ids = list(ids)
        rows = self.con.execute("SELECT id, session_id FROM trajectories WHERE list_contains(?, id)", [ids])
        return dict(rows.fetchall()) if ids else {}

    def supersede(self, pairs: Iterable[tuple[str, str]], path: str, reason: str) -> int:
        """Record that each ``(old, new)`` trajectory is replaced; the old rows and distillations stay."""
        now = datetime.now(UTC)
        rows = [[old, new, path, reason, now] for old, new in pairs if old != new]
        if rows:
            self.con.executemany("INSERT OR REPLACE INTO trajectory_lineage VALUES (?, ?, ?, ?, ?)", rows)
        return len(rows)

    def superseded(self, ids: Iterable[str]) -> set[str]:
        ids = list(ids)
        if not ids:
            return set()
        rows = self.con.execute("SELECT trajectory_id FROM trajectory_lineage WHERE list_contains(?, trajectory_id)",
                                [ids]).fetchall()
        return {r[0] for r in rows}

    def ancestors(self, ids: Iterable[str]) -> dict[str, set[str]]:
        """For each id, every earlier version it (transitively) superseded."""
        result: dict[str, set[str]] = {}
        for start in ids:
            found: set[str] = set()
            frontier = [start]
            while frontier:
                rows = self.con.execute("SELECT trajectory_id FROM trajectory_lineage WHERE list_contains(?, "
                                        "superseded_by)", [frontier]).fetchall()
                frontier = [r[0] for r in rows if r[0] not in found and r[0] != start]
                found.update(frontier)
            result[start] = found
        return result

    # -- runs ---------------------------------------------------------------------------
    def record_run(self, run_id: str, started: datetime, exit_code: int, summary: dict[str, Any]) -> None:
        self.con.execute("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?)",
                         [run_id, started, datetime.now(UTC), exit_code, orjson.dumps(summary).decode()])

    def count(self, table: str) -> int:
        return self.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]


REDACTION_COLUMNS = {"trajectory_id": "VARCHAR", "step": "INTEGER", "field": "VARCHAR", "kind": "VARCHAR",
                     "count": "INTEGER"}

_TRAJECTORY_COLUMNS = {
    "id": "VARCHAR", "source_format": "VARCHAR", "source_path": "VARCHAR", "agent": "VARCHAR",
    "agent_version": "VARCHAR", "model": "VARCHAR", "session_id": "VARCHAR", "parent_session_id": "VARCHAR",
    "cwd": "VARCHAR", "repo": "VARCHAR", "git_branch": "VARCHAR", "started_at": "TIMESTAMPTZ",
    "ended_at": "TIMESTAMPTZ", "task": "VARCHAR", "outcome": "VARCHAR", "outcome_source": "VARCHAR",
    "outcome_evidence": "VARCHAR", "steps": "INTEGER", "tool_calls": "INTEGER", "ingested_at": "TIMESTAMPTZ",
}


_SKILL_COLUMNS = {
    "name": "VARCHAR", "path": "VARCHAR", "status": "VARCHAR", "kind": "VARCHAR", "version": "INTEGER",
    "confidence": "DOUBLE", "outcome": "VARCHAR", "repo": "VARCHAR", "description": "VARCHAR",
    "updated_at": "TIMESTAMPTZ",
}
_DISTILLATION_COLUMNS = {"trajectory_id": "VARCHAR", "distiller": "VARCHAR", "version": "VARCHAR",
                         "reason": "VARCHAR", "skills": "VARCHAR[]", "distilled_at": "TIMESTAMPTZ"}
_REPO_FACT_COLUMNS = {"trajectory_id": "VARCHAR", "repo": "VARCHAR", "kind": "VARCHAR", "template": "VARCHAR",
                      "fact": "VARCHAR"}
_SKILL_SOURCE_COLUMNS = {"skill": "VARCHAR", "trajectory_id": "VARCHAR", "steps": "INTEGER[]"}
_REVIEW_LOG_COLUMNS = {
    "library": "VARCHAR", "seq": "INTEGER", "decided_at": "TIMESTAMPTZ", "who": "VARCHAR", "action": "VARCHAR",
    "skill": "VARCHAR", "version": "INTEGER", "status": "VARCHAR", "target": "VARCHAR", "before": "VARCHAR",
    "after": "VARCHAR", "reason": "VARCHAR", "flags": "VARCHAR[]",
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
