"""The zero-LLM distiller: one trajectory in, zero or one skill draft out.

It keeps what the session proved: the edits that led to the outcome, the errors met and
what got past them, and the last check that passed. A session with nothing of that kind
(no tool activity, read-only exploration, a smoke test) yields nothing, with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeline.distill.abstraction import Abstractor
from pipeline.distill.analysis import Analysis, Event, Fix, analyze, template
from pipeline.distill.facts import RepoFact, repo_facts
from pipeline.distill.naming import bounded, describe_task, skill_name, source_ref, task_title
from pipeline.library.model import Evidence, Item, Pitfall, Skill
from pipeline.trajectory import Trajectory
from pipeline.trajectory.commands import CHECKS, Purpose, error_signature, is_shell_tool

NAME = "heuristic"
#: Bump when the output for the same trajectory changes, so stored results are redone.
VERSION = "1"

MAX_PROCEDURE = 8
MAX_PITFALLS = 5
MIN_TOOL_CALLS = 3
_SMOKE = re.compile(r"^\s*(hi|hello|hey|ping|test|testing|warmup|say hi|hello world|show tools|"
                    r"what can you do|who are you)\b[\s.!?]*$", re.I)
_CONFIDENCE = {("resolved", "label"): 0.8, ("resolved", "heuristic"): 0.6, ("unknown", "heuristic"): 0.4,
               ("failed", "label"): 0.3, ("failed", "heuristic"): 0.3}


@dataclass
class Distilled:
    """What one trajectory gave: skills, or the reason it gave none; and facts about its repo."""

    trajectory: str
    skills: list[Skill] = field(default_factory=list)
    reason: str | None = None
    facts: list[RepoFact] = field(default_factory=list)


def distill(trajectory: Trajectory) -> Distilled:
    analysis = analyze(trajectory)
    out = Distilled(trajectory.id, facts=repo_facts(analysis))
    out.reason = _nothing_reusable(analysis)
    if out.reason is None:
        out.skills.append(_skill(analysis))
    return out


def trivial_reason(analysis: Analysis) -> str | None:
    """Why a session is too slight to learn from at all, by the cheapest checks.

    The model distiller asks these before paying for a request: no tool activity, a smoke
    test, too few tool calls to generalize from.
    """
    trajectory = analysis.trajectory
    calls = len(analysis.events)
    first_line = (trajectory.task or "").strip().splitlines()[0] if (trajectory.task or "").strip() else ""
    if calls == 0:
        return "no tool activity"
    if _SMOKE.match(first_line):
        return f"smoke test ({first_line[:40]!r})"
    if calls < MIN_TOOL_CALLS:
        return f"too short to generalize ({calls} tool call{'s' if calls != 1 else ''})"
    return None


def _nothing_reusable(analysis: Analysis) -> str | None:
    trajectory = analysis.trajectory
    trivial = trivial_reason(analysis)
    if trivial:
        return trivial
    fixes = analysis.fixes()
    if not analysis.edits and not analysis.submitted and not fixes:
        if _unreadable(analysis):  # e.g. redacted Codex rollouts: patches and commands replaced by placeholders
            return "tool inputs unreadable (redacted or unparsable): no edit or command to ground a skill in"
        return "read-only session: no edits and no error fixes"
    if trajectory.outcome.status == "failed" and not fixes:
        return "failed outcome with no error->fix pair to learn from"
    if not fixes and not _verification(analysis):
        return "edits were never checked: no passing test, build, lint or run after them"
    return None


def _unreadable(analysis: Analysis) -> bool:
    """Edits without a file name, or shell calls without a command: we cannot tell what was done."""
    return any((e.purpose is Purpose.EDIT and not e.paths) or (is_shell_tool(e.call.tool) and not e.command)
               for e in analysis.events)


def _ev(trajectory: Trajectory, steps: list[int]) -> list[Evidence]:
    return [Evidence(trajectory=trajectory.id, steps=sorted(set(steps)))]


def _skill(analysis: Analysis) -> Skill:
    t = analysis.trajectory
    failed = t.outcome.status == "failed"
    pitfalls = _pitfalls(analysis)
    verification = [] if failed else _verification(analysis)
    procedure = [] if failed else _procedure(analysis)
    kind = "pitfall" if failed or not procedure else "procedure"
    name = skill_name(t, prefix="pitfalls" if kind == "pitfall" else None)
    confidence = _CONFIDENCE.get((t.outcome.status, t.outcome.source), 0.4)
    if verification:
        confidence += 0.1
    notes = _attempt_notes(analysis) if failed else ""
    return Skill(
        name=name,
        title=task_title(t),
        description=_description(analysis, kind, procedure, pitfalls, verification),
        kind=kind,
        confidence=min(confidence, 0.95),
        outcome=t.outcome.status,
        repo=t.repo,
        sources=[source_ref(t)],
        procedure=procedure,
        pitfalls=pitfalls,
        verification=verification,
        notes=notes,
    )


def _procedure(analysis: Analysis) -> list[Item]:
    t = analysis.trajectory
    scratch = analysis.scratch_files()
    items: list[Item] = []
    edited = _edited_files(analysis, scratch)
    first_edit = min((e.call.index for e in analysis.edits if set(e.paths) - scratch), default=None)
    if edited and first_edit is not None:
        reads = [e for e in analysis.of(Purpose.EXPLORE) if e.call.index < first_edit and
                 (any(f in (e.command or "") for f in edited) or set(e.paths) & set(edited))]
        if reads:
            files = ", ".join(f"`{f}`" for f in edited[:4])
            items.append(Item(text=f"Locate and read the code involved: {files}.",
                              evidence=_ev(t, [s for e in reads for s in e.steps])))
    repro = _reproduction(analysis, first_edit)
    if repro is not None:
        items.append(Item(text=f"Reproduce the problem before changing code{_symptom(repro, analysis.abstract)}.",
                          command=repro.command, evidence=_ev(t, repro.steps)))
    for setup in _collapse([e for e in analysis.of(Purpose.INSTALL) if e.ok]):
        items.append(Item(text="Set up the environment.", command=setup[0].command,
                          evidence=_ev(t, [s for e in setup for s in e.steps])))
    for path in edited:
        edits = [e for e in analysis.edits if path in e.paths]
        submitted = analysis.submitted.get(path)
        summary = _change_summary([submitted] if submitted else [e.call.diff for e in edits])
        shell = next((e.command for e in edits if e.command), None)
        count = f" ({len(edits)} edits)" if len(edits) > 1 else ""
        steps = [s for e in edits for s in e.steps] or [e.call.index for e in analysis.of(Purpose.SUBMIT)]
        items.append(Item(text=f"Edit `{path}`{count}{summary}.", command=shell if len(edits) == 1 else None,
                          evidence=_ev(t, steps)))
    if _verification(analysis):
        items.append(Item(text="Run the check under Verification and confirm it passes."))
    return items[:MAX_PROCEDURE]


def _edited_files(analysis: Analysis, scratch: frozenset[str]) -> list[str]:
    """Files the change consists of: the submitted patch when there is one, else the edits."""
    if analysis.submitted:
        return [p for p in analysis.submitted if p not in scratch]
    files: list[str] = []
    for event in analysis.edits:
        for path in event.paths:
            if path not in scratch and path not in files:
                files.append(path)
    return files


def _reproduction(analysis: Analysis, first_edit: int | None) -> Event | None:
    if first_edit is None:
        return None
    before = [e for e in analysis.of(Purpose.RUN, Purpose.TEST) if e.call.index < first_edit and e.command]
    failing = [e for e in before if e.ok is False or (e.result and _has_error(e.result.text))]
    return failing[-1] if failing else (before[-1] if before else None)


def _has_error(text: str) -> bool:
    return bool(re.search(r"\b\w*(Error|Exception)\b|Traceback|FAILED|AssertionError", text))


def _symptom(event: Event, abstract: Abstractor) -> str:
    """The error a reproduction showed: its own failure, or an error it printed and caught."""
    error = event.error
    if error is None and event.result is not None:
        found = error_signature(event.result.text)
        error = abstract(" ".join(found.split())[:160]) if found else None
    return f"; it shows `{error}`" if error else ""


def _change_summary(diffs: list[str | None]) -> str:
    for diff in diffs:
        if not diff:
            continue
        removed = [line[1:].strip() for line in diff.splitlines()
                   if line.startswith("-") and not line.startswith("---") and line[1:].strip()]
        added = [line[1:].strip() for line in diff.splitlines()
                 if line.startswith("+") and not line.startswith("+++") and line[1:].strip()]
        if removed and added and len(removed[0]) <= 80 and len(added[0]) <= 80:
            return f": replace `{removed[0]}` with `{added[0]}`"
        if added and not removed and len(added[0]) <= 80:
            return f": add `{added[0]}`"
    return ""


def _collapse(events: list[Event]) -> list[list[Event]]:
    """Group repeated attempts of the same command (by template) into one item."""
    groups: dict[str, list[Event]] = {}
    for event in events:
        key = template(event.command) if event.command else f"{event.call.tool}:{','.join(event.paths)}"
        groups.setdefault(key, []).append(event)
    return list(groups.values())


def _pitfalls(analysis: Analysis) -> list[Pitfall]:
    t = analysis.trajectory
    out: list[Pitfall] = []
    seen: set[str] = set()
    for fix in analysis.fixes():
        symptom = _fix_symptom(fix)
        if symptom in seen:
            continue
        seen.add(symptom)
        text, command = _fix_action(fix)
        out.append(Pitfall(symptom=symptom, fix=text, command=command, evidence=_ev(t, fix.steps)))
        if len(out) >= MAX_PITFALLS:
            break
    return out


def _fix_symptom(fix: Fix) -> str:
    failed = fix.failed
    if failed.command:
        what = f"`{_short(failed.command)}`"
    elif failed.paths:
        what = f"{failed.call.tool} on " + ", ".join(f"`{p}`" for p in failed.paths)
    else:
        what = f"A `{failed.call.tool}` call"
    error = f": `{failed.error}`" if failed.error else ""
    return f"{what} failed{error}"


def _fix_action(fix: Fix) -> tuple[str, str | None]:
    installs = [e for e in fix.between if e.purpose is Purpose.INSTALL and e.command]
    if installs:
        return "install what was missing, then run it again", installs[-1].command
    reads = [e for e in fix.between if e.purpose is Purpose.EXPLORE]
    if reads and not fix.failed.command:
        files = ", ".join(dict.fromkeys(f"`{p}`" for e in reads for p in e.paths))
        return f"read {files} first, then retry", None
    edits = [e for e in fix.between if e.purpose is Purpose.EDIT]
    if edits:
        files = ", ".join(dict.fromkeys(f"`{p}`" for e in edits for p in e.paths)) or "the code"
        return f"edit {files}, then run it again", None
    if fix.failed.command and fix.succeeded.command and fix.failed.command != fix.succeeded.command:
        return "change the command to the form that worked", fix.succeeded.command
    if fix.succeeded.command:
        return "the same command passed after the steps in between; rerun it once they are done", \
            fix.succeeded.command
    return f"retry with corrected input; the call that worked: `{_short(fix.succeeded.call.text, 80)}`", None


def _short(command: str | None, limit: int = 100) -> str:
    line = (command or "").split("\n", 1)[0].strip()
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _verification(analysis: Analysis) -> list[Item]:
    t = analysis.trajectory
    after = [e for e in analysis.events if e.call.index > analysis.last_edit_index and e.ok and e.command]
    checks = [e for e in after if e.purpose in CHECKS]
    chosen = checks[-1] if checks else next((e for e in reversed(after) if e.purpose is Purpose.RUN), None)
    if chosen is None:
        return []
    what = "passes" if chosen.purpose in CHECKS else "runs cleanly"
    return [Item(text=f"The {chosen.purpose.value} command {what} (exit code 0) after the change.",
                 command=chosen.command, evidence=_ev(t, chosen.steps))]


def _attempt_notes(analysis: Analysis) -> str:
    files = _edited_files(analysis, analysis.scratch_files())
    if not files:
        return ""
    listed = ", ".join(f"`{f}`" for f in files[:5])
    return (f"Approach that did not resolve the task ({analysis.trajectory.outcome.evidence or 'failed'}): "
            f"editing {listed}. Look for a different cause before repeating it.")


def _description(analysis: Analysis, kind: str, procedure: list[Item], pitfalls: list[Pitfall],
                 verification: list[Item]) -> str:
    t = analysis.trajectory
    task = describe_task(t)
    where = f" in {t.repo}" if t.repo else ""
    if kind == "pitfall":
        head = f"Use when working{where} on: {task}. Pitfalls met in an attempt that "
        head += "did not resolve it" if t.outcome.status == "failed" else "hit errors"
    else:
        head = f"Use when{where} you need to: {task}. Procedure that "
        head += "resolved it" if t.outcome.status == "resolved" else "worked in one session"
    parts = [head]
    files = [i.text.split("`")[1] for i in procedure if i.text.startswith("Edit `")]
    if files:
        parts.append("touches " + ", ".join(files[:3]))
    if verification and verification[0].command:
        parts.append(f"verified with `{_short(verification[0].command, 80)}`")
    if pitfalls:
        parts.append("errors: " + "; ".join(p.symptom.split(": ", 1)[-1] for p in pitfalls[:2]))
    return bounded(", ".join(parts) + ".")
