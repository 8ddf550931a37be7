"""The review audit log: every decision a person (or a run reopening a rejected skill) made.

Where it lives, and why: ``<library>/_audit.jsonl``, one JSON object per line, append-only.
It is a record, not an index: the DuckDB state is rebuildable from files and may be deleted,
so the log cannot live there (it is mirrored into the ``review_log`` table for queries). It
sits in the library rather than in ``$SKILLMILL_HOME`` because it describes the library's
files: it travels with them when a team shares or commits the library, and its hashes can be
checked against the skill files and ``_history/`` beside it.

Each line carries ``prev``, the SHA-256 of the line before it, so an edited or deleted line
is detected by :meth:`AuditLog.verify`. Appends are serialized with ``flock``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import orjson
from pydantic import BaseModel, Field

from pipeline import private

AUDIT_FILE = "_audit.jsonl"
#: ``reopen`` and ``withdraw`` are a run's: a rejected skill back with new evidence; a candidate of a session
#: version that was superseded (the session grew), taken out of the queue.
#: ``resolve``: a person settled a conflict between two machines' versions (``pipeline.library.sync``).
Action = Literal["approve", "reject", "deprecate", "edit", "restore", "reopen", "withdraw", "resolve"]


class AuditEntry(BaseModel):
    """One decision. ``before``/``after`` are SHA-256 of the SKILL.md bytes (None: no file)."""

    seq: int
    when: datetime
    who: str
    action: Action
    skill: str
    version: int | None = None
    status: str | None = Field(None, description="The skill's status after the decision.")
    target: Literal["skill", "proposal"] = "skill"
    before: str | None = None
    after: str | None = None
    reason: str | None = None
    flags: list[str] = Field(default_factory=list, description="Risk flags the skill had when decided.")
    prev: str | None = Field(None, description="SHA-256 of the previous line: the chain that shows tampering.")

    def contract(self) -> dict:
        """One object of ``skillmill review log --json``."""
        return self.model_dump(mode="json")


def sha256_text(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(file: Path) -> str | None:
    try:
        return hashlib.sha256(file.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


class AuditLog:
    def __init__(self, library_root: Path) -> None:
        self.path = Path(library_root) / AUDIT_FILE

    def append(self, *, who: str, action: Action, skill: str, **fields: object) -> AuditEntry:
        """Add one entry at the end (never rewrites a line); returns it with its seq and chain hash."""
        private.make_folders(self.path.parent)
        # Owner-only, as the skill files beside it: reasons can quote what a skill holds.
        with os.fdopen(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600), "a+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                handle.seek(0)
                lines = [line for line in handle.read().split(b"\n") if line.strip()]
                entry = AuditEntry(seq=len(lines) + 1, when=datetime.now(UTC), who=who, action=action,
                                   skill=skill, prev=hashlib.sha256(lines[-1]).hexdigest() if lines else None,
                                   **fields)  # type: ignore[arg-type]
                handle.seek(0, os.SEEK_END)
                handle.write(orjson.dumps(entry.contract()) + b"\n")
                handle.flush()
                os.fsync(handle.fileno())
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return entry

    def _lines(self) -> Iterator[bytes]:
        with contextlib.suppress(FileNotFoundError), open(self.path, "rb") as handle:
            for line in handle:
                if line.strip():
                    yield line.rstrip(b"\n")

    def entries(self, skill: str | None = None, *, readable_only: bool = False) -> list[AuditEntry]:
        """The decisions, oldest first. A line that is not an entry raises, unless ``readable_only``
        (``review log`` shows the rest; :meth:`verify` names the line)."""
        entries = []
        for line in self._lines():
            try:
                entries.append(AuditEntry.model_validate_json(line))
            except ValueError:
                if not readable_only:
                    raise
        return [e for e in entries if skill is None or e.skill == skill]

    def last(self, skill: str, action: Action | None = None) -> AuditEntry | None:
        for entry in reversed(self.entries(skill)):
            if action is None or entry.action == action:
                return entry
        return None

    def verify(self, merged: bool = False) -> list[str]:
        """Problems with the chain: lines edited, removed, inserted or reordered since they were written.

        ``merged``: the library is shared (``pipeline.library.sync``), and git's union merge interleaves the
        machines' chains: a line may then follow an earlier line rather than the one just above it, and a second
        log may start (``prev`` None, ``seq`` 1); line numbers are checked only in a log no merge touched. (A line
        inserted there is what git's history shows.) Not shared, every line follows the one above it."""
        problems, seq_problems = [], []
        previous: bytes | None = None
        earlier: set[str] = set()
        merged = False
        for number, line in enumerate(self._lines(), 1):
            try:
                entry = AuditEntry.model_validate_json(line)
            except ValueError:
                problems.append(f"line {number} is not a valid audit entry")
                previous = line
                earlier.add(hashlib.sha256(line).hexdigest())
                continue
            expected = hashlib.sha256(previous).hexdigest() if previous is not None else None
            if entry.prev != expected:
                if merged and (entry.prev in earlier or (entry.prev is None and entry.seq == 1)):
                    merged = True  # written on another machine after the line it names
                else:
                    problems.append(f"line {number} (seq {entry.seq}): the line before it was changed or removed")
            if entry.seq != number:
                seq_problems.append(f"line {number} has seq {entry.seq}: lines were removed or reordered")
            previous = line
            earlier.add(hashlib.sha256(line).hexdigest())
        return problems + ([] if merged else seq_problems)
