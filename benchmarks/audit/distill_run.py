"""Distil a corpus into a library with whatever ``pipeline`` is on PYTHONPATH; print what happened as JSON.

    PYTHONPATH=<checkout> SKILLMILL_HOME=<tmp> python -P benchmarks/audit/distill_run.py CORPUS LIBRARY

What ``skillmill run`` does, minus Prefect: discover -> parse -> store -> distill -> write ->
index, in-process (the sequence of ``tests/review_support.py``). ``benchmarks/skill_quality.py``
runs it once per distiller version, each in its own process with its own PYTHONPATH, so two
versions of ``pipeline`` never meet. It uses only ``pipeline.stages`` functions that exist
since the baseline (fc61df2), and imports nothing from ``benchmarks``; ``-P`` keeps this file's
folder off ``sys.path``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main() -> None:
    corpus, library = Path(sys.argv[1]), Path(sys.argv[2])
    started = time.perf_counter()
    import pipeline
    from pipeline import stages
    from pipeline.index.state import StateDB
    from pipeline.library import Library
    from pipeline.summary import RunSummary

    lib = Library(library)
    summary = RunSummary(library=str(lib.root))
    trajectories = []
    files = 0
    for file in stages.discover([corpus]):
        report, found = stages.parse(file)
        summary.add_file(report)
        trajectories.extend(found)
        files += 1
    with StateDB() as state:
        stages.store_trajectories(state, trajectories)
        results = [stages.distill_one(t) for t in stages.pending(state, trajectories)]
        stages.write(state, lib, results, summary)
        stages.index(state, lib, summary)
    print(json.dumps({
        "pipeline": str(Path(pipeline.__file__).parent),
        "files": files,
        "sessions": len({t.id for t in trajectories}),
        "written": len(summary.written),
        "held": len(summary.held),
        "errors": len(summary.errors),
        "seconds": round(time.perf_counter() - started, 1),
    }))


if __name__ == "__main__":
    main()
