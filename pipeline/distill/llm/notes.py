"""The model's notes for the repository's manual, as the ``RepoFact``s the heuristics extract.

Grounding (``grounding.py``) has checked that each note is in the transcript; here each becomes a
fact with the fields ``pipeline/distill/facts.py`` gives its own, so one ``consolidate`` builds the
``working-in-<repo>`` manual from both:

* a **correction**: the person's words, with what the agent had just changed;
* a **command** that worked: the run that shows it, with the purpose the command classifier gives
  it where it has one (the model's otherwise);
* an **environment fix**: the error, and the run after it that got past it.

A command must be the repository's own and have run cleanly (a scratch script, a one-off or a
failing run tells the next agent nothing): what is not is removed and reported like what failed
grounding. A fact the heuristics already hold (same kind and template, or the same message of the
person's) is not added twice.
"""

from __future__ import annotations

from pipeline.distill.abstraction import Abstractor
from pipeline.distill.analysis import Analysis, Event, template
from pipeline.distill.corrections import correction_at
from pipeline.distill.facts import RepoFact, clean, fact_base, own_segment, project_command
from pipeline.distill.llm.grounding import Note
from pipeline.trajectory.commands import CHECKS, Purpose

_KINDS = {p.value for p in CHECKS | {Purpose.INSTALL}}


def note_facts(analysis: Analysis, notes: list[Note]) -> tuple[list[RepoFact], list[str]]:
    """The facts the grounded ``notes`` give, and why the others were left out."""
    t = analysis.trajectory
    if not t.repo:
        return [], []
    base = fact_base(t)
    events = {e.call.index: e for e in analysis.events}
    abstract = Abstractor(t.cwd)
    facts: list[RepoFact] = []
    removed: list[str] = []
    for note in notes:
        if note.kind == "correction":
            c = correction_at(analysis, note.steps[0], note.text)
            facts.append(RepoFact(**base, kind="correction", template=c.quote.lower(), text=c.quote, steps=c.steps,
                                  paths=c.paths, symptom=c.context))
            continue
        after = min((i for i in note.errors if i >= 0), default=-1) if note.kind == "fix" else -1
        runs = [events[i] for i in note.calls if i in events and i > after]
        event = _run(analysis, runs, note.cited)
        if event is None:
            removed.append(f"{note.label}: {_why_not(analysis, runs, note)}")
            continue
        if note.kind == "fix":
            command = event.command or ""
            facts.append(RepoFact(**base, kind="fix", template=template(command), command=clean(command),
                                  steps=sorted({*note.steps, *event.steps}), symptom=abstract(note.error or "")))
        else:
            kind = event.purpose.value if event.purpose.value in _KINDS else note.kind
            own = own_segment(event)  # the check's own part of the command line, as the heuristics keep it
            facts.append(RepoFact(**base, kind=kind, template=template(own), command=own, steps=event.steps))
    return facts, removed


def _run(analysis: Analysis, runs: list[Event], cited: list[int]) -> Event | None:
    """The run that shows the command worked: a clean run of the repository's own, the cited one first."""
    worked = [e for e in runs if e.ok and project_command(analysis, e)]
    return next((e for e in worked if set(e.steps) & set(cited)), worked[0] if worked else None)


def _why_not(analysis: Analysis, runs: list[Event], note: Note) -> str:
    shown = " ".join(note.text.split())[:80]
    if not runs and note.kind == "fix":
        return f"the command `{shown}` never ran after the error"
    if not any(e.ok for e in runs):
        return f"no run of the command `{shown}` shows it working"
    return f"the command `{shown}` is a one-off (a scratch script or a temporary path), not the repository's"


def merge(facts: list[RepoFact], more: list[RepoFact]) -> list[RepoFact]:
    """``facts`` and what ``more`` adds to them: one fact per kind and template, one correction per message."""
    def keys(fact: RepoFact) -> set[tuple[str, object]]:
        found: set[tuple[str, object]] = {(fact.kind, fact.template)}
        if fact.kind == "correction" and fact.steps:
            found.add((fact.kind, fact.steps[0]))
        return found

    seen = {key for fact in facts for key in keys(fact)}
    out = list(facts)
    for fact in more:
        if keys(fact) & seen:
            continue
        seen |= keys(fact)
        out.append(fact)
    return out
