"""Which skills agents were given, and when: the record deprecation proposals are made from.

Every answer that hands skills to an agent -- the hook's push, the MCP tools ``recall_skills``
and ``get_skill``, ``skillmill recall TASK`` -- appends one JSON line to
``$SKILLMILL_HOME/usage/served-YYYY-MM.jsonl`` (the month in UTC, so a reader of the last
90 days opens three or four small files)::

    {"at": "2026-12-01T10:02:03.123456+00:00", "source": "hook", "session": "abc",
     "skills": [{"name": "working-in-django", "path": "/home/me/.skillmill/skills/working-in-django"}]}

One ``write`` on an ``O_APPEND`` descriptor, owner-only, no lock: it must cost the hook almost
nothing, and a failure to record never fails the answer (it is logged nowhere and dropped).

The hook's per-session files (``$SKILLMILL_HOME/hooks/<session>.json``, the paths already
given in a session) predate this record: a session that appears in no line counts as one serve
of each skill it lists, at the file's last change -- so skills pushed before the upgrade are
not taken for unused.

Standard library only: the hook imports it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pipeline import settings

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from datetime import datetime


def usage_dir() -> Path:
    return settings.home() / "usage"


def record(skills: Iterable[tuple[str, str | None]], source: str, session: str | None = None) -> None:
    """Append that ``skills`` ((name, path) pairs) were just given to an agent; never raises."""
    given = [{"name": name, "path": path} for name, path in skills if name]
    if not given:
        return
    from datetime import UTC, datetime

    from pipeline import private

    now = datetime.now(UTC)
    line = json.dumps({"at": now.isoformat(), "source": source, "session": session, "skills": given},
                      ensure_ascii=False, separators=(",", ":")) + "\n"
    try:
        with private.open_file(usage_dir() / f"served-{now:%Y-%m}.jsonl", "ab") as handle:
            handle.write(line.encode("utf-8"))
    except OSError:
        pass


def served(since: datetime) -> Iterator[tuple[str, datetime, str]]:
    """``(skill name, when, source)`` for every serve at or after ``since`` (aware, UTC)."""
    from datetime import datetime

    sessions: set[str] = set()
    folder = usage_dir()
    files = sorted(folder.glob("served-*.jsonl")) if folder.is_dir() else []
    for file in files:
        month = file.stem.removeprefix("served-")
        if month < f"{since:%Y-%m}":
            continue  # ended before the window; a hook file changed since was logged in a later month too
        try:
            lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                entry = json.loads(line)
                when = datetime.fromisoformat(entry["at"])
                skills = list(entry["skills"])
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by a crash
            if entry.get("session"):
                sessions.add(str(entry["session"]))
            if when < since:
                continue
            for skill in skills:
                if isinstance(skill, dict) and skill.get("name"):
                    yield str(skill["name"]), when, str(entry.get("source") or "")
    yield from _hook_sessions(since, sessions)


def _hook_sessions(since: datetime, recorded: set[str]) -> Iterator[tuple[str, datetime, str]]:
    """Serves known only from the hook's per-session files (written before this record existed)."""
    from datetime import UTC, datetime

    folder = settings.home() / "hooks"
    if not folder.is_dir():
        return
    floor = since.timestamp()
    for file in folder.glob("*.json"):
        if file.stem in recorded:
            continue
        try:
            changed = file.stat().st_mtime
            if changed < floor:
                continue
            paths = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        when = datetime.fromtimestamp(changed, UTC)
        for path in paths if isinstance(paths, list) else []:
            if isinstance(path, str) and path:
                yield Path(path).name, when, "hook"


def session_key(session: str) -> str:
    """The name the hook gives a session's file (and its lines here), so the two can be matched."""
    return re.sub(r"[^\w.-]", "_", session)[:100] or "default"

