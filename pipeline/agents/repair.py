"""Repair a review decision whose publish never happened (``pipeline.recall.pending`` keeps its marker).

The repair republishes all that the decision would have: the recall index and agents' exported
folders (``pipeline.agents.publish``), so it lives on the agents' floor, above recall. ``recall``
(handed :func:`repair_or_warn` by the executable, ``pipeline.entry``, and by the command group),
``mcp`` and ``review`` ask at every call.

Standard library only at import, like ``pending``: only a marker left behind makes it import the
publisher (DuckDB, the library).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from pipeline.recall.pending import marker, read


def repair() -> bool:
    """Republish when a decision's publish never happened; True when it did. Cheap when there is nothing to do.

    Skipped while the library is locked (a decision is being taken right now: it publishes
    itself) or when the marker names no library that exists.
    """
    found = read()
    if found is None:
        return False
    root = Path(found["library"]) if found.get("library") else None
    if root is None or not root.is_dir():
        with contextlib.suppress(FileNotFoundError):
            os.unlink(marker())  # nothing to follow: a library removed, or a marker we cannot read
        return False
    from pipeline.agents.publish import republish
    from pipeline.library import Library

    library = Library(root)
    with library.try_lock() as held:
        if not held or read() is None:
            return False
        republish(library)
    return True


def repair_or_warn() -> None:
    """:func:`repair`, saying on stderr what it did or why it could not; it never stops the command."""
    import sys

    try:
        if repair():
            sys.stderr.write("skillmill: republished the recall index: a review decision had not reached it "
                             "(the command that took it was interrupted)\n")
    except Exception as exc:  # the command itself (a recall, a review) must still run
        sys.stderr.write(f"skillmill: the recall index may be behind the library ({type(exc).__name__}: {exc}); "
                         "`skillmill index` republishes it\n")
