"""What a session-end hook leaves for the background capture: one small file per session, owner-only.

The hook has about a second (Claude Code ends its process soon after ``SessionEnd``), too little to
import a parser and a database, so it writes ``$SKILLMILL_HOME/capture/<key>.json`` (the agent, the
transcript's path, the session and its folder) and starts ``skillmill capture`` in the background, which
takes these files one by one. A session that ends many turns (``Stop``) leaves one file, rewritten.

Standard library only: the hook runs it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from pipeline import private, settings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FOLDER = "capture"
#: A capture process already at work leaves this; another is started only when it is older than this.
RUNNING = ".running"
STALE_S = 600.0


def folder() -> Path:
    return settings.home() / FOLDER


def put(agent: str, payload: dict[str, Any]) -> Path | None:
    """Spool one session's end; None when the payload names no transcript file."""
    transcript = payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript or not os.path.isabs(transcript):
        return None
    session = str(payload.get("session_id") or "")
    key = hashlib.sha256(f"{agent}\0{session or transcript}".encode()).hexdigest()[:16]
    entry = {"agent": agent, "transcript_path": transcript, "session_id": session or None,
             "cwd": payload.get("cwd") if isinstance(payload.get("cwd"), str) else None,
             "event": str(payload.get("hook_event_name") or ""), "at": time.time()}
    here = private.mkdir(folder())
    file = here / f"{key}.json"
    temp = here / f".{key}.{os.getpid()}.tmp"
    private.write_text(temp, json.dumps(entry))
    os.replace(temp, file)
    return file


def take() -> list[tuple[Path, dict[str, Any]]]:
    """The spooled sessions, oldest first."""
    found = []
    try:
        names = os.listdir(folder())
    except OSError:
        return []
    for name in names:
        if not name.endswith(".json"):
            continue
        file = folder() / name
        try:
            entry = json.loads(file.read_bytes()[:65536])
        except (OSError, ValueError):
            continue
        if isinstance(entry, dict):
            found.append((file, entry))
    return sorted(found, key=lambda e: float(e[1].get("at") or 0))


def busy() -> bool:
    """Is a capture process at work (and recently alive)?"""
    try:
        return time.time() - (folder() / RUNNING).stat().st_mtime < STALE_S
    except OSError:
        return False


def start_capture() -> None:
    """Start ``skillmill capture`` detached, unless one is at work; best effort (the nightly run reads the
    session anyway)."""
    if busy():
        return
    import contextlib
    import subprocess

    from pipeline import spawn

    with contextlib.suppress(OSError):
        spawn.popen(["-m", "pipeline", "capture"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
