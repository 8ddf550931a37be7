"""Facts about a repository that a session proved: which checks ran clean, which fixes worked.

They are stored per trajectory (so later runs add to them without re-reading old sessions)
and consolidated into the "working in <repo>" skill by ``repo.py``.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from pipeline.distill.analysis import Analysis, template
from pipeline.distill.naming import task_title
from pipeline.trajectory.commands import CHECKS, Purpose, segments

_ENV_ERROR = re.compile(r"ModuleNotFoundError|No module named|ImportError|command not found|not installed|"
                        r"Cannot find module|cannot find module|ENOENT|not found in PATH|No such file or directory|"
                        r"could not find|missing dependency|Could not import|unknown command", re.I)


class RepoFact(BaseModel):
    trajectory: str
    repo: str
    kind: str  # test | build | lint | install | fix
    template: str
    command: str
    ok: bool
    steps: list[int] = Field(default_factory=list)
    symptom: str | None = None
    agent: str = ""
    outcome: str = "unknown"
    task: str = ""


def clean(command: str) -> str:
    """The command without ``cd`` / ``export`` preludes, one line."""
    first = command.strip().split("\n", 1)[0]
    if "<<" in first:
        return command.strip()
    return " && ".join(segments(command))


def repo_facts(analysis: Analysis) -> list[RepoFact]:
    t = analysis.trajectory
    if not t.repo:
        return []
    base = {"trajectory": t.id, "repo": t.repo, "agent": t.agent, "outcome": t.outcome.status,
            "task": task_title(t)}
    facts: list[RepoFact] = []
    for event in analysis.events:
        if event.purpose in CHECKS | {Purpose.INSTALL} and event.command and event.ok is not None:
            facts.append(RepoFact(**base, kind=event.purpose.value, template=template(event.command),
                                  command=clean(event.command), ok=event.ok, steps=event.steps))
    for fix in analysis.fixes():
        installs = [e for e in fix.between if e.purpose is Purpose.INSTALL and e.command]
        environmental = bool(fix.failed.error and _ENV_ERROR.search(fix.failed.error))
        if not installs and not (environmental and fix.failed.command != fix.succeeded.command):
            continue
        remedy = installs[-1].command if installs else fix.succeeded.command
        if remedy:
            facts.append(RepoFact(**base, kind="fix", template=template(remedy), command=clean(remedy), ok=True,
                                  steps=fix.steps, symptom=fix.failed.error or "the command failed"))
    return facts
