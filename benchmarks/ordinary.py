"""How many commands of real skills are ordinary, with this checkout and with a baseline (issue 23 §3).

    PYTHONPATH=$PWD python benchmarks/ordinary.py [--baseline-ref REF] [--corpus PATH] [--skills PATH]

Collects the command lines a batch approval judges (``pipeline.review.batch.command_lines``: the
commands of procedure, pitfalls and verification, and command lines in backticks or shell blocks
of the prose) from two sources: the skills the pipeline writes from the shared sessions (distilled
now, into a temporary library, by ``benchmarks/audit/distill_run.py``) and the public SKILL.md files
of ``../shared/skills-corpus``. Each line is judged by this checkout's ``why_not_ordinary`` and by
the baseline's (``git archive REF pipeline``, run in a process of its own; default: where this
branch left ``main``). Prints per source the lines, how many are ordinary before and after, the
skills whose every line is ordinary before and after; then every line whose verdict changed with
the reason, for a person to judge. Figures, not asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from benchmarks.skill_quality import ROOT, environment, extract

SHARED = Path(os.environ.get("SKILLMILL_SHARED", ROOT.parent / "shared"))
DRIVER = ROOT / "benchmarks" / "audit" / "distill_run.py"
_JUDGE = ("import json, sys, pipeline; from pipeline.safety.ordinary import why_not_ordinary; "
          "print(json.dumps({'pipeline': pipeline.__file__, "
          "'verdicts': [why_not_ordinary(line) for line in json.load(sys.stdin)]}))")


def default_baseline() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], capture_output=True, text=True,
                          check=False)
    return done.stdout.strip() or "HEAD"


def run_skills(corpus: Path, work: Path) -> list:
    """The skills this checkout's pipeline writes from CORPUS."""
    from pipeline.library import Library

    work.mkdir(parents=True, exist_ok=True)
    env = environment(ROOT, work / "home")
    done = subprocess.run([sys.executable, "-P", str(DRIVER), str(corpus), str(work / "library")], env=env,
                          cwd=work, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"ordinary: distilling {corpus} failed:\n{done.stderr[-2000:]}")
    return [stored.skill for stored in Library(work / "library")]


def public_skills(folder: Path) -> tuple[list, int]:
    from pipeline.library.markdown import parse

    skills, unreadable = [], 0
    for file in sorted(folder.glob("*/*/SKILL.md")):
        try:
            skills.append(parse(file.read_text(encoding="utf-8"), str(file)))
        except Exception:  # a public file our parser cannot read: counted, not judged
            unreadable += 1
    return skills, unreadable


def judge(code: Path, lines: list[str], home: Path) -> list[list[str]]:
    """why_not_ordinary of each line, by the pipeline at CODE, in its own process."""
    done = subprocess.run([sys.executable, "-P", "-c", _JUDGE], input=json.dumps(lines), text=True,
                          env=environment(code, home), capture_output=True, check=False)
    if done.returncode != 0:
        sys.exit(f"ordinary: judging with {code} failed:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    if not Path(result["pipeline"]).resolve().is_relative_to(code.resolve()):
        sys.exit(f"ordinary: the judge imported {result['pipeline']}, not the pipeline in {code}")
    return result["verdicts"]


def shown(line: str, limit: int = 150) -> str:
    text = " \\n ".join(part.strip() for part in line.strip().splitlines() if part.strip())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline-ref", default=None, help="the commit to compare with (default: merge-base main)")
    parser.add_argument("--corpus", type=Path, default=SHARED / "trajectories")
    parser.add_argument("--skills", type=Path, default=SHARED / "skills-corpus")
    args = parser.parse_args()
    ref = args.baseline_ref or default_baseline()
    from pipeline.review.batch import command_lines

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sources = {f"skills the pipeline writes from {args.corpus}": run_skills(args.corpus, work / "run")}
        public, unreadable = public_skills(args.skills)
        sources[f"public skills in {args.skills}"] = public
        lines = {label: [[line for _, line in command_lines(s)] for s in skills] for label, skills in sources.items()}
        unique = sorted({line for per_skill in lines.values() for skill in per_skill for line in skill})
        before = dict(zip(unique, judge(extract(ref, work / "baseline", who="ordinary"), unique, work / "h1"),
                          strict=True))
        after = dict(zip(unique, judge(ROOT, unique, work / "h2"), strict=True))

    print(f"ordinary command lines, baseline {ref} -> this checkout ({unreadable} public files unreadable)")
    print(f"{'source':<60} {'skills':>6} {'lines':>6} {'ordinary':>15} {'all-ordinary skills':>20}")
    for label, per_skill in lines.items():
        flat = [line for skill in per_skill for line in skill]
        ok_before = sum(not before[line] for line in flat)
        ok_after = sum(not after[line] for line in flat)
        skills_before = sum(all(not before[line] for line in skill) for skill in per_skill if skill)
        skills_after = sum(all(not after[line] for line in skill) for skill in per_skill if skill)
        with_lines = sum(1 for skill in per_skill if skill)
        print(f"{label[:60]:<60} {len(per_skill):>6} {len(flat):>6} {ok_before:>6} -> {ok_after:<6} "
              f"{skills_before:>5} -> {skills_after:<4} of {with_lines}")
    counts = Counter(line for per_skill in lines.values() for skill in per_skill for line in skill)
    changed = [line for line in unique if bool(before[line]) != bool(after[line])]
    print(f"\n{len(changed)} distinct lines changed verdict ({sum(counts[c] for c in changed)} uses):")
    for now_ordinary in (False, True):
        group = [line for line in changed if (not after[line]) == now_ordinary]
        print(f"\n  {'now ordinary' if now_ordinary else 'no longer ordinary'} ({len(group)}):")
        for line in group:
            why = (before if now_ordinary else after)[line][0]
            print(f"  {'+' if now_ordinary else '-'} {shown(line)}" + (f"  (x{counts[line]})" if counts[line] > 1 else ""))
            print(f"      {'was' if now_ordinary else 'now'}: {shown(why, 200)}")


if __name__ == "__main__":
    main()
