"""The "working in <repo>" skill: what every session in one repository proved, consolidated.

Build, test and lint commands that succeeded there (with how often), the setup that worked,
and the environment fixes that got past errors. It needs no model and is the most
reusable thing a pile of trajectories holds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from pipeline.distill.facts import RepoFact
from pipeline.distill.naming import bounded, clamp_name, repo_label, repo_slug
from pipeline.library.model import Evidence, Item, Pitfall, Skill, SourceRef

MAX_PER_KIND = 4
MAX_EVIDENCE = 3
_LABEL = {"test": "Run the tests", "build": "Build", "lint": "Lint / type-check", "install": "Set up"}


def repo_skill_name(repo: str) -> str:
    return clamp_name(f"working-in-{repo_slug(repo) or 'repo'}")


def consolidate(repo: str, facts: Iterable[RepoFact]) -> Skill | None:
    facts = sorted(facts, key=lambda f: (f.trajectory, f.steps[:1], f.kind, f.template))
    if not facts:
        return None
    by_template: dict[tuple[str, str], list[RepoFact]] = defaultdict(list)
    for fact in facts:
        by_template[(fact.kind, fact.template)].append(fact)

    procedure: list[Item] = []
    for kind in ("install", "build", "test", "lint"):
        rows = [(key, group) for key, group in by_template.items() if key[0] == kind and any(f.ok for f in group)]
        rows.sort(key=lambda row: (-sum(f.ok for f in row[1]), row[0][1]))
        for (_, shape), group in rows[:MAX_PER_KIND]:
            passed = [f for f in group if f.ok]
            sessions = len({f.trajectory for f in passed})
            tally = f"worked {len(passed)} of {len(group)} times in {sessions} session{'s' if sessions > 1 else ''}"
            procedure.append(Item(text=f"{_LABEL[kind]}: `{shape}` ({tally}).", command=passed[0].command,
                                  evidence=_evidence(passed)))
    pitfalls: list[Pitfall] = []
    fixes: dict[tuple[str, str], list[RepoFact]] = defaultdict(list)
    for fact in facts:
        if fact.kind == "fix":
            fixes[(fact.symptom or "", fact.template)].append(fact)
    for (symptom, _), group in sorted(fixes.items(), key=lambda row: (-len(row[1]), row[0])):
        times = f" (fixed this way {len(group)} times)" if len(group) > 1 else ""
        pitfalls.append(Pitfall(symptom=f"`{symptom}`", fix=f"run the command below{times}",
                                command=group[0].command, evidence=_evidence(group)))
    if not procedure and not pitfalls:
        return None

    sources: dict[str, SourceRef] = {}
    for fact in facts:
        sources.setdefault(fact.trajectory, SourceRef(trajectory=fact.trajectory, agent=fact.agent,
                                                      outcome=fact.outcome, task=fact.task))
    outcomes = {s.outcome for s in sources.values()}
    tests = [i for i in procedure if i.text.startswith(_LABEL["test"])]
    lead = f" Tests: `{tests[0].text.split('`')[1]}`." if tests else ""
    label = repo_label(repo)
    return Skill(
        name=repo_skill_name(repo),
        title=f"Working in {label}",
        description=bounded(f"Use when building, testing, linting or setting up the {label} repository: the "
                            f"commands that worked there across {len(sources)} agent session"
                            f"{'s' if len(sources) > 1 else ''}, how often, and fixes for environment errors met "
                            f"before.{lead}"),
        kind="repo",
        confidence=min(0.9, 0.5 + 0.05 * len(sources)),
        outcome=outcomes.pop() if len(outcomes) == 1 else "mixed",
        repo=repo,
        sources=sorted(sources.values(), key=lambda s: s.trajectory),
        procedure=procedure,
        pitfalls=pitfalls[:MAX_PER_KIND],
    )


def _evidence(facts: list[RepoFact]) -> list[Evidence]:
    merged: dict[str, set[int]] = defaultdict(set)
    for fact in facts:
        merged[fact.trajectory].update(fact.steps)
    return [Evidence(trajectory=t, steps=sorted(steps)) for t, steps in sorted(merged.items())[:MAX_EVIDENCE]]
