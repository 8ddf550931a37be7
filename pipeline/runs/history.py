"""``skillmill runs``: recent run reports from the state database, or its snapshot while a run holds it.

DuckDB lets no other process open a file one process writes, not even read-only
(``../shared/docs/stack.md``). So while a run writes, the reports come from
``runs-snapshot.json``, which each run refreshes before it lets go of the database: everything
up to the last finished run, and a note that says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import orjson

from pipeline import settings
from pipeline.errors import IndexError_
from pipeline.index.db import connect
from pipeline.runs.report import RunReport, read, snapshot_path


@dataclass
class RunHistory:
    runs: list[RunReport] = field(default_factory=list)
    source: str | None = None  # "state" (the database), "snapshot", or None (nothing readable)
    note: str | None = None
    available: bool = True  # False: the database is held and there is no snapshot to show

    def contract(self) -> dict:
        """What ``skillmill runs --json`` prints."""
        return {"runs": [r.model_dump(mode="json") for r in self.runs], "source": self.source, "note": self.note}


def recent(limit: int = 10, path: Path | None = None) -> RunHistory:
    """The ``limit`` most recent runs, newest first."""
    path = path or settings.state_db_path()
    if not path.exists():
        return RunHistory(source=None, note=f"no runs yet: there is no state database at {path}")
    try:
        con = connect(path, read_only=True, threads=1)
    except IndexError_:
        return _from_snapshot(limit, path)
    try:
        return RunHistory(runs=read(con, limit=limit), source="state")
    finally:
        con.close()


def _from_snapshot(limit: int, path: Path) -> RunHistory:
    busy = f"a skillmill run (or another skillmill process) is writing {path} right now"
    snap = snapshot_path()
    try:
        data = orjson.loads(snap.read_bytes())
        runs = [RunReport.model_validate(r) for r in data.get("runs", [])][:limit]
    except (OSError, orjson.JSONDecodeError, ValueError):
        return RunHistory(source=None, available=False,
                          note=f"{busy}, and there is no readable snapshot of past runs ({snap}); "
                               "try again when it finishes")
    return RunHistory(runs=runs, source="snapshot",
                      note=f"{busy}: showing the runs up to the last finished one, from {snap} "
                           f"(written {data.get('written_at', '?')})")
