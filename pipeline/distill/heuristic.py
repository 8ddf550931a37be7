"""The zero-LLM distiller: one trajectory in, facts about its repository out.

Without a model, one session rarely holds a procedure worth reusing: most are the log of one bug
fix that will not recur. What does recur across sessions of one repository is what an engineer
writes into an AGENTS.md by hand -- the commands that really work there, the environment traps,
the failures that are not yours, where things live, and what the person told the agent to do
differently. So this distiller writes no skill per session: it extracts those facts
(``facts.py``), and ``repo.py`` consolidates every session's facts into one ``working-in-<repo>``
manual. A session that gives no fact says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeline.distill.analysis import Analysis, analyze
from pipeline.distill.facts import RepoFact, repo_facts
from pipeline.library.model import Skill
from pipeline.trajectory import Trajectory
from pipeline.trajectory.commands import Purpose, is_shell_tool

NAME = "heuristic"
#: Bump when the output for the same trajectory changes, so stored results are redone.
VERSION = "2"

MIN_TOOL_CALLS = 3
_SMOKE = re.compile(r"^\s*(hi|hello|hey|ping|test|testing|warmup|say hi|hello world|show tools|"
                    r"what can you do|who are you)\b[\s.!?]*$", re.I)


@dataclass
class Distilled:
    """What one trajectory gave: skills, or the reason it gave none; and facts about its repo."""

    trajectory: str
    skills: list[Skill] = field(default_factory=list)
    reason: str | None = None
    facts: list[RepoFact] = field(default_factory=list)


def distill(trajectory: Trajectory) -> Distilled:
    analysis = analyze(trajectory)
    trivial = trivial_reason(analysis)
    if trivial:
        return Distilled(trajectory.id, reason=trivial)
    facts = repo_facts(analysis)
    return Distilled(trajectory.id, facts=facts, reason=None if facts else _no_fact_reason(analysis))


def trivial_reason(analysis: Analysis, *, request: bool = False) -> str | None:
    """Why a session is too slight to learn from at all, by the cheapest checks.

    The model distiller asks these before paying for a request (``request=True``): no tool
    activity, a smoke test, too few tool calls to generalize from. A short piece of a larger
    session (a subagent's run, one request of an aider launch) still gives its facts here -- a
    one-edit request can hold the person's correction of the one before -- but is not worth a
    request of its own: ~8 KB of system prompt and schema for a transcript of one or two calls,
    whose facts the heuristics give anyway.
    """
    trajectory = analysis.trajectory
    calls = len([e for e in analysis.events if not e.protocol])
    first_line = (trajectory.task or "").strip().splitlines()[0] if (trajectory.task or "").strip() else ""
    if calls == 0:
        return "no tool activity"
    if _SMOKE.match(first_line):
        return f"smoke test ({first_line[:40]!r})"
    if calls < MIN_TOOL_CALLS and (request or not trajectory.parent_session_id):
        return f"too short to generalize ({calls} tool call{'s' if calls != 1 else ''})"
    return None


def _no_fact_reason(analysis: Analysis) -> str:
    # Unreadable inputs first: a redacted Codex rollout (patches and commands replaced by placeholders)
    # has its folder and remote redacted too, so it knows no repository either -- but naming one would
    # not make it give a fact; the redaction is why it gives none.
    if _unreadable(analysis):
        return "tool inputs unreadable (redacted or unparsable)"
    if not analysis.trajectory.repo:
        return "no repository known: nothing to file its facts under"
    if not analysis.edits and not any(e.command for e in analysis.events):
        return "no project command ran and nothing was edited"
    return "no project command ran, no correction, no file searched for and then edited"


def _unreadable(analysis: Analysis) -> bool:
    """Edits with neither a file name nor a command line, or shell calls without a command: we cannot
    tell what was done (``mkdir -p components`` names no file, yet says exactly what it did)."""
    return any((e.purpose is Purpose.EDIT and not e.paths and not e.command)
               or (is_shell_tool(e.call.tool) and not e.command) for e in analysis.events)
