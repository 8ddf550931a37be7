"""Files replaced atomically: written under a temporary name beside the target, synced, renamed.

A reader sees the old file or the new one, never half of one. A writer killed between the two
steps leaves ``.<name>.<8 characters>.tmp`` behind, a name the next run recognises and removes
(``pipeline/execution/recovery.py``). Standard library only: the feedback journal and the run
snapshot use it without importing the skill library.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from pipeline import private


def write(file: Path, data: str | bytes) -> None:
    """Replace ``file`` with ``data`` (text is written as UTF-8), creating its folder if needed."""
    private.make_folders(file.parent)  # new folders owner-only, as the file (mkstemp: 0600)
    fd, tmp = tempfile.mkstemp(prefix=f".{file.name}.", suffix=".tmp", dir=file.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, file)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if exc.filename is None:  # a failed write names no file: say which one (a full disk, say where)
            raise OSError(exc.errno, exc.strerror, str(file)) from exc
        raise
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
