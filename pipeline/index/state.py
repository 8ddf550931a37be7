"""The pipeline's own database: a connection, transactions and the migration runner.

Each stage keeps its tables here and owns them: it registers their migrations
(``pipeline.index.migrations``) and queries them in its own module -- ``ingest/tables.py``
(trajectories, steps, redactions, watermarks, lineage), ``distill/tables.py`` (distillations,
repo facts), ``distill/llm/tables.py`` (LLM calls, cache, drafts), ``library/tables.py`` (the
skills mirror, the review log), ``recall/feedback.py`` (indexed folders, feedback) and
``runs/tables.py`` (runs). So this module imports no stage.

One process writes it (the run); everything an agent reads at task start comes from the
separate, atomically published recall index (``pipeline.recall``), so readers never meet a lock.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

import duckdb

from pipeline import settings
from pipeline.index import migrations
from pipeline.index.db import connect, migrate

#: The steps table as migration 001 created it (a migration's schema never changes afterwards).
STEP_COLUMNS_001 = {
    "trajectory_id": "VARCHAR", "idx": "INTEGER", "kind": "VARCHAR", "ts": "TIMESTAMPTZ", "tool": "VARCHAR",
    "call_id": "VARCHAR", "command": "VARCHAR", "paths": "VARCHAR[]", "diff": "VARCHAR", "exit_code": "INTEGER",
    "is_error": "BOOLEAN", "text": "VARCHAR", "text_size": "INTEGER", "call_index": "INTEGER",
    "result_index": "INTEGER", "sidechain": "BOOLEAN", "meta": "BOOLEAN",
}


def _m001_initial(con: duckdb.DuckDBPyConnection) -> None:
    """The schema every state database began with, before stages registered their own migrations.

    Released, so never changed: later tables and columns are the owning stage's migrations.
    """
    con.execute("""
        CREATE TABLE trajectories (
            id VARCHAR PRIMARY KEY, source_format VARCHAR, source_path VARCHAR, agent VARCHAR,
            agent_version VARCHAR, model VARCHAR, session_id VARCHAR, parent_session_id VARCHAR, cwd VARCHAR,
            repo VARCHAR, git_branch VARCHAR, started_at TIMESTAMPTZ, ended_at TIMESTAMPTZ, task VARCHAR,
            outcome VARCHAR, outcome_source VARCHAR, outcome_evidence VARCHAR, steps INTEGER,
            tool_calls INTEGER, ingested_at TIMESTAMPTZ)""")
    columns = ", ".join(f"{k} {v}" for k, v in STEP_COLUMNS_001.items())
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


migrations.register(("001_initial", _m001_initial))


#: Serializes opening and closing the state DB within a process (creating or dropping the shared
#: DuckDB instance); once open, connections of one configuration run side by side.
STATE_DB_LOCK = threading.RLock()


class StateDB:
    """The writer's view of ``skillmill.duckdb``. Use as a context manager."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or settings.state_db_path()
        self._con = connect(self.path)
        self._depth = 0
        self._applied = 0
        self._upgrade()

    def __enter__(self) -> StateDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._con.close()

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The connection, with every migration registered so far applied.

        A stage imported after this database was opened registers its migrations late: they
        are applied here, before its first query (outside a transaction, which they open).
        """
        if self._applied != migrations.count() and not self._depth:
            self._upgrade()
        return self._con

    def _upgrade(self) -> None:
        known = migrations.registered()
        migrate(self._con, known)
        self._applied = len(known)

    @property
    def scratch(self) -> Path:
        return self.path.parent / "tmp"

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction for the block; a block inside another joins it.

        A run killed inside the block leaves none of its writes: the next run finds the work
        undone and does it again (the write stage, ``distill/write.py``, relies on this).
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

    def count(self, table: str) -> int:
        return self.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]
