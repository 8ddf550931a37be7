"""How fast review is as the library grows: the queue, one decision, and the baseline a decision pays.

A decision (approve) writes one file, appends one audit line and republishes the recall index so
agents see it at once. The baseline beside it is the recall publish alone, which every run already
pays; the rest is review's own cost. Skills are real: distilled from the shared corpus, then copied
under new names to reach larger libraries.

    PYTHONPATH=$PWD python benchmarks/review.py [--copies 1 10 35]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

CORPUS = [Path(os.environ.get("SKILLMILL_SHARED", "/work/shared")) / "trajectories" / p for p in (
    "claude_code/codemie-code", "claude_code/claude-code-viewer", "mini_swe_agent/swebench_verified_gemini-3-pro")]


def timed(function, repeat: int = 5) -> float:
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def distilled(home: Path) -> list:
    from pipeline import stages
    from pipeline.index.state import StateDB
    from pipeline.library import Library
    from pipeline.summary import RunSummary

    library = Library(home / "seed")
    summary = RunSummary()
    trajectories = [t for f in stages.discover(CORPUS) for t in stages.parse(f)[1]]
    with StateDB() as state:
        stages.store_trajectories(state, trajectories)
        stages.write(state, library, [stages.distill_one(t) for t in stages.pending(state, trajectories)], summary)
    return [s.skill for s in library]


def measure(library) -> tuple[float, float, float, float, float]:
    """Queue cold/warm, recall publish alone (baseline), full republish, one approval (seconds, medians)."""
    from pipeline.library import store
    from pipeline.recall.index import IndexedSkill, publish
    from pipeline.review import Review, items
    from pipeline.review.publish import republish

    def cold() -> None:
        store._PARSED.clear()
        items(library)

    queue_cold = timed(cold, 3)
    queue_warm = timed(lambda: items(library))
    baseline = timed(lambda: publish(IndexedSkill.of(s) for s in library.entries()))
    full = timed(lambda: republish(library))
    pending = [i.name for i in items(library) if not i.flags]
    review = Review(library, "bench")
    approve = timed(lambda: review.approve(pending.pop()), 5)
    return queue_cold, queue_warm, baseline, full, approve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 10, 35])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SKILLMILL_HOME"] = str(Path(tmp) / "home")
        from pipeline.library import Library

        seed = distilled(Path(tmp))
        print(f"{len(seed)} real skills distilled from {len(CORPUS)} corpus folders; load {os.getloadavg()[0]:.1f}")
        print(f"{'skills':>7} {'queue cold':>11} {'queue warm':>11} {'publish (baseline)':>19} "
              f"{'republish':>10} {'approve':>8}")
        for copies in args.copies:
            library = Library(Path(tmp) / f"lib-{copies}")
            for n in range(copies):
                for skill in seed:
                    name = skill.name if n == 0 else f"{skill.name[:58]}-c{n}"
                    library.save(skill.model_copy(update={"name": name}))
            count = len(list(library))
            queue_cold, queue_warm, baseline, full, approve = measure(library)
            print(f"{count:>7} {queue_cold * 1000:>9.0f}ms {queue_warm * 1000:>9.0f}ms {baseline * 1000:>17.0f}ms "
                  f"{full * 1000:>8.0f}ms {approve * 1000:>6.0f}ms")


if __name__ == "__main__":
    main()
