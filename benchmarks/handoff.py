"""Handoffs (issue 24): briefs built from the first part of real sessions, scored against the rest.

    PYTHONPATH=$PWD python benchmarks/handoff.py [--corpus DIR] [--seed N] [--cuts K] [--show N]

Real sessions of the corpus (Claude Code, Codex, Gemini CLI, OpenHands, aider) with at least 12 steps are
cut at a random tool result between 30% and 90% of their length (a fixed seed), as if the person quit
there. The brief is built from the first part (``pipeline.handoff.build``) and scored against what the
rest of the session shows the next agent had to do:

* task -- the brief's task is the session's own first request;
* failing checks -- precision: checks the brief says are failing that the rest of the session runs
  again; recall: checks failing at the cut that the rest runs again, named by the brief;
* files -- precision: files the brief names that the rest reads or edits; recall: files edited both
  before and after the cut, named by the brief;
* open plan items -- precision: items the brief lists that the rest marks done or still lists; recall:
  items open at the cut that the rest completes, listed by the brief;
* tokens served, and the hook's time at session start with a brief to serve, beside ``python -c pass``
  (the goal: within 4x, as the recall hook).

Baseline, scored the same way in the same run: the last 1,600 characters of the first part's text (what a
person might paste into the next session), for files, checks and plan items found in it by name.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.distill.analysis import analyze  # noqa: E402
from pipeline.handoff import build, store  # noqa: E402
from pipeline.ingest import ingest_file, iter_files  # noqa: E402
from pipeline.ingest.identity import relative_to  # noqa: E402
from pipeline.trajectory import StepKind, Trajectory  # noqa: E402
from pipeline.trajectory.commands import CHECKS, Purpose  # noqa: E402

FORMATS = {"claude-code", "codex", "gemini-cli", "openhands", "aider"}
MIN_STEPS = 12


def cut(trajectory: Trajectory, steps: int) -> Trajectory:
    kept = [s.model_copy(update={"result_index": s.result_index if (s.result_index or 0) < steps else None})
            for s in trajectory.steps[:steps]]
    return trajectory.model_copy(update={"steps": kept})


def sessions(corpus: Path) -> list[Trajectory]:
    found = []
    for path in iter_files([corpus]):
        if "synthetic" in str(path):
            continue
        _, trajectories = ingest_file(path)
        found += [t for t in trajectories if t.source_format in FORMATS and len(t.steps) >= MIN_STEPS
                  and not t.parent_session_id and len(t.tool_calls()) >= 3]
    return found


def cut_points(trajectory: Trajectory, rng: random.Random) -> int | None:
    n = len(trajectory.steps)
    results = [s.index + 1 for s in trajectory.steps if s.kind is StepKind.TOOL_RESULT and 0.3 * n <= s.index <= 0.9 * n]
    return rng.choice(results) if results else None


def future(trajectory: Trajectory, at: int) -> dict:
    """What the rest of the session did: checks run, files touched and edited, plan items completed."""
    events = [e for e in analyze(trajectory).events if e.call.index >= at]
    touched, edited = set(), set()
    for e in events:
        for p in e.call.paths:
            rel = relative_to(str(p), trajectory.cwd)
            if rel:
                touched.add(rel)
                if e.purpose is Purpose.EDIT:
                    edited.add(rel)
    done: set[str] = set()
    listed: set[str] = set()
    for call in trajectory.tool_calls():
        if call.index < at or (call.tool or "").lower() not in ("todowrite", "update_plan", "write_todos"):
            continue
        try:
            items = json.loads(str(call.text).partition(" ")[2])
        except ValueError:
            continue
        for item in items.get("todos") or items.get("plan") or []:
            if isinstance(item, dict):
                text = str(item.get("content") or item.get("step") or item.get("description") or "").strip()
                (done if str(item.get("status")).lower() in ("completed", "done") else listed).add(text)
    return {"checks": {e.check for e in events if e.purpose in CHECKS and e.check},
            "touched": touched, "edited": edited, "done": done, "listed": listed | done}


def before(trajectory: Trajectory, at: int) -> dict:
    prefix = cut(trajectory, at)
    events = analyze(prefix).events
    failing: dict[str, bool] = {}
    for e in events:
        if e.purpose in CHECKS and e.check and e.ok is not None:
            failing[e.check] = e.ok is False
    edited = {rel for e in events if e.purpose is Purpose.EDIT for p in e.call.paths
              if (rel := relative_to(str(p), trajectory.cwd))}
    return {"failing": {k for k, v in failing.items() if v}, "edited": edited,
            "open": set(i.rsplit(" (", 1)[0] for i in build._open_todos(prefix))}


def ratio(hit: int, total: int) -> float | None:
    return hit / total if total else None


def score(named_checks: set[str], named_files: set[str], named_todos: set[str], was: dict, then: dict) -> dict:
    relevant_files = was["edited"] & then["edited"]
    relevant_checks = was["failing"] & then["checks"]
    completed = was["open"] & then["done"]
    return {
        "checks_p": ratio(len(named_checks & then["checks"]), len(named_checks)),
        "checks_r": ratio(len(named_checks & relevant_checks), len(relevant_checks)),
        "files_p": ratio(len(named_files & then["touched"]), len(named_files)),
        "files_r": ratio(len(named_files & relevant_files), len(relevant_files)),
        "todos_p": ratio(len(named_todos & then["listed"]), len(named_todos)),
        "todos_r": ratio(len(named_todos & completed), len(completed)),
    }


def baseline_names(trajectory: Trajectory, at: int, was: dict) -> tuple[set[str], set[str], set[str]]:
    """What the last 1,600 characters of the first part name, of the checks, files and plan items it held."""
    text = "\n".join(str(s.command or s.text) for s in trajectory.steps[:at])[-1600:]
    checks = {c for c in was["failing"] if c in text}
    files = {f for f in was["edited"] if f in text}
    todos = {t for t in was["open"] if t and t[:40] in text}
    return checks, files, todos


def mean(values: list[float | None]) -> str:
    present = [v for v in values if v is not None]
    return f"{statistics.mean(present):.2f} (n={len(present)})" if present else "n/a"


def hook_timing(repeats: int = 15) -> tuple[float, float]:
    """Median seconds of ``python -c pass`` and of ``skillmill hook`` at a session start with a brief to serve."""
    with tempfile.TemporaryDirectory() as tmp:
        home, repo = Path(tmp) / "home", Path(tmp) / "repo"
        (repo / ".git").mkdir(parents=True)
        env = {**os.environ, "SKILLMILL_HOME": str(home), "PYTHONPATH": str(ROOT)}
        os.environ["SKILLMILL_HOME"] = str(home)
        brief = build.withhold_orders({  # as the capture writes one: held to relay's description already
            "id": "0" * 16, "session_id": "old", "agent": "codex", "task": "fix the parser",
            "checks": [{"command": "pytest tests", "ok": False, "exit": 1, "error": "E  AssertionError",
                        "passed_later": False}], "files": ["a.py"], "checkout": str(repo)})

        def once(args: list[str], payload: str | None) -> float:
            started = time.perf_counter()
            subprocess.run(args, input=payload, capture_output=True, text=True, env=env, cwd=tmp, check=False)
            return time.perf_counter() - started

        bare = statistics.median(once([sys.executable, "-c", "pass"], None) for _ in range(repeats))
        times = []
        for n in range(repeats):
            store.save(brief, checkout_root=str(repo), session_id="old")
            payload = json.dumps({"hook_event_name": "SessionStart", "session_id": f"new{n}", "cwd": str(repo)})
            times.append(once([sys.executable, "-m", "pipeline", "hook", "claude-code"], payload))
        return bare, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "trajectories")
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--cuts", type=int, default=3, help="cut points per session")
    parser.add_argument("--show", type=int, default=1, help="print this many of the worst briefs")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rows, base_rows, tokens, worst = [], [], [], []
    found = sessions(args.corpus)
    for trajectory in found:
        for _ in range(args.cuts):
            at = cut_points(trajectory, rng)
            if at is None:
                continue
            was, then = before(trajectory, at), future(trajectory, at)
            brief = build.build(cut(trajectory, at))
            if brief is None:
                rows.append({"task": None, "none": True})
                continue
            named_checks = {c["command"] for c in brief["checks"] if not c["ok"]}
            named_checks = {k for k in was["failing"] if any(k in c or c in k for c in named_checks)} | \
                {c for c in named_checks if c in was["failing"]}
            named = [f for f in [*brief["files"], *(brief.get("looked_at") or [])] if isinstance(f, str)]
            row = score(named_checks, set(named),  # a withheld file or plan item is a marker, not a name
                        {t.rsplit(" (", 1)[0] for t in brief["todos"] if isinstance(t, str)}, was, then)
            row["task"] = brief["task"] == (str(trajectory.task) if trajectory.task else None)
            rows.append(row)
            base_rows.append(score(*baseline_names(trajectory, at, was), was, then))
            text = store.render({**brief, "checkout": ""}, live=False)
            tokens.append(len(text) / 4)
            misses = sum(1 for k in ("files_r", "checks_r", "todos_r") if row.get(k) == 0)
            worst.append((misses, -len(text), trajectory.source_format, str(trajectory.source_path), at, text))
    given = [r for r in rows if not r.get("none")]
    print(f"sessions {len(found)}, cuts {len(rows)}, briefs {len(given)} "
          f"({len(rows) - len(given)} cuts judged finished or with nothing to hand over)")
    print(f"{'':22}{'handoff':>18}{'baseline (last 1,600 chars)':>32}")
    print(f"{'task right':22}{mean([1.0 if r['task'] else 0.0 for r in given]):>18}{'-':>32}")
    for key, label in (("checks_p", "failing checks P"), ("checks_r", "failing checks R"), ("files_p", "files P"),
                       ("files_r", "files R"), ("todos_p", "open items P"), ("todos_r", "open items R")):
        print(f"{label:22}{mean([r[key] for r in given]):>18}{mean([r[key] for r in base_rows]):>32}")
    if tokens:
        print(f"tokens served: median {statistics.median(tokens):.0f}, max {max(tokens):.0f} (cap 400)")
    bare, hook = hook_timing()
    print(f"hook at session start with a brief: {hook * 1000:.0f} ms median; python -c pass {bare * 1000:.0f} ms "
          f"({hook / bare:.1f}x; goal 4x)")
    for misses, _, fmt, path, at, text in sorted(worst, reverse=True)[:args.show]:
        print(f"\n--- worst: {fmt} {path} cut at step {at} ({misses} zero-recall fields) ---\n{text}")


if __name__ == "__main__":
    main()
