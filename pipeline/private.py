"""Owner-only files and folders: what skillmill keeps holds text from people's sessions.

The state database (steps, commands, tool output), the recall index and its serving
snapshot (skill text), logs (error messages quote what they choked on) and run snapshots are
readable by their owner only, as skill files already are (``atomic.write`` creates them through
``mkstemp``, mode 0600): files 0600, folders 0700. ``$SKILLMILL_HOME`` itself is kept 0700, so
what other programs create in it (DuckDB's write-ahead log, its spill files) is covered too.

Standard library only: the hook and ``recall`` log through it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    from typing import IO

FILE_MODE = 0o600
DIR_MODE = 0o700


def mkdir(folder: Path) -> Path:
    """Create ``folder`` and any missing parents owner-only; a folder of ours found open to others is closed."""
    missing = []
    parent = Path(folder)
    while not parent.exists() and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    for path in reversed(missing):
        path.mkdir(mode=DIR_MODE, exist_ok=True)
    restrict(folder, DIR_MODE)
    return folder


def restrict(path: Path, mode: int = FILE_MODE) -> None:
    """Make ``path`` owner-only if it has group or other bits (a missing file is not an error)."""
    with contextlib.suppress(FileNotFoundError, PermissionError):
        if os.stat(path).st_mode & 0o077:
            os.chmod(path, mode)


def open_file(path: Path, mode: str = "ab", *, encoding: str = "utf-8") -> IO:
    """``open(path, mode)`` for writing, creating the file 0600 (and its folder 0700) if it is new."""
    mkdir(path.parent)
    flags = os.O_CREAT | (os.O_RDWR if "+" in mode else os.O_WRONLY)
    flags |= os.O_APPEND if "a" in mode else (os.O_TRUNC if "w" in mode else 0)
    fd = os.open(path, flags, FILE_MODE)
    try:
        restrict(path)  # an older file, created before this rule
        return os.fdopen(fd, mode, encoding=None if "b" in mode else encoding)
    except BaseException:
        os.close(fd)
        raise


def write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path``, owner-only."""
    with open_file(path, "wb") as handle:
        handle.write(text.encode("utf-8"))
