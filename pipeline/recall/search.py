"""Answer "which skills fit this task?" from the published recall index.

This is the hook path: it imports neither litellm, prefect nor pydantic, opens the index
read-only, and serves only the statuses the publisher recorded as servable (approved,
``pipeline.library.model.SERVABLE``) unless candidates are asked for explicitly.

Queries read the serving snapshot the publisher writes beside ``recall.duckdb``
(``pipeline.recall.serving``: SQLite, opened in a millisecond) rather than DuckDB itself, whose
import alone costs more than a hook call may take. Query words are stemmed by lookup in the
index (``lexical.query_terms``), so no stemmer is loaded here either. Ranking, in order: the lexical channel (BM25 over name, description,
body and code-aware keywords) and, when the index was built with an embedder that loads here
(and is allowed: the hook allows only fast ones), the semantic channel, fused by reciprocal
rank; then the filters (``repo``, ``language``, ``agent``), the priors (feedback, candidate status), near-duplicate collapse, and a relevance threshold:
when the best skill explains too little of the task, nothing is returned.
"""

from __future__ import annotations

import math
import os
import re
from collections import namedtuple
from pathlib import Path

from pipeline import settings
from pipeline.errors import IndexError_
from pipeline.recall import lexical, pending, serving
from pipeline.recall.text import canonical_agent, canonical_language, keywords, repo_matches
from pipeline.scan.marks import prior as stale_prior

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    from typing import Any

#: Reciprocal-rank fusion: ``sum(weight / (RRF_K + rank))`` over the channels.
RRF_K = 60
CHANNEL_WEIGHTS = {"lexical": 1.0, "semantic": 1.0}
#: How many candidates each channel hands to fusion.
CANDIDATES = 100
#: Relevance: the best skill must explain this share of the query's information (IDF mass).
MIN_COVERAGE = 0.25
#: A skill needs at least this share of the best skill's lexical score to be listed at all.
MIN_RELATIVE = 0.25
#: Candidates rank a little below approved skills when both are asked for.
STATUS_PRIOR = {"approved": 1.0, "candidate": 0.85}
#: ``root`` of the skills of our own library (``pipeline.recall.index.LIBRARY``), as against indexed folders.
LIBRARY_ROOT = "library"
#: Two results whose descriptions share this many words (Jaccard) are near-duplicates.
DUPLICATE_JACCARD = 0.8
#: A task is read up to this many characters: its start says what it is about, and a pasted
#: 20 MB log would otherwise cost half a minute of tokenizing (the hook, MCP and the CLI all cut here).
MAX_TASK_CHARS = 4000


def clip_task(task: str) -> str:
    """The part of a task recall reads (its first ``MAX_TASK_CHARS`` characters)."""
    return task[:MAX_TASK_CHARS]


class Hit(namedtuple("Hit", "name path score description status")):
    """One recalled skill. A named tuple, not a dataclass: importing ``dataclasses`` (and
    ``inspect`` with it) costs milliseconds of a hook call's start-up."""

    __slots__ = ()

    def contract(self) -> dict[str, object]:
        """The result object of ``skillmill recall --json``."""
        return {"name": self.name, "path": self.path, "score": self.score, "description": self.description,
                "status": self.status}


class Filters:
    def __init__(self, repo: str | None = None, language: str | None = None, agent: str | None = None) -> None:
        self.repo, self.language, self.agent = repo, language, agent

    def keep(self, row: dict[str, Any]) -> bool:
        """A skill bound to another repo, language or agent is left out; an unbound one fits all."""
        if self.repo and row["repo"] and not repo_matches(row["repo"], self.repo):
            return False
        if self.language and row["languages"] and canonical_language(self.language) not in row["languages"]:
            return False
        return not (self.agent and row["agents"] and canonical_agent(self.agent) not in row["agents"])


class RecallIndex:
    """A read-only handle on the published index. Cheap to open; use one per process.

    Queries read the serving snapshot (``pipeline.recall.serving``) through ``sqlite3``;
    ``con`` opens ``recall.duckdb`` itself, for SQL over everything the index holds.
    """

    def __init__(self, path: Path | None = None, *, slow_embedders: bool = True) -> None:
        self.path = path or settings.recall_index_path()
        self.slow_embedders = slow_embedders
        snapshot = serving.path_for(self.path)
        if not snapshot.exists():
            if self.path.exists():  # published by a skillmill from before the snapshot
                raise IndexError_(f"{self.path} was written by another version of skillmill",
                                  hint="rebuild it with `skillmill index`")
            raise IndexError_(f"no recall index at {self.path}",
                              hint="run `skillmill index` (or `skillmill index --skills DIR`) first")
        self.snapshot = serving.Snapshot(snapshot)
        meta = self.snapshot.meta
        if meta.get("schema") != _schema_version() or meta.get("serving") != serving.FORMAT:
            self.snapshot.close()
            raise IndexError_(f"{self.path} was written by another version of skillmill",
                              hint="rebuild it with `skillmill index`")
        self.servable = frozenset(s for s in meta.get("servable", "approved").split(",") if s)
        self.embedder_name = meta.get("embedder") or None
        self.published_at = meta.get("published_at")
        self._embedder: Any = None
        self._embedder_tried = False
        self._vectors: Any = None
        self._con: Any = None

    @property
    def con(self) -> Any:
        """A read-only DuckDB connection to ``recall.duckdb`` (opened on first use; not on the query path)."""
        if self._con is None:
            from pipeline.index.db import connect

            self._con = connect(self.path, read_only=True, threads=1)
        return self._con

    def close(self) -> None:
        self.snapshot.close()
        if self._con is not None:
            self._con.close()
            self._con = None

    def __enter__(self) -> RecallIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def count(self) -> int:
        return self.snapshot.skills

    # -- channels ---------------------------------------------------------------------------------
    def embedder(self) -> Any:
        """The embedder the index was built with, if it loads here; otherwise None (lexical only)."""
        if not self._embedder_tried:
            self._embedder_tried = True
            if self.embedder_name:
                from pipeline.recall import semantic

                if self.slow_embedders or self.embedder_name.split(":", 1)[0] in semantic.FAST_KINDS:
                    self._embedder = semantic.load(self.embedder_name, quiet=True)
        return self._embedder

    def _semantic(self, query: str) -> list[int]:
        embedder = self.embedder()
        if embedder is None:
            return []
        import numpy as np  # the embedder has imported it already

        if self._vectors is None:
            docs, data = self.snapshot.vectors()
            matrix = np.frombuffer(data, dtype="<f4").reshape(len(docs), -1) if docs else np.zeros((0, 1), "<f4")
            norms = np.linalg.norm(matrix, axis=1)
            self._vectors = (np.asarray(docs), matrix, np.where(norms == 0, 1, norms))
        docs, matrix, norms = self._vectors
        vector = np.asarray(embedder.embed([query])[0], dtype=np.float32)
        if not len(docs) or vector.shape[0] != matrix.shape[1]:
            return []
        cosine = (matrix @ vector) / (norms * (np.linalg.norm(vector) or 1))
        return [int(d) for d in docs[np.argsort(-cosine, kind="stable")[:CANDIDATES]]]

    # -- search -----------------------------------------------------------------------------------
    def search(self, query: str, *, limit: int = 5, include_candidates: bool = False,
               repo: str | None = None, language: str | None = None, agent: str | None = None) -> list[Hit]:
        query = clip_task(query)
        if not self.snapshot.skills or not query.strip():
            return []
        statuses = set(self.servable) | ({"candidate"} if include_candidates else set())
        filters = Filters(repo, language, agent)
        snap = self.snapshot
        terms = lexical.query_terms(snap, f"{query} {keywords(query)}")
        known = lexical.lookup(snap, terms)
        termids = [t for t, _ in known.values()]
        lex = lexical.score(snap, termids, CANDIDATES)
        if not lex:
            return []
        # Relevance: how much of the query's information the best lexical matches explain.
        # A plain word no skill contains ("Cassandra", "Blender") counts as fully informative:
        # it is the strongest sign that no skill covers the task. Identifiers, numbers and
        # addresses pasted from an error (PriceCalculator, 0x00c0001a4018) are not topics.
        n = self.count()
        idf = {termid: math.log((n - df + 0.5) / (df + 0.5) + 1) for termid, df in known.values()}
        topical = lexical.query_terms(snap, " ".join(_plain_words(query)))
        unseen = sum(1 for t in topical if t not in known) * math.log((n + 0.5) / 0.5 + 1)
        total = sum(idf.values()) + unseen
        best = lex[0][1]
        lex_rank = [doc for doc, s in lex if s >= MIN_RELATIVE * best]
        coverage = max(sum(idf[t] for t in lexical.matched(snap, termids, doc)) / total for doc, _ in lex[:3])
        if coverage < MIN_COVERAGE:
            return []
        sem_rank = self._semantic(query)
        fused: dict[int, float] = {}
        for channel, ranking in (("lexical", lex_rank), ("semantic", sem_rank[:len(lex_rank) or CANDIDATES])):
            for rank, doc in enumerate(ranking):
                fused[doc] = fused.get(doc, 0.0) + CHANNEL_WEIGHTS[channel] / (RRF_K + rank + 1)
        rows = self._rows(list(fused))
        behind = pending.behind()  # a decision not yet published: check that each skill is still where it was
        ranked = []
        for doc, value in fused.items():
            row = rows.get(doc)
            if row is None or row["status"] not in statuses or not filters.keep(row):
                continue
            prior = row["prior"] * STATUS_PRIOR.get(row["status"], 1.0) * stale_prior(row["path"])
            ranked.append((value * prior, row))
        ranked.sort(key=lambda x: (-x[0], x[1]["name"], x[1]["path"]))
        hits: list[Hit] = []
        kept: list[dict[str, Any]] = []
        for value, row in ranked:
            if any(_duplicate(row, other) for other in kept) or (behind and _moved(row)):
                continue
            kept.append(row)
            hits.append(Hit(name=row["name"], path=row["path"], score=round(value * 1000, 4),
                            description=row["description"], status=row["status"]))
            if len(hits) >= limit:
                break
        return hits

    def _rows(self, docs: list[int]) -> dict[int, dict[str, Any]]:
        return self.snapshot.rows(docs) if docs else {}

    def get_many(self, paths: list[str]) -> list[dict[str, Any]]:
        """Metadata of the skills at ``paths``."""
        cols = ("name", "path", "repo", "status", "root")
        rows = self.snapshot.select_in(f"SELECT {', '.join(cols)} FROM skills WHERE path IN ({{}})", list(paths))
        return [dict(zip(cols, r, strict=True)) for r in rows]

    def get(self, name: str, *, include_candidates: bool = False) -> list[dict[str, Any]]:
        """Skills called ``name`` (or whose folder path is ``name``), servable first."""
        statuses = set(self.servable) | ({"candidate"} if include_candidates else set())
        cols = ("name", "path", "description", "status", "root")
        rows = self.snapshot.con.execute(
            f"SELECT {', '.join(cols)} FROM skills WHERE name = ?1 OR path = ?1 ORDER BY root = 'library' DESC, path",
            [name]).fetchall()
        behind = pending.behind()
        found = [dict(zip(cols, r, strict=True)) for r in rows if r[3] in statuses]
        return [row for row in found if not (behind and _moved(row))]


_WORD = re.compile(r"[a-z0-9]+")
_PLAIN = re.compile(r"(?<![\w.])[A-Za-z][a-z]+(?!\w|\.\w)")


def _plain_words(text: str) -> list[str]:
    """Words written as words: not identifiers, file names, numbers or hex."""
    return _PLAIN.findall(text)


def _moved(row: dict[str, Any]) -> bool:
    """A skill of our library whose folder no longer holds it: a decision moved it (deprecated, say) and has
    not republished yet, or never will (killed). Served skills sit at ``<library>/<name>/``; one stat each."""
    return row["root"] == LIBRARY_ROOT and not os.path.isfile(os.path.join(str(row["path"]), "SKILL.md"))


def _duplicate(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The same skill met twice: same content, or the same name and (nearly) the same description."""
    if a["sha"] and a["sha"] == b["sha"]:
        return True
    wa, wb = set(_WORD.findall(a["description"].lower())), set(_WORD.findall(b["description"].lower()))
    jaccard = len(wa & wb) / max(1, len(wa | wb))
    return jaccard >= DUPLICATE_JACCARD or (a["name"] == b["name"] and jaccard >= DUPLICATE_JACCARD / 2)


def _schema_version() -> str:
    # Imported lazily: pipeline.recall.index pulls in the library model (pydantic), which the
    # query path does not need. Keep this literal in step with index.SCHEMA_VERSION (a test checks).
    return "6"


def recall(query: str, *, limit: int = 5, include_candidates: bool = False, path: Path | None = None,
           **filters: str | None) -> list[Hit]:
    with RecallIndex(path) as index:
        return index.search(query, limit=limit, include_candidates=include_candidates, **filters)
