"""Skills beyond the manuals: only a lesson that generalizes.

One session's bug fix is that bug's history; it feeds the repository's manual (its commands, its
environment fixes, where it worked) and nothing more. A separate skill is written only when the
same lesson shows up again:

* the same error fixed by the same kind of code change (same file) in **two or more tasks** -- a
  pitfall of that repository, or of the tool when the tasks span repositories;
* the same environment error got past with the same change in **two or more repositories** -- a
  general skill bound to the tool, not to a repository.

Replays of one task (the same title) count once: they are one lesson seen again, not two.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from pipeline.distill.corrections import first_line
from pipeline.distill.facts import RepoFact, error_key
from pipeline.distill.naming import bounded, clamp_name, repo_label, repo_slug, slug
from pipeline.library.model import Evidence, Item, Pitfall, Skill, SourceRef

MIN_TASKS = 2
MIN_REPOS = 2
MAX_EVIDENCE = 4


def generalize(facts: Iterable[RepoFact]) -> list[Skill]:
    """The lesson skills the facts of every repository support (``pair`` and ``fix`` facts)."""
    pairs: dict[str, list[RepoFact]] = defaultdict(list)
    environment: dict[tuple[str, str], list[RepoFact]] = defaultdict(list)
    for fact in facts:
        if fact.kind == "pair":
            pairs[fact.template].append(fact)
        elif fact.kind == "fix" and not fact.text:  # an install / build / variable, not a command's own flags
            environment[(error_key(fact.symptom or ""), _fold(fact.template))].append(fact)
    skills = [_pitfall(group) for group in pairs.values() if _tasks(group) >= MIN_TASKS]
    skills += [_environment(group) for group in environment.values()
               if len({_repo_name(f.repo) for f in group}) >= MIN_REPOS]
    return sorted(skills, key=lambda s: s.name)


def _tasks(group: list[RepoFact]) -> int:
    return len({" ".join(f.task.lower().split()) for f in group})


def _repo_name(repo: str) -> str:
    return repo.rsplit("/", 1)[-1].lower()


def _fold(template: str) -> str:
    return re.sub(r"^python3?\b", "python", template)


def _pitfall(group: list[RepoFact]) -> Skill:
    latest = max(group, key=lambda f: (f.when or "", f.trajectory))
    repos = sorted({f.repo for f in group})
    repo = repos[0] if len({_repo_name(r) for r in repos}) == 1 else None
    error = _short(latest.symptom or "", 160)
    where = f"in {repo_label(repo)}" if repo else "in several repositories"
    name = clamp_name("-".join(p for p in (repo_slug(repo) if repo else "", slug(error, 6)) if p) or "lesson")
    sessions = len({f.trajectory for f in group})
    return Skill(
        name=name,
        title=f"`{error}`",
        description=bounded(f"Use when `{error}` appears {where}: {latest.text} (the same fix in {_tasks(group)} "
                            f"tasks, {sessions} sessions)."),
        kind="pitfall",
        confidence=min(0.9, 0.5 + 0.1 * _tasks(group)),
        outcome=_outcome(group),
        repo=repo,
        sources=_sources(group),
        pitfalls=[Pitfall(symptom=f"`{error}`", fix=f"{latest.text}, then run the same check again",
                          evidence=_evidence(group))],
        verification=[Item(text="The check that showed the error passes after the change.", command=latest.command,
                           evidence=_evidence([latest]))],
    )


def _environment(group: list[RepoFact]) -> Skill:
    latest = max(group, key=lambda f: (f.when or "", f.trajectory))
    error = _short(latest.symptom or "", 160)
    repos = sorted({_repo_name(f.repo) for f in group})
    return Skill(
        name=clamp_name(f"environment-{slug(error, 6) or 'fix'}"),
        title=f"`{error}`",
        description=bounded(f"Use when `{error}` appears running a project's command: `{latest.template}` got "
                            f"the same command past it in {len(repos)} repositories ({', '.join(repos[:4])})."),
        kind="pitfall",
        confidence=min(0.9, 0.5 + 0.1 * len(repos)),
        outcome=_outcome(group),
        sources=_sources(group),
        pitfalls=[Pitfall(symptom=f"`{error}`", fix="install or set up what is missing, then run the command again",
                          command=latest.command, evidence=_evidence(group))],
    )


def _outcome(group: list[RepoFact]) -> str:
    outcomes = {f.outcome for f in group}
    return outcomes.pop() if len(outcomes) == 1 else "mixed"


def _sources(group: list[RepoFact]) -> list[SourceRef]:
    seen: dict[str, SourceRef] = {}
    for fact in group:
        seen.setdefault(fact.trajectory, SourceRef(trajectory=fact.trajectory, agent=fact.agent,
                                                   outcome=fact.outcome, task=fact.task))
    return sorted(seen.values(), key=lambda s: s.trajectory)


def _evidence(group: list[RepoFact]) -> list[Evidence]:
    merged: dict[str, set[int]] = defaultdict(set)
    for fact in sorted(group, key=lambda f: (f.when or "", f.trajectory), reverse=True):
        if fact.trajectory in merged or len(merged) < MAX_EVIDENCE:
            merged[fact.trajectory].update(fact.steps)
    return [Evidence(trajectory=t, steps=sorted(s)) for t, s in sorted(merged.items())]


def _short(text: str, limit: int) -> str:
    line = first_line(text).replace("`", "'")
    return line if len(line) <= limit else line[: limit - 3].rstrip() + "..."
