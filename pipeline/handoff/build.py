"""The brief a session leaves when it ends unfinished: read off its steps, nothing guessed.

From the distiller's analysis of the tool calls (``pipeline.distill.analysis``):

* the task (the first real request) and the user's last instruction, in their words;
* the last run of each check (tests, build, lint): its command, exit code, the line that names the
  error, and whether a failing check passed again later;
* the project files it changed (scratch files and temporary paths left out);
* what is open: the agent's own plan as it last wrote it (Claude Code ``TodoWrite``, Codex
  ``update_plan``, Gemini CLI ``write_todos``), items not marked done; a question the agent asked in its
  last message that no user message answered;
* what was tried and did not work: a command that failed and never succeeded afterwards (its check or
  the same command), an edit undone (``git checkout -- f``, ``git restore f``).

A session that ended **finished** leaves none: its work was committed after its last edit, it was
submitted (a harness's ``submit``), or every check it ran passed at the end and the user's last words
acknowledge it ("thanks", "looks good"). A session that did next to nothing (no edit, no check, no plan,
fewer than three tool calls) leaves none either.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from pipeline.distill.analysis import Event, analyze
from pipeline.handoff import prompts, relay
from pipeline.ingest.identity import relative_to
from pipeline.trajectory import StepKind, Trajectory
from pipeline.trajectory.commands import CHECKS, Purpose

_TODO_TOOLS = {"todowrite": "todos", "update_plan": "plan", "write_todos": "todos", "todo_write": "todos"}
_DONE = {"completed", "complete", "done", "cancelled", "canceled"}
_COMMIT = re.compile(r"(?:^|[;&|]\s*)git\s+(?:-\S+\s+)*commit\b")
_UNDO = re.compile(r"(?:^|[;&|]\s*)git\s+(?:checkout\s+(?:HEAD\s+)?--|restore)\s+(?P<files>[^;&|]+)")
_THANKS = re.compile(r"^\W*(?:thanks?|thank you|thx|ty|great|perfect|awesome|nice|lgtm|looks good|works|"
                     r"all good|done|ship it|merci|danke)\b", re.I)
_AUTO_COMMIT = re.compile(r"^Commit [0-9a-f]{7,40} ", re.M)
_QUESTION = re.compile(r"[^.!?\n]{8,300}\?(?=\s|$)")
MAX_FILES = 20
#: The person's words are checked whole (a cut can drop what makes them refused: a closing tag past the cut) and
#: kept to ``MAX_KEPT`` characters once they pass; longer than ``MAX_CHECKED``, they are not passed on.
MAX_CHECKED = 20_000
MAX_KEPT = 1200


def build(trajectory: Trajectory, checkout_prompts: list[str] | None = None, *,
          checkout_commands: bool = False) -> dict[str, Any] | None:
    """The brief for ``trajectory``, or None when it finished or did nothing worth going on from.
    ``checkout_prompts``: the fixed text of the checkout's custom commands (``prompts.fragments``): a user turn
    holding one is the checkout's words, never quoted as the person's. ``checkout_commands``: the checkout
    defines commands its agent records expanded (``prompts.defines_commands``): no user turn is quoted."""
    if trajectory.parent_session_id or str(trajectory.session_id or "").startswith("sidechain-"):
        return None  # a subagent's work: its parent session hands it over
    analysis = analyze(trajectory)
    events = analysis.events
    users = [s for s in trajectory.steps if s.kind is StepKind.USER and not s.meta and s.text.strip()]
    theirs = [s for s in users if checkout_prompts and prompts.is_checkouts(s.text, checkout_prompts)]
    users = [s for s in users if s not in theirs]
    task = str(trajectory.task) if trajectory.task else None
    if task and checkout_prompts and prompts.is_checkouts(task, checkout_prompts):
        task = str(users[0].text) if users else None
    checks = _checks(events)
    edits = analysis.edits
    todos = _open_todos(trajectory)
    if not edits and not checks and not todos and len(events) < 3:
        return None  # nothing done yet worth going on from
    if _finished(trajectory, events, checks, users, analysis.last_edit_index):
        return None
    files = list(dict.fromkeys(rel for e in edits for p in e.call.paths
                               if (rel := relative_to(str(p), trajectory.cwd)) and not analysis.is_scratch(rel)))
    brief = {
        "agent": str(trajectory.agent), "session_id": str(trajectory.session_id or "") or None,
        "trajectory": trajectory.id, "source_path": str(trajectory.source_path) or None,
        "cwd": str(trajectory.cwd) if trajectory.cwd else None, "repo": str(trajectory.repo) if trajectory.repo else None,
        "ended_at": _ended(trajectory),
        "task": task,
        "last_instruction": str(users[-1].text).strip() if users else None,
        "checks": checks, "files": files[:MAX_FILES], "todos": todos,
        "questions": _unanswered(trajectory), "tried": _tried(events, checks), "reverted": _reverted(events),
        "last_reply": _last_reply(trajectory), "looked_at": [] if files else _looked_at(events, trajectory.cwd, files),
        "last_action": _last_action(events, trajectory.cwd), "blocked": _blocked(events),
        "edits": sum(1 for e in events if e.purpose is Purpose.EDIT and e.ok is not False),
    }
    if checkout_commands:  # fail closed: any user turn may be one of the checkout's prompts, expanded
        for key in ("task", "last_instruction"):
            if brief[key]:
                brief[key] = {"withheld": relay.CHECKOUT_COMMANDS}
    brief["id"] = hashlib.sha256(f"{brief['session_id'] or trajectory.id}\0{trajectory.id}".encode()).hexdigest()[:16]
    return withhold_orders(brief)


def _kept(brief: dict[str, Any]) -> dict[str, Any]:
    for key in ("task", "last_instruction"):
        value = brief.get(key)
        if isinstance(value, str):
            brief[key] = value[:MAX_KEPT]
    return brief


def withhold_orders(brief: dict[str, Any]) -> dict[str, Any]:
    """``relay.withhold``, with the prose-password finder of redaction (the writer may import it; the hook may not)."""
    from pipeline.redact import prose_password

    brief = dict(brief)
    for key in ("task", "last_instruction"):
        if isinstance(brief.get(key), str) and len(brief[key]) > MAX_CHECKED:
            brief[key] = {"withheld": relay.TOO_LONG}
    return _kept(relay.withhold(brief, password=prose_password))


def _checks(events: list[Event]) -> list[dict[str, Any]]:
    """The last run of each check, in the order they last ran; a failing one says if it passed afterwards."""
    last: dict[str, tuple[int, Event]] = {}
    passed_after: dict[str, int] = {}
    for n, event in enumerate(events):
        if event.purpose not in CHECKS or event.ok is None or not event.check:
            continue
        last[event.check] = (n, event)
        if event.ok:
            passed_after[event.check] = n
    out = []
    for key, (n, event) in sorted(last.items(), key=lambda item: item[1][0]):
        result = event.result
        out.append({"command": str(event.call.command or event.command or key)[:300], "ok": bool(event.ok),
                    "exit": result.exit_code if result is not None else None,
                    "error": _error_line(event) if not event.ok else None,
                    "passed_later": bool(event.ok) or passed_after.get(key, -1) > n})
    return out[-6:]


def _error_line(event: Event) -> str | None:
    from pipeline.trajectory.commands import error_signature

    text = str(event.result.text) if event.result is not None else ""
    found = error_signature(text)
    if found:
        return found.strip().splitlines()[0][:240]
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:240] if lines else None


def _finished(trajectory: Trajectory, events: list[Event], checks: list[dict[str, Any]], users: list[Any],
              last_edit: int) -> bool:
    committed = any(e.ok and e.call.command and _COMMIT.search(str(e.call.command)) and e.call.index > last_edit
                    for e in events)
    submitted = any(e.purpose is Purpose.SUBMIT and e.ok is not False for e in events)
    edits = [e for e in events if e.purpose is Purpose.EDIT and e.ok is not False]
    auto_committed = bool(edits) and all(e.result is not None and _AUTO_COMMIT.search(str(e.result.text))
                                         for e in edits)  # aider commits each edit it applies
    if committed or submitted or (auto_committed and all(c["ok"] for c in checks)):
        return True
    if not checks or not all(c["ok"] for c in checks):
        return False
    if not users:
        return False
    last_user = users[-1]
    after = [s for s in trajectory.steps if s.index > last_user.index and s.kind is StepKind.TOOL_CALL]
    return bool(_THANKS.match(str(last_user.text))) and not after


def _open_todos(trajectory: Trajectory) -> list[str]:
    """The agent's own plan, as it last wrote it: the items not marked done."""
    for call in reversed(trajectory.tool_calls()):
        key = _TODO_TOOLS.get((call.tool or "").lower())
        if key is None:
            continue
        _, _, raw = str(call.text).partition(" ")
        try:
            items = json.loads(raw).get(key)
        except (ValueError, AttributeError):
            return []
        out = []
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict) or str(item.get("status", "")).lower() in _DONE:
                continue
            text = item.get("content") or item.get("step") or item.get("description") or item.get("activeForm")
            if isinstance(text, str) and text.strip():
                state = str(item.get("status") or "pending").replace("_", " ")
                out.append(f"{text.strip()[:200]} ({state})")
        return out[:8]
    return []


def _unanswered(trajectory: Trajectory) -> list[str]:
    """Questions in the agent's last message, when no person wrote after it."""
    steps = [s for s in trajectory.steps if not s.meta and s.kind in (StepKind.USER, StepKind.ASSISTANT)]
    if not steps or steps[-1].kind is not StepKind.ASSISTANT:
        return []
    text = re.sub(r"```.*?```", " ", str(steps[-1].text), flags=re.S)
    return [q.strip() for q in _QUESTION.findall(text)][-2:]


def _tried(events: list[Event], checks: list[dict[str, Any]]) -> list[dict[str, str | None]]:
    """Commands that failed and never worked afterwards (a check's own last run is told as where it stopped)."""
    still = {c["command"] for c in checks}
    out: dict[str, dict[str, str | None]] = {}
    for n, event in enumerate(events):
        if event.ok is not False or event.purpose not in (*CHECKS, Purpose.INSTALL, Purpose.RUN, Purpose.BUILD):
            continue
        command = str(event.call.command or "")
        if not command or command[:300] in still:
            continue
        later = events[n + 1:]
        if any(e.ok and ((event.check and e.check == event.check) or e.call.command == event.call.command)
               for e in later):
            continue
        out.setdefault(command, {"command": command[:300], "error": _error_line(event)})
    return list(out.values())[-3:]


def _reverted(events: list[Event]) -> list[str]:
    edited = {p for e in events if e.purpose is Purpose.EDIT for p in e.call.paths}
    out = []
    for event in events:
        match = _UNDO.search(str(event.call.command or "")) if event.ok is not False else None
        if match:
            for word in match["files"].split():
                if not word.startswith("-") and any(str(p).endswith(word.removeprefix("./")) for p in edited):
                    out.append(word)
    return list(dict.fromkeys(out))


def _looked_at(events: list[Event], cwd: str | None, edited: list[str], most: int = 3) -> list[str]:
    """The files it read last, for a session that changed none yet: where it was looking when it stopped."""
    seen: list[str] = []
    for event in reversed(events):
        if event.purpose is not Purpose.EXPLORE:
            continue
        for path in event.call.paths:
            rel = relative_to(str(path), cwd)
            if rel and rel not in edited and rel not in seen and not rel.startswith("/"):
                seen.append(rel)
        if len(seen) >= most:
            break
    return seen[:most]


def _last_action(events: list[Event], cwd: str | None) -> dict[str, Any] | None:
    """The last tool call: what it ran or changed (a tool's files as paths of the checkout), and how it ended
    (or that no result came back)."""
    meaningful = [e for e in events if (e.call.command or e.call.paths) and (e.call.tool or "") != "write_stdin"]
    if not meaningful:
        return None
    event = meaningful[-1]  # not a poll of a process already running (Codex write_stdin)
    command = str(event.call.command or "")
    if command:
        what = command
    else:
        tool = re.sub(r"[^\w.-]", "", str(event.call.tool or "tool"))[:40] or "tool"
        what = f"{tool} " + ", ".join(relative_to(str(p), cwd) or "a file outside the checkout"
                                      for p in event.call.paths[:3])
    status = "no result yet" if event.result is None else ("ok" if event.ok else "failed" if event.ok is False else "done")
    return {"what": what.strip()[:300], "command": bool(command), "status": status,
            "error": _error_line(event) if event.ok is False else None}


_REFUSED = re.compile(r"\b(?:permission denied|not permitted|not allowed|denied|blocked|rejected|refused|"
                      r"requested (?:that )?.{0,60}?(?:not|never) be used|user (?:declined|doesn't want))\b", re.I)


def _blocked(events: list[Event]) -> list[dict[str, str]]:
    """Calls the environment or the person refused (a denied permission, a blocked tool or URL): the call, and
    the refusal in words of ours (``relay.REFUSALS``) -- never the output, which a hostile tool writes."""
    out: dict[str, dict[str, str]] = {}
    for event in events:
        if event.ok is False or event.protocol:
            text = str(event.result.text) if event.result is not None else ""
            if found := _REFUSED.search(text[:600]):
                word = " ".join(found.group(0).lower().split())
                reason = next((r for r in relay.REFUSALS if r in word),
                              "asked not to be used" if word.startswith("requested") else "declined")
                what = str(event.call.command or event.call.tool or "a call")[:120]
                out.setdefault(what, {"command": what, "reason": reason})
    return list(out.values())[-2:]


def _last_reply(trajectory: Trajectory) -> str | None:
    """The start of the agent's last message, when it came after the user's last instruction (an older one
    answers something else and would read as current)."""
    last_user = max((s.index for s in trajectory.steps if s.kind is StepKind.USER and not s.meta), default=-1)
    for step in reversed(trajectory.steps):
        if step.index < last_user:
            return None
        if step.kind is StepKind.ASSISTANT and not step.meta and step.text.strip():
            text = re.sub(r"```.*?```", " ", str(step.text), flags=re.S)
            return " ".join(text.split())[:300] or None
    return None


def _ended(trajectory: Trajectory) -> str | None:
    moment = trajectory.ended_at or next((s.timestamp for s in reversed(trajectory.steps) if s.timestamp), None) \
        or trajectory.started_at
    return moment.isoformat() if moment else None
