"""The write stage: drafts into the library, then what was distilled into the state database.

Below the stages (``pipeline.stages`` calls :func:`write`; the LLM distiller, ``distill/llm/run.py``,
uses :func:`save_skill` and the rest as it consolidates): a person's decision is never
overwritten, and a run killed part-way records nothing of this stage.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pipeline.distill import Distilled, consolidate
from pipeline.distill import heuristic as distiller
from pipeline.distill import tables as distill_tables
from pipeline.distill.lessons import generalize
from pipeline.distill.naming import clamp_name
from pipeline.distill.risk import flag
from pipeline.distill.scanned import carry as carry_scan
from pipeline.errors import SkillFileError
from pipeline.index.state import StateDB
from pipeline.ingest import tables as ingest_tables
from pipeline.library.model import Skill
from pipeline.library.store import Library, SaveResult
from pipeline.summary import NothingReusable, Reopened, RunError, RunSummary, Withdrawn


@dataclass
class WriteOutcome:
    results: dict[str, SaveResult] = field(default_factory=dict)
    reopened: dict[str, str] = field(default_factory=dict)  # rejected skills back with new evidence
    errors: list[RunError] = field(default_factory=list)  # skill files in the way that cannot be read
    withdrawn: dict[str, str] = field(default_factory=dict)  # candidates of superseded session versions

    def count(self, summary: RunSummary) -> None:
        for name, result in sorted(self.results.items()):
            if result == "created":
                summary.skills.proposed += 1
                summary.written.append(name)
            elif result == "updated":
                summary.skills.updated += 1
                summary.written.append(name)
            elif result == "held":
                summary.held.append(name)
            else:
                summary.skills.unchanged += 1
                summary.unchanged.append(name)
        summary.reopened += [Reopened(name=n, reason=r) for n, r in sorted(self.reopened.items())]
        summary.errors += self.errors
        summary.withdrawn += [Withdrawn(name=n, reason=r) for n, r in sorted(self.withdrawn.items())]


def save_skill(library: Library, draft: Skill, lineage: dict[str, set[str]] | None = None,
               reopened: dict[str, str] | None = None) -> tuple[str, SaveResult]:
    """Write a draft unless a person rejected the same skill for the same evidence (``library/memory.py``).

    A rejected skill whose evidence changed materially comes back as a candidate that says why;
    ``reopened`` (when given) collects ``name -> note`` for the run summary.
    """
    with library.lock():
        rejection = library.rejection(draft)
        if rejection is None:
            return _save_draft(library, draft, lineage)
        if not rejection.news:
            return rejection.skill.name, "held"
        skill, result = library.reopen(draft, rejection)
        if reopened is not None:
            reopened[skill.name] = skill.extra_metadata.get("reopened", "")
        return skill.name, result


def _save_draft(library: Library, draft: Skill, lineage: dict[str, set[str]] | None = None) -> tuple[str, SaveResult]:
    """Write a draft into the library without ever overwriting a person's decision.

    * same name, same source trajectories (or later versions of them, per ``lineage``: id ->
      the ids it superseded): the draft replaces the candidate (version bumped when the
      content changes);
    * same name from another trajectory: the draft gets a distinct name;
    * an approved, deprecated or rejected skill is left as it is.
    """
    existing = library.get(draft.name)
    if existing is not None:
        old = existing.skill
        known = set(old.trajectory_ids())
        # A consolidated skill (a manual, a lesson seen in several sessions) gains and loses sources
        # from run to run: any source in common makes it the same skill, and a manual is its repository's.
        same_origin = (draft.kind == "repo" and _same_repo(old, draft)) or any(
            t in known or known & (lineage or {}).get(t, set()) for t in draft.trajectory_ids())
        if not same_origin:
            suffix = (_repo_key(draft.repo) if draft.kind == "repo"  # stable, whatever sessions come later
                      else draft.trajectory_ids()[0][:6] if draft.sources else "2")
            name = clamp_name(f"{draft.name[:57].rstrip('-')}-{suffix}")
            return _save_draft(library, draft.model_copy(update={"name": name}), lineage)
        if old.status != "candidate":
            return draft.name, "unchanged"
        if old.model_copy(update={"version": draft.version}) != draft:
            draft = draft.model_copy(update={"version": old.version + 1})
        else:
            draft = draft.model_copy(update={"version": old.version})
    return draft.name, library.save(draft)


def _same_repo(old: Skill, draft: Skill) -> bool:
    """Whether an existing skill of a manual's name is that repository's manual (pooled by the name's last
    part, as ``consolidate_repos`` pools them): two repositories whose names clamp to one skill name
    (``platform-infra-terraform-aws`` / ``-gcp``) must not overwrite each other's manual."""
    def key(repo: str | None) -> str:
        return (repo or "").rsplit("/", 1)[-1].lower()

    return old.kind != "repo" or not old.repo or key(old.repo) == key(draft.repo)


def _repo_key(repo: str | None) -> str:
    return hashlib.sha256((repo or "").rsplit("/", 1)[-1].lower().encode()).hexdigest()[:6]


def write(state: StateDB, library: Library, results: list[Distilled], summary: RunSummary,
          advance: Callable[[], None] | None = None) -> WriteOutcome:
    """Write the drafts into the library, then record what was distilled -- in one transaction.

    Skill files are written first (atomically, and a draft written again is ``unchanged``); the
    records that make the next run skip these trajectories commit last, with the repo facts
    the "working in <repo>" skills are built from. A run killed part-way records nothing of
    this stage, so the next run redoes all of it: no trajectory is marked distilled without
    its skill, and no repository misses the facts of a trajectory already marked.
    """
    outcome = WriteOutcome()
    repos: set[str] = set()
    done: list[tuple[str, str | None, list[str], list]] = []
    with state.transaction():
        lineage = ingest_tables.ancestors(state, (r.trajectory for r in results))
        for result in sorted(results, key=lambda r: r.trajectory):
            names = []
            try:
                for draft in result.skills:
                    name, saved = save_skill(library, flag(draft), lineage, outcome.reopened)
                    outcome.results[name] = saved
                    names.append(name)
            except SkillFileError as exc:
                # A skill file in the way cannot be read (a broken hand edit, a file from a newer
                # version): leave it as it is, say so, and do not record this trajectory, so the
                # next run writes its draft once the file is fixed or removed.
                summary.errors.append(_unreadable(exc))
                continue
            if result.reason:
                summary.nothing_reusable.append(NothingReusable(trajectory=result.trajectory, reason=result.reason))
            done.append((result.trajectory, result.reason, names, result.facts))
            repos.update(f.repo for f in result.facts)
            if advance is not None:
                advance()
        withdraw_superseded(library, lineage, {d[0]: d[2] for d in done}, outcome)
        distill_tables.save_distillations(state, done, distiller.NAME, distiller.VERSION)
        consolidate_repos(state, library, repos, outcome)
    outcome.count(summary)
    return outcome


def withdraw_superseded(library: Library, lineage: dict[str, set[str]], written: dict[str, list[str]],
                        outcome: WriteOutcome) -> None:
    """Take out of the queue the candidates drafted only from earlier versions of sessions distilled now.

    ``lineage``: trajectory distilled now -> the versions it superseded; ``written``: trajectory
    -> the skills it gave. A session that grew can end differently: cut short it failed and gave
    ``pitfalls-x``, whole it resolved and gave ``x``. The draft of the whole session is what the
    person should review; the stale one is withdrawn (kept in ``_history/``, logged). Only
    candidates: what a person decided stays as it is. The repo skill is rebuilt from current
    facts anyway.
    """
    successor = {old: new for new, olds in lineage.items() for old in olds}
    if not successor:
        return
    kept = {name for names in written.values() for name in names} | set(outcome.results)
    for entry in list(library.in_status("candidate", on_error=lambda *_: None)):
        skill = entry.skill
        sources = set(skill.trajectory_ids())
        if skill.name in kept or skill.kind == "repo" or not sources or not sources <= successor.keys():
            continue
        newer = sorted({successor[s] for s in sources})
        gave = sorted({n for t in newer for n in written.get(t, [])})
        reason = (f"its session grew: superseded by {', '.join(t[:12] for t in newer)}, which gave "
                  + (", ".join(gave) if gave else "nothing reusable"))
        if library.withdraw(skill.name, reason):
            outcome.withdrawn[skill.name] = reason


def consolidate_repos(state: StateDB, library: Library, repos: Iterable[str], outcome: WriteOutcome) -> None:
    """Rebuild the "working in <repo>" skill of each repository that got new facts (both distillers).

    One repository seen by several agents (``codemie-code`` from Claude Code's cwd,
    ``codemie-ai/codemie-code`` from Codex's git remote) gets one skill, labelled with the most
    specific name.
    """
    by_name: dict[str, str] = {}
    for repo in sorted(set(repos), key=lambda r: (-r.count("/"), r)):
        by_name.setdefault(repo.rsplit("/", 1)[-1].lower(), repo)
    drafts = [consolidate(repo, distill_tables.facts(state, repo)) for repo in sorted(by_name.values())]
    if by_name:  # a new fact anywhere may complete a lesson that spans sessions or repositories
        drafts += generalize(distill_tables.facts_of_kind(state, "pair", "fix"))
    for skill in drafts:
        if skill is None:
            continue
        if skill.kind == "repo":  # what the last scan of the checkout wrote stays in the manual
            skill = carry_scan(skill, _stored(library, skill.name))
        try:
            name, saved = save_skill(library, flag(skill), reopened=outcome.reopened)
        except SkillFileError as exc:
            outcome.errors.append(RunError(path=exc.path, reason=f"{exc.message}; this run left the file alone: "
                                           "fix or remove it, and the next run with a new session of this "
                                           "repository writes it again"))
            continue
        outcome.results[name] = saved


def _stored(library: Library, name: str) -> Skill | None:
    try:
        found = library.get(name)
    except SkillFileError:
        return None
    return found.skill if found else None


def _unreadable(exc: SkillFileError) -> RunError:
    return RunError(path=exc.path, reason=f"{exc.message}; this run left the file alone: fix or remove it, "
                                          "and the next run writes the draft it would have replaced")
