"""What a killed run leaves behind, removed by the next run before it starts.

Every write of a run is atomic: a file is written under a temporary name and renamed into
place (``library.store.atomic_write``), a new skill folder is assembled under a temporary
name and renamed (``_atomic_new_folder``), bulk inserts stage rows in an NDJSON file
(``index.db.bulk_insert``), the recall index is built in a temporary file and renamed over
the old one (``recall.index``). A ``kill -9`` between the two steps leaves the temporary name
behind, never a half-written skill. Those names all come from ``tempfile`` with our prefixes,
so they are recognised exactly: ``.<name>.<8 random characters>.tmp`` (or ``.ndjson``, and
the ``.wal`` DuckDB keeps beside a database being built).

The caller holds the run lock and the state database (so no other run or ``skillmill index``
writes these folders); :func:`clean` also takes the library lock (review decisions write with
it) and the recall publish lock, so it never removes a file another process is writing.
Prefect's temporary server and Dask's local workers need no cleaning: they stop with the run
(``server.py``; distributed's worker processes exit when their parent does).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

from pipeline import settings
from pipeline.library.store import Library
from pipeline.recall.index import publish_lock

log = logging.getLogger(__name__)

#: tempfile.mkstemp/mkdtemp names: prefix "." + a name + ".", 8 characters of [a-z0-9_], our suffix.
TEMPORARY = re.compile(r"^\..+\.[a-z0-9_]{8}\.(tmp|ndjson)(\.wal)?$")


def leftovers(home: Path | None = None, library: Path | None = None) -> list[Path]:
    """Temporary files and staging folders under the state folder and the library."""
    home = home or settings.home()
    found: list[Path] = []
    for folder in (home, home / "tmp"):  # the recall index is built in home, bulk inserts stage in home/tmp
        found += _matches(folder)
    if library is not None:
        found += list(_walk(library))
    return sorted(set(found))


def clean(home: Path | None = None, library: Path | None = None) -> list[Path]:
    """Remove what :func:`leftovers` finds, holding the library and recall publish locks; return it."""
    home = home or settings.home()
    removed: list[Path] = []
    with contextlib.ExitStack() as stack:
        if library is not None and library.is_dir():
            stack.enter_context(Library(library).lock())
        stack.enter_context(publish_lock(settings.recall_index_path()))
        for path in leftovers(home, library):
            try:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                log.warning("cannot remove %s left by an interrupted run: %s", path, exc)
                continue
            removed.append(path)
    if removed:
        log.info("removed %d temporary files left by an interrupted run", len(removed))
    return removed


def _matches(folder: Path) -> list[Path]:
    try:
        with os.scandir(folder) as entries:
            return [Path(e.path) for e in entries if TEMPORARY.match(e.name)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _walk(root: Path) -> Iterator[Path]:
    """Temporary names anywhere in the library; other hidden folders (``.git``) are not entered."""
    for folder, dirs, files in os.walk(root):
        keep = []
        for name in dirs:
            if TEMPORARY.match(name):
                yield Path(folder, name)
            elif not name.startswith("."):
                keep.append(name)
        dirs[:] = keep
        yield from (Path(folder, name) for name in files if TEMPORARY.match(name))
