"""When the command began: what a run's ``wall_s`` ("... s in all") is measured from.

Read from ``/proc`` (the process's start, interpreter and imports included), except in a run a warm
process forked for a client (``warm``): there the client's own start counts, set by :func:`adopt`.
``time.monotonic()`` is one clock for every process on the machine, so the client's value holds.
"""

from __future__ import annotations

import os
import time

_adopted: float | None = None


def process_started() -> float:
    """``time.monotonic()`` at this command's start (from ``/proc`` on Linux; elsewhere: now)."""
    if _adopted is not None:
        return _adopted
    now = time.monotonic()
    try:
        with open("/proc/self/stat", "rb") as stat:
            ticks = int(stat.read().rsplit(b")", 1)[1].split()[19])  # field 22, starttime, in clock ticks since boot
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    return now - age if 0 <= age < 3600 else now


def adopt(started: float) -> None:
    """This process runs a command another process began at ``started`` (``time.monotonic()``)."""
    global _adopted
    _adopted = started


def adopted() -> bool:
    """Whether this process runs a command another process began (a warm process's runner)."""
    return _adopted is not None
