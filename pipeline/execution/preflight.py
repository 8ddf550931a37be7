"""What a run checks before it starts or contacts a Prefect server: each a one-line error in about a second.

Prefect's server takes seconds to start; an error found after it (a folder skillmill cannot
write, a path that does not exist) used to come 35-45 s into the run. ``skillmill run`` checks,
in this order: the named paths exist, the configuration is valid (``config.load``), the folders
it will write (``SKILLMILL_HOME``, the library, Prefect's home when a local server is to start)
can be written, and the run lock is free (``execution.lock``, exit 75). Standard library only.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pipeline.errors import UsageError


def writable(folder: Path, what: str, hint: str) -> None:
    """Raise a :class:`UsageError` (exit 2) unless files can be created in ``folder`` (or where it will be made).

    Tried by creating and removing an empty file, not from permission bits: root ignores those,
    and a read-only mount or a full inode table do not show in them.
    """
    folder = Path(folder).expanduser()
    probe = folder
    while not probe.exists() and not probe.is_symlink() and probe != probe.parent:
        probe = probe.parent  # the nearest folder that exists: the run creates the rest
    if not probe.is_dir():
        where = "is not a folder" if probe == folder else f"cannot be created: {probe} is not a folder"
        raise UsageError(f"{what} {folder} {where}", hint=hint)
    try:
        fd, name = tempfile.mkstemp(prefix=".skillmill-write-check.", dir=probe)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        where = "" if probe == folder else f" (cannot create it in {probe})"
        raise UsageError(f"cannot write to {what} {folder}{where}: {reason}", hint=hint) from None
