"""``skillmill eval retrieval``: how well recall finds the right skills, beside plain BM25.

Queries are JSON lines ``{"id", "query", "relevant": ["<dir>/<skill>", ...]}``; a skill is named
by its folder path relative to the indexed folder. Answerable queries (non-empty ``relevant``)
give hit@1, hit@3, recall@5 and MRR@10; no-match queries (empty ``relevant``) give the share
answered with nothing. With an embedder (the configured one by default), recall is measured
twice in the same run, with both channels ("fused") and with the lexical channel alone
("lexical"); without one, once ("skillmill"). The baseline is bm25s over the same text (name,
description, body), default tokenization and English stopwords, measured in the same run.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.errors import UsageError

METRICS = ("hit@1", "hit@3", "recall@5", "mrr@10", "empty_on_no_match")


@dataclass
class Query:
    id: str
    query: str
    relevant: list[str]


@dataclass
class Result:
    system: str
    queries: str
    answerable: int = 0
    no_match: int = 0
    metrics: dict[str, float | None] = field(default_factory=dict)
    ms_per_query: float = 0.0

    def contract(self) -> dict[str, Any]:
        return dict(self.__dict__)


def read_queries(path: Path) -> list[Query]:
    queries = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc}") from exc
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            queries.append(Query(str(data["id"]), str(data["query"]), [str(r) for r in data.get("relevant") or []]))
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{path}:{number}: not a query line ({exc})",
                             hint='each line is {"id": ..., "query": ..., "relevant": [...]}') from exc
    return queries


def score(queries: list[Query], answers: list[list[str]]) -> dict[str, float | None]:
    """The metrics over ``answers`` (ranked skill keys per query; empty = answered "nothing fits")."""
    answerable = [(q, a) for q, a in zip(queries, answers, strict=True) if q.relevant]
    no_match = [a for q, a in zip(queries, answers, strict=True) if not q.relevant]

    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 4) if values else None

    def rr(q: Query, a: list[str]) -> float:
        return next((1 / (i + 1) for i, key in enumerate(a[:10]) if key in q.relevant), 0.0)

    return {
        "hit@1": mean([float(bool(a[:1]) and a[0] in q.relevant) for q, a in answerable]),
        "hit@3": mean([float(any(k in q.relevant for k in a[:3])) for q, a in answerable]),
        "recall@5": mean([len(set(a[:5]) & set(q.relevant)) / len(q.relevant) for q, a in answerable]),
        "mrr@10": mean([rr(q, a) for q, a in answerable]),
        "empty_on_no_match": mean([float(not a) for a in no_match]),
    }


def key_of(path: str, root: Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path


def _measure(system: str, name: str, queries: list[Query], run: Callable[[str], list[str]]) -> Result:
    clock = time.perf_counter()
    answers = [run(q.query) for q in queries]
    elapsed = time.perf_counter() - clock
    return Result(system=system, queries=name, answerable=sum(1 for q in queries if q.relevant),
                  no_match=sum(1 for q in queries if not q.relevant), metrics=score(queries, answers),
                  ms_per_query=round(1000 * elapsed / max(1, len(queries)), 2))


class Bm25Baseline:
    """bm25s over name + description + body: what plain BM25 gets on the same skills."""

    def __init__(self, entries: list[tuple[str, str]]) -> None:
        import bm25s

        self.bm25s = bm25s
        self.keys = [k for k, _ in entries]
        self.model = bm25s.BM25()
        self.model.index(bm25s.tokenize([t for _, t in entries], stopwords="en", show_progress=False),
                         show_progress=False)

    def __call__(self, query: str, k: int = 10) -> list[str]:
        tokens = self.bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        docs, _scores = self.model.retrieve(tokens, k=min(k, len(self.keys)), show_progress=False)
        return [self.keys[i] for i in docs[0]]


def retrieval(skills: Path, query_files: list[Path], *, embedder: str | None = None,
              baseline: bool = True) -> list[Result]:
    """Index ``skills`` in a temporary home, run every query file through recall and the baseline.

    ``embedder`` None means the configured one (``semantic.configured``); ``"none"`` means none.
    """
    from pipeline import settings
    from pipeline.recall import semantic
    from pipeline.recall.index import publish
    from pipeline.recall.search import RecallIndex

    if not skills.is_dir():
        raise UsageError(f"{skills} is not a folder", hint="pass the folder holding <name>/SKILL.md files")
    sets = [(path.name.removesuffix(".jsonl"), read_queries(path)) for path in query_files]
    root = skills.expanduser().absolute()
    results: list[Result] = []
    old_home = os.environ.get(settings.ENV_HOME)
    with tempfile.TemporaryDirectory(prefix="skillmill-eval-") as home:
        os.environ[settings.ENV_HOME] = home  # nothing of the user's state is read or written
        try:
            spec = semantic.configured() if embedder is None else (None if embedder.lower() in semantic.OFF else embedder)
            model = semantic.load(spec) if spec else None
            report = publish([], add_folders=[root], embedder=model)
            if not report.skills:
                raise UsageError(f"no SKILL.md below {skills}")
            with RecallIndex() as index:
                systems = [("fused", True), ("lexical", False)] if model is not None else [("skillmill", False)]
                for system, fused in systems:
                    for name, queries in sets:
                        results.append(_measure(system, name, queries, lambda q, fused=fused: [
                            key_of(h.path, root) for h in index.search(q, limit=10, semantic=fused)]))
                if baseline:
                    rows = index.con.execute("SELECT path, name, description, body FROM skills ORDER BY doc").fetchall()
                    bm25 = Bm25Baseline([(key_of(p, root), f"{n} {d} {b}") for p, n, d, b in rows])
                    for name, queries in sets:
                        results.append(_measure("bm25s", name, queries, bm25))
        finally:
            if old_home is None:
                os.environ.pop(settings.ENV_HOME, None)
            else:
                os.environ[settings.ENV_HOME] = old_home
    return results


def table(results: list[Result]) -> str:
    """A plain-text table: one row per (system, query file)."""
    head = f"{'system':<10} {'queries':<22} {'n':>4} {'hit@1':>6} {'hit@3':>6} {'rec@5':>6} {'mrr@10':>7} " \
           f"{'no-match':>9} {'empty':>6} {'ms/q':>6}"
    lines = [head, "-" * len(head)]
    for r in results:
        m = r.metrics

        def f(key: str, m: dict[str, float | None] = m) -> str:
            value = m.get(key)
            return "-" if value is None else f"{value:.3f}"

        lines.append(f"{r.system:<10} {r.queries:<22} {r.answerable:>4} {f('hit@1'):>6} {f('hit@3'):>6} "
                     f"{f('recall@5'):>6} {f('mrr@10'):>7} {r.no_match:>9} {f('empty_on_no_match'):>6} "
                     f"{r.ms_per_query:>6}")
    return "\n".join(lines)
