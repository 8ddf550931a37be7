"""Approved skills nobody uses, or agents find unhelpful: proposed for deprecation, with the figures.

For each approved skill approved at least ``[review] deprecate_after_days`` ago (default 90),
over that window: how often it was given to an agent (``pipeline/recall/usage.py``: the hook,
the MCP tools, ``skillmill recall``), when last, and the verdicts agents gave it
(``skill_feedback``: ``helpful`` against ``not_helpful``, ``wrong`` and ``stale``). A skill is
proposed when it was never served in the window, or when it got at least ``MIN_REPORTS``
verdicts and more unhelpful than helpful ones. ``review list`` shows the proposals; nothing is
deprecated here: a person runs ``skillmill review deprecate NAME --reason TEXT``.

"Approved since" is the start of the skill's current approved stretch in the audit log (an
edit or a restore keeps it; a deprecation ends it), else -- a skill written approved by hand,
never decided on -- its file's last change. Skills marked stale are left out: they are listed
above, with their evidence.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pipeline.library.store import Library
from pipeline.recall import usage
from pipeline.review.queue import repo_matches
from pipeline.scan import marks

#: Verdicts that count against a skill.
UNHELPFUL = ("not_helpful", "wrong", "stale")
#: Fewer verdicts than this say too little to propose anything.
MIN_REPORTS = 3


@dataclass(frozen=True)
class Unused:
    name: str
    repo: str | None
    approved_since: datetime
    days: float
    served: int
    last_served: datetime | None
    helpful: int
    unhelpful: int
    reasons: list[str]

    @property
    def command(self) -> str:
        """What the person runs to act on it (the proposal itself changes nothing)."""
        return f'skillmill review deprecate {self.name} --reason "{self.reasons[0]}"'

    def contract(self) -> dict[str, Any]:
        """One entry of ``review list --json`` (after the stale ones)."""
        return {"name": self.name, "status": "approved", "deprecate": self.reasons, "repo": self.repo,
                "window_days": self.days, "approved_since": self.approved_since.isoformat(),
                "served": self.served, "last_served": self.last_served.isoformat() if self.last_served else None,
                "helpful": self.helpful, "unhelpful": self.unhelpful, "command": self.command}


def proposals(library: Library, days: float, *, now: datetime | None = None, repo: str | None = None,
              events: Iterable[dict[str, Any]] | None = None) -> list[Unused]:
    """The approved skills to propose for deprecation, never-served first, then the least served.

    ``now`` is the end of the window (default: now); ``events`` the feedback verdicts (default:
    the state database's and the journal's, :func:`feedback_events`).
    """
    now = now or datetime.now(UTC)
    start = now - timedelta(days=days)
    stale = marks.load(library.root)
    candidates = {}
    since = approved_since(library)
    for stored in library.in_status("approved", on_error=lambda *_: None):
        s = stored.skill
        if s.name in stale or (repo and not repo_matches(repo, s.repo)):
            continue
        began = since.get(s.name) or _changed(stored.file)
        if began <= start:
            candidates[s.name] = (s.repo, began)
    if not candidates:
        return []
    served: dict[str, list[datetime]] = {}
    for name, when, _source in usage.served(start):
        if name in candidates and when <= now:
            served.setdefault(name, []).append(when)
    votes: dict[str, list[int]] = {}
    for e in feedback_events() if events is None else events:
        when = _when(e.get("created_at"))
        name = _feedback_name(e, candidates)
        if name is None or when is None or not start <= when <= now:
            continue
        counts = votes.setdefault(name, [0, 0])
        if e.get("verdict") == "helpful":
            counts[0] += 1
        elif e.get("verdict") in UNHELPFUL:
            counts[1] += 1
    found = []
    window = span(days)
    for name, (skill_repo, began) in candidates.items():
        times = served.get(name, [])
        helpful, unhelpful = votes.get(name, [0, 0])
        reasons = []
        if not times:
            reasons.append(f"not served to any agent in the last {window}")
        if helpful + unhelpful >= MIN_REPORTS and unhelpful > helpful:
            reasons.append(f"agents found it unhelpful: {unhelpful} of {helpful + unhelpful} verdicts "
                           f"in the last {window}")
        if reasons:
            found.append(Unused(name, skill_repo, began, days, len(times), max(times) if times else None,
                                helpful, unhelpful, reasons))
    return sorted(found, key=lambda u: (u.served > 0, u.served, u.name))


def span(days: float) -> str:
    """A window as a person reads it: ``90 days``; a short one (a test's) in hours, minutes or seconds."""
    unit, size = next((u for u in (("day", 1.0), ("hour", 1 / 24), ("minute", 1 / 1440)) if days >= u[1]),
                      ("second", 1 / 86400))
    value = round(days / size, 1)
    return f"{value:g} {unit}{'' if value == 1 else 's'}"


def approved_since(library: Library) -> dict[str, datetime]:
    """Skill name -> when its current approved stretch began, from the audit log."""
    since: dict[str, datetime] = {}
    for entry in library.audit.entries(readable_only=True):
        if entry.target == "proposal" and entry.status != "approved":
            continue  # a decision on a pending change: the skill itself stayed as it was
        if entry.status == "approved":
            since.setdefault(entry.skill, _aware(entry.when))
        elif entry.status:
            since.pop(entry.skill, None)
    return since


def feedback_events() -> list[dict[str, Any]]:
    """Every verdict: the state database's and the journal's (the journal alone while a run holds the DB).

    The database is opened read-only and only if it exists: listing the queue writes nothing.
    """
    import duckdb

    from pipeline import settings
    from pipeline.errors import IndexError_
    from pipeline.index.db import connect
    from pipeline.recall import feedback

    path = settings.state_db_path()
    if not path.is_file():
        return feedback.events()
    try:
        con = connect(path, read_only=True)
    except IndexError_:
        return feedback.events()
    try:
        return feedback.events(con)
    except duckdb.Error:  # a database from before the feedback table: nothing stored in it yet
        return feedback.events()
    finally:
        con.close()


def _feedback_name(event: dict[str, Any], names: dict[str, Any]) -> str | None:
    """The skill a verdict is about: by name, or by the path recall gave (``<library>/<name>``)."""
    if event.get("skill") in names:
        return str(event["skill"])
    for value in (event.get("path"), event.get("skill")):
        if isinstance(value, str) and Path(value).name in names:
            return Path(value).name
    return None


def _when(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return _aware(value)
    try:
        return _aware(datetime.fromisoformat(str(value)))
    except ValueError:
        return None


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _changed(file: Path) -> datetime:
    try:
        return datetime.fromtimestamp(file.stat().st_mtime, UTC)
    except OSError:
        return datetime.now(UTC)

