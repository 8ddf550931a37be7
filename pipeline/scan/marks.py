"""Which approved skills are stale, and why: ``<library>/_stale.json``, read on the hook path.

A mark is evidence, not a decision: the skill file is not touched (it stays approved until a
person deprecates or edits it); recall ranks a marked skill down, the hook never pushes it, and
``review list`` shows it first with the reasons. Imports only the standard library (the hook and
``recall`` read this on every call).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

MARKS_FILE = "_stale.json"
#: A stale skill's score is multiplied by this in recall: still findable, below the fresh ones.
STALE_PRIOR = 0.3

_CACHE: dict[str, tuple[int, dict]] = {}


def load(library: Path | str) -> dict[str, dict]:
    """``name -> {"reasons": [{"kind", "text"}], "checkout", "checked", "by"}``; {} when none or unreadable."""
    file = Path(library) / MARKS_FILE
    try:
        stamp = file.stat().st_mtime_ns
    except OSError:
        return {}
    cached = _CACHE.get(str(file))
    if cached and cached[0] == stamp:
        return cached[1]
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    data = data if isinstance(data, dict) else {}
    _CACHE[str(file)] = (stamp, data)
    return data


def save(library: Path | str, marks: dict[str, dict]) -> None:
    """Write the marks atomically (the file is replaced in one rename)."""
    folder = Path(library)
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".stale.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(marks, handle, indent=1, sort_keys=True)
        os.replace(tmp, folder / MARKS_FILE)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _CACHE.pop(str(folder / MARKS_FILE), None)


def of_path(skill: str) -> dict | None:
    """The mark of an approved skill given its folder ``<library>/<name>`` (as the recall index keeps it)
    or its ``SKILL.md``, if it has one."""
    folder = Path(skill)
    if folder.name == "SKILL.md":
        folder = folder.parent
    mark = load(folder.parent).get(folder.name)
    return mark if mark and mark.get("reasons") else None


def prior(skill: str) -> float:
    """Recall's factor for one skill: :data:`STALE_PRIOR` when it is marked stale, else 1."""
    return STALE_PRIOR if of_path(skill) is not None else 1.0


def demote(hits: list) -> list:
    """Recall hits with stale skills' scores cut by :data:`STALE_PRIOR`, re-sorted (named tuples with
    ``path`` and ``score``). A skill is only ever ranked down, never removed: a person decides."""
    changed = False
    out = []
    for hit in hits:
        if of_path(hit.path) is not None:
            hit = hit._replace(score=round(hit.score * STALE_PRIOR, 6))
            changed = True
        out.append(hit)
    return sorted(out, key=lambda h: -h.score) if changed else hits
