"""Push skills at task start: the hook an agent runs on session start and on every prompt.

Reads the agent's hook JSON on stdin and prints the brief as additional context, in the
shape the agent expects (``hookSpecificOutput.additionalContext``, which Claude Code, Codex
and Gemini CLI all read for these events). It must never get in the agent's way: on any
error, on a timeout, or when nothing fits, it prints nothing and exits 0. A skill already
given in this session is not given again.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from pipeline import settings
from pipeline.recall import usage
from pipeline.recall.folders import repo_of
from pipeline.recall.search import clip_task
from pipeline.scan import marks, stale

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing at every prompt
if TYPE_CHECKING:
    from typing import Any

DEFAULT_TIMEOUT = 2.0
DEFAULT_BUDGET = 2000
#: The events we answer, per agent, and whether the payload carries the user's prompt.
PROMPT_EVENTS = {"UserPromptSubmit", "BeforeAgent"}
START_EVENTS = {"SessionStart"}
MAX_STDIN = 1_000_000


def _seen_file(session: str) -> Path:
    return settings.home() / "hooks" / f"{usage.session_key(session)}.json"


def _load_seen(session: str | None) -> set[str]:
    if not session:
        return set()
    try:
        return set(json.loads(_seen_file(session).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return set()


def _save_seen(session: str | None, seen: set[str]) -> None:
    if not session:
        return
    from pipeline import private

    file = _seen_file(session)
    try:
        tmp = file.with_suffix(f".{os.getpid()}.tmp")
        private.write_text(tmp, json.dumps(sorted(seen)))
        os.replace(tmp, file)
    except OSError:
        pass


def respond(payload: dict[str, Any], agent: str, *, budget: int = DEFAULT_BUDGET, limit: int = 3) -> str | None:
    """The JSON to print for one hook payload, or None to print nothing."""
    from pipeline.recall import RecallIndex, pack

    event = str(payload.get("hook_event_name") or "")
    cwd = payload.get("cwd") or os.getcwd()
    repo = repo_of(str(cwd))
    session = payload.get("session_id")
    if event in PROMPT_EVENTS:
        query = clip_task(str(payload.get("prompt") or "")).strip()
        if not query or (query.startswith("/") and " " not in query):  # a bare slash command
            return None
        filters = {"repo": repo, "agent": agent}
        strict_repo = False
    elif event in START_EVENTS:
        if not repo:
            return None
        name = repo.rsplit("/", 1)[-1]
        query, filters, strict_repo = f"working in {name} repository {name}", {"repo": repo, "agent": agent}, True
    else:
        return None
    stale.at_hook(cwd, repo)  # approved skills this checkout contradicts are marked, and not pushed below
    if not settings.recall_index_path().exists():
        return None
    with RecallIndex(slow_embedders=False) as index:
        hits = index.search(query, limit=limit, **filters)
        if strict_repo:  # at session start, only what is known about this repository
            bound = {r["path"] for r in index.get_many([h.path for h in hits]) if r["repo"]}
            hits = [h for h in hits if h.path in bound]
    seen = _load_seen(session)
    fresh = [h for h in hits[:limit] if h.path not in seen and not marks.of_path(h.path)]
    if not fresh:
        return None
    packed = pack(query, fresh, budget)
    _save_seen(session, seen | {h.path for h in packed.hits})
    usage.record([(h.name, h.path) for h in packed.hits], "hook", usage.session_key(session) if session else None)
    context = "Skills from this team's library that fit the task (skillmill). Read a skill's SKILL.md " \
              "before relying on it.\n\n" + packed.markdown()
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}})


def run(agent: str, *, timeout: float = DEFAULT_TIMEOUT, budget: int = DEFAULT_BUDGET, stdin: Any = None,
        stdout: Any = None) -> None:
    """Answer one hook call within ``timeout`` seconds; on timeout or error print nothing, exit 0."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    done = threading.Event()
    printing = threading.Lock()

    def give_up() -> None:
        if not done.wait(timeout):
            with printing:  # never cut a half-written answer; never print after the deadline
                _log(f"{agent}: no answer within {timeout:.1f} s, printed nothing")
                os._exit(0)

    threading.Thread(target=give_up, daemon=True).start()
    started = time.monotonic()
    try:
        payload = json.loads(stdin.read(MAX_STDIN) or "{}")
        answer = respond(payload, agent, budget=budget) if isinstance(payload, dict) else None
    except Exception as exc:  # the agent must never see a failure of ours
        _log(f"{agent}: {type(exc).__name__}: {exc}")
        answer = None
    with printing:
        if answer and time.monotonic() - started < timeout:
            stdout.write(answer + "\n")
            stdout.flush()
        done.set()


def _log(message: str) -> None:
    from pipeline import private

    try:
        with private.open_file(settings.home() / "logs" / "hook.log", "a") as handle:
            handle.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}\n")
    except OSError:
        pass
