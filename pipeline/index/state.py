"""The pipeline's own database: trajectories, steps, distillations, repo facts, skills, runs.

One process writes it (the run); everything an agent reads at task start comes from the
separate, atomically published recall index (``recall.py``), so readers never meet a lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import orjson

from pipeline import settings
from pipeline.distill.facts import RepoFact
from pipeline.index.db import bulk_insert, connect, migrate
from pipeline.library.store import StoredSkill
from pipeline.recall.feedback import MIGRATIONS as recall_migrations
from pipeline.trajectory import Trajectory

STEP_COLUMNS = {
    "trajectory_id": "VARCHAR", "idx": "INTEGER", "kind": "VARCHAR", "ts": "TIMESTAMPTZ", "tool": "VARCHAR",
    "call_id": "VARCHAR", "command": "VARCHAR", "paths": "VARCHAR[]", "diff": "VARCHAR", "exit_code": "INTEGER",
    "is_error": "BOOLEAN", "text": "VARCHAR", "text_size": "INTEGER", "call_index": "INTEGER",
    "result_index": "INTEGER", "sidechain": "BOOLEAN", "meta": "BOOLEAN",
}


def _m001_initial(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""
        CREATE TABLE trajectories (
            id VARCHAR PRIMARY KEY, source_format VARCHAR, source_path VARCHAR, agent VARCHAR,
            agent_version VARCHAR, model VARCHAR, session_id VARCHAR, parent_session_id VARCHAR, cwd VARCHAR,
            repo VARCHAR, git_branch VARCHAR, started_at TIMESTAMPTZ, ended_at TIMESTAMPTZ, task VARCHAR,
            outcome VARCHAR, outcome_source VARCHAR, outcome_evidence VARCHAR, steps INTEGER,
            tool_calls INTEGER, ingested_at TIMESTAMPTZ)""")
    columns = ", ".join(f"{k} {v}" for k, v in STEP_COLUMNS.items())
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


MIGRATIONS = [("001_initial", _m001_initial)]
MIGRATIONS += recall_migrations  # 05x_: indexed folders, skill feedback (pipeline.recall.feedback)


class StateDB:
    """The writer's view of ``skillmill.duckdb``. Use as a context manager."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or settings.state_db_path()
        self.con = connect(self.path)
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
        self.con.execute("BEGIN TRANSACTION")
        try:
            self.con.execute("DELETE FROM distillations WHERE trajectory_id = ? AND distiller = ?",
                             [trajectory_id, distiller])
            self.con.execute("INSERT INTO distillations VALUES (?, ?, ?, ?, ?, ?)",
                             [trajectory_id, distiller, version, reason, skills, datetime.now(UTC)])
            self.con.execute("DELETE FROM repo_facts WHERE trajectory_id = ?", [trajectory_id])
            for fact in facts:
                self.con.execute("INSERT INTO repo_facts VALUES (?, ?, ?, ?, ?)",
                                 [fact.trajectory, fact.repo, fact.kind, fact.template, fact.model_dump_json()])
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    def facts(self, repo: str) -> list[RepoFact]:
        rows = self.con.execute("SELECT fact FROM repo_facts WHERE repo = ? ORDER BY trajectory_id", [repo])
        return [RepoFact.model_validate_json(r[0]) for r in rows.fetchall()]

    # -- skills -------------------------------------------------------------------------
    def sync_skills(self, stored: list[StoredSkill]) -> None:
        """Mirror the library (the truth) into the skills tables, provenance included."""
        now = datetime.now(UTC)
        self.con.execute("BEGIN TRANSACTION")
        try:
            self.con.execute("DELETE FROM skills")
            self.con.execute("DELETE FROM skill_sources")
            for entry in stored:
                s = entry.skill
                self.con.execute("INSERT INTO skills VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                 [s.name, str(entry.path), s.status, s.kind, s.version, s.confidence, s.outcome,
                                  s.repo, s.description, now])
                steps: dict[str, set[int]] = {t: set() for t in s.trajectory_ids()}
                for item in [*s.procedure, *s.pitfalls, *s.verification]:
                    for ev in item.evidence:
                        steps.setdefault(ev.trajectory, set()).update(ev.steps)
                for trajectory_id, indexes in steps.items():
                    self.con.execute("INSERT INTO skill_sources VALUES (?, ?, ?)",
                                     [s.name, trajectory_id, sorted(indexes)])
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    # -- runs ---------------------------------------------------------------------------
    def record_run(self, run_id: str, started: datetime, exit_code: int, summary: dict[str, Any]) -> None:
        self.con.execute("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?)",
                         [run_id, started, datetime.now(UTC), exit_code, orjson.dumps(summary).decode()])

    def count(self, table: str) -> int:
        return self.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]


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
