"""Answer "which skills fit this task?" from the published recall index.

This is the hook path: it imports neither litellm, prefect nor pydantic, opens the index
read-only, and serves only the statuses the publisher recorded as servable (approved,
``pipeline.library.model.SERVABLE``) unless candidates are asked for explicitly.

Queries read the serving snapshot the publisher writes beside ``recall.duckdb``
(``pipeline.recall.serving``: SQLite, opened in a millisecond) rather than DuckDB itself, whose
import alone costs more than a hook call may take. Query words are stemmed by lookup in the
index (``lexical.query_terms``), so no stemmer is loaded here either.

Ranking: the lexical channel (BM25 over name, description, body and code-aware keywords) and,
when the index holds vectors and a query vector is at hand (the embedder loads here, or a warm
process embedded the query: ``pipeline.recall.daemon``), the semantic channel each propose
candidates; every candidate gets a calibrated **score** in [0, 1], the probability that it fits
the task, from a small logistic model over what both channels say about it (``SCORE_MODELS``:
how much of the query's information it explains, its BM25 score, its standing among the
semantic neighbours). The coefficients were fitted on the shared corpus's dev queries
(``benchmarks/fit_score.py``) and checked on queries written apart from them. Then the filters
(``repo``, ``language``, ``agent``), the priors (feedback, candidate status), a lift for the
skills bound to the repository the task is in, near-duplicate collapse (same name, same text),
and the threshold: a skill scoring below ``min_score`` is not returned, so a task no skill fits
gets nothing.
"""

from __future__ import annotations

import math
import os
import re
from collections import namedtuple
from pathlib import Path

from pipeline import settings
from pipeline.errors import IndexError_, UsageError
from pipeline.recall import lexical, pending, serving
from pipeline.recall.text import canonical_agent, canonical_language, keywords, repo_matches
from pipeline.scan.marks import prior as stale_prior

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    from typing import Any

#: How many candidates each channel proposes.
CANDIDATES = 30
#: The calibrated score: ``1 / (1 + exp(-(bias + sum(w * feature))))`` with these coefficients,
#: one model for the lexical channel alone and one when the semantic channel answered too.
#: Features (see ``RecallIndex.features``): ``loglex`` log(1 + BM25 score); ``relative`` BM25 score
#: over the best one's; ``coverage`` the share of the query's information (IDF mass, words no skill
#: has counting fully) the skill holds; ``z`` its cosine's standard score among all skills'.
#: Fitted by ``benchmarks/fit_score.py`` on the dev queries (L2 1.0); do not edit by hand.
SCORE_MODELS: dict[str, dict[str, float]] = {
    "lexical": {"bias": -13.683, "loglex": 2.809, "relative": 2.775, "coverage": 0.53},
    "fused": {"bias": -11.492, "loglex": 1.933, "relative": 2.904, "coverage": 0.198, "z": 0.442},
}
#: Below this many skills the semantic channel is left out: a cosine's standing among a handful
#: of others (the ``z`` feature) says nothing.
MIN_SEMANTIC_DOCS = 20
#: Skills scoring below this are not returned by ``recall`` and the MCP tool.
MIN_SCORE = 0.15
#: The hook speaks unasked, at every prompt: it is stricter (``pipeline.agents.hook``).
HOOK_MIN_SCORE = 0.3
#: Environment variables that move the thresholds (a ``--min-score`` flag wins): recall and the
#: MCP tool read the first, the hook the second.
ENV_MIN_SCORE = "SKILLMILL_MIN_SCORE"
ENV_HOOK_MIN_SCORE = "SKILLMILL_HOOK_MIN_SCORE"
#: A skill bound to the repository the task is in gets ``score + (1 - score) * REPO_LIFT``:
#: a repository's own manual (``working-in-<repo>``) is what any task there needs first.
REPO_LIFT = 0.5
#: Candidates rank a little below approved skills when both are asked for.
STATUS_PRIOR = {"approved": 1.0, "candidate": 0.85}
#: ``root`` of the skills of our own library (``pipeline.recall.index.LIBRARY``), as against indexed folders.
LIBRARY_ROOT = "library"
#: Two results whose descriptions share this many words (Jaccard) are near-duplicates.
DUPLICATE_JACCARD = 0.8
#: A task is read up to this many characters: its start says what it is about, and a pasted
#: 20 MB log would otherwise cost half a minute of tokenizing (the hook, MCP and the CLI all cut here).
MAX_TASK_CHARS = 4000


def threshold(env: str = ENV_MIN_SCORE, default: float = MIN_SCORE) -> float:
    """The score a skill needs to be returned: ``$env`` when set, else ``default``."""
    value = os.environ.get(env, "").strip()
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not 0 <= number <= 1:
        raise UsageError(f"{env}={value!r} is not a score between 0 and 1",
                         hint=f"set it to e.g. {default} (the default), or unset it")
    return number


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

    def query_vector(self, query: str) -> Any:
        """The query embedded by the index's own embedder in this process, or None (none recorded, it
        does not load here, or it is too slow for this process: ``slow_embedders``)."""
        embedder = self.embedder()
        if embedder is None:
            return None
        from pipeline.recall import semantic

        return semantic.embed_query(embedder, clip_task(query))

    def cosines(self, vector: Any) -> Any:
        """Cosine of ``vector`` with every skill's vector, as ``(docs, cosines)`` numpy arrays, or None."""
        import numpy as np

        if self._vectors is None:
            docs, data = self.snapshot.vectors()
            matrix = np.frombuffer(data, dtype="<f4").reshape(len(docs), -1) if docs else np.zeros((0, 1), "<f4")
            norms = np.linalg.norm(matrix, axis=1)
            self._vectors = (np.asarray(docs), matrix, np.where(norms == 0, 1, norms))
        docs, matrix, norms = self._vectors
        vector = np.asarray(vector, dtype=np.float32)
        if len(docs) < 2 or vector.ndim != 1 or vector.shape[0] != matrix.shape[1]:
            return None
        return docs, (matrix @ vector) / (norms * (np.linalg.norm(vector) or 1))

    # -- scoring ----------------------------------------------------------------------------------
    def features(self, query: str, vector: Any = None, *, extra: list[int] | None = None,
                 ) -> tuple[str, list[tuple[int, dict[str, float]]]]:
        """The candidates for ``query`` with the features the score is computed from, and which model
        applies (``"fused"`` when ``vector`` reached the semantic channel, else ``"lexical"``).

        Candidates: the lexical channel's best ``CANDIDATES``, the semantic channel's, and ``extra``.
        """
        snap = self.snapshot
        terms = lexical.query_terms(snap, f"{query} {keywords(query)}")
        known = lexical.lookup(snap, terms)
        # How much information each query term carries (IDF). A plain word no skill contains
        # ("Cassandra", "Blender") counts as fully informative: it is the strongest sign that no
        # skill covers the task. Identifiers, numbers and addresses pasted from an error
        # (PriceCalculator, 0x00c0001a4018) are not topics.
        n = max(self.count(), lexical.MIN_DOCS)  # as the postings' weights were computed
        idf = {termid: math.log((n - df + 0.5) / (df + 0.5) + 1) for termid, df in known.values()}
        topical = lexical.query_terms(snap, " ".join(_plain_words(query)))
        unseen = sum(1 for t in topical if t not in known) * math.log((n + 0.5) / 0.5 + 1)
        total = sum(idf.values()) + unseen
        scores, mass = lexical.accumulate(snap, idf) if idf else ({}, {})
        lex = lexical.top(scores, CANDIDATES)
        best = lex[0][1] if lex else 0.0
        candidates = dict.fromkeys(doc for doc, _ in lex)
        sem = self.cosines(vector) if vector is not None and self.count() >= MIN_SEMANTIC_DOCS else None
        z: dict[int, float] = {}
        if sem is not None:
            docs, cos = sem
            mean, std = float(cos.mean()), float(cos.std()) or 1.0
            order = cos.argsort(kind="stable")[::-1]
            for i in order[:CANDIDATES]:
                candidates.setdefault(int(docs[i]))
            z = {int(d): (float(c) - mean) / std for d, c in zip(docs, cos, strict=True)}
        for doc in extra or ():
            candidates.setdefault(doc)
        out = []
        for doc in candidates:
            score = scores.get(doc, 0.0)
            feats = {"loglex": math.log1p(score), "relative": score / best if best else 0.0,
                     "coverage": mass.get(doc, 0.0) / total if total else 0.0}
            if sem is not None:
                feats["z"] = z.get(doc, 0.0)
            out.append((doc, feats))
        return ("fused" if sem is not None else "lexical"), out

    # -- search -----------------------------------------------------------------------------------
    def search(self, query: str, *, limit: int = 5, include_candidates: bool = False,
               repo: str | None = None, language: str | None = None, agent: str | None = None,
               min_score: float | None = None, vector: Any = None, semantic: bool = True) -> list[Hit]:
        """The skills that fit ``query``, best first, each with its calibrated score (at least ``min_score``,
        default ``$SKILLMILL_MIN_SCORE`` or ``MIN_SCORE``). ``vector`` is the query already embedded (by a warm process); without it
        the query is embedded here when the index's embedder loads here, unless ``semantic`` is False
        (the lexical channel alone)."""
        query = clip_task(query)
        if not self.snapshot.skills or not query.strip():
            return []
        statuses = set(self.servable) | ({"candidate"} if include_candidates else set())
        filters = Filters(repo, language, agent)
        if vector is None and semantic:
            vector = self.query_vector(query)
        bound = self._bound_to(repo) if repo else []
        model, candidates = self.features(query, vector, extra=bound)
        if not candidates:
            return []
        coefficients = SCORE_MODELS[model]
        rows = self._rows([doc for doc, _ in candidates])
        behind = pending.behind()  # a decision not yet published: check that each skill is still where it was
        ranked = []
        for doc, feats in candidates:
            row = rows.get(doc)
            if row is None or row["status"] not in statuses or not filters.keep(row):
                continue
            value = probability(coefficients, feats) * row["prior"] * STATUS_PRIOR.get(row["status"], 1.0)
            if repo and row["repo"] and repo_matches(row["repo"], repo):
                value += (1 - value) * REPO_LIFT
            ranked.append((min(1.0, value) * stale_prior(row["path"]), row))  # stale: down, whatever lifted it
        ranked.sort(key=lambda x: (-x[0], x[1]["name"], x[1]["path"]))
        floor = threshold() if min_score is None else min_score
        hits: list[Hit] = []
        kept: list[dict[str, Any]] = []
        for value, row in ranked:
            if value < floor:
                break
            if any(_duplicate(row, other) for other in kept) or (behind and _moved(row)):
                continue
            kept.append(row)
            hits.append(Hit(name=row["name"], path=row["path"], score=round(value, 4),
                            description=row["description"], status=row["status"]))
            if len(hits) >= limit:
                break
        return hits

    def _bound_to(self, repo: str) -> list[int]:
        """Documents of the skills bound to ``repo`` (``owner/name`` or ``name``), at most a few dozen."""
        name = repo.strip().lower().rstrip("/").rsplit("/", 1)[-1]
        rows = self.snapshot.con.execute(
            "SELECT doc, repo FROM skills WHERE lower(repo) = ?1 OR lower(repo) LIKE ?2 LIMIT 200",
            [name, f"%/{name}"]).fetchall()
        return [doc for doc, bound in rows if repo_matches(bound, repo)][:CANDIDATES]

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


def probability(coefficients: dict[str, float], features: dict[str, float]) -> float:
    """The logistic model: ``1 / (1 + exp(-(bias + sum(w * feature))))``."""
    x = coefficients.get("bias", 0.0) + sum(w * features.get(k, 0.0) for k, w in coefficients.items() if k != "bias")
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, x))))


def _duplicate(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The same skill met twice, from two folders: the same name (an agent knows a skill by its name,
    so two of one name would shadow each other), the same content, or nearly the same description."""
    if a["name"] == b["name"] or (a["sha"] and a["sha"] == b["sha"]):
        return True
    wa, wb = set(_WORD.findall(a["description"].lower())), set(_WORD.findall(b["description"].lower()))
    return len(wa & wb) / max(1, len(wa | wb)) >= DUPLICATE_JACCARD


def _schema_version() -> str:
    # Imported lazily: pipeline.recall.index pulls in the library model (pydantic), which the
    # query path does not need. Keep this literal in step with index.SCHEMA_VERSION (a test checks).
    return "6"


def recall(query: str, *, limit: int = 5, include_candidates: bool = False, path: Path | None = None,
           **filters: str | None) -> list[Hit]:
    with RecallIndex(path) as index:
        return index.search(query, limit=limit, include_candidates=include_candidates, **filters)
