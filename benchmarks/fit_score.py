"""Fit recall's calibrated score (``pipeline.recall.search.SCORE_MODELS``) on the dev queries.

    PYTHONPATH=$PWD python benchmarks/fit_score.py [--embedder e5:original]

Indexes the shared skills corpus in a temporary home, takes every candidate recall considers for
each query of ``queries-dev.jsonl`` and ``queries-hard-dev.jsonl`` (the shared dev sets) with the
features it scores them by (``RecallIndex.features``), labels it relevant or not, and fits a
logistic regression (L2 1.0, Newton's method) on the candidates among either channel's best five,
for the lexical channel alone and for both channels.
It prints the coefficients to paste into ``SCORE_MODELS``, then how thresholds trade answers
against silence on the dev sets, from which ``MIN_SCORE`` and ``HOOK_MIN_SCORE`` were chosen.
Our own queries (``benchmarks/queries/``) are never read here: ``benchmarks/retrieval.py``
reports them as the check.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.retrieval import SHARED, vector_cache  # noqa: E402

FEATURES = {"lexical": ("loglex", "relative", "coverage"), "fused": ("loglex", "relative", "coverage", "z")}
L2 = 1.0
#: Fitted on the candidates among either channel's best TOP: the score must be right where a
#: threshold cuts, not down among the thirtieth candidates.
TOP = 5


def leading(candidates: list[tuple[int, dict[str, float]]]) -> set[int]:
    """The documents among the lexical channel's and the semantic channel's ``TOP`` best."""
    lexical = sorted((c for c in candidates if c[1]["loglex"] > 0), key=lambda c: -c[1]["loglex"])[:TOP]
    semantic = sorted((c for c in candidates if "z" in c[1]), key=lambda c: -c[1]["z"])[:TOP]
    return {doc for doc, _ in lexical + semantic}


def fit(rows: list[tuple[list[float], bool]]) -> list[float]:
    """Logistic regression by Newton's method; the last coefficient is the bias (not penalized)."""
    import numpy as np

    x = np.array([[*f, 1.0] for f, _ in rows])
    y = np.array([float(label) for _, label in rows])
    w = np.zeros(x.shape[1])
    penalty = np.diag([L2] * (x.shape[1] - 1) + [0.0])
    for _ in range(100):
        p = 1 / (1 + np.exp(-x @ w))
        step = np.linalg.solve((x * (p * (1 - p))[:, None]).T @ x + penalty, x.T @ (p - y) + penalty @ w)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return [float(v) for v in w]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", default="e5:original", help="the semantic channel's model (<kind>:<arg>)")
    args = parser.parse_args()
    if SHARED is None:
        sys.exit("the shared skills corpus is not here (set SKILLMILL_SHARED)")
    from pipeline import settings
    from pipeline.recall import evaluate, semantic
    from pipeline.recall.index import publish
    from pipeline.recall.search import RecallIndex, probability

    corpus = Path(SHARED) / "skills-corpus"
    queries = [q for name in ("queries-dev", "queries-hard-dev")
               for q in evaluate.read_queries(corpus / f"{name}.jsonl")]
    os.environ.setdefault(semantic.ENV_CACHE, str(vector_cache()))
    with tempfile.TemporaryDirectory(prefix="skillmill-fit-") as home:
        os.environ[settings.ENV_HOME] = home
        model = None if args.embedder.lower() in semantic.OFF else semantic.load(args.embedder)
        publish([], add_folders=[corpus], embedder=model)
        data: dict[str, list[tuple[str, list[tuple[int, dict[str, float]]], set[int]]]] = {"lexical": [], "fused": []}
        with RecallIndex() as index:
            paths = {doc: row["path"] for doc, row in index.snapshot.rows(list(range(index.count()))).items()}
            for q in queries:
                relevant = {doc for doc, path in paths.items() if evaluate.key_of(path, corpus) in q.relevant}
                vector = index.query_vector(q.query) if model is not None else None
                for name, vec in (("lexical", None), ("fused", vector)):
                    if name == "fused" and vec is None:
                        continue
                    kind, candidates = index.features(q.query, vec)
                    data[kind].append((q.id, candidates, relevant))
    print("SCORE_MODELS = {")
    models = {}
    for name, items in data.items():
        if not items:
            continue
        cols = FEATURES[name]
        rows = [([feats.get(c, 0.0) for c in cols], doc in relevant) for _, cands, relevant in items
                for doc, feats in cands if doc in leading(cands)]
        w = fit(rows)
        models[name] = {"bias": round(w[-1], 3), **{c: round(v, 3) for c, v in zip(cols, w, strict=False)}}
        print(f"    {name!r}: {models[name]},")
    print("}")
    by_id = {q.id: q for q in queries}
    for name, items in data.items():
        if not items:
            continue
        print(f"\n{name}: threshold -> dev MRR@10 (answerable), share of no-match queries answered empty")
        for threshold in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5):
            rr, empty = [], []
            for qid, cands, relevant in items:
                scored = sorted(((probability(models[name], f), d) for d, f in cands), reverse=True)
                ranked = [d for p, d in scored if p >= threshold][:10]
                if by_id[qid].relevant:
                    rr.append(next((1 / (i + 1) for i, d in enumerate(ranked) if d in relevant), 0.0))
                else:
                    empty.append(not ranked)
            print(f"  {threshold:>4}: MRR@10 {sum(rr) / len(rr):.3f}   no-match empty {sum(empty) / len(empty):.2f}")


if __name__ == "__main__":
    main()
