"""The serving snapshot: everything a query reads, in a file that opens in a millisecond.

``recall.duckdb`` is the index of record: the publisher builds it (tokens, the FTS extension's
Porter stemmer and the BM25 weights are SQL), the next publish carries its rows and folders
over, ``skillmill index --list`` reads it. But answering a query through DuckDB means importing
it first: ~60-100 ms to load its 60 MB module and ~13 ms to connect, most of what a hook call
may cost (goal: 4x ``python -c pass``). So the publisher also writes, in the same publish and
from the tables it has just built, ``recall.serve.sqlite``: the query-time tables only —
surface words -> stems, the vocabulary, each term's postings cut to what a query reads, the
served columns of every skill and the vectors if any — in an SQLite file that Python's
built-in ``sqlite3`` opens in about a millisecond.

Both files are built under the publish lock and renamed into place, this one first and
``recall.duckdb`` last (its new inode marks a finished publish, e.g. for the MCP server).
Queries read only this file, so each reader sees one publish whole. It is never changed in
place, only replaced, so readers open it ``immutable``: SQLite takes no lock and reads no
journal, and a reader that opened the previous file keeps reading it.
"""

from __future__ import annotations

import sqlite3
import sys
from array import array
from pathlib import Path

from pipeline import private
from pipeline.errors import IndexError_

#: Layout version of this file; a reader refuses any other (``skillmill index`` rebuilds it).
FORMAT = "1"
SUFFIX = ".serve.sqlite"
#: The served columns of a skill, in the order ``rows`` returns them.
SKILL_COLUMNS = ("doc", "name", "path", "description", "status", "repo", "languages", "agents", "prior", "sha",
                 "root")
#: A query reads at most this many bound parameters per statement (SQLite's limit is 32766).
_CHUNK = 500
#: Decoded posting lists (up to 32 KiB each) and word stems kept per process: ``--queries``
#: and the MCP server ask many queries, mostly with the same words.
_CACHE_TERMS = 4_000
_CACHE_WORDS = 100_000

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE surface (t TEXT PRIMARY KEY, term TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE vocab (term TEXT PRIMARY KEY, termid INTEGER NOT NULL, df INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE postings (termid INTEGER PRIMARY KEY, docs BLOB NOT NULL, ws BLOB NOT NULL);
CREATE TABLE skills (doc INTEGER PRIMARY KEY, name TEXT, path TEXT, description TEXT, status TEXT, repo TEXT,
                     languages TEXT, agents TEXT, prior REAL, sha TEXT, root TEXT);
CREATE TABLE vectors (doc INTEGER PRIMARY KEY, v BLOB NOT NULL);
"""


def path_for(index: Path) -> Path:
    """``recall.duckdb`` -> ``recall.serve.sqlite`` (beside it)."""
    return index.with_name(index.stem + SUFFIX)


# -- writing (the publisher, inside the publish lock) -------------------------------------------
def reusable(previous: Path, lexical_key: str) -> Path | None:
    """``previous`` if its lexical tables were computed from the same input (``lexical.fingerprint``)."""
    try:
        snapshot = Snapshot(previous)
    except IndexError_:
        return None
    try:
        meta = snapshot.meta
        return previous if meta.get("serving") == FORMAT and lexical_key and meta.get("lexical") == lexical_key else None
    finally:
        snapshot.close()


def write(con: object, target: Path, meta: dict[str, str], *, lexical_from: Path | None = None) -> None:
    """Copy what queries read from the DuckDB index being built (``con``) into a new file ``target``.

    ``con`` holds ``skills`` and, when there are any, the lexical tables of ``lexical.build``
    and ``vectors``. Postings are stored as little-endian int32 documents and float32 weights,
    best first, cut to what a query reads (``lexical.postings``). With ``lexical_from`` (a
    previous snapshot of the same lexical input, see :func:`reusable`) the lexical tables are
    copied from it instead.
    """
    from pipeline.recall import lexical

    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}  # type: ignore[attr-defined]
    out = sqlite3.connect(target)
    private.restrict(target)  # owner-only before anything is written into it, as the index beside it
    try:
        out.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA page_size = 8192;" + _SCHEMA)
        skills = con.execute(f"SELECT {', '.join(SKILL_COLUMNS)} FROM skills ORDER BY doc").fetchall()  # type: ignore[attr-defined]
        out.executemany(f"INSERT INTO skills VALUES ({', '.join('?' * len(SKILL_COLUMNS))})",
                        [(*r[:6], ",".join(r[6] or ()), ",".join(r[7] or ()), *r[8:]) for r in skills])
        out.execute("CREATE INDEX skills_name ON skills (name)")
        out.execute("CREATE INDEX skills_path ON skills (path)")
        if lexical_from is not None:
            out.execute("ATTACH DATABASE ? AS previous", [str(lexical_from)])
            for table in ("surface", "vocab", "postings"):
                out.execute(f"INSERT INTO {table} SELECT * FROM previous.{table}")
            out.commit()
            out.execute("DETACH DATABASE previous")
        elif "weights" in tables:
            out.executemany("INSERT INTO surface VALUES (?, ?)",
                            con.execute("SELECT t, term FROM surface").fetchall())  # type: ignore[attr-defined]
            out.executemany("INSERT INTO vocab VALUES (?, ?, ?)",
                            con.execute("SELECT term, termid, df FROM vocab").fetchall())  # type: ignore[attr-defined]
            out.executemany("INSERT INTO postings VALUES (?, ?, ?)", (
                (termid, docs.astype("<i4", copy=False).tobytes(), ws.astype("<f4", copy=False).tobytes())
                for termid, docs, ws in lexical.postings(con)))  # type: ignore[arg-type]
        if "vectors" in tables:
            import numpy as np

            vectors = con.execute("SELECT doc, v FROM vectors ORDER BY doc").fetchall()  # type: ignore[attr-defined]
            out.executemany("INSERT INTO vectors VALUES (?, ?)",
                            ((doc, np.asarray(v, dtype="<f4").tobytes()) for doc, v in vectors))
        out.executemany("INSERT INTO meta VALUES (?, ?)",
                        [*meta.items(), ("serving", FORMAT), ("skills", str(len(skills)))])
        out.commit()
    finally:
        out.close()


# -- reading (every query) ----------------------------------------------------------------------
class Snapshot:
    """A read-only handle on one published snapshot, with per-process caches for repeated queries."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            # check_same_thread off: the MCP server may answer from another thread than it opened in.
            self.con = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro&immutable=1", uri=True,
                                       check_same_thread=False)
            self.meta = dict(self.con.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.Error as exc:
            raise IndexError_(f"cannot read the recall index {path}: {exc}",
                              hint="rebuild it with `skillmill index`") from exc
        self.skills = int(self.meta.get("skills") or 0)
        self._stems: dict[str, str | None] = {}
        self._postings: dict[int, tuple[array[int], array[float]]] = {}

    def close(self) -> None:
        self.con.close()

    def select_in(self, sql: str, values: list[object]) -> list[tuple[object, ...]]:
        """Rows of ``sql`` (which ends in ``IN ({})``) for every value, a chunk of them at a time."""
        rows: list[tuple[object, ...]] = []
        for i in range(0, len(values), _CHUNK):
            chunk = values[i:i + _CHUNK]
            rows += self.con.execute(sql.format(", ".join("?" * len(chunk))), chunk).fetchall()
        return rows

    def stems(self, words: list[str]) -> dict[str, str]:
        """word -> its stem, for the words the index has seen (cached, including misses)."""
        if len(self._stems) > _CACHE_WORDS:
            self._stems.clear()
        todo = [w for w in dict.fromkeys(words) if w not in self._stems]
        if todo:
            found = dict(self.select_in("SELECT t, term FROM surface WHERE t IN ({})", todo))  # type: ignore[arg-type]
            for word in todo:
                self._stems[word] = found.get(word)  # type: ignore[assignment]
        return {w: s for w in words if (s := self._stems[w]) is not None}

    def vocab(self, terms: list[str]) -> dict[str, tuple[int, int]]:
        """term -> (termid, df) for the terms the index knows."""
        rows = self.select_in("SELECT term, termid, df FROM vocab WHERE term IN ({})", list(dict.fromkeys(terms)))
        return {r[0]: (r[1], r[2]) for r in rows}  # type: ignore[misc]

    def postings(self, termids: list[int]) -> list[tuple[array[int], array[float]]]:
        """Each term's (documents, weights), best first."""
        if len(self._postings) > _CACHE_TERMS:
            self._postings.clear()
        todo = [t for t in dict.fromkeys(termids) if t not in self._postings]
        if todo:
            for termid, docs, ws in self.select_in("SELECT termid, docs, ws FROM postings WHERE termid IN ({})", todo):
                self._postings[termid] = (_decode("i", docs), _decode("f", ws))  # type: ignore[index,arg-type]
        empty: tuple[array[int], array[float]] = (array("i"), array("f"))
        return [self._postings.get(t, empty) for t in termids]

    def rows(self, docs: list[int]) -> dict[int, dict[str, object]]:
        """The served columns of these documents."""
        rows = self.select_in(f"SELECT {', '.join(SKILL_COLUMNS)} FROM skills WHERE doc IN ({{}})", list(docs))
        out = {}
        for r in rows:
            row = dict(zip(SKILL_COLUMNS, r, strict=True))
            row["languages"] = _split(row["languages"])
            row["agents"] = _split(row["agents"])
            out[row["doc"]] = row
        return out  # type: ignore[return-value]

    def vectors(self) -> tuple[list[int], bytes]:
        """Documents and their float32 vectors, concatenated in that order."""
        rows = self.con.execute("SELECT doc, v FROM vectors ORDER BY doc").fetchall()
        return [r[0] for r in rows], b"".join(r[1] for r in rows)


def _decode(kind: str, data: bytes) -> array:  # type: ignore[type-arg]
    values = array(kind)
    values.frombytes(data)
    if sys.byteorder == "big":  # stored little-endian
        values.byteswap()
    return values


def _split(value: object) -> list[str]:
    return str(value).split(",") if value else []
