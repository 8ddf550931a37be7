"""What agents say about the skills they were given: stored, never lost, never blocking.

``skill_feedback`` (MCP) may be called while a nightly run holds the state database: DuckDB
then refuses every other process, and even a short write from here could make a starting run
fail. So feedback is first written to a journal, one small JSON file per verdict under
``$SKILLMILL_HOME/feedback/`` (atomic, fsynced), and the process that owns the state database
(the run's index stage, ``skillmill index``) moves it into the ``skill_feedback`` table.

Feedback feeds ranking (a prior published with the recall index: recently helpful skills rise,
wrong or stale ones sink, with a 30-day half-life) and review (``events()`` lists it).

Notes come from agents, which paste what they saw: a note is redacted before it is journaled
(and again whenever one is read back, for journals written before that), and at most
``MAX_NOTE`` characters long -- ``record`` refuses a longer one, or cuts it with ``cut=True``
(the MCP tool: an agent's verdict is worth keeping even when its note is a whole log).
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline import atomic, private, settings
from pipeline.errors import UsageError
from pipeline.index import migrations

VERDICTS = ("helpful", "not_helpful", "wrong", "stale")
#: How much one fresh verdict moves a skill's prior.
EFFECT = {"helpful": 0.15, "not_helpful": -0.1, "wrong": -0.3, "stale": -0.2}
HALF_LIFE_DAYS = 30.0
PRIOR_RANGE = (0.3, 1.5)
COLUMNS = ("id", "skill", "path", "verdict", "note", "source", "created_at")
#: A note says what happened in a few sentences; a log belongs elsewhere.
MAX_NOTE = 4000
#: Skill names are at most 64 characters (Agent Skills); a path recall gave is longer.
MAX_NAME = 300
#: Redacted before cutting: a secret cut in half would no longer be recognised.
_REDACT_WINDOW = MAX_NOTE + 2000


def journal_dir() -> Path:
    return settings.home() / "feedback"


def check(skill: str, note: str = "", *, cut: bool = False) -> None:
    """Refuse what ``record`` would refuse, before any work is done with it (a search by name)."""
    if len(skill) > MAX_NAME:
        raise UsageError(f"the skill name is {len(skill):,} characters long; names have at most {MAX_NAME}",
                         hint="give the skill's name as recall_skills or `skillmill recall` shows it")
    if len(note) > MAX_NOTE and not cut:
        raise UsageError(f"the note is {len(note):,} characters long; notes are limited to {MAX_NOTE:,}",
                         hint="say in a few sentences what happened with the skill (no logs or transcripts)")


def check_known(skill: str) -> None:
    """Refuse a verdict on a skill neither the recall index nor the library holds (``feedback add``).

    A mistyped name would be journaled and count for nothing. The MCP tool keeps such a verdict
    anyway (an agent's words are worth keeping); a person at the shell is told instead.
    """
    from pipeline import config
    from pipeline.errors import IndexError_
    from pipeline.library import Library
    from pipeline.recall import RecallIndex

    try:
        with RecallIndex(slow_embedders=False) as index:
            if index.get(skill, include_candidates=True):
                return
    except IndexError_:  # no index (yet): the library may still hold it
        pass
    library = config.load({}).library
    root = Path(library).expanduser() if library else settings.library_dir()
    if root.is_dir() and Library(root).get(skill) is not None:
        return
    raise UsageError(f"no skill named {skill!r} in the recall index or in {root}",
                     hint="`skillmill recall TASK` shows the skills agents are given; "
                          "`skillmill review list --status all` every skill in the library")


def clean_note(note: str) -> str:
    """A note as it is stored and shown: redacted, and cut to ``MAX_NOTE`` characters."""
    from pipeline.redact import redact

    if len(note) <= MAX_NOTE:
        return redact(note)
    marker = f" [... note cut: {len(note):,} characters, at most {MAX_NOTE:,} kept]"
    return redact(note[:_REDACT_WINDOW])[:MAX_NOTE - len(marker)] + marker


def record(skill: str, verdict: str, note: str = "", *, path: str | None = None, source: str = "cli",
           cut: bool = False) -> dict[str, Any]:
    """Journal one verdict and return it. Returns at once; never touches the state database.

    The note is redacted; one longer than ``MAX_NOTE`` raises :class:`UsageError`, or with
    ``cut`` is cut to that length (``event["note"]`` then ends with a marker saying so).
    """
    from pipeline.redact import redact

    if verdict not in VERDICTS:
        raise UsageError(f"unknown verdict {verdict!r}", hint=f"use one of: {', '.join(VERDICTS)}")
    check(skill, note or "", cut=cut)
    event = {"id": uuid.uuid4().hex, "skill": redact(skill), "path": redact(path) if path else path,
             "verdict": verdict, "note": clean_note(note or ""), "source": source,
             "created_at": datetime.now(UTC).isoformat()}
    name = f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%f')}-{event['id']}.json"
    atomic.write(private.mkdir(journal_dir()) / name, json.dumps(event))
    return event


def journaled() -> list[tuple[Path, dict[str, Any]]]:
    """Verdicts not yet moved into the state database (unreadable files are left in place)."""
    folder = journal_dir()
    if not folder.is_dir():
        return []
    found = []
    for file in sorted(folder.glob("*.json")):
        try:
            event = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(event, dict) and event.get("id") and event.get("verdict") in VERDICTS:
            found.append((file, _cleaned(event)))
    return found


def _cleaned(event: dict[str, Any]) -> dict[str, Any]:
    """A verdict read back: journals and tables written before notes were redacted are redacted now."""
    from pipeline.redact import redact

    for key in ("skill", "path"):
        if isinstance(event.get(key), str):
            event[key] = redact(event[key][:MAX_NAME])
    event["note"] = clean_note(event["note"]) if isinstance(event.get("note"), str) else ""
    return event


def drain(con: Any) -> int:
    """Move journaled verdicts into ``skill_feedback`` (the caller owns the state database).

    Idempotent: a crash between the commit and the unlink re-inserts nothing (ids are keys).
    """
    pending = journaled()
    if not pending:
        return 0
    con.execute("BEGIN TRANSACTION")
    try:
        for _file, e in pending:
            con.execute("INSERT OR IGNORE INTO skill_feedback VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [e["id"], e.get("skill"), e.get("path"), e["verdict"], e.get("note") or "",
                         e.get("source") or "", e.get("created_at")])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    for file, _event in pending:
        with contextlib.suppress(OSError):
            file.unlink()
    return len(pending)


def stored(con: Any) -> list[dict[str, Any]]:
    """Verdicts in a database holding a ``skill_feedback`` table (state DB or a recall index)."""
    rows = con.execute(f"SELECT {', '.join(COLUMNS)} FROM skill_feedback ORDER BY created_at").fetchall()
    return [normal(_cleaned(dict(zip(COLUMNS, r, strict=True)))) for r in rows]


def events(con: Any | None = None) -> list[dict[str, Any]]:
    """Every verdict: stored ones (when ``con`` is given) and journaled ones, oldest first."""
    merged = {e["id"]: e for e in (stored(con) if con is not None else [])}
    for _file, e in journaled():
        merged.setdefault(e["id"], normal(e))
    return sorted(merged.values(), key=lambda e: e["created_at"])


def summary(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per skill: verdict counts and the last note, the most negative first (what review needs)."""
    per: dict[str, dict[str, Any]] = {}
    for e in events:
        row = per.setdefault(e["skill"], {"skill": e["skill"], "verdicts": {}, "last_note": "", "last_at": ""})
        row["verdicts"][e["verdict"]] = row["verdicts"].get(e["verdict"], 0) + 1
        if e.get("note"):
            row["last_note"] = e["note"]
        row["last_at"] = max(row["last_at"], str(e["created_at"]))
    score = {"helpful": 1, "not_helpful": -1, "wrong": -3, "stale": -2}
    return sorted(per.values(), key=lambda r: (sum(score[v] * n for v, n in r["verdicts"].items()), r["skill"]))


def normal(event: dict[str, Any]) -> dict[str, Any]:
    created = event.get("created_at")
    if isinstance(created, datetime):
        event["created_at"] = created.astimezone(UTC).isoformat()
    return {k: event.get(k) for k in COLUMNS}


def priors(events: Iterable[dict[str, Any]], now: datetime | None = None) -> dict[str, float]:
    """Ranking multipliers keyed by skill path and by skill name (for verdicts without a path)."""
    now = now or datetime.now(UTC)
    totals: dict[str, float] = {}
    for e in events:
        try:
            when = datetime.fromisoformat(str(e["created_at"]))
        except ValueError:
            continue
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        age = max(0.0, (now - when).total_seconds() / 86400)
        effect = EFFECT.get(str(e["verdict"]), 0.0) * 0.5 ** (age / HALF_LIFE_DAYS)
        key = f"path:{e['path']}" if e.get("path") else f"name:{e['skill']}"
        totals[key] = totals.get(key, 0.0) + effect
    return totals


def prior_for(totals: dict[str, float], path: str, name: str) -> float:
    low, high = PRIOR_RANGE
    return min(high, max(low, 1.0 + totals.get(f"path:{path}", 0.0) + totals.get(f"name:{name}", 0.0)))


# -- state database tables (migrations 05x_, registered with pipeline.index.migrations) --------
def _m050_recall_folders(con: Any) -> None:
    con.execute("""
        CREATE TABLE recall_folders (
            path VARCHAR PRIMARY KEY, repo VARCHAR, added_at TIMESTAMPTZ, indexed_at TIMESTAMPTZ, skills INTEGER)""")


def _m051_skill_feedback(con: Any) -> None:
    con.execute("""
        CREATE TABLE skill_feedback (
            id VARCHAR PRIMARY KEY, skill VARCHAR, path VARCHAR, verdict VARCHAR, note VARCHAR, source VARCHAR,
            created_at TIMESTAMPTZ)""")


MIGRATIONS = [("050_recall_folders", _m050_recall_folders), ("051_skill_feedback", _m051_skill_feedback)]
migrations.register(*MIGRATIONS)
