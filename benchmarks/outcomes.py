"""Outcome inference on the 29 labelled SWE-bench Verified runs of mini-swe-agent, labels hidden.

    PYTHONPATH=. python benchmarks/outcomes.py [--verbose]

The ``.traj.json`` files are copied alone into a temporary folder, so the ``report.json``
labels beside them cannot be read; the label is then taken from the folder each file came
from (``resolved/`` or ``unresolved/``, as in ``results_summary.json``). Printed next to the
baseline measured in the same run: always answering "resolved". ``unknown`` counts as wrong.
Precision per verdict says how far a ``failed`` (or ``resolved``) can be trusted: the distiller
writes "this did not work" only from a ``failed``.
Per-rule figures show how much each kind of evidence carries; 29 runs of one agent on one
benchmark are few, so read them as a sanity check, not a measurement of the general case.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

from pipeline.ingest import ingest_file

STATUSES = ("resolved", "failed", "unknown")


def corpus() -> Path:
    for base in (os.environ.get("SKILLMILL_SHARED"), Path(__file__).resolve().parents[2] / "shared", "/work/shared"):
        folder = Path(base or "") / "trajectories/mini_swe_agent/swebench_verified_gemini-3-pro"
        if base and folder.is_dir():
            return folder
    sys.exit("the shared corpus is not here: set SKILLMILL_SHARED")


def rule(evidence: str) -> str:
    for key, name in (("reaction", "person's reaction"), ("submitted nothing", "empty submission"),
                      ("rewrites existing tests", "tests rewritten"), ("last check after", "last check after change"),
                      ("a check of the changed code passed", "covering check after change"),
                      ("a check passed after the change", "check passed, later edits unchecked"),
                      ("submitted without", "unverified submission"), ("ended on a failing", "ended on an error"),
                      ("stopped", "exit status")):
        if key in evidence:
            return name
    return "other"


def mcnemar(b: int, c: int) -> float:
    """Two-sided exact McNemar test on the discordant pairs: could the gain be chance?"""
    n = b + c
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n if n else 1.0
    return min(1.0, 2 * tail)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="one line per run with the evidence")
    args = parser.parse_args()
    source = corpus()
    truth: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label in ("resolved", "unresolved"):
            for traj in sorted((source / label).glob("*.traj.json")):
                shutil.copy(traj, Path(tmp) / traj.name)  # the report.json stays behind
                truth[traj.name] = "resolved" if label == "resolved" else "failed"
        assert not list(Path(tmp).glob("*report*")), "labels must be hidden"
        predicted, evidence = {}, {}
        for name in truth:
            _, [trajectory] = ingest_file(Path(tmp) / name)
            assert trajectory.outcome.source != "label"
            predicted[name], evidence[name] = trajectory.outcome.status, trajectory.outcome.evidence
    n = len(truth)
    right = sum(predicted[k] == truth[k] for k in truth)
    baseline = sum(truth[k] == "resolved" for k in truth)
    print(f"{n} labelled runs ({baseline} resolved, {n - baseline} unresolved), report.json files hidden\n")
    print(f"  heuristic outcome          accuracy {right}/{n} = {right / n:.0%}")
    print(f"  baseline: always resolved  accuracy {baseline}/{n} = {baseline / n:.0%}")
    gained = sum(predicted[k] == truth[k] != "resolved" for k in truth)
    lost = sum(predicted[k] != truth[k] == "resolved" for k in truth)
    print(f"  vs baseline: {gained} runs right that it gets wrong, {lost} wrong that it gets right; "
          f"exact McNemar p = {mcnemar(gained, lost):.2f}")
    for status in ("resolved", "failed"):  # when it says so, how often is it so? (what the distiller trusts)
        said = [k for k in truth if predicted[k] == status]
        hits = sum(truth[k] == status for k in said)
        share = f"{hits / len(said):.0%}" if said else "n/a"
        print(f"  precision of {status + ':':<10}     {hits}/{len(said)} = {share} "
              f"(recall {hits}/{sum(truth[k] == status for k in truth)})")
    print()
    print("confusion matrix (rows: label, columns: inferred)")
    matrix = Counter((truth[k], predicted[k]) for k in truth)
    print(f"  {'':<10}" + "".join(f"{s:>10}" for s in STATUSES))
    for label in ("resolved", "failed"):
        print(f"  {label:<10}" + "".join(f"{matrix[(label, s)]:>10}" for s in STATUSES))
    print("\nper rule (which evidence decided, and how often it was right)")
    rules = Counter(rule(evidence[k]) for k in truth)
    for name, count in rules.most_common():
        hits = sum(rule(evidence[k]) == name and predicted[k] == truth[k] for k in truth)
        said = Counter(predicted[k] for k in truth if rule(evidence[k]) == name)
        verdicts = ", ".join(f"{s} {said[s]}" for s in STATUSES if said[s])
        print(f"  {name:<38} {count:>3} runs, {hits:>3} right  ({verdicts})")
    if args.verbose:
        print()
        for k in truth:
            mark = "ok " if predicted[k] == truth[k] else "XX "
            print(f"  {mark}{k[:-10]:<36} label={truth[k]:<8} got={predicted[k]:<8} {evidence[k][:110]}")


if __name__ == "__main__":
    main()
