"""``skillmill setup``: connect every agent found on this machine, from one plan.

The agents present are those with a folder in the home folder or an executable on PATH
(:func:`pipeline.agents.wiring.present`). Each gets the plan ``install`` would make for it; the
plans are then merged by file, so two agents that read the same file (Claude Code and Copilot CLI
both read a project's ``.mcp.json``) make one change to it, computed on the text the first change
leaves. Applying writes each file once (with the same backups and confinement as ``install``);
running it again finds every entry in place and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.agents import export, install, wiring
from pipeline.errors import SkillmillError, UsageError


@dataclass
class Setup:
    scope: str
    agents: list[str]
    plans: list[install.Plan] = field(default_factory=list)
    #: One change per file, over every agent's plan.
    changes: list[install.Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(c.changed for c in self.changes)

    def describe(self) -> str:
        found = ", ".join(wiring.get(a).title for a in self.agents) or "none"
        lines = [f"Plan: connect the agents found here to skillmill ({self.scope})", f"  agents found: {found}"]
        for change in self.changes:
            lines.append(f"  {_action(change):<9} {change.file}: {change.what}")
        if not self.changed:
            lines.append("  nothing to change")
        for plan in self.plans:
            lines += [f"Note ({plan.agent}): {note}" for note in plan.notes]
        lines += [f"Note: {note}" for note in self.notes]
        return "\n".join(lines)

    def contract(self, applied: bool) -> dict[str, Any]:
        """``plans`` holds, per agent, what ``install --agent A --json`` prints for it."""
        return {"scope": self.scope, "agents": self.agents, "applied": applied, "notes": self.notes,
                "plans": {p.agent: p.contract(applied) for p in self.plans},
                "changes": [{"file": str(c.file), "what": c.what, "action": _action(c)} for c in self.changes]}

    def apply(self) -> None:
        install.Plan("setup", self.scope, self.changes).apply()
        self.changes = [c for c in self.changes if c.changed]


def _action(change: install.Change) -> str:
    return "create" if change.before is None else ("update" if change.changed else "unchanged")


def plan(project: Path | None = None, agents: list[str] | None = None) -> Setup:
    """The combined plan for ``agents`` (default: those present on this machine)."""
    found = wiring.present() if agents is None else agents
    base = project.expanduser().absolute() if project else None
    merged: dict[Path, install.Change] = {}
    pending: dict[Path, str] = {}
    plans = []
    token = install.PENDING.set(pending)
    try:
        for name in found:
            try:
                agent_plan = install.plan(name, base)
            except SkillmillError as exc:  # one agent's unreadable file (bad JSON, a link out) holds no other back
                plans.append(install.Plan(name, _scope(base), [], [f"left out: {exc}"]))
                continue
            for change in agent_plan.changes:
                first = merged.get(change.file)
                if first is None:
                    merged[change.file] = install.Change(change.file, change.what, change.before, change.after,
                                                         change.root)
                else:
                    first.after = change.after
                    first.what = f"{first.what}; {change.what}" if change.what not in first.what else first.what
                    change.before = first.before  # the agent's own view: what it changes in the file as it is
                pending[change.file] = change.after
            plans.append(agent_plan)
    finally:
        install.PENDING.reset(token)
    setup = Setup(_scope(base), list(found), plans, list(merged.values()))
    if not found:
        setup.notes = ["no agent found: none of their folders is in the home folder and none of their executables "
                       f"is on PATH (skillmill knows {', '.join(wiring.NAMES)}); `skillmill install --agent AGENT` "
                       "wires one anyway."]
    else:
        setup.notes = (_path_notes(plans) if base else []) + [_export_note(found, base)]
    return setup


def _scope(base: Path | None) -> str:
    return f"project {base}" if base else "user-wide"


def _path_notes(plans: list[install.Plan]) -> list[str]:
    """The note every project plan carries (is skillmill on PATH?), said once for all rather than per agent."""
    shared = install.path_notes()
    for p in plans:
        p.notes = [n for n in p.notes if n not in shared]
    return shared


def _export_note(found: list[str], project: Path | None) -> str:
    folders = []
    for name in found:
        try:
            folders.append(f"{name} {export.skills_dir(name, project)}")
        except UsageError:  # an agent with no project folder (its own notes say so)
            continue
    where = " --project DIR" if project else ""
    return ("approved skills reach each agent's own skills folder with `skillmill export --agent AGENT" + where
            + "`: " + "; ".join(folders))
