"""What a run checks before it starts or contacts a Prefect server: each a one-line error in about a second.

Prefect's server takes seconds to start; an error found after it (a folder skillmill cannot
write, a path that does not exist) used to come 35-45 s into the run. ``skillmill run`` checks,
in this order: the named paths exist, the configuration is valid (``config.load``), the folders
it will write (``SKILLMILL_HOME``, the library, Prefect's home when a local server is to start)
can be written, and the run lock is free (``execution.lock``, exit 75). A folder that cannot be
written is said as every command says it (``errors.NotWritable``, ``errors.NoSpace``): one line
naming it and what to do, exit 2.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path

from pipeline.errors import NoSpace, UsageError, not_writable

#: Written by the probe: an empty file takes no block, so a full disk would let it through. Not synced
#: (10-20 ms a folder, more on a busy disk): tmpfs allocates at write, ext4/XFS/btrfs reserve blocks then.
PROBE_BYTES = 4096


def writable(folder: Path, what: str, *, advice: str | None = None, space_advice: str | None = None,
             elsewhere: str | None = None) -> None:
    """Raise (exit 2) unless a file with data can be written in ``folder`` (or where it will be made).

    Tried by creating, filling and removing a small file, not from permission bits: root
    ignores those, and a read-only mount or a full disk do not show in them. ``advice`` and
    ``space_advice`` replace the default what-to-do (which names SKILLMILL_HOME/--library);
    ``elsewhere`` says how to choose another folder, the hint when the path is not a folder at all.
    """
    folder = Path(folder).expanduser()
    probe = folder
    while not probe.exists() and not probe.is_symlink() and probe != probe.parent:
        probe = probe.parent  # the nearest folder that exists: the run creates the rest
    if not probe.is_dir():
        where = "is not a folder" if probe == folder else f"cannot be created: {probe} is not a folder"
        raise UsageError(f"{what} {folder} {where}", hint=elsewhere)
    name = None
    try:
        fd, name = tempfile.mkstemp(prefix=".skillmill-write-check.", dir=probe)
        try:
            os.write(fd, b"\0" * PROBE_BYTES)
        finally:
            os.close(fd)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise NoSpace(probe, advice=space_advice) from None
        refused = not_writable(OSError(exc.errno, exc.strerror), [folder], advice=advice)
        if refused is not None:
            raise refused from None
        reason = exc.strerror or type(exc).__name__
        where = "" if probe == folder else f" (cannot create it in {probe})"
        raise UsageError(f"cannot write to {what} {folder}{where}: {reason}", hint=elsewhere) from None
    finally:
        if name is not None:
            with contextlib.suppress(OSError):
                os.unlink(name)
