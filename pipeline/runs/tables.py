"""The ``runs`` table of the state database (created by ``001_initial``): one row per run, its summary."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from pipeline.index.state import StateDB


def record_run(state: StateDB, run_id: str, started: datetime, exit_code: int, summary: dict[str, Any]) -> None:
    state.con.execute("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?)",
                      [run_id, started, datetime.now(UTC), exit_code, orjson.dumps(summary).decode()])
