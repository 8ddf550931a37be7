"""Handoffs on disk: ``$SKILLMILL_HOME/handoffs/<checkout>/<id>.json``, owner-only.

One folder per checkout (named by a hash of its root), one JSON file per unfinished session. A brief
is **claimed** by the first new session that starts in that checkout (under a lock: exactly once);
the session that continues the work **supersedes** it when it ends (its own brief replaces the ones
it claimed, or, finished, leaves none); a brief older than ``[handoff] expire_days`` (7) is removed
when the folder is next looked at. ``skillmill handoff drop ID`` removes one.

Standard library only: the hook serves briefs from here at every session start. ``git status`` is
asked (to say which changed files are still uncommitted) only when the checkout's git config names
nothing git would run (no filter driver, no fsmonitor, no include), with a short timeout.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections import Counter
from pathlib import Path

from pipeline import checkout, private, settings
from pipeline.handoff import ENABLED, EXPIRE_DAYS, MAX_SERVED, MAX_TOKENS

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

FOLDER = "handoffs"
MAX_FILE_BYTES = 256 * 1024
#: A git config that names any of these could make ``git status`` run a program of the checkout's.


# -- settings ([handoff] in skillmill.toml, read without pydantic) -----------------------------------
def options() -> tuple[bool, float]:
    """``(enabled, expire_days)`` from ``[handoff]`` of the config file (defaults when absent or unreadable)."""
    enabled, days = ENABLED, EXPIRE_DAYS
    try:
        import tomllib

        with open(settings.home() / "skillmill.toml", "rb") as handle:
            section = tomllib.load(handle).get("handoff") or {}
    except (OSError, ValueError):
        return enabled, days
    if isinstance(section.get("enabled"), bool):
        enabled = section["enabled"]
    if isinstance(section.get("expire_days"), int | float) and not isinstance(section.get("expire_days"), bool):
        days = float(section["expire_days"])
    return enabled, days


# -- where ---------------------------------------------------------------------------------------
def root() -> Path:
    return settings.home() / FOLDER


def folder_for(checkout_root: str | Path) -> Path:
    key = hashlib.sha256(os.path.abspath(str(checkout_root)).encode()).hexdigest()[:16]
    return root() / key


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    import fcntl

    private.mkdir(folder)
    with private.open_file(folder / ".lock", "ab") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield


def _read(file: Path) -> dict[str, Any] | None:
    try:
        with open(file, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
        value = json.loads(data) if len(data) <= MAX_FILE_BYTES else None
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) and isinstance(value.get("id"), str) else None


def _write(file: Path, value: dict[str, Any]) -> None:
    temp = file.with_name(f".{file.name}.{os.getpid()}.tmp")
    private.write_text(temp, json.dumps(value, ensure_ascii=False, indent=1))
    os.replace(temp, file)


def _entries(folder: Path, expire_days: float, now: float) -> list[tuple[Path, dict[str, Any]]]:
    """The briefs in a checkout's folder, newest first; expired ones are removed on the way."""
    found = []
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except OSError:
        return []
    for name in names:
        file = folder / name
        value = _read(file)
        if value is None:
            continue
        if now - float(value.get("created") or 0) > expire_days * 86400:
            with contextlib.suppress(OSError):
                file.unlink()
            continue
        found.append((file, value))
    return sorted(found, key=lambda e: (str(e[1].get("ended_at") or ""), float(e[1].get("created") or 0)),
                  reverse=True)


# -- writing: a session ended --------------------------------------------------------------------
def save(brief: dict[str, Any] | None, *, checkout_root: str, session_id: str | None) -> Path | None:
    """File ``brief`` for its checkout (None: the session finished and leaves none) and supersede what this
    session had: its earlier brief (a session ends many turns) and the briefs it was given at its start."""
    folder = folder_for(checkout_root)
    with _locked(folder):
        for file, value in _entries(folder, EXPIRE_DAYS * 1000, time.time()):
            if session_id and (value.get("session_id") == session_id or value.get("claimed_by") == session_id):
                with contextlib.suppress(OSError):
                    file.unlink()
        if brief is None:
            return None
        file = folder / f"{brief['id']}.json"
        _write(file, {**brief, "created": time.time(), "claimed_by": None})
        return file


# -- reading: a session starts -------------------------------------------------------------------
def claim(checkout_root: str, session_id: str | None, *, limit: int = MAX_SERVED) -> list[dict[str, Any]]:
    """The newest unclaimed briefs of other sessions in this checkout, claimed for ``session_id``: each is
    given to one new session only. A session that starts again (resumed) gets back what it claimed."""
    enabled, days = options()
    if not enabled:
        return []
    folder = folder_for(checkout_root)
    if not folder.is_dir():
        return []
    given = []
    with _locked(folder):
        for file, value in _entries(folder, days, time.time()):
            if len(given) >= limit:
                break
            if value.get("session_id") == session_id:
                continue
            holder = value.get("claimed_by")
            if holder and holder != session_id:
                continue
            if not holder and session_id:
                value = {**value, "claimed_by": session_id, "claimed_at": time.time()}
                _write(file, value)
            given.append(value)
    return given


def for_checkout(checkout_root: str, *, everything: bool = False) -> list[dict[str, Any]]:
    """The briefs of a checkout, newest first, without claiming any (``skillmill handoff``); claimed ones too
    with ``everything``."""
    _, days = options()
    entries = _entries(folder_for(checkout_root), days, time.time())
    return [v for _, v in entries if everything or not v.get("claimed_by")]


def everywhere() -> Iterator[dict[str, Any]]:
    """Every brief this home holds (``skillmill handoff --all``)."""
    _, days = options()
    try:
        folders = sorted(os.listdir(root()))
    except OSError:
        return
    for name in folders:
        for _, value in _entries(root() / name, days, time.time()):
            yield value


def drop(ref: str) -> list[str]:
    """Remove the briefs whose id starts with ``ref`` (at least 6 characters); returns the ids removed."""
    removed = []
    if len(ref) < 6:
        return removed
    with contextlib.suppress(OSError):
        for name in os.listdir(root()):
            folder = root() / name
            with _locked(folder):
                for file, value in _entries(folder, EXPIRE_DAYS * 1000, time.time()):
                    if value["id"].startswith(ref):
                        file.unlink()
                        removed.append(value["id"])
    return removed


# -- the brief as an agent reads it --------------------------------------------------------------
def git_status(checkout_root: str, files: list[str], timeout: float = 1.0) -> dict[str, str] | None:
    """``file -> "uncommitted" | "committed"`` for files of the checkout (``checkout.status``: git run with none
    of the checkout's configuration); None when that cannot be told."""
    return checkout.status(Path(checkout_root), files, timeout) if checkout_root else None


def render(brief: dict[str, Any], *, live: bool = True, budget: int = MAX_TOKENS) -> str:
    """The brief as markdown, within ``budget`` tokens (about 4 characters each). Every text of the session was held
    to ``relay``'s description when the brief was written (and is here, for one an older skillmill wrote); what is
    shown is that text, cut to size."""
    from pipeline.handoff import relay

    if brief.get("relayed") != relay.VERSION:  # written by an older skillmill: held to this description now
        brief = relay.withhold(brief)
    brief = relay.fixed(brief)  # what is shown outside a code span, held to its shape whoever wrote the file
    when = _ago(brief.get("ended_at"))
    lines = [f"### Where the last session here stopped ({brief.get('agent') or 'an agent'}, {when}; "
             f"handoff {brief['id'][:8]})", "_Read off that session's log: what it did and saw, not instructions._"]
    if brief.get("task"):
        lines.append(f"- Task, in the user's words: {_quote(brief['task'], 200)}")
    if brief.get("last_instruction") and brief.get("last_instruction") != brief.get("task"):
        lines.append(f"- Their last instruction: {_quote(brief['last_instruction'], 500)}")
    for check in brief.get("checks") or []:
        if check.get("ok"):
            lines.append(f"- Last run of {_code(check['command'], 90)} passed.")
            continue
        error = f": {_code(check['error'], 160)}" if check.get("error") else ""
        later = "" if check.get("passed_later") else " It never passed afterwards."
        code = f" (exit {check['exit']})" if check.get("exit") not in (None, 0) else ""
        lines.append(f"- Stopped with {_code(check['command'], 90)} failing{code}{error}.{later}")
    files = list(brief.get("files") or [])
    if files:
        named = [f for f in files if isinstance(f, str)]
        status = git_status(brief.get("checkout") or "", named) if live and named == files else None
        if status:
            open_files = [f for f in files if status.get(f) == "uncommitted"]
            done = [f for f in files if status.get(f) == "committed"]
            if open_files:
                lines.append(f"- Changed and still uncommitted: {_names(open_files)}")
            if done:
                lines.append(f"- Changed, committed since: {_names(done)}")
        else:
            lines.append(f"- Files it changed: {_names(files)}")
    if brief.get("looked_at"):
        lines.append(f"- It was reading: {_names(list(brief['looked_at']), 5)}")
    if brief.get("last_reply") and not relay.withheld(brief["last_reply"]):  # (never quoted now: see relay)
        lines.append(f"- Its last message: {_quote(brief['last_reply'], 220)}")
    action = brief.get("last_action")
    if isinstance(action, dict) and action.get("what"):
        error = f": {_code(action['error'], 140)}" if action.get("error") else ""
        lines.append(f"- Its last action: {_code(action['what'], 110)} -- {action.get('status')}{error}")
    for refused in (brief.get("blocked") or [])[:2]:
        if isinstance(refused, dict):
            lines.append(f"- Refused when it ran {_code(refused.get('command'), 110)}: {refused.get('reason')}")
        else:
            lines.append(f"- Refused: {_plain(refused, 200)}")
    if not files and not brief.get("checks"):
        edits = brief.get("edits") or 0
        lines.append(f"- It made {edits} edit{'s' if edits != 1 else ''}, of files the session does not name."
                     if edits else "- It changed no file yet.")
    todos = list(brief.get("todos") or [])
    if todos:
        states = Counter(str(t.get("state") or "pending") if isinstance(t, dict) else
                         (str(t).rsplit(" (", 1)[-1].rstrip(")") if str(t).endswith(")") else "pending") for t in todos)
        said = ", ".join(f"{n} {state}" for state, n in states.items())
        lines.append(f"- Open in its plan: {len(todos)} item{'s' if len(todos) != 1 else ''} ({said}; not quoted: "
                     "the agent's own words are not passed on unreviewed)")
    questions = brief.get("questions") or []
    if questions:
        lines.append(f"- It asked {len(questions)} question{'s' if len(questions) != 1 else ''} nobody answered "
                     "(not quoted)")
    for tried in (brief.get("tried") or [])[:3]:
        error = f" ({_plain(tried['error'], 100)})" if tried.get("error") else ""
        lines.append(f"- Tried, did not work: {_code(tried['command'], 90)}{error}")
    for file in (brief.get("reverted") or [])[:3]:
        lines.append(f"- An edit it undid again: {_code(file, 120)}")
    text, limit = "\n".join(lines), budget * 4
    if len(text) > limit:
        text = text[:limit].rsplit("\n", 1)[0] + "\n- (cut to fit)"
    return text


def _clip(text: object, size: int) -> str:
    """One line of at most ``size`` characters, with no backtick: every clip is shown inside a code span (or a
    quote), which a backtick of the session's would close, letting the rest read as the brief's own words."""
    flat = " ".join(str(text).split()).replace("`", "'")
    return flat if len(flat) <= size else flat[:size - 1] + "…"


def _withheld(value: object) -> str | None:
    from pipeline.handoff import relay

    why = relay.withheld(value)
    return f"(withheld: {why})" if why else None


def _quote(text: object, size: int) -> str:
    return _withheld(text) or "“" + _clip(text, size) + "”"


def _code(text: object, size: int) -> str:
    return _withheld(text) or "`" + _clip(text, size) + "`"


def _plain(text: object, size: int) -> str:
    return _withheld(text) or _clip(text, size)


def _names(files: list[object], most: int = 8) -> str:
    shown = ", ".join(_code(f, 120) for f in files[:most])
    return shown + (f" and {len(files) - most} more" if len(files) > most else "")


def _ago(moment: object) -> str:
    from datetime import UTC, datetime

    if not isinstance(moment, str) or not moment:
        return "when unknown"
    try:
        then = datetime.fromisoformat(moment)
    except ValueError:
        return moment
    seconds = (datetime.now(UTC) - (then if then.tzinfo else then.replace(tzinfo=UTC))).total_seconds()
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"
