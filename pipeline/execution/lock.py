"""One run at a time per ``SKILLMILL_HOME``.

A run holds an exclusive ``flock`` on ``$SKILLMILL_HOME/run.lock`` from its first step to its
last. The kernel releases an ``flock`` when its holder exits in any way, ``kill -9`` included,
so a lock is never stale: the file may stay, but nobody holds it. The holder writes who it is
(pid, host, start time) into the file, so a second run can say what it waits for.

How it composes with the other locks (always taken in this order, so they cannot deadlock):
the run lock covers a whole run; :meth:`pipeline.library.Library.lock` covers each
check-then-write of a skill and is shared with review decisions, so a person can approve
while a run writes; ``recall.duckdb.lock`` serializes publishers of the recall index.
Readers (recall, the review page) take none of them.

``skillmill run`` takes the lock itself, before it starts or contacts a Prefect server (a busy
lock is exit 75 in about a second, and ``--wait`` waits before any server starts), with
``for_process=True``: the flow it then runs in the same process enters its own ``run_lock`` at
once. Flows started any other way (a deployment, ``skillmill schedule``) take it in the flow.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import orjson

from pipeline import private, settings
from pipeline.errors import SkillmillError

LOCK_FILE = "run.lock"
#: sysexits.h EX_TEMPFAIL: "try again later" -- what cron wrappers and schedulers expect for "busy".
EX_TEMPFAIL = 75

#: Lock files this process holds with ``for_process=True``: nested ``run_lock`` calls for them enter at once.
_held_for_process: set[str] = set()


class RunInProgress(SkillmillError):
    """Another run holds the run lock (exit code 75, EX_TEMPFAIL)."""

    exit_code = EX_TEMPFAIL


def lock_path(home: Path | None = None) -> Path:
    return (home or settings.home()) / LOCK_FILE


def holder(home: Path | None = None) -> dict | None:
    """Who holds the run lock now (what it wrote into the file), or None when nobody does."""
    path = lock_path(home)
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(path) or {"pid": None}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def describe(info: dict | None) -> str:
    if not info or not info.get("pid"):
        return "another skillmill run is in progress"
    return (f"another skillmill run is in progress (pid {info['pid']} on {info.get('host', '?')}, "
            f"started {info.get('started_at', '?')})")


@contextlib.contextmanager
def run_lock(home: Path | None = None, *, wait: float = 0.0, poll: float = 0.25,
             on_wait: Callable[[dict | None], None] | None = None, for_process: bool = False) -> Iterator[Path]:
    """Hold the run lock for the ``with`` block; wait up to ``wait`` seconds for it.

    Raises :class:`RunInProgress` when another run still holds it after ``wait``. ``on_wait``
    is called once, with the holder, when the lock is busy and the caller chose to wait.
    ``for_process``: the lock is this process's, so ``run_lock`` calls inside the block (any
    thread: the flow the CLI runs) enter without locking again.
    """
    path = lock_path(home)
    key = str(path.absolute())
    if key in _held_for_process:
        yield path
        return
    private.mkdir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, private.FILE_MODE)  # it says who runs, from where
    private.restrict(path)
    try:
        _acquire(fd, path, wait, poll, on_wait)
        try:
            info = {"pid": os.getpid(), "host": socket.gethostname(),
                    "started_at": datetime.now(UTC).isoformat(timespec="seconds")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, orjson.dumps(info) + b"\n", 0)
            if for_process:
                _held_for_process.add(key)
            yield path
        finally:
            if for_process:
                _held_for_process.discard(key)
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)  # nobody holds it: say so to whoever reads the file
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _acquire(fd: int, path: Path, wait: float, poll: float, on_wait: Callable[[dict | None], None] | None) -> None:
    deadline = time.monotonic() + wait
    told = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            info = _read(path)
            if time.monotonic() >= deadline:
                hint = (f"it ends by itself; waited {wait:.0f} s -- pass a longer --wait" if wait
                        else "it ends by itself; `skillmill run --wait SECONDS` waits for it")
                raise RunInProgress(describe(info), hint=hint) from None
            if on_wait is not None and not told:
                on_wait(info)
                told = True
            time.sleep(min(poll, max(deadline - time.monotonic(), 0.0)))


def _read(path: Path) -> dict | None:
    try:
        data = orjson.loads(path.read_bytes() or b"null")
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None
