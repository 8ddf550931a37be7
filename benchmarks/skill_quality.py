"""How good the offline distiller's skills are: per rule of issue 13, the skills that break it, beside a baseline.

    PYTHONPATH=$PWD python benchmarks/skill_quality.py [--corpus PATH] [--baseline-ref REF]
                                                        [--lessons PATH] [--verbose] [--json] [--keep DIR]

Distils the whole corpus twice into temporary libraries: with this checkout's ``pipeline`` and
with the baseline's (``git archive <ref> pipeline flows``, default fc61df2: the distiller before
issue 13), each in its own process (``benchmarks/audit/distill_run.py``: the pipeline's stages
in-process, no Prefect server). Then ``benchmarks/audit`` -- which shares no code with
``pipeline/distill`` -- audits both libraries against the sessions they cite and prints, per
column: candidates written, sessions, candidates per 100 sessions, the count of skills breaking
each rule, the lessons of ``lessons-dev.jsonl`` found, and the sizes of the ``working-in-<repo>``
manuals in tokens. ``--verbose`` lists the offending skills with their lines and reasons.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DRIVER = ROOT / "benchmarks" / "audit" / "distill_run.py"
BASELINE_REF = "fc61df2"


def extract(ref: str, into: Path) -> Path:
    """The ``pipeline`` and ``flows`` packages as they were at ``ref``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref, "pipeline", "flows"],
                             capture_output=True, check=False)
    if archive.returncode != 0:
        sys.exit(f"skill_quality: cannot read {ref!r} from {ROOT}: {archive.stderr.decode().strip()}; "
                 "pass --baseline-ref with a commit of this repository")
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def distil(label: str, code: Path, corpus: Path, work: Path) -> dict:
    """Run the driver with ``code`` first on PYTHONPATH; its library lands in ``work/library``."""
    env = {k: v for k, v in os.environ.items() if k not in {"SKILLMILL_LIBRARY", "SKILLMILL_MODEL", "PYTHONPATH"}}
    env.update(PYTHONPATH=str(code), SKILLMILL_HOME=str(work / "home"), DO_NOT_TRACK="1",
               PREFECT_SERVER_ANALYTICS_ENABLED="false", LITELLM_LOCAL_MODEL_COST_MAP="True")
    print(f"distilling {corpus} with the {label} distiller ({code}) ...", file=sys.stderr, flush=True)
    done = subprocess.run([sys.executable, "-P", str(DRIVER), str(corpus), str(work / "library")], env=env,
                          cwd=work, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"skill_quality: the {label} run failed:\n{done.stderr[-3000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(figures["pipeline"]).resolve() != (code / "pipeline").resolve():
        sys.exit(f"skill_quality: the {label} run imported {figures['pipeline']}, not {code / 'pipeline'}")
    return figures


def token_counter():
    """litellm's offline counter, else chars/4 (and the table says which)."""
    try:
        from litellm import token_counter as count

        count(text="probe")
        return (lambda text: count(text=text)), "litellm's token_counter, offline"
    except Exception:  # any failure of an optional counter falls back the same way
        return (lambda text: round(len(text) / 4)), "characters / 4: litellm's token_counter failed here"


def figures(run: dict, report, count) -> dict:
    from benchmarks.audit import RULES, manual_body

    candidates = len(report.candidates)
    sizes = sorted(count(manual_body(s)) for s in report.manuals)
    offending = {f.skill for f in report.findings}
    return {
        "candidates": candidates,
        "sessions": run["sessions"],
        "per_100": round(100 * candidates / run["sessions"], 1) if run["sessions"] else 0.0,
        "rules": {r.key: report.count(r.key) for r in RULES},
        "any_rule": len(offending),
        "lessons": {v.lesson.id: v.found for v in report.lessons},
        "lessons_found": report.lessons_found(),
        "manuals": len(sizes),
        "manual_tokens": {"min": sizes[0], "median": statistics.median(sizes), "max": sizes[-1]} if sizes else None,
        "missing_sources": sorted(report.missing_sources),
        "seconds": run["seconds"],
    }


def table(columns: dict[str, dict], unit: str) -> str:
    from benchmarks.audit import RULES

    names = list(columns)
    first = next(iter(columns.values()))
    rows: list[tuple[str, list[str]]] = [
        ("candidates written", [str(c["candidates"]) for c in columns.values()]),
        ("sessions (trajectories seen)", [str(c["sessions"]) for c in columns.values()]),
        ("candidates per 100 sessions", [f"{c['per_100']:.1f}" for c in columns.values()]),
    ]
    rows += [(f"  {r.label}", [str(c["rules"][r.key]) for c in columns.values()]) for r in RULES]
    rows += [
        ("  skills breaking any rule", [str(c["any_rule"]) for c in columns.values()]),
        ("lessons found", [f"{c['lessons_found']}/{len(c['lessons'])}" if c["lessons"] else "no file"
                           for c in columns.values()]),
        ("manuals (kind repo)", [str(c["manuals"]) for c in columns.values()]),
        ("manual size in tokens: min/median/max",
         [("{min}/{median:g}/{max}".format(**c["manual_tokens"]) if c["manual_tokens"] else "-")
          for c in columns.values()]),
    ]
    if any(c["missing_sources"] for c in columns.values()):
        rows.append(("cited ids not in the corpus (not judged)", [str(len(c["missing_sources"]))
                                                                   for c in columns.values()]))
    width = max(len(r[0]) for r in rows) + 2
    cells = [max(len(n), 10) for n in names]
    lines = [" " * width + " ".join(f"{n:>{w}}" for n, w in zip(names, cells, strict=True))]
    lines += [f"{label:<{width}}" + " ".join(f"{v:>{w}}" for v, w in zip(values, cells, strict=True))
              for label, values in rows]
    lines.append(f"(tokens: {unit})")
    lesson_ids = list(first["lessons"])
    if lesson_ids:
        lines.append("")
        lines.append("lessons: " + ", ".join(
            f"{i} " + "/".join("+" if c["lessons"][i] else "-" for c in columns.values()) for i in lesson_ids))
    return "\n".join(lines)


def details(label: str, report) -> str:
    from benchmarks.audit import RULES

    out = [f"== {label}: {report.library}"]
    for rule in RULES:
        offenders = report.offenders(rule.key)
        out.append(f"-- {rule.label}: {len(offenders)} skill(s)")
        for name, found in sorted(offenders.items()):
            out.append(f"   {name}")
            out += [f"      {f.line}\n        -> {f.reason}" for f in found]
    out.append("-- lessons")
    out += [f"   {'found' if v.found else 'NOT found'} {v.lesson.id}: {v.why}" for v in report.lessons]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "trajectories")
    parser.add_argument("--baseline-ref", default=BASELINE_REF,
                        help=f"git ref of the baseline distiller (default {BASELINE_REF}: before issue 13)")
    parser.add_argument("--lessons", type=Path, help="default: <corpus>/../lessons/lessons-dev.jsonl")
    parser.add_argument("--verbose", action="store_true", help="list offending skills, lines and reasons")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--keep", type=Path, help="keep both libraries (and their homes) under this folder")
    args = parser.parse_args()
    for key, value in (("LITELLM_LOCAL_MODEL_COST_MAP", "True"), ("DO_NOT_TRACK", "1")):
        os.environ.setdefault(key, value)  # offline: litellm would fetch its cost map at import
    corpus = args.corpus.resolve()
    if not corpus.is_dir():
        sys.exit(f"skill_quality: no corpus at {corpus}; pass --corpus PATH")
    lessons = (args.lessons or corpus.parent / "lessons" / "lessons-dev.jsonl").resolve()

    from benchmarks.audit import audit, load_sessions

    with tempfile.TemporaryDirectory(prefix="skill-quality-") as tmp:
        work = args.keep.resolve() if args.keep else Path(tmp)
        for variant in ("baseline", "current"):
            if (work / variant / "library").exists():
                sys.exit(f"skill_quality: {work / variant / 'library'} exists; --keep wants a fresh folder")
            (work / variant).mkdir(parents=True, exist_ok=True)
        code = {"baseline": extract(args.baseline_ref, work / "baseline" / "src"), "current": ROOT}
        runs = {v: distil(v if v == "current" else f"baseline ({args.baseline_ref})", code[v], corpus, work / v)
                for v in ("baseline", "current")}
        started = time.perf_counter()
        sessions = load_sessions([corpus])
        reports = {v: audit(work / v / "library", sessions, lessons if lessons.is_file() else None)
                   for v in runs}
        count, unit = token_counter()
        columns = {f"baseline {args.baseline_ref}" if v == "baseline" else "current": figures(runs[v], reports[v], count)
                   for v in runs}
        audit_s = time.perf_counter() - started
        if args.json:
            print(json.dumps({"corpus": str(corpus), "baseline_ref": args.baseline_ref, "token_unit": unit,
                              "columns": columns}, indent=2))
        else:
            print(f"corpus {corpus}: distilled in {runs['baseline']['seconds']:.0f} s (baseline) and "
                  f"{runs['current']['seconds']:.0f} s (current); audited in {audit_s:.0f} s; "
                  f"load {os.getloadavg()[0]:.1f}")
            print("indented rows: skills that break the rule (once per skill; --verbose lists them)\n")
            print(table(columns, unit))
        if args.verbose:
            for variant, report in reports.items():
                print("\n" + details(variant, report))
        if args.keep:
            print(f"\nlibraries kept: {work / 'baseline' / 'library'}  {work / 'current' / 'library'}",
                  file=sys.stderr)


if __name__ == "__main__":
    main()
