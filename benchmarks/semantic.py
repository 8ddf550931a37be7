"""What the semantic channel adds, variant by variant: fitted on the dev sets, reported on our own.

    PYTHONPATH=$PWD python benchmarks/semantic.py [--embedder e5:original] [--texts desc,when,head]

Indexes the shared skills corpus lexically in a temporary home, embeds every query once and each
skill as several texts (``--texts``):

* ``desc``: name and description (``semantic.document_text``, what the index embeds today);
* ``when``: that plus the skill's "When to use" section, where it has one;
* ``head``: name, description and the start of the body (the model reads its first 512 tokens);
* ``max``: each skill as all the texts before it, its best cosine counting (several vectors a skill).

For each text it prints MRR@10/hit@1 of the semantic channel alone, of weighted reciprocal-rank
fusion with the lexical channel (the weight chosen on the dev sets), of the calibrated score with
a ``z`` feature (``SCORE_MODELS["fused"]``, refitted here on the dev sets; "+gap" adds the gap to
the best cosine; "lex cands" lets the semantic channel rerank the lexical candidates but propose
none), beside the lexical channel alone, and ``e`` the share of no-match queries answered empty
at ``MIN_SCORE``. Priors, filters and collapse are left out (the same for every variant);
``benchmarks/retrieval.py`` runs the real path. Vectors are cached as the index caches them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.fit_score import FEATURES, fit, leading  # noqa: E402
from benchmarks.retrieval import DEV_SETS, OWN, OWN_SETS, SHARED, vector_cache  # noqa: E402

_WHEN = re.compile(r"^#{1,3} *When(?: to| Not)?[^\n]*\n(.*?)(?=^#{1,3} |\Z)", re.M | re.S | re.I)


def texts_for(kind: str, name: str, description: str, body: str) -> str:
    base = f"{name}: {description}"
    if kind == "desc":
        return base
    if kind == "when":
        found = _WHEN.search(body)
        return f"{base}\n{found.group(1).strip()[:1500]}" if found else base
    if kind == "head":
        return f"{base}\n{body[:2500]}"
    raise SystemExit(f"unknown text kind {kind}")


def mrr(ranked: list[int], relevant: set[int]) -> float:
    return next((1 / (i + 1) for i, d in enumerate(ranked[:10]) if d in relevant), 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", default="e5:original")
    parser.add_argument("--texts", default="desc,when,head")
    args = parser.parse_args()
    import numpy as np

    from pipeline import settings
    from pipeline.recall import evaluate, semantic
    from pipeline.recall.index import publish
    from pipeline.recall.search import MIN_SCORE, SCORE_MODELS, RecallIndex, probability

    corpus = Path(SHARED) / "skills-corpus"
    sets = {name: evaluate.read_queries(corpus / f"{name}.jsonl") for name in DEV_SETS}
    sets |= {name: evaluate.read_queries(OWN / f"{name}.jsonl") for name in OWN_SETS if name != "everyday"}
    os.environ.setdefault(semantic.ENV_CACHE, str(vector_cache()))
    model = semantic.load(args.embedder)
    if model is None:
        sys.exit(f"{args.embedder} does not load here")
    with tempfile.TemporaryDirectory(prefix="skillmill-semantic-") as home:
        os.environ[settings.ENV_HOME] = home
        publish([], add_folders=[corpus])
        with RecallIndex() as index:
            rows = index.con.execute("SELECT doc, path, name_text, description, body FROM skills ORDER BY doc").fetchall()
            docs = np.array([r[0] for r in rows])
            keys = {r[0]: evaluate.key_of(r[1], corpus) for r in rows}
            queries = [(name, q, {d for d, k in keys.items() if k in q.relevant}) for name, qs in sets.items() for q in qs]
            qvec = np.array([semantic.embed_query(model, q.query) for _, q, _ in queries], dtype=np.float32)
            lexical = [index.features(q.query, None) for _, q, _ in queries]
            done: dict[str, np.ndarray] = {}
            for kind in args.texts.split(","):
                if kind == "max":  # several vectors per skill: the best-matching one counts
                    cos = np.maximum.reduce(list(done.values()))
                    kind = "max(" + ", ".join(done) + ")"
                else:
                    texts = [texts_for(kind, r[2], r[3], r[4]) for r in rows]
                    cos = done[kind] = qvec @ np.array(semantic.embed_documents(model, texts), dtype=np.float32).T
                report(kind, index, queries, docs, cos, lexical, probability, SCORE_MODELS, MIN_SCORE)


def report(kind, index, queries, docs, cos, lexical, probability, models, floor) -> None:  # noqa: ANN001
    import numpy as np

    per_query = []
    for (name, q, relevant), row, (_, lex) in zip(queries, cos, lexical, strict=True):
        order = row.argsort()[::-1]
        sem_rank = [int(docs[i]) for i in order]
        mean, std = float(row.mean()), float(row.std()) or 1.0
        z = {int(d): (float(c) - mean) / std for d, c in zip(docs, row, strict=True)}
        lex_ids = {d for d, _ in lex}
        extra = [d for d in sem_rank[:30] if d not in lex_ids]
        _, cands = index.features(q.query, None, extra=extra)
        top = max(z[d] for d, _ in cands)
        for d, f in cands:
            f["z"] = z[d]
            f["zgap"] = z[d] - top
        per_query.append((name, q, relevant, sem_rank, cands))
    dev = [p for p in per_query if p[0] in DEV_SETS]
    feats = {"z": FEATURES["fused"], "z+gap": (*FEATURES["fused"], "zgap")}
    fitted = {}
    for label, cols in feats.items():
        rows = [([f.get(c, 0.0) for c in cols], d in rel) for _, _, rel, _, cands in dev
                for d, f in cands if d in leading(cands)]
        w = fit(rows)
        fitted[label] = {"bias": w[-1], **dict(zip(cols, w, strict=False))}

    def lex_rank(cands: list) -> list[int]:
        return [d for d, f in sorted(cands, key=lambda c: -c[1]["loglex"]) if f["loglex"] > 0]

    def rrf(cands: list, sem: list[int], weight: float) -> list[int]:
        score: dict[int, float] = {}
        for i, d in enumerate(lex_rank(cands)):
            score[d] = score.get(d, 0) + 1 / (60 + i)
        for i, d in enumerate(sem[:30]):
            score[d] = score.get(d, 0) + weight / (60 + i)
        return sorted(score, key=lambda d: -score[d])

    def lexonly(cands: list) -> list:
        """The lexical channel's candidates only: the semantic channel reranks, and proposes nothing."""
        return [(d, f) for d, f in cands if f["loglex"] > 0]

    def scored(cands: list, coef: dict) -> list[tuple[float, int]]:
        return sorted(((probability(coef, f), d) for d, f in cands), reverse=True)

    best_w = max((0.25, 0.5, 0.75, 1.0, 1.5), key=lambda w: np.mean([mrr(rrf(c, s, w), r) for _, _, r, s, c in dev if r]))
    systems = {
        "lexical": lambda c, s: [d for p, d in scored(c, models["lexical"])],
        "semantic": lambda c, s: s,
        f"rrf w={best_w}": lambda c, s: rrf(c, s, best_w),
        **{f"score {k}": (lambda c, s, k=k: [d for p, d in scored(c, fitted[k])]) for k in fitted},
        "score z, lex cands": lambda c, s: [d for p, d in scored(lexonly(c), fitted["z"])],
    }
    empties = {"lexical": models["lexical"], **{f"score {k}": fitted[k] for k in fitted},
               "score z, lex cands": fitted["z"]}
    print(f"\n== skills embedded as {kind}; fitted on dev: "
          + "; ".join(f"{k} {{{', '.join(f'{n} {v:.2f}' for n, v in c.items())}}}" for k, c in fitted.items()))
    names = [*DEV_SETS, *(n for n in OWN_SETS if n != "everyday")]
    print(f"{'system':<16}" + "".join(f"{n:>20}" for n in names))
    for system, rank in systems.items():
        cells = []
        for n in names:
            items = [p for p in per_query if p[0] == n]
            ans = [p for p in items if p[2]]
            if ans:
                m = np.mean([mrr(rank(c, s), r) for _, _, r, s, c in ans])
                h = np.mean([float(rank(c, s)[:1] != [] and rank(c, s)[0] in r) for _, _, r, s, c in ans])
                cells.append(f"{m:.3f}/{h:.3f}")
            else:
                cells.append("-")
            if (not ans or len(ans) < len(items)) and system in empties:
                nomatch = [p for p in items if not p[2]]
                pick = lexonly if "lex cands" in system else (lambda c: c)
                share = np.mean([float(not scored(pick(c), empties[system])
                                       or scored(pick(c), empties[system])[0][0] < floor) for _, _, _, _, c in nomatch])
                cells[-1] += f" e{share:.2f}"
        print(f"{system:<16}" + "".join(f"{c:>20}" for c in cells))


if __name__ == "__main__":
    main()
