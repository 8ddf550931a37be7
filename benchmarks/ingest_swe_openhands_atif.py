"""Ingest speed of the SWE-agent, OpenHands and ATIF readers next to bare ``orjson.loads``.

    PYTHONPATH=. python benchmarks/ingest_swe_openhands_atif.py [rounds, default 10]

Each round reads every real file of one format in ../shared/trajectories through
``ingest_file`` (detection, parsing, outcome, content id) and, in the same run, parses the same
bytes with ``orjson.loads`` and nothing else (per line for ``.jsonl``). Prints MB/s, the ratio,
trajectories/s and the peak RSS of the process.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

import orjson

from pipeline.ingest import ingest_file, iter_files
from tests.conftest import TRAJECTORIES


def baseline(files: list[Path]) -> None:
    for path in files:
        data = path.read_bytes()
        if path.suffix == ".jsonl":
            for line in data.splitlines():
                if line.strip():
                    orjson.loads(line)
        else:
            orjson.loads(data)


def main() -> None:
    if TRAJECTORIES is None:
        sys.exit("the shared trajectory corpus is not here (set SKILLMILL_SHARED)")
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    for name, folder in (("swe-agent", "swe_agent"), ("openhands", "openhands"), ("atif", "atif")):
        files = [p for p in iter_files([TRAJECTORIES / folder])
                 if ingest_file(p)[0].format == name and ingest_file(p)[0].status == "ok"]
        size = sum(p.stat().st_size for p in files) * rounds
        start = time.perf_counter()
        trajectories = sum(len(ingest_file(p)[1]) for _ in range(rounds) for p in files)
        ours = time.perf_counter() - start
        start = time.perf_counter()
        for _ in range(rounds):
            baseline(files)
        raw = time.perf_counter() - start
        print(f"{name:<10} {len(files):>3} files x{rounds}: ingest {size / ours / 1e6:6.1f} MB/s "
              f"({trajectories / ours:5.0f} trajectories/s), orjson.loads {size / raw / 1e6:6.1f} MB/s, "
              f"ratio {raw / ours:.0%}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main()
