"""A review decision on disk that the recall index may not show yet, and its repair.

A decision moves files first (``review deprecate`` moves ``<library>/NAME`` to
``_deprecated/NAME``), then republishes the recall index. A process killed in between (``kill
-9``, a closed terminal, a full disk) leaves an index that still serves the deprecated skill to
every hook, MCP call and recall. So a decision writes a marker, ``recall.pending`` beside the
index, before it changes any file; a publish that read the library after the marker was written
removes it. The next command that serves or decides (``recall``, ``mcp``, ``review``, ``run``,
``index``) sees the marker with one ``stat`` and republishes (``pipeline.agents.repair``). While the marker
is there, readers also skip a library skill whose folder is gone (``search.RecallIndex``), so
even the hook, which has no time to republish, never serves a skill that was moved away.

Standard library only at import: ``recall`` checks the marker at every prompt.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from pipeline import settings

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing on the recall path
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

MARKER = "recall.pending"


def marker() -> Path:
    return settings.recall_index_path().with_name(MARKER)


def mark(library_root: Path) -> None:
    """Say that ``library_root`` is about to change and the index has to follow (replaced atomically)."""
    from datetime import UTC, datetime

    from pipeline import atomic, private

    data = {"library": str(library_root), "since": datetime.now(UTC).isoformat(timespec="seconds"),
            "pid": os.getpid()}
    private.mkdir(marker().parent)
    atomic.write(marker(), json.dumps(data) + "\n")


def behind() -> bool:
    """Whether a decision may be on disk that the published index does not show (one ``stat``)."""
    return marker().exists()


def read() -> dict[str, Any] | None:
    """The marker's content, or None when no decision waits for a publish."""
    try:
        text = marker().read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError:
        return {"library": None}
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    return data if isinstance(data, dict) else {"library": None}


def _token() -> tuple[int, int] | None:
    """Which marker this is: every ``mark`` replaces the file, so a new one has a new inode."""
    try:
        info = marker().stat()
    except FileNotFoundError:
        return None
    return info.st_ino, info.st_mtime_ns


@contextlib.contextmanager
def publishing(library: Any) -> Iterator[None]:
    """Wrap a publish of ``library``'s files; when it succeeds, the marker it started with is removed.

    The marker is noted under the library lock, so every decision marked before it is on disk
    before the publish reads the library, and one marked after it replaces the marker (a new
    inode) and is left for its own publish.
    """
    if Path(library.root).is_dir():
        with library.lock():
            token = _token()
    else:  # no library yet (``skillmill index --skills DIR`` on a new home): no decision to wait for, no lock file
        token = _token()
    yield
    if token is not None and _token() == token:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(marker())
