"""Answer "which skills fit this task?" from the published recall index.

This is the hook path: it imports neither litellm, prefect nor pydantic, opens the index
read-only, and serves only the statuses the publisher recorded as servable (approved,
``pipeline.library.model.SERVABLE``) unless candidates are asked for explicitly.

Queries are stemmed by lookup in the index (``lexical.query_terms``), so the FTS extension is
not even loaded here. Ranking, in order: the lexical channel (BM25 over name, description,
body and code-aware keywords) and, when the index was built with an embedder that loads here
(and is allowed: the hook allows only fast ones), the semantic channel, fused by reciprocal rank; then the filters (``repo``, ``language``, ``agent``), the
priors (feedback, candidate status), near-duplicate collapse, and a relevance threshold:
when the best skill explains too little of the task, nothing is returned.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline import settings
from pipeline.errors import IndexError_
from pipeline.index.db import connect
from pipeline.recall import lexical
from pipeline.recall.text import canonical_agent, canonical_language, keywords, repo_matches

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
#: Two results whose descriptions share this many words (Jaccard) are near-duplicates.
DUPLICATE_JACCARD = 0.8


@dataclass(frozen=True)
class Hit:
    name: str
    path: str
    score: float
    description: str
    status: str

    def contract(self) -> dict[str, object]:
        """The result object of ``skillmill recall --json``."""
        return {"name": self.name, "path": self.path, "score": self.score, "description": self.description,
                "status": self.status}


@dataclass
class Filters:
    repo: str | None = None
    language: str | None = None
    agent: str | None = None

    def keep(self, row: dict[str, Any]) -> bool:
        """A skill bound to another repo, language or agent is left out; an unbound one fits all."""
        if self.repo and row["repo"] and not repo_matches(row["repo"], self.repo):
            return False
        if self.language and row["languages"] and canonical_language(self.language) not in row["languages"]:
            return False
        return not (self.agent and row["agents"] and canonical_agent(self.agent) not in row["agents"])


class RecallIndex:
    """A read-only handle on ``recall.duckdb``. Cheap to open; use one per process."""

    def __init__(self, path: Path | None = None, *, slow_embedders: bool = True) -> None:
        self.path = path or settings.recall_index_path()
        self.slow_embedders = slow_embedders
        if not self.path.exists():
            raise IndexError_(f"no recall index at {self.path}",
                              hint="run `skillmill index` (or `skillmill index --skills DIR`) first")
        # Queries are small: one thread answers them faster than two fighting for a busy machine.
        self.con = connect(self.path, read_only=True, threads=1)
        meta = dict(self.con.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("schema") != _schema_version():
            self.con.close()
            raise IndexError_(f"{self.path} was written by another version of skillmill",
                              hint="rebuild it with `skillmill index`")
        self.servable = frozenset(s for s in meta.get("servable", "approved").split(",") if s)
        self.embedder_name = meta.get("embedder") or None
        self._embedder: Any = None
        self._embedder_tried = False
        self._has_postings = bool(self.con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'postings'").fetchone()[0])  # type: ignore[index]

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> RecallIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def count(self) -> int:
        return self.con.execute("SELECT count(*) FROM skills").fetchone()[0]  # type: ignore[index]

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
        vector = [float(x) for x in embedder.embed([query])[0]]
        dim = len(vector)
        rows = self.con.execute(
            f"SELECT doc FROM vectors ORDER BY array_cosine_similarity(v, $q::FLOAT[{dim}]) DESC LIMIT {CANDIDATES}",
            {"q": vector}).fetchall()
        return [r[0] for r in rows]

    # -- search -----------------------------------------------------------------------------------
    def search(self, query: str, *, limit: int = 5, include_candidates: bool = False,
               repo: str | None = None, language: str | None = None, agent: str | None = None) -> list[Hit]:
        if not self._has_postings or not query.strip():
            return []
        statuses = set(self.servable) | ({"candidate"} if include_candidates else set())
        filters = Filters(repo, language, agent)
        terms = lexical.query_terms(self.con, f"{query} {keywords(query)}")
        known = lexical.lookup(self.con, terms)
        lex = lexical.score(self.con, [t for t, _ in known.values()], CANDIDATES)
        if not lex:
            return []
        # Relevance: how much of the query's information the best lexical matches explain.
        # A plain word no skill contains ("Cassandra", "Blender") counts as fully informative:
        # it is the strongest sign that no skill covers the task. Identifiers, numbers and
        # addresses pasted from an error (PriceCalculator, 0x00c0001a4018) are not topics.
        n = self.count()
        idf = {termid: math.log((n - df + 0.5) / (df + 0.5) + 1) for termid, df in known.values()}
        topical = lexical.query_terms(self.con, " ".join(_plain_words(query)))
        unseen = sum(1 for t in topical if t not in known) * math.log((n + 0.5) / 0.5 + 1)
        total = sum(idf.values()) + unseen
        best = lex[0][1]
        lex_rank = [doc for doc, s, _ in lex if s >= MIN_RELATIVE * best]
        coverage = max(sum(idf[t] for t in matched) / total for _, _, matched in lex[:3])
        if coverage < MIN_COVERAGE:
            return []
        sem_rank = self._semantic(query)
        fused: dict[int, float] = {}
        for channel, ranking in (("lexical", lex_rank), ("semantic", sem_rank[:len(lex_rank) or CANDIDATES])):
            for rank, doc in enumerate(ranking):
                fused[doc] = fused.get(doc, 0.0) + CHANNEL_WEIGHTS[channel] / (RRF_K + rank + 1)
        rows = self._rows(list(fused))
        ranked = []
        for doc, value in fused.items():
            row = rows.get(doc)
            if row is None or row["status"] not in statuses or not filters.keep(row):
                continue
            prior = row["prior"] * STATUS_PRIOR.get(row["status"], 1.0)
            ranked.append((value * prior, row))
        ranked.sort(key=lambda x: (-x[0], x[1]["name"], x[1]["path"]))
        hits: list[Hit] = []
        kept: list[dict[str, Any]] = []
        for value, row in ranked:
            if any(_duplicate(row, other) for other in kept):
                continue
            kept.append(row)
            hits.append(Hit(name=row["name"], path=row["path"], score=round(value * 1000, 4),
                            description=row["description"], status=row["status"]))
            if len(hits) >= limit:
                break
        return hits

    def _rows(self, docs: list[int]) -> dict[int, dict[str, Any]]:
        if not docs:
            return {}
        cols = ("doc", "name", "path", "description", "status", "repo", "languages", "agents", "prior", "sha",
                "root")
        ids = ", ".join(str(int(d)) for d in docs)
        cur = self.con.execute(f"SELECT {', '.join(cols)} FROM skills WHERE doc IN ({ids})")
        return {r[0]: dict(zip(cols, r, strict=True)) for r in cur.fetchall()}

    def get_many(self, paths: list[str]) -> list[dict[str, Any]]:
        """Metadata of the skills at ``paths``."""
        if not paths:
            return []
        rows = self.con.execute("SELECT name, path, repo, status, root FROM skills WHERE list_contains($p, path)",
                                {"p": paths}).fetchall()
        return [dict(zip(("name", "path", "repo", "status", "root"), r, strict=True)) for r in rows]

    def get(self, name: str, *, include_candidates: bool = False) -> list[dict[str, Any]]:
        """Skills called ``name`` (or whose folder path is ``name``), servable first."""
        statuses = sorted(set(self.servable) | ({"candidate"} if include_candidates else set()))
        rows = self.con.execute(
            "SELECT name, path, description, status, root FROM skills WHERE (name = $n OR path = $n) "
            "AND list_contains($s, status) ORDER BY root = 'library' DESC, path", {"n": name, "s": statuses}).fetchall()
        return [dict(zip(("name", "path", "description", "status", "root"), r, strict=True)) for r in rows]


_WORD = re.compile(r"[a-z0-9]+")
_PLAIN = re.compile(r"(?<![\w.])[A-Za-z][a-z]+(?!\w|\.\w)")


def _plain_words(text: str) -> list[str]:
    """Words written as words: not identifiers, file names, numbers or hex."""
    return _PLAIN.findall(text)


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
    return "5"


def recall(query: str, *, limit: int = 5, include_candidates: bool = False, path: Path | None = None,
           **filters: str | None) -> list[Hit]:
    with RecallIndex(path) as index:
        return index.search(query, limit=limit, include_candidates=include_candidates, **filters)
