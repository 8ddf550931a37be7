"""``skillmill capture``: what session-end hooks spooled, recorded as a run would, and its handoff written.

For each spooled session (``pipeline.handoff.spool``): the transcript is parsed by the same code a run
uses (format detection, redaction, ``[sources] repos_map`` and the checkout on disk for its repository),
its brief is written (``pipeline.handoff``), and its trajectories are stored in the state database
(the trajectory tables: no Prefect, no distillation). The nightly run then finds them stored and
distills them as usual; it reads the file again itself, so nothing is lost if this step is skipped
(a run holds the database: capture does not wait for it).

One capture process at a time (``spool.RUNNING``); it goes on until the spool is empty, so a session
ending while it works is taken too.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path

from pipeline import checkout, private
from pipeline.handoff import build, prompts, spool, store
from pipeline.ingest import ingest_file
from pipeline.ingest import tables as ingest_tables
from pipeline.ingest.identity import Locator
from pipeline.ingest.reader import MAX_JSON_BYTES

log = logging.getLogger(__name__)
#: A transcript larger than this is left to the nightly run.
MAX_TRANSCRIPT_BYTES = MAX_JSON_BYTES


def drain(*, store_trajectories: bool = True, locator: Locator | None = None) -> list[dict]:
    """Take every spooled session; returns what was done with each (``{"session", "handoff", "stored"}``)."""
    private.mkdir(spool.folder())
    marker = spool.folder() / spool.RUNNING
    done = []
    try:
        while entries := spool.take():
            for file, entry in entries:
                private.write_text(marker, str(os.getpid()))
                try:
                    done.append(one(entry, store_trajectories=store_trajectories, locator=locator))
                except Exception as exc:  # noqa: BLE001 -- one session's surprise must not stop the others
                    log.warning("capture of %s failed: %s: %s", entry.get("transcript_path"), type(exc).__name__, exc)
                    done.append({"session": entry.get("session_id"), "error": f"{type(exc).__name__}: {exc}"})
                with contextlib.suppress(OSError):
                    file.unlink()
    finally:
        with contextlib.suppress(OSError):
            marker.unlink()
    return done


def one(entry: dict, *, store_trajectories: bool = True, locator: Locator | None = None) -> dict:
    path = Path(str(entry.get("transcript_path") or ""))
    outcome: dict = {"session": entry.get("session_id"), "transcript": str(path), "handoff": None, "stored": 0}
    try:
        info = path.stat()
    except OSError:
        return {**outcome, "skipped": "no such transcript"}
    if not path.is_file() or info.st_size > MAX_TRANSCRIPT_BYTES:
        return {**outcome, "skipped": "not a regular file, or too large (the nightly run reads it)"}
    if locator is None:
        from pipeline import config

        locator = Locator(config.load().sources.repos_map)
    report, trajectories = ingest_file(path, locator=locator)
    if not _of_agent(report.format, str(entry.get("agent") or "")):
        # The agent whose hook fired names its own transcript: a file of another format there is none of its
        # sessions (a crafted ATIF file can say it is any agent): no brief of it. The nightly run reads it as any.
        return {**outcome, "skipped": f"not a {entry.get('agent') or 'known agent'}'s session ({report.format})",
                "stored": _store(trajectories) if store_trajectories and trajectories else 0}
    wanted = str(entry.get("session_id") or "")
    mine = [t for t in trajectories if not wanted or str(t.session_id or "") == wanted] or trajectories
    main = [t for t in mine if not t.parent_session_id]
    enabled, _ = store.options()
    for trajectory in main[-1:]:  # the session as it is now (a file holds one; a resumed one, its last part)
        where = trajectory.cwd or entry.get("cwd")
        root = checkout.root_of(where) if where else None
        if root is None or not enabled:
            continue
        brief = build.build(trajectory, prompts.fragments_between(where, root),
                            checkout_commands=prompts.defines_commands_between(where, root, str(trajectory.agent)))
        if brief is not None:
            brief["checkout"] = str(root)
            brief["files"] = _from_root(brief.get("files") or [], where, root)  # git status runs at the root
        written = store.save(brief, checkout_root=str(root), session_id=str(trajectory.session_id or "") or None)
        outcome["handoff"] = brief["id"] if written and brief else None
    if store_trajectories and trajectories:
        outcome["stored"] = _store(trajectories)
    return outcome


def _from_root(files: list, where: str, root: Path) -> list:
    """Files named from the session's folder, named from the checkout's root (a session in ``packages/web``
    changed ``packages/web/src/app.py``, which ``git status`` at the root knows by that name)."""
    from pipeline.handoff import relay

    try:
        prefix = Path(where).relative_to(root)
    except ValueError:
        return files
    if str(prefix) in ("", "."):
        return files
    out = []
    for name in files:
        if isinstance(name, str):
            name = relay.relay(os.path.join(str(prefix), name), relay.PATH)  # the folder's name is the checkout's too
        out.append(name)
    return out


def _of_agent(format_name: str | None, agent: str) -> bool:
    """True when ``format_name`` is one of the formats of the sessions of ``agent`` (the hook's name for it)."""
    from pipeline.agents import wiring
    from pipeline.plugins import registered_formats

    known = wiring.agents().get(agent)
    return bool(format_name) and known is not None and \
        any(f.name == format_name and f.agent == known.session_agent for f in registered_formats())


def _store(trajectories: list) -> int:
    """Into the trajectory tables, unless a run holds the database (it reads the file itself then)."""
    from pipeline.execution.lock import RunInProgress, run_lock
    from pipeline.index.state import StateDB

    try:
        with run_lock(wait=0.0), StateDB() as state:
            stored = ingest_tables.save_trajectories(state, trajectories)
            for trajectory in trajectories:  # Stop fires every turn: the session's row is replaced, not added to
                ingest_tables.drop_earlier_versions(state, trajectory)
            return stored
    except (RunInProgress, OSError) as exc:
        log.info("not stored now (%s): the next run reads it", exc)
        return 0


def main(wait_s: float = 0.0) -> None:
    """The background process: drain the spool (after ``wait_s``, to let a session's last write land)."""
    if wait_s:
        time.sleep(wait_s)
    drain()
