"""How good the offline distiller's skills are: per rule of issue 13, the skills that break it, beside a baseline.

    PYTHONPATH=$PWD python benchmarks/skill_quality.py [--corpus PATH] [--baseline-ref REF]
                                                        [--lessons PATH] [--verbose] [--json] [--keep DIR]

Distils the whole corpus twice into temporary libraries: with this checkout's ``pipeline`` and
with the baseline's (``git archive <ref> pipeline flows``, default fc61df2: the distiller before
issue 13), each in its own process (``benchmarks/audit/distill_run.py``: the pipeline's stages
in-process, no Prefect server). Then ``benchmarks/audit`` -- which shares no code with
``pipeline/distill`` -- audits each library in another process of its own version
(``benchmarks/audit/audit_run.py``): against the sessions as *that* version's ingest reads them,
so the trajectory ids the library cites are the ids it finds. Per column the table gives:
candidates written, sessions, candidates per 100 sessions, the count of skills breaking each
rule, the lessons of ``lessons-dev.jsonl`` found, and the sizes of the ``working-in-<repo>``
manuals in tokens -- the body (provenance comments and Sources left out) and the skill as an
agent is served it (that version's ``pipeline.library.markdown.served``, else the auditor's own
stripping). ``--verbose`` lists the offending skills with their lines and reasons.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DRIVER = ROOT / "benchmarks" / "audit" / "distill_run.py"
AUDITOR = ROOT / "benchmarks" / "audit" / "audit_run.py"
BASELINE_REF = "fc61df2"


def extract(ref: str, into: Path, *, who: str = "skill_quality",
            hint: str = "pass --baseline-ref with a commit of this repository") -> Path:
    """The ``pipeline`` and ``flows`` packages as they were at ``ref`` (benchmarks' baselines)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref, "pipeline", "flows"],
                             capture_output=True, check=False)
    if archive.returncode != 0:
        sys.exit(f"{who}: cannot read {ref!r} from {ROOT}: {archive.stderr.decode().strip()}; {hint}")
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def environment(code: Path, home: Path, *after: Path) -> dict[str, str]:
    """This process's environment for a run of version ``code``: its code first on PYTHONPATH, offline."""
    # Settings another version may not know (SKILLMILL_EMBEDDER=none is newer than the baseline) stay out.
    env = {k: v for k, v in os.environ.items()
           if k not in {"SKILLMILL_LIBRARY", "SKILLMILL_MODEL", "SKILLMILL_EMBEDDER", "PYTHONPATH"}}
    path = [str(code), *(str(p) for p in after if Path(p).resolve() != Path(code).resolve())]
    env.update(PYTHONPATH=os.pathsep.join(path), SKILLMILL_HOME=str(home), DO_NOT_TRACK="1",
               PREFECT_SERVER_ANALYTICS_ENABLED="false", LITELLM_LOCAL_MODEL_COST_MAP="True")
    return env


def run_json(label: str, argv: list[str], env: dict[str, str], cwd: Path) -> dict:
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"skill_quality: the {label} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def distil(label: str, code: Path, corpus: Path, work: Path) -> dict:
    """Run the driver with ``code`` first on PYTHONPATH; its library lands in ``work/library``."""
    print(f"distilling {corpus} with the {label} distiller ({code}) ...", file=sys.stderr, flush=True)
    figures = run_json(label, [sys.executable, "-P", str(DRIVER), str(corpus), str(work / "library")],
                       environment(code, work / "home"), work)
    if Path(figures["pipeline"]).resolve() != (code / "pipeline").resolve():
        sys.exit(f"skill_quality: the {label} run imported {figures['pipeline']}, not {code / 'pipeline'}")
    return figures


def audit_command(code: Path, library: Path, corpus: Path, lessons: Path | None,
                  home: Path) -> tuple[list[str], dict[str, str]]:
    """The command and environment that audit ``library`` with version ``code``'s ingest.

    ``code`` comes first on PYTHONPATH, so ``pipeline`` (and its ingest, which made the ids the
    library cites) is that version's; this repository follows for ``benchmarks.audit``, which
    the baseline's tree does not hold.
    """
    argv = [sys.executable, "-P", str(AUDITOR), str(library), str(corpus)]
    if lessons is not None:
        argv.append(str(lessons))
    return argv, environment(code, home, ROOT)


def audit_library(label: str, code: Path, corpus: Path, lessons: Path | None, work: Path) -> dict:
    """Audit ``work/library`` in a process of version ``code`` (``benchmarks/audit/audit_run.py``)."""
    print(f"auditing {work / 'library'} against {corpus} as the {label} ingests it ...", file=sys.stderr, flush=True)
    argv, env = audit_command(code, work / "library", corpus, lessons, work / "home")
    audited = run_json(f"{label} audit", argv, env, work)
    if Path(audited["pipeline"]).resolve() != (code / "pipeline").resolve():
        sys.exit(f"skill_quality: the {label} audit imported {audited['pipeline']}, not {code / 'pipeline'}")
    if Path(audited["auditor"]).resolve() != AUDITOR.parent:
        sys.exit(f"skill_quality: the {label} audit imported {audited['auditor']}, not {AUDITOR.parent}")
    (work / "audit.json").write_text(json.dumps(audited, indent=1), encoding="utf-8")
    return audited


def token_counter():
    """litellm's offline counter, else chars/4 (and the table says which)."""
    try:
        from litellm import token_counter as count

        count(text="probe")
        return (lambda text: count(text=text)), "litellm's token_counter, offline"
    except Exception:  # any failure of an optional counter falls back the same way
        return (lambda text: round(len(text) / 4)), "characters / 4: litellm's token_counter failed here"


def offenders(audited: dict, rule: str) -> dict[str, list[dict]]:
    """Skill name -> its findings of ``rule`` (a skill with three offending lines counts once)."""
    found: dict[str, list[dict]] = {}
    for skill in audited["skills"]:
        for finding in skill["findings"]:
            if finding["rule"] == rule:
                found.setdefault(skill["name"], [])
                if finding not in found[skill["name"]]:
                    found[skill["name"]].append(finding)
    return found


def _spread(sizes: list[int]) -> dict | None:
    sizes = sorted(sizes)
    return {"min": sizes[0], "median": statistics.median(sizes), "max": sizes[-1]} if sizes else None


def figures(run: dict, audited: dict, count) -> dict:
    """One column of the table from a distiller run and its audit (``benchmarks.audit.summary``)."""
    from benchmarks.audit import RULES

    candidates = sum(s["status"] == "candidate" for s in audited["skills"])
    manuals = [s for s in audited["skills"] if s["kind"] == "repo"]
    lessons = audited["lessons"]
    return {
        "candidates": candidates,
        "sessions": run["sessions"],
        "audited_sessions": audited["sessions"],
        "per_100": round(100 * candidates / run["sessions"], 1) if run["sessions"] else 0.0,
        "rules": {r.key: len(offenders(audited, r.key)) for r in RULES},
        "any_rule": len({s["name"] for s in audited["skills"] if s["findings"]}),
        "lessons": {v["id"]: v["found"] for v in lessons},
        "lessons_found": sum(v["found"] for v in lessons),
        "manuals": len(manuals),
        "manual_tokens": _spread([count(s["body"]) for s in manuals]),
        "served_tokens": _spread([count(s["served"]) for s in manuals]),
        "served_by": audited["served_by"],
        "missing_sources": audited["missing_sources"],
        "seconds": run["seconds"],
        "audit_seconds": audited["seconds"],
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
        ("manual size in tokens: min/median/max", [_sizes(c["manual_tokens"]) for c in columns.values()]),
        ("served size in tokens: min/median/max", [_sizes(c["served_tokens"]) for c in columns.values()]),
        ("cited ids not in the corpus (not judged)", [str(len(c["missing_sources"])) for c in columns.values()]),
    ]
    width = max(len(r[0]) for r in rows) + 2
    cells = [max(len(n), 10) for n in names]
    lines = [" " * width + " ".join(f"{n:>{w}}" for n, w in zip(names, cells, strict=True))]
    lines += [f"{label:<{width}}" + " ".join(f"{v:>{w}}" for v, w in zip(values, cells, strict=True))
              for label, values in rows]
    lines.append(f"(tokens: {unit}; manual size: the body without provenance comments and Sources; served: "
                 + "; ".join(f"{n} by {c['served_by']}" for n, c in columns.items()) + ")")
    lesson_ids = list(first["lessons"])
    if lesson_ids:
        lines.append("")
        lines.append("lessons: " + ", ".join(
            f"{i} " + "/".join("+" if c["lessons"][i] else "-" for c in columns.values()) for i in lesson_ids))
    return "\n".join(lines)


def _sizes(spread: dict | None) -> str:
    return "{min}/{median:g}/{max}".format(**spread) if spread else "-"


def details(label: str, audited: dict) -> str:
    from benchmarks.audit import RULES

    out = [f"== {label}: {audited['library']} (ingest of {audited['pipeline']})"]
    for rule in RULES:
        found = offenders(audited, rule.key)
        out.append(f"-- {rule.label}: {len(found)} skill(s)")
        for name, lines in sorted(found.items()):
            out.append(f"   {name}")
            out += [f"      {f['line']}\n        -> {f['reason']}" for f in lines]
    out.append("-- lessons")
    out += [f"   {'found' if v['found'] else 'NOT found'} {v['id']}: {v['why']}" for v in audited["lessons"]]
    if audited["missing_sources"]:
        out.append(f"-- cited ids not in the corpus: {', '.join(audited['missing_sources'])}")
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

    with tempfile.TemporaryDirectory(prefix="skill-quality-") as tmp:
        work = args.keep.resolve() if args.keep else Path(tmp)
        for variant in ("baseline", "current"):
            if (work / variant / "library").exists():
                sys.exit(f"skill_quality: {work / variant / 'library'} exists; --keep wants a fresh folder")
            (work / variant).mkdir(parents=True, exist_ok=True)
        code = {"baseline": extract(args.baseline_ref, work / "baseline" / "src"), "current": ROOT}
        labels = {"baseline": f"baseline ({args.baseline_ref})", "current": "current"}
        runs = {v: distil(labels[v], code[v], corpus, work / v) for v in ("baseline", "current")}
        audits = {v: audit_library(labels[v], code[v], corpus, lessons if lessons.is_file() else None, work / v)
                  for v in runs}
        count, unit = token_counter()
        columns = {f"baseline {args.baseline_ref}" if v == "baseline" else "current": figures(runs[v], audits[v], count)
                   for v in runs}
        for name, column in columns.items():
            if column["audited_sessions"] != column["sessions"]:
                print(f"skill_quality: {name}: the distiller saw {column['sessions']} sessions, the audit "
                      f"{column['audited_sessions']}", file=sys.stderr)
        if args.json:
            print(json.dumps({"corpus": str(corpus), "baseline_ref": args.baseline_ref, "token_unit": unit,
                              "columns": columns}, indent=2))
        else:
            print(f"corpus {corpus}: distilled in {runs['baseline']['seconds']:.0f} s (baseline) and "
                  f"{runs['current']['seconds']:.0f} s (current); audited in {audits['baseline']['seconds']:.0f} s "
                  f"and {audits['current']['seconds']:.0f} s, each with its own ingest; "
                  f"load {os.getloadavg()[0]:.1f}")
            print("indented rows: skills that break the rule (once per skill; --verbose lists them)\n")
            print(table(columns, unit))
        if args.verbose:
            for variant, audited in audits.items():
                print("\n" + details(variant, audited))
        if args.keep:
            print(f"\nlibraries kept: {work / 'baseline' / 'library'}  {work / 'current' / 'library'} "
                  "(their audits beside them, audit.json)", file=sys.stderr)


if __name__ == "__main__":
    main()
