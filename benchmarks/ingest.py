"""Ingest throughput and memory on the shared corpus, next to bare ``orjson.loads`` in the same run.

    PYTHONPATH=. python benchmarks/ingest.py [--repeat 5] [--scales 1,4] [--by kind|format] [--stages]
                                             [--corpus DIR]

Every file of the corpus some registered format reads is ingested ``--repeat`` times over
(``ingest_file``: detection, parsing, outcome, content id), and the same bytes are parsed
as many times by the cheapest possible reader -- ``orjson.loads`` per line for
JSONL, per document for JSON, ``decode`` + ``splitlines`` for text (Aider's Markdown has no
JSON to parse). Passes alternate so that neither side gets a warmer cache; the best pass of
each, in CPU time, is kept. Printed per kind (or, with ``--by format``, per trajectory format)
and in total: MB/s, the ratio to the baseline, sessions/s.

Where the time goes (``--stages``): the JSON files are ingested again with stages switched off
one after the other -- redaction (detectors return nothing; texts are still typed as redacted),
then outcome inference, then the content id -- leaving detection, parsing and building the
model. Each row is the best pass, next to the baseline measured alternately with it; a stage's
share is the time its row saves. This is how far switching a stage off (or making it free) can
move the ratio, measured rather than guessed.

Memory: for each ``--scales`` factor a fresh process ingests a copy of the corpus made that many
times larger *per file* (JSONL sessions repeated with their ids renamed so nothing is deduplicated,
Markdown histories repeated, JSON documents copied) and prints its peak RSS (``getrusage``)
next to its RSS before ingesting. Readers stream, so the peak follows the largest trajectory,
not the input size.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from unittest.mock import patch

import orjson

from pipeline.ingest import detect, ingest_file, iter_files
from pipeline.ingest.reader import Probe

GOAL = 0.30
#: Ids renamed per copy when a JSONL session is made larger, so no entry is a duplicate of another.
ID_KEYS = {"uuid", "parentUuid", "logicalParentUuid", "leafUuid", "id", "tool_use_id", "messageId",
           "call_id", "sessionId", "session_id"}


def find_corpus(given: str | None) -> Path:
    here = Path(__file__).resolve().parent.parent
    for candidate in (given, os.environ.get("SKILLMILL_SHARED") and f"{os.environ['SKILLMILL_SHARED']}/trajectories",
                      here.parent / "shared" / "trajectories", "/work/shared/trajectories"):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    sys.exit("no trajectory corpus: pass --corpus DIR or set SKILLMILL_SHARED")


def kind_of(path: Path) -> str:
    probe = Probe.read(path)
    if probe.first_char not in ("{", "["):
        return "text"
    return "jsonl" if len(probe.records) > 1 or path.suffix == ".jsonl" else "json"


def corpus_files(root: Path, by: str = "kind") -> dict[str, list[tuple[Path, str]]]:
    """The trajectory files of the corpus, ``(path, kind)``, grouped by kind or by format
    (files no format reads are left out)."""
    groups: dict[str, list[tuple[Path, str]]] = defaultdict(list)
    for path in iter_files([root]):
        fmt = detect(Probe.read(path))
        if fmt is not None:
            kind = kind_of(path)
            groups[kind if by == "kind" else fmt.name].append((path, kind))
    return dict(groups)


def raw_parse(path: Path, kind: str) -> None:
    data = path.read_bytes()
    if kind == "jsonl":
        for line in data.splitlines():
            if line.strip():
                try:  # noqa: SIM105 -- a with-block per line would slow the baseline down
                    orjson.loads(line)
                except orjson.JSONDecodeError:
                    pass
    elif kind == "json":
        orjson.loads(data)
    else:
        data.decode("utf-8", errors="replace").splitlines()


def throughput(groups: dict[str, list[tuple[Path, str]]], repeat: int) -> dict[str, dict[str, float]]:
    """Per group: the best of ``repeat`` alternating passes, in CPU seconds of this process.

    CPU time and the best pass keep other processes on a shared machine from skewing the ratio.
    """
    rows: dict[str, dict[str, float]] = {}
    for group, files in sorted(groups.items()):
        size = sum(p.stat().st_size for p, _ in files)
        raw_times, ours_times = [], []
        sessions = 0
        for _ in range(repeat):
            gc.collect()
            start = time.process_time()
            for path, kind in files:
                raw_parse(path, kind)
            raw_times.append(time.process_time() - start)
            gc.collect()
            start = time.process_time()
            sessions = 0
            for path, _ in files:
                sessions += len(ingest_file(path)[1])
            ours_times.append(time.process_time() - start)
        rows[group] = {"files": len(files), "mb": size / 1e6, "raw_s": min(raw_times), "ingest_s": min(ours_times),
                       "sessions": sessions, "json": any(kind != "text" for _, kind in files)}
    return rows


def print_throughput(rows: dict[str, dict[str, float]], repeat: int) -> None:
    print(f"Throughput: best of {repeat} passes over the corpus, CPU time (baseline: orjson.loads per line / per"
          " document; decode+splitlines for text)")
    print(f"{'group':<15} {'files':>5} {'MB':>7} {'baseline MB/s':>14} {'ingest MB/s':>12} {'ratio':>6} "
          f"{'sessions/s':>11}")
    total = {"files": 0, "mb": 0.0, "raw_s": 0.0, "ingest_s": 0.0, "sessions": 0}
    for kind, row in [*rows.items()]:
        for key in total:
            total[key] += row[key]
        _print_row(kind, row)
    json_rows = [r for r in rows.values() if r["json"]]
    if json_rows:
        json_total = {key: sum(r[key] for r in json_rows) for key in total}
        _print_row("json*", json_total)
    _print_row("all", total)
    print(f"goal: ingest at >= {GOAL:.0%} of the baseline on JSON (json*: JSONL + JSON documents)")


def _print_row(kind: str, row: dict[str, float]) -> None:
    raw = row["mb"] / row["raw_s"] if row["raw_s"] else float("nan")
    ours = row["mb"] / row["ingest_s"] if row["ingest_s"] else float("nan")
    print(f"{kind:<15} {int(row['files']):>5} {row['mb']:>7.1f} {raw:>14.1f} {ours:>12.1f} "
          f"{ours / raw:>6.0%} {row['sessions'] / row['ingest_s']:>11.0f}")


# -- where the time goes ---------------------------------------------------------------------
def _switches() -> list[tuple[str, Callable[[], AbstractContextManager[None]]]]:
    """Each stage and how to switch it off; switched off cumulatively, in this order."""
    import pipeline.ingest as ingest
    from pipeline.redact.engine import Redactor
    from pipeline.trajectory import Outcome, Trajectory

    return [
        ("redaction", lambda: patch.object(Redactor, "redact", lambda self, text: (text, {}))),
        ("outcome", lambda: patch.object(ingest, "infer_outcome", lambda trajectory: trajectory.outcome or Outcome())),
        ("content id", lambda: patch.object(Trajectory, "with_id", lambda self: self)),
    ]


def stages(groups: dict[str, list[tuple[Path, str]]], repeat: int) -> None:
    files = [(path, kind) for group in groups.values() for path, kind in group if kind != "text"]
    size = sum(p.stat().st_size for p, _ in files) / 1e6
    print(f"\nWhere the time goes on JSON ({len(files)} files, {size:.1f} MB): stages switched off one after the"
          f" other, best of {repeat}")
    print(f"{'ingest':<38} {'baseline MB/s':>14} {'ingest MB/s':>12} {'ratio':>6} {'s/pass':>7} "
          f"{'share of the stage removed':>27}")
    switches = _switches()
    rows = []
    for count in range(len(switches) + 1):
        with ExitStack() as stack:
            for _, off in switches[:count]:
                stack.enter_context(off())
            rows.append(throughput({"json": files}, repeat)["json"])
    for count, row in enumerate(rows):
        label = "all stages" if not count else "without " + ", ".join(name for name, _ in switches[:count])
        share = f"{(rows[count - 1]['ingest_s'] - row['ingest_s']) / rows[0]['ingest_s']:.0%}" if count else ""
        raw_mbs, ours_mbs = row["mb"] / row["raw_s"], row["mb"] / row["ingest_s"]
        print(f"{label:<38} {raw_mbs:>14.1f} {ours_mbs:>12.1f} {ours_mbs / raw_mbs:>6.0%} {row['ingest_s']:>7.3f} "
              f"{share:>27}")
    print("what is left after the last row: detection, reading, parsing, building the trajectory model")


# -- memory -------------------------------------------------------------------------------------
def renamed(value: object, copy: int) -> object:
    if isinstance(value, dict):
        return {k: (f"{copy}-{v}" if k in ID_KEYS and isinstance(v, str) else renamed(v, copy))
                for k, v in value.items()}
    if isinstance(value, list):
        return [renamed(v, copy) for v in value]
    return value


def scaled_copy(by_kind: dict[str, list[tuple[Path, str]]], factor: int, into: Path) -> list[Path]:
    """Each file ``factor`` times larger (JSONL, text) or ``factor`` copies of it (JSON)."""
    out: list[Path] = []
    for kind, files in by_kind.items():
        for number, (path, _) in enumerate(files):
            data = path.read_bytes()
            target = into / f"{number}-{path.name}"
            if kind == "json":
                for copy in range(factor):
                    copied = target.with_name(f"{copy}-{target.name}")
                    copied.write_bytes(data)
                    out.append(copied)
                continue
            with target.open("wb") as handle:
                for copy in range(factor):
                    if kind == "text" or copy == 0:
                        handle.write(data if data.endswith(b"\n") else data + b"\n")
                        continue
                    for line in data.splitlines():
                        try:
                            handle.write(orjson.dumps(renamed(orjson.loads(line), copy)) + b"\n")
                        except orjson.JSONDecodeError:
                            handle.write(line + b"\n")
            out.append(target)
    return out


def child(corpus: Path, factor: int) -> None:
    """Run in a fresh process: ingest the scaled corpus, print one JSON line of figures."""
    by_kind = corpus_files(corpus)
    with tempfile.TemporaryDirectory(prefix="skillmill-bench-") as folder:
        files = scaled_copy(by_kind, factor, Path(folder))
        gc.collect()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        largest = max(p.stat().st_size for p in files)
        size = sum(p.stat().st_size for p in files)
        sessions = 0
        for path in files:
            sessions += len(ingest_file(path)[1])
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"factor": factor, "mb": size / 1e6, "largest_mb": largest / 1e6, "sessions": sessions,
                      "rss_before_mb": before / 1024, "peak_rss_mb": peak / 1024}))


def memory(corpus: Path, scales: list[int]) -> None:
    if not scales:
        return
    print("\nMemory: a fresh process per size, each file made larger (peak RSS from getrusage)")
    print(f"{'size':>5} {'input MB':>9} {'largest file MB':>16} {'sessions':>9} {'RSS before MB':>14} {'peak RSS MB':>12}")
    for factor in scales:
        done = subprocess.run([sys.executable, __file__, "--child", str(factor), "--corpus", str(corpus)],
                              capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
        row = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{factor:>4}x {row['mb']:>9.1f} {row['largest_mb']:>16.1f} {row['sessions']:>9} "
              f"{row['rss_before_mb']:>14.0f} {row['peak_rss_mb']:>12.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="passes over the corpus (default 5)")
    parser.add_argument("--scales", default="1,4", help="input size factors for the memory runs (default 1,4)")
    parser.add_argument("--corpus", help="trajectory corpus (default: the shared one)")
    parser.add_argument("--by", choices=("kind", "format"), default="kind",
                        help="group the throughput table by file kind (default) or by trajectory format")
    parser.add_argument("--stages", action="store_true",
                        help="also measure ingest with redaction, outcome and content id switched off in turn")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    corpus = find_corpus(args.corpus)
    if args.child:
        child(corpus, args.child)
        return
    groups = corpus_files(corpus, args.by)
    rows = throughput(groups, args.repeat)
    print_throughput(rows, args.repeat)
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    if args.stages:
        stages(groups, args.repeat)  # it takes the JSON files whatever the grouping
    memory(corpus, [int(s) for s in args.scales.split(",") if s.strip()])


if __name__ == "__main__":
    main()
