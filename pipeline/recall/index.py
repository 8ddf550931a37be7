"""Build and publish the recall index: a small DuckDB file with the skills and a BM25 index.

The index is derived from skill files only, so it can always be rebuilt. It is written to
a temporary file and renamed over ``recall.duckdb``: a reader that opened the old file
keeps reading it, a new reader gets the new one, and nobody ever meets a write lock.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pipeline import settings
from pipeline.index.db import bulk_insert, connect, load_fts
from pipeline.library.model import Skill
from pipeline.library.store import StoredSkill

SCHEMA_VERSION = "1"
COLUMNS = {
    "id": "VARCHAR", "name": "VARCHAR", "path": "VARCHAR", "status": "VARCHAR", "kind": "VARCHAR",
    "repo": "VARCHAR", "confidence": "DOUBLE", "title": "VARCHAR", "description": "VARCHAR",
    "name_text": "VARCHAR", "body": "VARCHAR", "keywords": "VARCHAR",
}
# The default FTS tokenizer drops digits and underscores (E501, snake_case, py311 vanish);
# this one keeps them. Queries go through the same tokenizer inside DuckDB.
FTS_IGNORE = r"(\.|[^a-z0-9_])+"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*[A-Za-z0-9]|[A-Z][0-9]{2,}")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


@dataclass(frozen=True)
class IndexedSkill:
    """A skill and the folder it was read from."""

    skill: Skill
    path: Path

    @classmethod
    def of(cls, stored: StoredSkill) -> IndexedSkill:
        return cls(stored.skill, stored.path)


def keywords(text: str) -> str:
    """Code-aware terms: identifiers whole and split (``snake_case`` -> ``snake_case snake case``)."""
    terms: list[str] = []
    for ident in _IDENT.findall(text):
        parts = [p for p in re.split(r"_+", ident) if p]
        pieces = [m.lower() for part in parts for m in _CAMEL.findall(part)]
        if len(pieces) > 1 or "_" in ident or any(c.isdigit() for c in ident):
            terms.append(ident.lower())
            terms.extend(pieces)
    return " ".join(dict.fromkeys(terms))


def body_text(skill: Skill) -> str:
    parts = [skill.title]
    parts += [f"{i.text} {i.command or ''}" for i in skill.procedure]
    parts += [f"{p.symptom} {p.cause or ''} {p.fix} {p.command or ''}" for p in skill.pitfalls]
    parts += [f"{i.text} {i.command or ''}" for i in skill.verification]
    parts += [skill.notes, skill.repo or ""]
    return "\n".join(p for p in parts if p)


def _row(entry: IndexedSkill) -> dict[str, object]:
    s = entry.skill
    body = body_text(s)
    return {
        "id": str(entry.path), "name": s.name, "path": str(entry.path), "status": s.status, "kind": s.kind,
        "repo": s.repo, "confidence": s.confidence, "title": s.title, "description": s.description,
        "name_text": s.name.replace("-", " "), "body": body,
        "keywords": keywords(f"{s.name} {s.description} {body}"),
    }


def publish(skills: Iterable[IndexedSkill], target: Path | None = None) -> int:
    """Build a fresh index from ``skills`` and atomically replace ``target`` with it."""
    target = target or settings.recall_index_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    os.unlink(tmp_name)  # DuckDB must create the file itself
    tmp = Path(tmp_name)
    try:
        con = connect(tmp)
        try:
            load_fts(con)
            con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
            con.execute("INSERT INTO meta VALUES ('schema', ?)", [SCHEMA_VERSION])
            columns = ", ".join(f"{k} {v}" for k, v in COLUMNS.items())
            con.execute(f"CREATE TABLE skills ({columns})")
            count = bulk_insert(con, "skills", COLUMNS, (_row(s) for s in skills), scratch=target.parent / "tmp")
            if count:
                con.execute("PRAGMA create_fts_index('skills', 'id', 'name_text', 'description', 'body', "
                            f"'keywords', stemmer='porter', stopwords='english', ignore='{FTS_IGNORE}', "
                            "overwrite=1)")
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.replace(tmp, target)
    finally:
        for leftover in (tmp, Path(f"{tmp}.wal")):
            with contextlib.suppress(OSError):
                leftover.unlink()
    return count
