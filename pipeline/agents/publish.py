"""After a review decision, what agents read follows it: the recall index and every remembered export.

The index is republished as a run ends (``pipeline.recall.publish``); the copies in agents' skills
folders (``pipeline.agents.export.refresh_all``) are this floor's, so both are done here, once:
``pipeline.review`` calls :func:`republish` after each decision, and ``pipeline.agents.repair``
calls it for a decision killed before it could.
"""

from __future__ import annotations

from pipeline.agents.export import refresh_all
from pipeline.library.store import Library
from pipeline.recall.publish import republish as republish_index


def republish(library: Library) -> int:
    """Rebuild what agents read from the library's files (the recall index and every remembered
    export into agents' folders); returns the number of skills indexed."""
    count = republish_index(library)
    refresh_all(library.root)
    return count
