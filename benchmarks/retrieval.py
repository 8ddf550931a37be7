"""Retrieval quality on the shared corpus, split into the queries used for tuning and held-out ones.

    PYTHONPATH=$PWD python benchmarks/retrieval.py [--embedder KIND:PATH]

The ranking constants (field weights, coverage threshold) were tuned on the "tune" part only;
the "holdout" part (a third of each file, chosen by a hash of the query id, fixed before
tuning) shows what the tuning is worth on queries it never saw. Both systems are measured in
the same run, with `skillmill eval retrieval`'s code.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARED = next((p for p in (os.environ.get("SKILLMILL_SHARED"), ROOT.parent / "shared", "/work/shared")
               if p and (Path(p) / "skills-corpus").is_dir()), None)


def held_out(query_id: str) -> bool:
    return int(hashlib.sha1(query_id.encode()).hexdigest(), 16) % 3 == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", help="also use a semantic channel (<kind>:<local path>)")
    args = parser.parse_args()
    if SHARED is None:
        sys.exit("the shared skills corpus is not here (set SKILLMILL_SHARED)")
    from pipeline.recall import evaluate

    corpus = Path(SHARED) / "skills-corpus"
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for name in ("queries-dev", "queries-hard-dev"):
            lines = [line for line in (corpus / f"{name}.jsonl").read_text(encoding="utf-8").splitlines() if line]
            for part, keep in (("tune", False), ("holdout", True)):
                out = Path(tmp) / f"{name.removeprefix('queries-')}-{part}.jsonl"
                out.write_text("\n".join(line for line in lines if held_out(json.loads(line)["id"]) == keep) + "\n")
                files.append(out)
        print(evaluate.table(evaluate.retrieval(corpus, files, embedder=args.embedder)))


if __name__ == "__main__":
    main()
