"""Ingest speed of the Codex and Gemini CLI readers next to bare ``orjson.loads`` on the same bytes.

    PYTHONPATH=. python benchmarks/ingest_agent_formats.py [MB per format, default 20]

Both loops read the same real files from ../shared/trajectories in the same run; the baseline
parses every line (Codex) or document (Gemini) and does nothing else. Prints MB/s, the ratio,
sessions/s and the peak RSS of the process.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

import orjson

from pipeline.ingest import ingest_file
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
    target = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    sets = {"codex": sorted((TRAJECTORIES / "codex").glob("*/rollout-*.jsonl")),
            "gemini-cli": sorted((TRAJECTORIES / "gemini_cli").rglob("session-*.json*"))}
    for name, files in sets.items():
        size = sum(f.stat().st_size for f in files)
        rounds = max(1, int(target * 1e6 / size))
        start = time.perf_counter()
        for _ in range(rounds):
            baseline(files)
        raw = time.perf_counter() - start
        start, sessions = time.perf_counter(), 0
        for _ in range(rounds):
            for path in files:
                sessions += len(ingest_file(path)[1])
        ours = time.perf_counter() - start
        megabytes = size * rounds / 1e6
        print(f"{name:<11} {megabytes:6.1f} MB  orjson.loads {megabytes / raw:6.1f} MB/s  "
              f"ingest {megabytes / ours:5.1f} MB/s ({raw / ours:4.0%} of raw)  {sessions / ours:5.0f} sessions/s")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
