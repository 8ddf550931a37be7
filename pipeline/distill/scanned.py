"""What a scan of the checkout wrote into a ``working-in-<repo>`` manual, kept when sessions rebuild it.

A scan (``pipeline.scan``, a floor above) writes items cited by file:line and the notes under
:data:`LAYOUT` and :data:`POINTERS`; the write stage (``distill/write.py``, both distillers)
rebuilds a manual from the sessions' facts and carries them over (:func:`carry`). It lives here,
below the scanner, because the write stage needs it and the scanner builds on distill.
"""

from __future__ import annotations

from pipeline.library.model import Item, Skill, is_file_ref

#: Headings of the notes a scan owns (replaced by the next scan, carried over by session rebuilds).
LAYOUT = "## Layout (from the checkout)"
POINTERS = "## Instruction files (from the checkout)"
OWNED = (LAYOUT, POINTERS)


def scanned(item: Item) -> bool:
    """An item a scan wrote: every citation is a file of the checkout."""
    return bool(item.evidence) and all(is_file_ref(e.trajectory) for e in item.evidence)


def _blocks(text: str, owned: bool) -> str:
    """The notes' blocks a scan owns (``owned``), or all the others."""
    kept: list[str] = []
    inside = False
    for line in text.split("\n"):
        if line.startswith("## "):
            inside = line.strip() in OWNED
        if inside == owned:
            kept.append(line)
    return "\n".join(kept).strip("\n")


def session_notes(text: str) -> str:
    """The notes without the blocks a scan owns."""
    return _blocks(text, owned=False)


def owned_notes(text: str) -> str:
    """Only the blocks a scan owns."""
    return _blocks(text, owned=True)


def carry(draft: Skill, existing: Skill | None) -> Skill:
    """A manual rebuilt from sessions keeps what the last scan wrote (its items and notes)."""
    if existing is None or existing.kind != "repo":
        return draft
    kept = [i for i in existing.procedure if scanned(i)]
    owned = owned_notes(existing.notes)
    if not kept and not owned:
        return draft
    return draft.model_copy(update={"procedure": [*draft.procedure, *kept],
                                    "notes": "\n\n".join(p for p in (session_notes(draft.notes), owned) if p)})
