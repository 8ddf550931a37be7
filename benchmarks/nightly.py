"""The nightly run at scale: N sessions end to end, wall time, peak RSS of the process tree, stages.

    PYTHONPATH=. python benchmarks/nightly.py [--sessions 1000] [--runners thread,dask] [--workers 2]

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
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
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

from pipeline.ingest import ingest_file

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("SKILLMILL_SHARED", "/work/shared")) / "trajectories"
STAGES = ("discover", "parse", "store", "distill", "write", "index")
GOAL_S, GOAL_MB = 120.0, 1024.0

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
    """Peak of the summed RSS of a process and all its descendants, sampled in a thread."""

    def __init__(self, pid: int, every: float = 0.05) -> None:
        self.root = psutil.Process(pid)
        self.peak = 0
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            rss = 0
            for proc in procs:
                with contextlib.suppress(psutil.Error):
                    rss += proc.memory_info().rss
            self.peak = max(self.peak, rss)
            self._stop.wait(self.every)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak / 2**20


def run_cli(args: list[str], home: Path) -> dict:
    """One ``skillmill`` command in a fresh process; its wall time, peak tree RSS and stage times."""
    env = {**os.environ, "SKILLMILL_HOME": str(home), "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    env.pop("PREFECT_API_URL", None)
    started = time.monotonic()
    # stdout goes to a file, not a pipe: a large --json output would block the child while stderr is read
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen([sys.executable, "-m", "pipeline", *args], stdout=out,
                                stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        rss = TreeRSS(proc.pid)
        stages: dict[str, float] = {}
        marks: dict[str, float] = {}
        assert proc.stderr is not None
        for line in proc.stderr:
            if m := re.match(r"skillmill: (\w+): started", line):
                marks.setdefault(f"{m[1]}+", time.monotonic() - started)
            elif m := re.match(r"skillmill: (\w+): done .*in ([\d.]+) s", line):
                stages[m[1]] = float(m[2])
                marks[f"{m[1]}-"] = time.monotonic() - started
        code = proc.wait()
        out.seek(0)
        stdout = out.read()
    wall = time.monotonic() - started
    peak = rss.stop()
    last = stdout.strip().splitlines()[-1] if stdout.strip() else "{}"
    try:
        summary = json.loads(last)
    except json.JSONDecodeError:
        summary = {}
    if "discover+" in marks:
        stages["startup"] = marks["discover+"]
    if "index-" in marks:
        stages["shutdown"] = wall - marks["index-"]
    return {"code": code, "wall": wall, "rss_mb": peak, "stages": stages, "summary": summary}


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
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="skillmill-nightly-bench-"))
    try:
        clock = time.monotonic()
        files, sessions = replicate(args.corpus, work / "input", args.sessions)
        size = sum(p.stat().st_size for p in (work / "input").rglob("*") if p.is_file()) / 2**20
        print(f"input: {files} files, {sessions} sessions, {size:.1f} MB (made in {time.monotonic() - clock:.1f} s)")
        print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")

        (work / "empty").mkdir()
        results = {"baseline: empty run": run_cli(["run", "--json", "--progress", "lines", str(work / "empty")],
                                                  work / "home-empty"),
                   "baseline: ingest only": run_cli(["ingest", "--json", str(work / "input")], work / "home-ingest")}
        for runner in args.runners.split(","):
            home = work / f"home-{runner}"
            cmd = ["run", "--json", "--progress", "lines", str(work / "input"), "--library", str(work / f"lib-{runner}"),
                   "--task-runner", runner, "--concurrency", str(args.workers)]
            results[f"{runner} ({args.workers})"] = first = run_cli(cmd, home)
            results[f"{runner} ({args.workers}) again"] = run_cli(cmd, home)
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
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
