"""The pipeline's stages as plain functions: discover -> parse -> distill -> write -> index.

``flows/nightly.py`` wraps them in Prefect tasks; tests and other programs can call them
directly. Only the caller's thread touches the state database (one DuckDB writer).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline import config
from pipeline.config import Config
from pipeline.distill import Distilled, consolidate, distill
from pipeline.distill import heuristic as distiller
from pipeline.distill import tables as distill_tables
from pipeline.distill.lessons import generalize
from pipeline.distill.naming import clamp_name
from pipeline.distill.risk import flag
from pipeline.errors import SkillFileError
from pipeline.index.state import StateDB
from pipeline.ingest import FileReport, ingest_file, iter_files, sources, watermark
from pipeline.ingest import tables as ingest_tables
from pipeline.ingest.watermark import Decision, Mode, Reading, Watermark
from pipeline.library import tables as library_tables
from pipeline.library.model import Skill
from pipeline.library.store import Library, SaveResult
from pipeline.recall import pending as recall_pending
from pipeline.recall.service import refresh
from pipeline.summary import NothingReusable, Reopened, RunError, RunSummary, Withdrawn
from pipeline.trajectory import Trajectory


def discover(paths: Iterable[str | Path], cfg: Config | None = None) -> list[Path]:
    """The files under ``paths``; with no paths, what the default locations and ``[sources]`` hold."""
    cfg = cfg or config.load()
    paths = list(paths)
    if not paths:
        return sources.discover(cfg)
    return list(iter_files(paths, ignore=sources.Ignore(cfg.sources.ignore_paths)))


def parse(path: Path) -> tuple[FileReport, list[Trajectory]]:
    return ingest_file(path)


# -- increments (issue 3): watermarks, deferral, superseded versions ------------------------
def reader_key(cfg: Config | None = None) -> str:
    """What a file's watermark is valid for: the parsing code, the distiller, ``ignore_paths``.

    A different distiller (or version) must re-read files, or their trajectories would never
    reach it; a changed ``ignore_paths`` must re-read the sessions it dropped or now drops.
    Add whatever else decides what a run does with a trajectory.
    """
    cfg = cfg or config.load()
    ignored = ",".join(sorted(cfg.sources.ignore_paths))
    if cfg.llm.model:  # the model distiller (and its prompt version) decides what a run does
        from pipeline.distill.llm import NAME, version

        return watermark.reader_key(f"{NAME}/{version(cfg.llm.model)}|{ignored}")
    return watermark.reader_key(f"{distiller.NAME}/{distiller.VERSION}|{ignored}")


@dataclass
class ReadPlan:
    """What a run does with each discovered file, decided from ``stat`` and the stored watermarks."""

    to_read: list[tuple[Path, Watermark | None]] = field(default_factory=list)
    deferred: list[tuple[Path, float]] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)


def plan_reads(state: StateDB, files: list[Path], *, reader: str, defer_s: float = 0.0) -> ReadPlan:
    """Unchanged files are skipped, files still being written deferred, the rest read (resumed if they grew)."""
    plan = ReadPlan()
    marks = ingest_tables.watermarks(state, (str(p) for p in files))
    now = time.time()
    for path in files:
        previous = marks.get(str(path))
        check = watermark.check(path, previous, reader=reader, defer_s=defer_s, now=now)
        if check.decision is Decision.UNCHANGED:
            plan.unchanged.append(path)
        elif check.decision is Decision.DEFERRED:
            plan.deferred.append((path, check.age_s))
        else:
            if check.may_resume and previous is not None:
                previous = previous.model_copy(update={"state": ingest_tables.parser_state(state, previous.path)})
            plan.to_read.append((path, previous))
    return plan


def read(path: Path, previous: Watermark | None, *, reader: str, ignore: sources.Ignore | None = None) -> Reading:
    """Read what is new in one file; sessions run below ``ignore`` are dropped before anything keeps them."""
    if ignore and ignore.covers(path):
        report = FileReport(path=str(path), status="skipped")
        report.error("below a folder in [sources] ignore_paths: not read")
        return Reading(path, Mode.NEW, report, previous=previous)
    reading = watermark.read(path, previous, reader=reader)
    if ignore and reading.report is not None:
        kept = [t for t in reading.trajectories if not ignore.covers_cwd(t.cwd)]
        if len(kept) < len(reading.trajectories):
            dropped = len(reading.trajectories) - len(kept)
            reading.trajectories = kept
            reading.report.trajectories = [s for s in reading.report.trajectories if s.id in {t.id for t in kept}]
            reading.report.error(f"{dropped} session(s) ran below a folder in [sources] ignore_paths: dropped")
            if not kept:
                reading.report.status = "skipped"
            if reading.watermark is not None:
                reading.watermark.trajectories = [t.id for t in kept]
    return reading


def supersede(state: StateDB, readings: list[Reading]) -> int:
    """A file read again gives new versions of its sessions: link each old trajectory to its successor.

    Matched by session id (one trajectory on each side needs no match). The old rows and their
    distillations stay; later runs leave superseded trajectories out of distilling and repo facts.
    """
    count = 0
    for reading in readings:
        if reading.previous is None or reading.watermark is None:
            continue
        new = {t.id: t for t in reading.trajectories}
        old = [i for i in reading.previous.trajectories if i not in new]
        if not old or not new:
            continue
        if len(old) == 1 and len(new) == 1:
            pairs = [(old[0], next(iter(new)))]
        else:
            by_session = {t.session_id: t.id for t in new.values() if t.session_id}
            sessions = ingest_tables.session_ids(state, old)
            pairs = [(o, by_session[sessions[o]]) for o in old if sessions.get(o) in by_session]
        count += ingest_tables.supersede(state, pairs, str(reading.path), f"file {reading.mode.value}")
    return count


def save_watermarks(state: StateDB, readings: list[Reading], failed: set[str]) -> int:
    """Advance the watermarks of files read this run, after what they gave is stored and distilled.

    A file with a trajectory whose distilling failed keeps its old watermark, so the next run
    reads it again rather than never distilling it.
    """
    marks = [r.watermark for r in readings if r.watermark is not None]
    kept = [m for m in marks if not failed.intersection(m.trajectories)]
    ingest_tables.save_watermarks(state, kept)
    return len(kept)


def distill_one(trajectory: Trajectory) -> Distilled:
    return distill(trajectory)


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


def store_trajectories(state: StateDB, trajectories: list[Trajectory]) -> set[str]:
    """Store what is new; return the ids that were not stored before."""
    known = ingest_tables.known(state, (t.id for t in trajectories))
    ingest_tables.save_trajectories(state, trajectories)
    return {t.id for t in trajectories} - known


def pending(state: StateDB, trajectories: list[Trajectory], name: str = distiller.NAME,
            version: str = distiller.VERSION) -> list[Trajectory]:
    """Trajectories this distiller (at this version) has not seen yet: unchanged input is never redone,
    nor an old version of a session that has grown since (a stale copy elsewhere, say)."""
    done = distill_tables.distilled(state, (t.id for t in trajectories), name, version)
    done |= ingest_tables.superseded(state, (t.id for t in trajectories))
    unique = {t.id: t for t in trajectories if t.id not in done}
    return [unique[k] for k in sorted(unique)]


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
        try:
            name, saved = save_skill(library, flag(skill), reopened=outcome.reopened)
        except SkillFileError as exc:
            outcome.errors.append(RunError(path=exc.path, reason=f"{exc.message}; this run left the file alone: "
                                           "fix or remove it, and the next run with a new session of this "
                                           "repository writes it again"))
            continue
        outcome.results[name] = saved


def _unreadable(exc: SkillFileError) -> RunError:
    return RunError(path=exc.path, reason=f"{exc.message}; this run left the file alone: fix or remove it, "
                                          "and the next run writes the draft it would have replaced")


def index(state: StateDB, library: Library, summary: RunSummary) -> int:
    """Mirror the library into the state DB and publish a fresh recall index (with indexed folders)."""

    def report(file: Path, error: SkillFileError) -> None:
        if not any(e.path == str(file) for e in summary.errors):  # the write stage may have said it already
            summary.errors.append(RunError(path=str(file), reason=error.message))

    with recall_pending.publishing(library):  # what a decision killed before its republish left behind is published too
        stored = list(library.entries(on_error=report))
        library_tables.sync_skills(state, stored)
        library_tables.sync_review_log(state, str(library.root), library.audit.entries())
        return refresh(stored, con=state.con).skills
