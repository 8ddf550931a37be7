"""Real `skillmill run` processes for the crash and concurrency tests: start, watch stderr, kill.

A run started with ``--progress lines`` prints a line as each stage starts, every 10 % of it,
and as it ends (``skillmill: write: 12/78``). The tests kill on those lines -- what a user's
log shows -- rather than after guessed delays, so each kill lands in the stage it names.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from pipeline.library.store import read_skill
from tests.conftest import ROOT


@dataclass
class Outcome:
    code: int | None
    killed_at: str | None  # the stderr line (or "after N s") that triggered the kill; None: ran to the end
    stdout: str
    stderr: list[str] = field(default_factory=list)

    @property
    def summary(self) -> dict:
        return json.loads(self.stdout.strip().splitlines()[-1])


class Run:
    """``skillmill run --progress lines --json ARGS`` in a process of its own."""

    def __init__(self, args: list[str], env: dict[str, str], out: Path, ctrl_c: bool = False) -> None:
        """``ctrl_c``: SIGINT as a terminal's foreground job has it, even when this test runs where it is ignored
        (a background job of a script: ``make test &``), which the run would inherit."""
        self.out = out
        self._stdout = out.open("w")
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pipeline", "run", "--progress", "lines", "--json", *args],
            stdout=self._stdout, stderr=subprocess.PIPE, text=True, cwd=ROOT,
            env={**env, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"},
            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) if ctrl_c else None)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def until(self, marker: str | float | Callable[[str], bool] | None, timeout: float = 600,
              kill: bool = True) -> Outcome | None:
        """Run until ``marker`` (a regex or a test on a stderr line, or seconds since start) and SIGKILL it.

        ``None``: let it run to the end. ``kill=False``: return None at the marker, the run going on.
        """
        if isinstance(marker, str):
            pattern = re.compile(marker)
            marker = lambda line: pattern.search(line) is not None  # noqa: E731
        if isinstance(marker, int):
            marker = float(marker)
        deadline = time.monotonic() + timeout
        killed_at = None
        while time.monotonic() < deadline:
            if isinstance(marker, float) and time.monotonic() - self.started >= marker:
                killed_at = f"after {marker} s"
                self.process.send_signal(signal.SIGKILL)
                break
            try:
                line = self.lines.get(timeout=0.02)
            except queue.Empty:
                continue
            if line is None:
                break
            self.stderr.append(line)
            if callable(marker) and marker(line):
                if not kill:
                    return None
                killed_at = line
                self.process.send_signal(signal.SIGKILL)
                break
        else:
            self.process.kill()
            raise AssertionError(f"skillmill run did not finish in {timeout} s: {self.stderr[-5:]}")
        code = self.process.wait(timeout=60)
        while (line := self._next()) is not None:
            self.stderr.append(line)
        self._stdout.close()
        return Outcome(code, killed_at, self.out.read_text(), self.stderr)

    def _next(self) -> str | None:
        try:
            return self.lines.get(timeout=2)
        except queue.Empty:
            return None


def processes_of(home: Path) -> list[psutil.Process]:
    """Processes still running with this SKILLMILL_HOME (a run's children: Prefect's server, Dask workers)."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.pid != os.getpid() and proc.environ().get("SKILLMILL_HOME") == str(home):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def warm_processes(home: Path) -> list[psutil.Process]:
    """The warm process a run left for this SKILLMILL_HOME (``pipeline.execution.warm``)."""
    from pipeline.execution import warm

    return [psutil.Process(pid) for pid in warm.pids(home) if psutil.pid_exists(pid)]


def wait_gone(home: Path, timeout: float = 15.0) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while (left := processes_of(home)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def library_files(library: Path) -> dict[str, bytes]:
    """Every file of a library by relative path (the audit log included)."""
    return {str(p.relative_to(library)): p.read_bytes() for p in sorted(library.rglob("*")) if p.is_file()}


def half_written(library: Path) -> list[str]:
    """Skill folders without a readable SKILL.md, and SKILL.md files that do not parse."""
    problems = []
    if not library.is_dir():
        return problems
    for file in library.rglob("SKILL.md"):
        try:
            read_skill(file)
        except Exception as exc:  # noqa: BLE001 -- any failure to read is the finding
            problems.append(f"{file}: {exc}")
    for base in [library, *(library / d for d in ("_candidates", "_deprecated", "_rejected", "_proposed"))]:
        if base.is_dir():
            problems += [str(p) for p in base.iterdir()
                         if p.is_dir() and not p.name.startswith(("_", ".")) and not (p / "SKILL.md").is_file()]
    return problems


def temporary_names(*roots: Path) -> list[str]:
    """Anything that looks like a temporary or staging name, found without skillmill's own pattern."""
    found = []
    for root in roots:
        for p in root.rglob("*"):
            if p.name.endswith((".tmp", ".ndjson", ".wal")) or ".tmp" in p.name:
                found.append(str(p))
    return sorted(found)
