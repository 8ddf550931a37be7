"""Answer "which skills fit this task?" from the published recall index.

This is the hook path: it imports neither litellm nor prefect, opens the index read-only,
and only ever serves approved skills unless candidates are asked for explicitly.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb

from pipeline import settings
from pipeline.errors import IndexError_
from pipeline.index.db import connect, load_fts
from pipeline.library.model import SERVABLE

#: Field weights: a match in the name or description says more than one in the body.
WEIGHTS = {"name_text": 3.0, "description": 2.0, "keywords": 1.5, "body": 1.0}


@dataclass(frozen=True)
class Hit:
    name: str
    path: str
    score: float
    description: str
    status: str

    def contract(self) -> dict[str, object]:
        """The result object of ``skillmill recall --json``."""
        return asdict(self)


class RecallIndex:
    """A read-only handle on ``recall.duckdb``. Cheap to open; use one per process."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or settings.recall_index_path()
        if not self.path.exists():
            raise IndexError_(f"no recall index at {self.path}",
                              hint="run `skillmill run PATH...` (or `skillmill index`) first")
        self.con = connect(self.path, read_only=True)
        self._fts = self._has_fts()
        if self._fts:
            load_fts(self.con)

    def _has_fts(self) -> bool:
        rows = self.con.execute("SELECT count(*) FROM duckdb_schemas() WHERE schema_name = 'fts_main_skills'")
        return bool(rows.fetchone()[0])  # type: ignore[index]

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> RecallIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def count(self) -> int:
        return self.con.execute("SELECT count(*) FROM skills").fetchone()[0]  # type: ignore[index]

    def search(self, query: str, *, limit: int = 5, include_candidates: bool = False) -> list[Hit]:
        if not self._fts or not query.strip():
            return []
        statuses = sorted(SERVABLE | ({"candidate"} if include_candidates else set()))
        score = " + ".join(
            f"{weight} * coalesce(fts_main_skills.match_bm25(id, $q, fields := '{field}'), 0)"
            for field, weight in WEIGHTS.items())
        sql = f"""
            SELECT name, path, score, description, status FROM (
                SELECT *, {score} AS score FROM skills WHERE list_contains($statuses, status))
            WHERE score > 0 ORDER BY score DESC, name LIMIT $limit"""
        try:
            rows = self.con.execute(sql, {"q": query, "statuses": statuses, "limit": limit}).fetchall()
        except duckdb.Error as exc:
            raise IndexError_(f"recall query failed: {exc}", hint="rebuild the index with `skillmill index`") from exc
        return [Hit(name=r[0], path=r[1], score=round(float(r[2]), 4), description=r[3], status=r[4]) for r in rows]


def recall(query: str, *, limit: int = 5, include_candidates: bool = False, path: Path | None = None) -> list[Hit]:
    with RecallIndex(path) as index:
        return index.search(query, limit=limit, include_candidates=include_candidates)


def brief(query: str, hits: list[Hit]) -> str:
    """The Markdown an agent reads: each skill's name, when to use it, and where it lives."""
    if not hits:
        return f"No skill in the library fits: {query}\n"
    lines = [f"## Skills for: {query}", ""]
    for hit in hits:
        lines.append(f"- **{hit.name}** ({hit.status}) — {hit.description}")
        lines.append(f"  `{hit.path}/SKILL.md`")
    return "\n".join(lines) + "\n"
