"""Files of agents skillmill does not read yet, recognised by content so the report can say so.

A file no format claims is "not a trajectory of any known format" -- unless its content is that of
an agent we know of but have no reader for (see ../shared/docs/trajectory-formats-newer.md): then
the report says ``looks like a Kiro CLI conversation export: not read yet``, so the person knows the
file was seen and why nothing came of it, rather than thinking skillmill missed or broke it. These
checks run only after every registered format declined the file, so once a reader for one of these
agents is registered, its files never get here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.ingest.reader import Probe

__all__ = ["LOOKALIKES", "Lookalike", "looks_like"]


@dataclass(frozen=True)
class Lookalike:
    """An agent's file we recognise but do not read: ``agent`` and ``thing`` name it in the report."""

    agent: str
    thing: str
    test: Callable[[Probe], bool]

    @property
    def reason(self) -> str:
        article = "an" if self.agent[:1] in "AEIOU" else "a"
        return f"looks like {article} {self.agent} {self.thing}: not read yet"


def _record(probe: Probe, index: int = 0) -> dict[str, Any]:
    """The ``index``-th JSON line of the file's head (or the whole document for ``index`` 0)."""
    records = [r for r in probe.records if isinstance(r, dict)]
    if index < len(records):
        return records[index]
    return probe.document if index == 0 and isinstance(probe.document, dict) else {}


def _object_with(probe: Probe, *keys: str, arrays: tuple[str, ...] = ()) -> bool:
    """A JSON document whose first object has all ``keys`` and the ``arrays`` as arrays."""
    if probe.first_char != "{":
        return False
    fields = probe.fields
    return all(k in fields for k in keys) and all(fields.kind(a) == "array" for a in arrays)


_CLINE_MD_USER = re.compile(r"^\*\*User:\*\*\s*$", re.M)
_CLINE_MD_TOOL = re.compile(r"<task>|^\[[a-z_]+(?: for [^\]\n]*)?\] Result:", re.M)


def _cline_markdown(probe: Probe) -> bool:
    """``cline_task_<date>.md`` / ``roo_task_*.md``: ``**User:**`` / ``**Assistant:**`` sections."""
    text = probe.text
    return bool(_CLINE_MD_USER.search(text)) and "**Assistant:**" in text and bool(_CLINE_MD_TOOL.search(text))


def _amp(probe: Probe) -> bool:
    if not _object_with(probe, "id", arrays=("messages",)):
        return False
    thread = probe.fields.text("id")
    return bool(thread and thread.startswith("T-")) and ("v" in probe.fields or "agentMode" in probe.fields)


def _goose_projects(probe: Probe) -> bool:
    value = _record(probe).get("projects")
    return isinstance(value, dict) and any(isinstance(p, dict) and "last_session_id" in p for p in value.values())


def _droid(probe: Probe) -> bool:
    first = _record(probe)
    return first.get("type") == "session_start" and "cwd" in first and "id" in first


def _droid_settings(probe: Probe) -> bool:
    return _object_with(probe, "autonomyMode") and ("reasoningEffort" in probe.fields or "model" in probe.fields)


_CURSOR_KEYS = ("composer.composerData", "aiService.prompts", "workbench.panel.aichat.view.aichat.chatdata",
                "composerData:", "bubbleId:")


def _cursor_dump(probe: Probe) -> bool:
    """Rows of Cursor's ``state.vscdb`` exported as JSON (not the database itself)."""
    return probe.first_char in ("{", "[") and any(f'"{key}' in probe.text for key in _CURSOR_KEYS)


#: SQLite stores by their usual name: the database header says what the file is, its name whose.
_SQLITE_STORES = {"data.sqlite3": "Kiro CLI / Amazon Q CLI"}  # Crush, OpenCode, Goose, Cursor: read now


def _sqlite(probe: Probe) -> bool:
    return probe.head.startswith(b"SQLite format 3")


#: In the order asked; the first that matches names the file.
LOOKALIKES: tuple[Lookalike, ...] = (
    Lookalike("Cline / Roo Code", "task exported as Markdown", _cline_markdown),
    Lookalike("Amp", "thread", _amp),
    Lookalike("Goose", "project index (projects.json)", _goose_projects),
    Lookalike("Factory Droid", "session", _droid),
    Lookalike("Factory Droid", "session settings file", _droid_settings),
    Lookalike("Cursor", "state database exported as JSON", _cursor_dump),
)


def looks_like(probe: Probe) -> str | None:
    """Why a file no format reads is still recognised (``looks like a <agent> <thing>: not read
    yet``), or None when nothing we know of writes files like it."""
    for lookalike in LOOKALIKES:
        try:
            if lookalike.test(probe):
                return lookalike.reason
        except (TypeError, AttributeError, ValueError):
            continue  # an odd shape is not this agent's
    if _sqlite(probe):
        store = _SQLITE_STORES.get(probe.path.name)
        return f"looks like a {store} SQLite database: not read yet" if store else \
            "a SQLite database of no agent skillmill reads"
    return None
