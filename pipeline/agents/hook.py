"""Push skills at task start: the hook an agent runs on session start and on every prompt.

Reads the agent's hook JSON on stdin and prints the brief as additional context, in the
shape the agent expects (``hookSpecificOutput.additionalContext``, which Claude Code, Codex,
Gemini CLI and Qwen Code all read for these events). It must never get in the agent's way: on any
error, on a timeout, or when nothing fits, it prints nothing and exits 0. A skill already
given in this session is not given again.

It speaks unasked, at every prompt, so it is quieter than ``skillmill recall``: prompts that
carry no task ("yes", "go on", "commit this", "looks good", "why?") get nothing, and a skill
must score at least ``HOOK_MIN_SCORE`` (recall's default is ``MIN_SCORE``; ``--min-score`` or
``$SKILLMILL_HOOK_MIN_SCORE`` move it). Prompts are ranked by
the warm recall process when one answers within ``daemon.ASK_TIMEOUT_S`` (semantic channel
included), else by the lexical channel in process; with an embedder in the index and no warm
process, the hook starts one for the next prompts.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from pathlib import Path

from pipeline import settings, voice
from pipeline.recall import usage
from pipeline.recall.folders import repo_of
from pipeline.recall.search import ENV_HOOK_MIN_SCORE, HOOK_MIN_SCORE, Hit, clip_task, threshold
from pipeline.scan import marks, stale

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing at every prompt
if TYPE_CHECKING:
    from typing import Any

DEFAULT_TIMEOUT = 2.0
DEFAULT_BUDGET = 2000
#: The events we answer, per agent, and whether the payload carries the user's prompt.
PROMPT_EVENTS = {"UserPromptSubmit", "BeforeAgent"}
START_EVENTS = {"SessionStart"}
#: A session (or one of its turns) ended: its transcript is spooled for the background capture, which
#: records it and writes its handoff (``pipeline.execution.capture``). Claude Code ``Stop``/``SessionEnd``,
#: Codex ``Stop``, Gemini CLI ``AfterAgent``/``SessionEnd``.
END_EVENTS = {"Stop", "SessionEnd", "AfterAgent"}
MAX_STDIN = 1_000_000
#: A prompt carries a task when it has at least this many words outside ``CHATTER``.
MIN_TASK_WORDS = 2
#: Words of acknowledgements, chit-chat and steering ("yes", "go on", "commit this", "run the
#: tests", "why?"): a prompt made only of these (and stopwords) needs no skill.
CHATTER = frozenset("""
a again ahead alright also am an and another any anything are as at awesome back be bit but can cancel carry change
changed changes check cheers commit continue cool could did didnt do does doesnt done dont else error exactly explain
file files fine first fix fixed for from further go good got great had has have he hello help here hey hi hmm hold how
i if in instead is it its just keep last let lets lgtm like likely look looks lot make me mean merge more much my nah
next nice no nope not now of off ok okay on one ones or other perfect please proceed push pushed put really redo
retry revert right run same see seems should show so some sorry sounds start still stop sure test tests thank thanks
that thats the them then there these they thing things think this those thx to too try undo up us use want was wait we
well were what whats when where which why will with work worked works would wrong yeah yep yes yet you your
""".split())  # noqa: SIM905 (a word list reads best as words)
_WORDS = re.compile(r"[a-z0-9]+")


def carries_task(prompt: str) -> bool:
    """False for prompts made of acknowledgements, chit-chat and steering words only."""
    words = _WORDS.findall(prompt.lower().replace("'", ""))
    return sum(1 for w in words if w not in CHATTER) >= MIN_TASK_WORDS


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


def respond(payload: dict[str, Any], agent: str, *, budget: int = DEFAULT_BUDGET, limit: int = 3,
            min_score: float | None = None) -> str | None:
    """The JSON to print for one hook payload, or None to print nothing. A skill must score at least
    ``min_score`` (default ``$SKILLMILL_HOOK_MIN_SCORE``, else ``HOOK_MIN_SCORE``)."""
    from pipeline.recall import RecallIndex, pack

    event = str(payload.get("hook_event_name") or "")
    if event in END_EVENTS:
        _spool(agent, payload)
        return None
    cwd = payload.get("cwd") or os.getcwd()
    repo = repo_of(str(cwd))
    session = payload.get("session_id")
    handoffs = _handoffs(str(cwd), session) if event in START_EVENTS else ""
    if event in PROMPT_EVENTS:
        # Qwen Code fires the prompt event on tool-result continuations too; ``submitted_prompt`` is what was typed.
        typed = payload.get("submitted_prompt")
        query = clip_task(str(typed if isinstance(typed, str) and typed.strip() else payload.get("prompt") or "")).strip()
        if not query or (query.startswith("/") and " " not in query) or not carries_task(query):
            return None
        filters = {"repo": repo, "agent": agent}
        strict_repo = False
    elif event in START_EVENTS:
        if not repo:
            return _answer(event, handoffs, "") if handoffs else None
        name = repo.rsplit("/", 1)[-1]
        query, filters, strict_repo = f"working in {name} repository {name}", {"repo": repo, "agent": agent}, True
    else:
        return None
    stale.at_hook(cwd, repo)  # approved skills this checkout contradicts are marked, and not pushed below
    if not settings.recall_index_path().exists():
        return _answer(event, handoffs, "") if handoffs else None
    floor = threshold(ENV_HOOK_MIN_SCORE, HOOK_MIN_SCORE) if min_score is None else min_score
    hits = _warm(query, limit, floor, filters)
    with RecallIndex(slow_embedders=False) as index:
        if hits is None:  # no warm process answered: the lexical channel, here
            hits = index.search(query, limit=limit, min_score=floor, **filters)
            if index.embedder_name:
                from pipeline.recall import daemon

                daemon.start_in_background()  # for the next prompts
        if strict_repo:  # at session start, only what is known about this repository
            bound = {r["path"] for r in index.get_many([h.path for h in hits]) if r["repo"]}
            hits = [h for h in hits if h.path in bound]
    seen = _load_seen(session)
    fresh = [h for h in hits[:limit] if h.path not in seen and not marks.of_path(h.path)]
    if not fresh:
        return _answer(event, handoffs, "") if handoffs else None
    packed = pack(query, fresh, budget)
    _save_seen(session, seen | {h.path for h in packed.hits})
    usage.record([(h.name, h.path) for h in packed.hits], "hook", usage.session_key(session) if session else None)
    context = f"{voice.SKILLS_HEADER} Read a skill's SKILL.md before relying on it.\n\n" + packed.markdown()
    return _answer(event, handoffs, context)


def _answer(event: str, handoffs: str, skills: str) -> str:
    context = "\n\n".join(part for part in (handoffs, skills) if part)
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}})


def _handoffs(cwd: str, session: Any) -> str:
    """The briefs of unfinished sessions in this checkout (claimed for this one: each is given once)."""
    from pipeline import checkout
    from pipeline.handoff import store

    root = checkout.root_of(cwd)
    if root is None:
        return ""
    briefs = store.claim(str(root), str(session) if session else None)
    if not briefs:
        return ""
    return (f"{voice.HANDOFF_HEADER} an earlier session in this checkout ended unfinished. Check what it says "
            "against the working tree before relying on it.\n\n" + "\n\n".join(store.render(b) for b in briefs))


def _spool(agent: str, payload: dict[str, Any]) -> None:
    """Leave the ended session for the background capture (the hook has no time to parse it)."""
    from pipeline.handoff import spool, store

    if not store.options()[0]:
        return
    if spool.put(agent, _with_transcript(agent, payload)) is not None:
        spool.start_capture()


def _with_transcript(agent: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Kimi CLI's hook input names no transcript: it is the one Kimi CLI writes for that session and folder
    (``${KIMI_SHARE_DIR:-~/.kimi}/sessions/<md5(cwd)>/<session_id>/context.jsonl``)."""
    session, cwd = payload.get("session_id"), payload.get("cwd")
    if agent != "kimi" or payload.get("transcript_path") or not isinstance(session, str) or \
            not isinstance(cwd, str) or not os.path.isabs(cwd) or not re.fullmatch(r"[\w-]{1,128}", session):
        return payload
    import hashlib

    share = Path(os.environ.get("KIMI_SHARE_DIR") or Path.home() / ".kimi")
    folder = hashlib.md5(cwd.encode()).hexdigest()  # noqa: S324 (Kimi CLI's own naming)
    return {**payload, "transcript_path": str(share / "sessions" / folder / session / "context.jsonl")}


def _warm(query: str, limit: int, min_score: float, filters: dict[str, str | None]) -> list[Hit] | None:
    """The warm recall process's hits, or None when none answers in time (``pipeline.recall.daemon``)."""
    from pipeline.recall import daemon

    return daemon.hits({"query": query, "limit": limit, "min_score": min_score, **filters})


def run(agent: str, *, timeout: float = DEFAULT_TIMEOUT, budget: int = DEFAULT_BUDGET, stdin: Any = None,
        stdout: Any = None, min_score: float | None = None) -> None:
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
        answer = respond(payload, agent, budget=budget, min_score=min_score) if isinstance(payload, dict) else None
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
