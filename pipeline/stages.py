"""The pipeline's stages as plain functions: discover -> parse -> distill -> write -> index.

``flows/nightly.py`` wraps them in Prefect tasks; tests and other programs can call them
directly. Only the caller's thread touches the state database (one DuckDB writer).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.distill import Distilled, consolidate, distill
from pipeline.distill import heuristic as distiller
from pipeline.errors import SkillFileError
from pipeline.index.state import StateDB
from pipeline.ingest import FileReport, ingest_file, iter_files
from pipeline.library.model import Skill
from pipeline.library.store import Library, SaveResult
from pipeline.recall.service import refresh
from pipeline.summary import NothingReusable, RunError, RunSummary
from pipeline.trajectory import Trajectory


def discover(paths: Iterable[str | Path]) -> list[Path]:
    return list(iter_files(paths))


def parse(path: Path) -> tuple[FileReport, list[Trajectory]]:
    return ingest_file(path)


def distill_one(trajectory: Trajectory) -> Distilled:
    return distill(trajectory)


@dataclass
class WriteOutcome:
    results: dict[str, SaveResult] = field(default_factory=dict)

    def count(self, summary: RunSummary) -> None:
        for name, result in sorted(self.results.items()):
            if result == "created":
                summary.skills.proposed += 1
            elif result == "updated":
                summary.skills.updated += 1
            else:
                summary.skills.unchanged += 1
            (summary.written if result != "unchanged" else summary.unchanged).append(name)


def store_trajectories(state: StateDB, trajectories: list[Trajectory]) -> set[str]:
    """Store what is new; return the ids that were not stored before."""
    known = state.known(t.id for t in trajectories)
    state.save_trajectories(trajectories)
    return {t.id for t in trajectories} - known


def pending(state: StateDB, trajectories: list[Trajectory]) -> list[Trajectory]:
    """Trajectories this distiller (at this version) has not seen yet: unchanged input is never redone."""
    done = state.distilled((t.id for t in trajectories), distiller.NAME, distiller.VERSION)
    unique = {t.id: t for t in trajectories if t.id not in done}
    return [unique[k] for k in sorted(unique)]


def save_skill(library: Library, draft: Skill) -> tuple[str, SaveResult]:
    """Write a draft into the library without ever overwriting a person's decision.

    * same name, same source trajectories: the draft replaces the candidate (version bumped
      when the content changes);
    * same name from another trajectory: the draft gets a distinct name;
    * an approved, deprecated or rejected skill is left as it is.
    """
    existing = library.get(draft.name)
    if existing is not None:
        old = existing.skill
        same_origin = draft.kind == "repo" or set(draft.trajectory_ids()) <= set(old.trajectory_ids())
        if not same_origin:
            suffix = draft.trajectory_ids()[0][:6] if draft.sources else "2"
            return save_skill(library, draft.model_copy(update={"name": f"{draft.name[:57]}-{suffix}"}))
        if old.status != "candidate":
            return draft.name, "unchanged"
        if old.model_copy(update={"version": draft.version}) != draft:
            draft = draft.model_copy(update={"version": old.version + 1})
        else:
            draft = draft.model_copy(update={"version": old.version})
    return draft.name, library.save(draft)


def write(state: StateDB, library: Library, results: list[Distilled], summary: RunSummary) -> WriteOutcome:
    outcome = WriteOutcome()
    repos: set[str] = set()
    for result in sorted(results, key=lambda r: r.trajectory):
        names = []
        for draft in result.skills:
            name, saved = save_skill(library, draft)
            outcome.results[name] = saved
            names.append(name)
        if result.reason:
            summary.nothing_reusable.append(NothingReusable(trajectory=result.trajectory, reason=result.reason))
        state.save_distillation(result.trajectory, distiller.NAME, distiller.VERSION, result.reason, names,
                                result.facts)
        repos.update(f.repo for f in result.facts)
    for repo in sorted(repos):
        skill = consolidate(repo, state.facts(repo))
        if skill is not None:
            name, saved = save_skill(library, skill)
            outcome.results[name] = saved
    outcome.count(summary)
    return outcome


def index(state: StateDB, library: Library, summary: RunSummary) -> int:
    """Mirror the library into the state DB and publish a fresh recall index (with indexed folders)."""

    def report(file: Path, error: SkillFileError) -> None:
        summary.errors.append(RunError(path=str(file), reason=error.message))

    stored = list(library.entries(on_error=report))
    state.sync_skills(stored)
    return refresh(stored, con=state.con).skills
