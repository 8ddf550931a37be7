"""What the LLM distiller keeps in the state database: calls, cached answers, draft decisions.

* ``llm_calls``  every HTTP request: run, trajectory, purpose, model, status, tokens in/out,
  cost, latency. What a run cost is a query away.
* ``llm_cache``  validated answers keyed on the hash of what was sent (content, prompt and
  rendering versions, model): an unchanged input is never paid for twice, even after a run
  that stopped half-way.
* ``llm_drafts`` each grounded draft and where consolidation put it (new / update /
  duplicate / proposed), with its grounding report and risk flags, for review.

Only the flow's thread calls these (one DuckDB writer); worker threads hand results back.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import duckdb
import orjson

from pipeline.index import migrations
from pipeline.index.db import bulk_insert
from pipeline.llm.backend import CallRecord

if TYPE_CHECKING:
    from pipeline.index.state import StateDB

CALL_COLUMNS = {
    "run_id": "VARCHAR", "trajectory_id": "VARCHAR", "purpose": "VARCHAR", "model": "VARCHAR",
    "prompt_version": "VARCHAR", "status": "VARCHAR", "input_tokens": "INTEGER", "output_tokens": "INTEGER",
    "cost_usd": "DOUBLE", "latency_ms": "INTEGER", "error": "VARCHAR", "called_at": "TIMESTAMPTZ",
}


def _m030_llm(con: duckdb.DuckDBPyConnection) -> None:
    columns = ", ".join(f"{k} {v}" for k, v in CALL_COLUMNS.items())
    con.execute(f"CREATE TABLE llm_calls ({columns})")
    con.execute("""
        CREATE TABLE llm_cache (
            key VARCHAR PRIMARY KEY, purpose VARCHAR, model VARCHAR, prompt_version VARCHAR,
            trajectory_id VARCHAR, answer JSON, created_at TIMESTAMPTZ)""")
    con.execute("""
        CREATE TABLE llm_drafts (
            draft_key VARCHAR, model VARCHAR, prompt_version VARCHAR, trajectory_id VARCHAR, skill VARCHAR,
            action VARCHAR, target VARCHAR, reason VARCHAR, flags VARCHAR[], grounding JSON,
            decided_at TIMESTAMPTZ, PRIMARY KEY (draft_key, model, prompt_version))""")


migrations.register(("030_llm", _m030_llm))


class LLMState:
    """The LLM tables of one open :class:`StateDB`."""

    def __init__(self, state: StateDB) -> None:
        self.state = state
        self.con = state.con

    # -- cache ----------------------------------------------------------------------------
    def cached(self, keys: Iterable[str]) -> dict[str, str]:
        keys = list(keys)
        if not keys:
            return {}
        rows = self.con.execute("SELECT key, answer FROM llm_cache WHERE list_contains(?, key)", [keys]).fetchall()
        return {key: answer for key, answer in rows}

    def store_answer(self, key: str, *, purpose: str, model: str, prompt_version: str, trajectory: str | None,
                     answer: str) -> None:
        self.con.execute("INSERT OR REPLACE INTO llm_cache VALUES (?, ?, ?, ?, ?, ?, ?)",
                         [key, purpose, model, prompt_version, trajectory, answer, datetime.now(UTC)])

    # -- calls ----------------------------------------------------------------------------
    def record_calls(self, run_id: str, prompt_version: str, records: list[CallRecord]) -> int:
        rows = ({"run_id": run_id, "trajectory_id": r.trajectory, "purpose": r.purpose, "model": r.model,
                 "prompt_version": prompt_version, "status": r.status, "input_tokens": r.input_tokens,
                 "output_tokens": r.output_tokens, "cost_usd": r.cost_usd, "latency_ms": r.latency_ms,
                 "error": r.error, "called_at": r.called_at} for r in records)
        return bulk_insert(self.con, "llm_calls", CALL_COLUMNS, rows, scratch=self.state.scratch)

    def usage(self, run_id: str) -> dict[str, Any]:
        row = self.con.execute("SELECT count(*), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0), "
                               "coalesce(sum(cost_usd), 0) FROM llm_calls WHERE run_id = ?", [run_id]).fetchone()
        assert row is not None
        return {"requests": row[0], "input_tokens": row[1], "output_tokens": row[2], "cost_usd": row[3]}

    # -- drafts ---------------------------------------------------------------------------
    def decided(self, keys: Iterable[str], model: str, prompt_version: str) -> dict[str, str]:
        keys = list(keys)
        if not keys:
            return {}
        rows = self.con.execute("SELECT draft_key, action FROM llm_drafts WHERE model = ? AND prompt_version = ? "
                                "AND list_contains(?, draft_key)", [model, prompt_version, keys]).fetchall()
        return {key: action for key, action in rows}

    def record_draft(self, key: str, *, model: str, prompt_version: str, trajectory: str, skill: str | None,
                     action: str, target: str | None, reason: str | None, flags: list[str],
                     grounding: dict[str, Any]) -> None:
        self.con.execute("INSERT OR REPLACE INTO llm_drafts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         [key, model, prompt_version, trajectory, skill, action, target, reason, flags,
                          orjson.dumps(grounding).decode(), datetime.now(UTC)])
