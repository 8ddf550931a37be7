"""The nightly run at scale: N sessions end to end, wall time, peak RSS of the process tree, stages;
and the start-up around the flow's own work (issue 15): cold and warm, beside the code before it.

    PYTHONPATH=. python benchmarks/nightly.py [--sessions 1000] [--runners thread,dask] [--workers 2]
                                              [--parts startup,runners] [--baseline-ref REF]

The input is the shared corpus replicated until it holds ``--sessions`` distinct trajectories:
copy 0 is the corpus itself; each further copy perturbs a harmless field of every session --
timestamps shifted by ``k`` days, or, for formats without timestamps, a ``[copy k]`` note after
the first user message -- so every copy has new content ids (checked: a copy that would be
deduplicated stops the script). Later copies take the files with the fewest sessions first, so
the mix stays that of real agent sessions rather than more of the one Aider history with 980.

Each configuration runs the real CLI (``skillmill run --json --progress lines``) in a fresh
``SKILLMILL_HOME`` as a user would, Prefect's temporary server included, and is measured from
outside: wall time, peak RSS summed over the whole process tree (the run, Prefect's server, Dask's
scheduler and workers; sampled every 50 ms), and the time of each stage from the run's own
progress lines. Then the same run again over the unchanged input (a nightly with nothing new).

Baselines measured in the same run: ``skillmill run`` over an empty folder (the fixed cost:
interpreter, imports, Prefect's server, the flow run) and ``skillmill ingest --json`` over the
same input (reading and parsing alone, no Prefect, no database).
Goal: <= 120 s and <= 1 GB for 1,000 sessions on a 2-core machine.

Part ``startup``: a no-op run (an empty folder) and the 1,000-session run (thread runner), each
cold (a new ``PREFECT_HOME``: the run starts the shared local Prefect server), warm server but a new
process (``SKILLMILL_WARM=0``: the run imports Prefect itself) and warm (the server up, and the run
forked from the warm process an earlier run left, ``pipeline.execution.warm``), against the flow's
own duration (``duration_s`` of the summary):
wall time, the server's start, the overhead (wall - flow), the CPU time of the run's process (and of
what it waited for: a per-run server, not the shared one) -- on a loaded machine wall times grow with
the load, CPU times much less -- and when the first line came. The same
two runs of the code at ``--baseline-ref`` (default: before issue 15's start-up work; ``git
archive`` of ``pipeline`` and ``flows``, run from that copy) show where it started. Then how long
a run takes to refuse: the run lock held (exit 75), a library or ``SKILLMILL_HOME`` it cannot
create (exit 2), a missing path (exit 2). Goal: warm overhead <= 3 s over the flow's work.
The runner comparison (part ``runners``) runs on one warm shared server, so that its rows
compare the runners, not server starts. Every shared server and warm process the script started is
stopped at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import orjson
import psutil

from benchmarks.skill_quality import extract
from pipeline.execution import shared_server, warm
from pipeline.execution.lock import run_lock
from pipeline.ingest import ingest_file

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("SKILLMILL_SHARED", "/work/shared")) / "trajectories"
STAGES = ("discover", "parse", "store", "distill", "write", "index")
GOAL_S, GOAL_MB = 120.0, 1024.0
WARM_OVERHEAD_GOAL_S = 3.0
BASELINE_REF = "d88f3e1"  # main before issue 15's start-up work: a temporary Prefect server in every run

# -- the input: the corpus replicated with distinct content ------------------------------------------
_STAMP = re.compile(r"(\d{4})-(\d{2})-(\d{2})([T ]\d{2}:\d{2}:\d{2})")
_EPOCH_KEYS = {"created", "updated", "completed", "start", "end", "timestamp", "time", "started", "ended"}
_TEXT_KEYS = ("content", "text", "task", "problem_statement", "instruction", "message", "prompt")


def _shift_text(text: str, days: int) -> str:
    def shift(m: re.Match) -> str:
        try:
            day = datetime(int(m[1]), int(m[2]), int(m[3])) + timedelta(days=days)
        except ValueError:
            return m[0]
        return f"{day:%Y-%m-%d}{m[4]}"

    return _STAMP.sub(shift, text)


def _shift_json(value, days: int, key: str = ""):
    if isinstance(value, dict):
        return {k: _shift_json(v, days, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_shift_json(v, days, key) for v in value]
    if isinstance(value, str):
        return _shift_text(value, days)
    if isinstance(value, int) and not isinstance(value, bool) and key.lower() in _EPOCH_KEYS:
        if value > 10**12:
            return value + days * 86_400_000  # epoch milliseconds
        if value > 10**9:
            return value + days * 86_400
    return value


def _note_json(value, note: str, done: list[bool]):
    """Append ``note`` to the first user-ish text of a document (for formats without timestamps)."""
    if done[0]:
        return value
    if isinstance(value, dict):
        if value.get("role") in ("system", "assistant", "tool"):
            return value
        out = {}
        for k, v in value.items():
            if not done[0] and k in _TEXT_KEYS and isinstance(v, str) and v.strip():
                out[k] = v + note
                done[0] = True
            else:
                out[k] = _note_json(v, note, done)
        return out
    if isinstance(value, list):
        return [_note_json(v, note, done) for v in value]
    return value


def perturb(data: bytes, suffix: str, k: int, strategy: str) -> bytes:
    """Copy ``k`` of a file's bytes: ``shift`` timestamps by k days, or ``note`` the first user text."""
    if k == 0:
        return data
    text = data.decode("utf-8", errors="surrogateescape")
    if suffix in (".json", ".traj"):
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError:
            return _shift_text(text, k).encode("utf-8", errors="surrogateescape")
        doc = _shift_json(doc, k) if strategy == "shift" else _note_json(doc, f" [copy {k}]", [False])
        return orjson.dumps(doc)
    if suffix == ".jsonl":
        lines, done = [], [False]
        for line in text.split("\n"):
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                lines.append(_shift_text(line, k))
                continue
            record = _shift_json(record, k) if strategy == "shift" else _note_json(record, f" [copy {k}]", done)
            lines.append(orjson.dumps(record).decode())
        return "\n".join(lines).encode("utf-8", errors="surrogateescape")
    if strategy == "shift":
        return _shift_text(text, k).encode("utf-8", errors="surrogateescape")
    return re.sub(r"(?m)^(#### .+)$", lambda m: f"{m[1]} [copy {k}]", text, count=1).encode()


def _ids(path: Path) -> set[str]:
    return {t.id for t in ingest_file(path)[1]}


def replicate(corpus: Path, out: Path, sessions: int) -> tuple[int, int]:
    """Write copies of ``corpus`` under ``out`` until they hold ``sessions`` distinct trajectories.

    Returns (files written, distinct trajectories). Every file written is read back, so the count
    is what a run will see (sessions that appear in two files of the corpus count once, as in a run).
    """
    files = sorted(p for p in corpus.rglob("*") if p.is_file())
    units = {}  # file -> (trajectories in it, strategy)
    for path in files:
        ids = _ids(path)
        strategy = "shift"
        if ids:
            probe = Path(tempfile.mkdtemp()) / path.name
            for strategy in ("shift", "note"):
                probe.write_bytes(perturb(path.read_bytes(), path.suffix, 1, strategy))
                if not _ids(probe) & ids:
                    break
            else:
                strategy = "skip"  # no distinct copy of it: copy 0 only
            shutil.rmtree(probe.parent)
        units[path] = (len(ids), strategy)
    skipped = [str(p.relative_to(corpus)) for p, (_, s) in units.items() if s == "skip"]
    seen: set[str] = set()
    written, k = 0, 0
    while len(seen) < sessions:
        order = files if k == 0 else sorted((p for p in files if units[p][1] != "skip"),
                                            key=lambda p: (units[p][0], str(p)))
        if k and not order:
            raise SystemExit("nothing in the corpus can be replicated")
        for path in order:
            if k and len(seen) >= sessions:
                break
            count, strategy = units[path]
            target = out / f"copy-{k:03d}" / path.relative_to(corpus)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(perturb(path.read_bytes(), path.suffix, k, strategy))
            written += 1
            if count:
                seen |= _ids(target)
        k += 1
    if skipped:
        print(f"  (not replicated, no distinct copy possible: {', '.join(skipped)})", file=sys.stderr)
    return written, len(seen)


# -- measuring a run from outside ----------------------------------------------------------------------
class TreeRSS:
    """Peak of the summed RSS of a process and all its descendants (and ``also`` with theirs), sampled in a
    thread; and the CPU time of the descendants of ``also`` (a warm process's forks running the command)."""

    def __init__(self, pid: int, every: float = 0.05, also: list[int] | None = None) -> None:
        self.root = psutil.Process(pid)
        self.also = [psutil.Process(p) for p in also or [] if psutil.pid_exists(p)]
        self.forks_cpu: dict[int, float] = {}
        self.peak = 0
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                procs = [self.root, *self.root.children(recursive=True), *self.also]
            except psutil.NoSuchProcess:
                return
            forks = []
            for proc in self.also:
                with contextlib.suppress(psutil.Error):
                    forks += proc.children(recursive=True)
            rss = 0
            for proc in [*procs, *forks]:
                with contextlib.suppress(psutil.Error):
                    rss += proc.memory_info().rss
            for proc in forks:
                with contextlib.suppress(psutil.Error):
                    times = proc.cpu_times()
                    self.forks_cpu[proc.pid] = times.user + times.system
            self.peak = max(self.peak, rss)
            self._stop.wait(self.every)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak / 2**20


def run_cli(args: list[str], home: Path, source: Path = ROOT, **extra: str) -> dict:
    """One ``skillmill`` command in a fresh process (the code in ``source``); its wall time, CPU time, peak tree
    RSS, stage times, first line."""
    env = {**os.environ, "SKILLMILL_HOME": str(home), "PYTHONPATH": str(source), "PYTHONUNBUFFERED": "1", **extra}
    env.pop("PREFECT_API_URL", None)
    if "PREFECT_HOME" not in extra:
        env.pop("PREFECT_HOME", None)  # the default: $SKILLMILL_HOME/prefect (before issue 15: ~/.prefect)
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    # stdout goes to a file, not a pipe: a large --json output would block the child while stderr is read
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen([sys.executable, "-m", "pipeline", *args], stdout=out,
                                stderr=subprocess.PIPE, text=True, env=env, cwd=source)  # -m: cwd comes first
        up = shared_server.read_state(Path(extra["PREFECT_HOME"])) if "PREFECT_HOME" in extra else None
        # a shared server it uses, and a warm process that runs it (its forks), count as its own
        rss = TreeRSS(proc.pid, also=([up["pid"]] if up else []) + warm.pids(home))
        stages: dict[str, float] = {}
        marks: dict[str, float] = {}
        assert proc.stderr is not None
        said: list[str] = []
        for line in proc.stderr:
            marks.setdefault("first", time.monotonic() - started)
            said = [*said[-4:], line.rstrip()]
            if m := re.match(r"skillmill: (\w+): started", line):
                marks.setdefault(f"{m[1]}+", time.monotonic() - started)
            elif m := re.match(r"skillmill: (\w+): done .*in ([\d.]+) s", line):
                stages[m[1]] = float(m[2])
                marks[f"{m[1]}-"] = time.monotonic() - started
        code = proc.wait()
        out.seek(0)
        stdout = out.read()
    wall = time.monotonic() - started
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the run and what it waited for (not a shared server)
    peak = rss.stop()
    cpu = cpu_after.ru_utime + cpu_after.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime + sum(rss.forks_cpu.values())
    last = stdout.strip().splitlines()[-1] if stdout.strip() else "{}"
    try:
        summary = json.loads(last)
    except json.JSONDecodeError:
        summary = {}
    if "discover+" in marks:
        stages["startup"] = marks["discover+"]
    if "index-" in marks:
        stages["shutdown"] = wall - marks["index-"]
    return {"code": code, "wall": wall, "cpu": cpu, "rss_mb": peak, "stages": stages, "summary": summary,
            "first": marks.get("first"), "stderr": said}


# -- start-up: cold, warm, before ---------------------------------------------------------------------
def startup(work: Path, baseline_ref: str, servers: list[Path], sessions: int) -> None:
    """No-op and N-session runs, cold and warm, against the flow's own duration; then the refusals."""
    empty, data = work / "empty", work / "input"
    n = f"{sessions:,}"
    noop = ["run", "--json", "--progress", "lines", str(empty)]

    def full(name: str) -> list[str]:
        return ["run", "--json", "--progress", "lines", str(data), "--library", str(work / f"lib-{name}"),
                "--task-runner", "thread"]

    warm, cold, per_run = work / "prefect-warm", work / "prefect-cold", work / "prefect-per-run"
    servers += [warm, cold, per_run]
    results: dict[str, dict] = {}
    if baseline_ref:
        old = extract(baseline_ref, work / "baseline-code", who="nightly",
                      hint="pass --baseline-ref with a commit of this repository, or --baseline-ref ''")
        results[f"no-op, {baseline_ref} (before)"] = run_cli(noop, work / "home-old-noop", source=old,
                                                              PREFECT_HOME=str(work / "prefect-old"))
        results[f"{n}, {baseline_ref} (before)"] = run_cli(full("old"), work / "home-old", source=old,
                                                              PREFECT_HOME=str(work / "prefect-old"))
    # cold: the run starts the shared server, and leaves the warm process (execution.warm) for the next run;
    # "new process": the server up, but the run imports Prefect itself (SKILLMILL_WARM=0), as before the warm process
    results["no-op, cold"] = run_cli(noop, work / "home-noop", PREFECT_HOME=str(warm))
    results["no-op, warm server, new process"] = run_cli(noop, work / "home-noop", PREFECT_HOME=str(warm),
                                                         SKILLMILL_WARM="0")
    run_cli(noop, work / "home-noop", PREFECT_HOME=str(warm))  # waits for the warm process to finish importing
    results["no-op, warm"] = run_cli(noop, work / "home-noop", PREFECT_HOME=str(warm))
    # [run] server_idle_minutes = 0: a temporary server per run, on a database migrated by the run before
    # (its own Prefect home: two servers must not serve one database)
    for _ in range(2):
        results["no-op, per-run server"] = run_cli(noop, work / "home-per-run", PREFECT_HOME=str(per_run),
                                                   SKILLMILL_SERVER_IDLE_MINUTES="0")
    results[f"{n}, cold"] = run_cli(full("cold"), work / "home-cold", PREFECT_HOME=str(cold))
    results[f"{n}, warm server, new process"] = run_cli(full("new-process"), work / "home-new-process",
                                                        PREFECT_HOME=str(warm), SKILLMILL_WARM="0")
    # a warm process for this home, ready: the first no-op leaves it (importing for ~3 s), the second waits for it
    for _ in range(2):
        run_cli(noop, work / "home-warm", PREFECT_HOME=str(warm))  # reads nothing
    results[f"{n}, warm"] = run_cli(full("warm"), work / "home-warm", PREFECT_HOME=str(warm))
    results[f"{n}, warm, nothing new"] = run_cli(full("warm"), work / "home-warm", PREFECT_HOME=str(warm))

    nan = float("nan")
    print(f"\n{'start-up':<34} {'wall s':>7} {'flow s':>7} {'server s':>8} {'overhead':>8} {'cpu s':>6} "
          f"{'1st line':>8}  server   process")
    for name, r in results.items():
        summary = r["summary"]
        flow = summary.get("duration_s", nan)
        server = summary.get("server_s")
        print(f"{name:<34} {r['wall']:7.1f} {flow:7.1f} {server if server is not None else nan:8.1f} "
              f"{r['wall'] - flow:8.1f} {r['cpu']:6.1f} {r['first'] if r['first'] is not None else nan:8.2f}  "
              f"{summary.get('server') or '-':<8} {summary.get('process') or '-'}"
              + ("" if r["code"] in (0, 1) else f"  (exit {r['code']})"))
        if not summary:
            print("    no summary; its last lines on stderr:\n" + "\n".join(f"    | {x}" for x in r["stderr"]))
    print("(overhead: wall - flow; cpu s: CPU time of the run's process and what it waited for, not of a shared\n"
          " server -- on a loaded machine the wall time of the same work grows, its CPU time much less; with the\n"
          " warm process: the client's and the fork's that ran the command, sampled every 50 ms)")
    for name in ("no-op, warm", f"{n}, warm", f"{n}, warm, nothing new"):
        r = results[name]
        over = r["wall"] - r["summary"].get("duration_s", nan)
        print(f"{name}: overhead {over:.1f} s over the flow's work -> "
              f"{'within' if over <= WARM_OVERHEAD_GOAL_S else 'OVER'} the goal ({WARM_OVERHEAD_GOAL_S:.0f} s) "
              f"at load {os.getloadavg()[0]:.1f}")

    print(f"\n{'refused (no server started)':<46} {'exit':>4} {'wall s':>7}  first line of stderr")
    home, blocker = work / "home-refused", work / "not-a-folder"
    blocker.write_text("a file where a folder should be\n")
    cases = [("lock held by another run", noop, home, {}),
             ("library cannot be created", [*noop, "--library", str(blocker / "skills")], home, {}),
             ("SKILLMILL_HOME cannot be created", noop, blocker / "home", {}),
             ("PREFECT_HOME cannot be created", noop, home, {"PREFECT_HOME": str(blocker / "prefect")}),
             ("a path that does not exist", ["run", "--progress", "lines", str(work / "nowhere")], home, {})]
    for name, args, where, extra in cases:
        with run_lock(home) if name.startswith("lock") else contextlib.nullcontext():
            r = _refusal(args, where, **{"PREFECT_HOME": str(warm), **extra})
        print(f"{name:<46} {r['code']:>4} {r['wall']:7.2f}  {r['line'][:90]}")


def _refusal(args: list[str], home: Path, **extra: str) -> dict:
    env = {**os.environ, "SKILLMILL_HOME": str(home), "PYTHONPATH": str(ROOT), **extra}
    env.pop("PREFECT_API_URL", None)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True, env=env, cwd=ROOT)
    lines = done.stderr.strip().splitlines()
    return {"code": done.returncode, "wall": time.monotonic() - started, "line": lines[0] if lines else ""}


def line(name: str, r: dict) -> str:
    s = r["stages"]
    cells = " ".join(f"{s.get(k, float('nan')):7.1f}" for k in ("startup", *STAGES, "shutdown"))
    return f"{name:<22} {r['wall']:7.1f} {r['rss_mb']:8.0f} {cells}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--runners", default="thread,dask")
    parser.add_argument("--workers", type=int, default=2, help="threads or Dask worker processes ([run] concurrency)")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (input, homes, libraries)")
    parser.add_argument("--parts", default="startup,runners", help="startup, runners, or both")
    parser.add_argument("--baseline-ref", default=BASELINE_REF,
                        help=f"code to compare start-up with (default {BASELINE_REF}; '' for none)")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    servers: list[Path] = []

    work = Path(tempfile.mkdtemp(prefix="skillmill-nightly-bench-"))
    try:
        clock = time.monotonic()
        files, sessions = replicate(args.corpus, work / "input", args.sessions)
        size = sum(p.stat().st_size for p in (work / "input").rglob("*") if p.is_file()) / 2**20
        print(f"input: {files} files, {sessions} sessions, {size:.1f} MB (made in {time.monotonic() - clock:.1f} s)")
        print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")

        (work / "empty").mkdir()
        if "startup" in parts:
            startup(work, args.baseline_ref, servers, sessions)
        if "runners" in parts:
            runners(args, work, servers)
        print(f"machine load at the end: {os.getloadavg()[0]:.1f}")
    finally:
        for folder in servers:
            shared_server.stop_shared(folder)
        for pid in warm.pids(under=work):  # the warm processes its runs left
            warm.stop(pid)
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def runners(args: argparse.Namespace, work: Path, servers: list[Path]) -> None:
    """Thread vs Dask on the 1,000 sessions, each run on one warm shared Prefect server."""
    prefect = work / "prefect-runners"
    servers.append(prefect)
    shared = {"PREFECT_HOME": str(prefect)}
    run_cli(["run", "--progress", "none", str(work / "empty")], work / "home-warm-up", **shared)  # starts the server
    results = {"baseline: empty run": run_cli(["run", "--json", "--progress", "lines", str(work / "empty")],
                                              work / "home-empty", **shared),
               "baseline: ingest only": run_cli(["ingest", "--json", str(work / "input")], work / "home-ingest")}
    for runner in args.runners.split(","):
        home = work / f"home-{runner}"
        cmd = ["run", "--json", "--progress", "lines", str(work / "input"), "--library", str(work / f"lib-{runner}"),
               "--task-runner", runner, "--concurrency", str(args.workers)]
        results[f"{runner} ({args.workers})"] = first = run_cli(cmd, home, **shared)
        results[f"{runner} ({args.workers}) again"] = run_cli(cmd, home, **shared)
        t, k = first["summary"].get("trajectories", {}), first["summary"].get("skills", {})
        print(f"  {runner}: exit {first['code']}, {t.get('seen')} trajectories ({t.get('new')} new), "
              f"{k.get('proposed')} skills proposed")

    heads = " ".join(f"{h:>7}" for h in ("startup", *STAGES, "exit"))
    print(f"\n{'run':<22} {'wall s':>7} {'peak MB':>8} {heads}   (stage columns: seconds)")
    for name, result in results.items():
        print(line(name, result))
    for name, result in results.items():
        if name.startswith("baseline") or name.endswith("again"):
            continue
        ok = result["wall"] <= GOAL_S and result["rss_mb"] <= GOAL_MB
        print(f"{name}: {result['wall']:.1f} s, {result['rss_mb']:.0f} MB -> "
              f"{'within' if ok else 'OVER'} the goal ({GOAL_S:.0f} s, {GOAL_MB:.0f} MB)")
    libraries = [work / f"lib-{r}" for r in args.runners.split(",")]
    if len(libraries) > 1:
        same = len({tuple(sorted((str(p.relative_to(lib)), p.read_bytes()) for p in lib.rglob("*") if p.is_file()))
                    for lib in libraries}) == 1
        print(f"libraries identical across runners: {same}")


if __name__ == "__main__":
    main()
