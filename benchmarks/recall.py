"""Recall speed: cold start of `skillmill recall`, query latency at 10k/100k skills, index rebuild time.

    PYTHONPATH=$PWD python benchmarks/recall.py [--sizes 10000 100000] [--runs 10]

Prints, measured in the same run:
* cold start of ``skillmill recall --json TASK`` (a new process, as a hook runs it), median of
  ``--runs``, next to ``python -c pass`` — goal <= 4x and <= 200 ms;
* in-process query p50/p95 over the shared corpus's dev queries at each synthetic size —
  goals <= 20 ms (10k) and <= 60 ms (100k);
* index build time from SKILL.md files at each size, and re-index time when nothing changed.

Synthetic skills are real SKILL.md files whose descriptions and bodies are drawn from the
shared corpus's words (with their frequencies), so posting lists are as long as real text makes
them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARED = next((p for p in (os.environ.get("SKILLMILL_SHARED"), ROOT.parent / "shared", "/work/shared")
               if p and (Path(p) / "skills-corpus").is_dir()), None)


def median_ms(cmd: list[str], runs: int, env: dict[str, str], stdin: str | None = None) -> tuple[float, float]:
    """Median wall time and median CPU time (user + sys) of the process, in ms.

    CPU time is what the process itself costs; wall time adds waiting for a core, which on a
    shared machine can be most of it, so both are printed.
    """
    walls, cpus = [], []
    for _ in range(runs + 1):  # the first run warms the OS file cache and is dropped
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, env=env, input=stdin, text=True, capture_output=True, check=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return 1000 * statistics.median(walls[1:]), 1000 * statistics.median(cpus[1:])


def synthesize(folder: Path, n: int, corpus: Path, seed: int = 7) -> None:
    from pipeline.library import markdown

    docs = [markdown.parse(f.read_text(encoding="utf-8")) for f in sorted(corpus.glob("*/*/SKILL.md"))]
    words = " ".join(d.notes for d in docs).split()
    rng = random.Random(seed)
    for i in range(n):
        base = docs[i % len(docs)]
        name = f"{base.name[:50]}-{i}"
        skill = folder / f"s{i // 1000:03d}" / name
        skill.mkdir(parents=True, exist_ok=True)
        description = " ".join(rng.choices(words, k=30)).replace('"', "'").replace("\\", "/")
        body = " ".join(rng.choices(words, k=300))
        (skill / "SKILL.md").write_text(f'---\nname: {name}\ndescription: "{description}"\n---\n\n# {name}\n\n{body}\n',
                                        encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    if SHARED is None:
        sys.exit("the shared skills corpus is not here (set SKILLMILL_SHARED)")
    corpus = Path(SHARED) / "skills-corpus"
    queries = [json.loads(line)["query"] for name in ("queries-dev.jsonl", "queries-hard-dev.jsonl")
               for line in (corpus / name).read_text(encoding="utf-8").splitlines() if line.strip()]

    from pipeline.recall import RecallIndex
    from pipeline.recall.index import publish

    with tempfile.TemporaryDirectory(prefix="skillmill-bench-") as tmp:
        home = Path(tmp) / "home"
        env = {**os.environ, "SKILLMILL_HOME": str(home), "PYTHONPATH": str(ROOT)}
        os.environ["SKILLMILL_HOME"] = str(home)
        publish([], add_folders=[corpus])
        task = "fix E501 line too long reported by ruff"
        base, base_cpu = median_ms([sys.executable, "-c", "pass"], args.runs, env)
        cold, cold_cpu = median_ms([sys.executable, "-m", "pipeline", "recall", "--json", task], args.runs, env)
        hook_in = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": task, "cwd": tmp})
        hook, hook_cpu = median_ms([sys.executable, "-m", "pipeline", "hook", "claude-code"], args.runs, env, hook_in)
        load = os.getloadavg()[0]
        print(f"cold start, median of {args.runs} ({len(list(corpus.glob('*/*/SKILL.md')))} skills indexed; "
              f"load average {load:.1f} on {os.cpu_count()} cores):        wall       cpu")
        print(f"  python -c pass                      {base:7.1f} ms {base_cpu:7.1f} ms")
        print(f"  skillmill recall --json TASK        {cold:7.1f} ms {cold_cpu:7.1f} ms  "
              f"({cold / base:.1f}x / {cold_cpu / base_cpu:.1f}x; goal <= 4x, <= 200 ms)")
        print(f"  skillmill hook claude-code          {hook:7.1f} ms {hook_cpu:7.1f} ms  "
              f"({hook / base:.1f}x / {hook_cpu / base_cpu:.1f}x)")

        for n in args.sizes:
            folder = Path(tmp) / f"synthetic-{n}"
            clock = time.perf_counter()
            synthesize(folder, n, corpus)
            made = time.perf_counter() - clock
            target = Path(tmp) / f"recall-{n}.duckdb"
            clock = time.perf_counter()
            report = publish([], target, add_folders=[folder])
            build = time.perf_counter() - clock
            clock = time.perf_counter()
            again = publish([], target)
            rebuild = time.perf_counter() - clock
            with RecallIndex(target) as index:
                for q in queries[:5]:  # warm-up: first queries page the index in
                    index.search(q)
                times = []
                for q in queries:
                    start = time.perf_counter()
                    index.search(q, limit=5)
                    times.append(time.perf_counter() - start)
            times.sort()
            p50 = 1000 * statistics.median(times)
            p95 = 1000 * times[int(0.95 * (len(times) - 1))]
            goal = "<= 20 ms" if n <= 10_000 else "<= 60 ms"
            print(f"{n} synthetic skills (files written in {made:.0f} s, index {target.stat().st_size / 1e6:.0f} MB):")
            print(f"  index build from files             {build:7.1f} s   ({report.skills} skills)")
            print(f"  re-index, nothing changed          {rebuild:7.1f} s   ({again.unchanged} unchanged)")
            print(f"  query p50 / p95, {len(times)} queries     {p50:7.1f} / {p95:.1f} ms (goal {goal})")


if __name__ == "__main__":
    main()
