"""The pipeline's stages as plain functions: discover -> parse -> distill -> write -> index.

``flows/nightly.py`` wraps them in Prefect tasks; tests and other programs can call them
directly. Only the caller's thread touches the state database (one DuckDB writer).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline import config
from pipeline.config import Config
from pipeline.distill import Distilled, distill
from pipeline.distill import heuristic as distiller
from pipeline.distill import tables as distill_tables
from pipeline.distill.naming import task_title
from pipeline.distill.write import WriteOutcome as WriteOutcome  # the write stage lives with distill: the LLM
from pipeline.distill.write import save_skill as save_skill  # distiller writes through it too
from pipeline.distill.write import write as write
from pipeline.errors import SkillFileError
from pipeline.index.state import StateDB
from pipeline.ingest import FileReport, ingest_file, iter_files, sources, watermark
from pipeline.ingest import tables as ingest_tables
from pipeline.ingest.identity import Locator
from pipeline.ingest.watermark import Decision, Mode, Reading, Watermark
from pipeline.library.store import Library
from pipeline.recall.publish import index as index  # the index stage: mirror the library, publish recall
from pipeline.summary import RunError, RunSummary
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
    if cfg.sources.repos_map:  # a session mapped to another repository is read again, and filed there
        ignored += "|" + ",".join(f"{k}={v}" for k, v in sorted(cfg.sources.repos_map.items()))
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


def read(path: Path, previous: Watermark | None, *, reader: str, ignore: sources.Ignore | None = None,
         locator: Locator | None = None) -> Reading:
    """Read what is new in one file; sessions run below ``ignore`` are dropped before anything keeps them;
    ``locator`` names their repositories from this machine (``[sources] repos_map``, the checkout on disk)."""
    if ignore and ignore.covers(path):
        report = FileReport(path=str(path), status="skipped")
        report.error("below a folder in [sources] ignore_paths: not read")
        return Reading(path, Mode.NEW, report, previous=previous)
    reading = watermark.read(path, previous, reader=reader, locator=locator)
    if ignore and reading.report is not None:
        kept = [t for t in reading.trajectories if not ignore.covers_cwd(t.cwd)]
        dropped_ones = [t for t in reading.trajectories if ignore.covers_cwd(t.cwd)]
        if len(kept) < len(reading.trajectories):
            dropped = len(reading.trajectories) - len(kept)
            reading.trajectories = kept
            reading.report.trajectories = [s for s in reading.report.trajectories if s.id in {t.id for t in kept}]
            reading.report.error(f"{dropped} session(s) ran below a folder in [sources] ignore_paths: dropped")
            if not kept:
                reading.report.status = "skipped"
            if reading.watermark is not None:  # a store read by sessions lists earlier ones too: kept
                gone = {t.id for t in dropped_ones}
                reading.watermark.trajectories = [i for i in reading.watermark.trajectories if i not in gone]
    return reading


def supersede(state: StateDB, readings: list[Reading]) -> int:
    """A file read again gives new versions of its sessions: link each old trajectory to its successor.

    Matched by session id (one trajectory on each side needs no match, unless their session ids
    differ: a store read by sessions gives only the ones that changed). The old rows and their
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
        sessions = ingest_tables.session_ids(state, old)
        only = next(iter(new.values()))
        if len(old) == 1 and len(new) == 1 and sessions.get(old[0]) in (None, only.session_id):
            pairs = [(old[0], only.id)]
        else:
            by_session = {t.session_id: t.id for t in new.values() if t.session_id}
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


def describe_nothing_reusable(summary: RunSummary, trajectories: Iterable[Trajectory]) -> None:
    """Give each trajectory that gave nothing reusable its file and task, as ``skillmill run -v`` lists them."""
    by_id = {t.id: t for t in trajectories}
    for item in summary.nothing_reusable:
        if (t := by_id.get(item.trajectory)) is not None:
            item.path, item.task = t.source_path or None, task_title(t)


def scan_checkouts(state: StateDB, library: Library, trajectories: Iterable[Trajectory], summary: RunSummary) -> int:
    """``[scan] enabled``: scan each checkout the sessions ran in that is on this machine (``pipeline/scan``):
    its manual is updated and its approved skills checked, with the sessions' facts as evidence."""
    from pipeline.scan.reader import ScanError
    from pipeline.scan.service import scan_checkout
    from pipeline.scan.stale import checkout_root

    roots: dict[Path, str | None] = {}
    for t in trajectories:
        if t.cwd and Path(t.cwd).is_dir():
            roots.setdefault(checkout_root(t.cwd), t.repo)
    for root, repo in sorted(roots.items(), key=lambda kv: str(kv[0])):
        try:
            outcome = scan_checkout(root, library, facts=distill_tables.facts(state, repo) if repo else [], by="run")
        except (ScanError, SkillFileError, OSError) as exc:
            summary.errors.append(RunError(path=str(root), reason=f"scan failed: {exc}"))
            continue
        if outcome.result in ("created", "updated", "proposed") and outcome.manual:
            summary.written.append(outcome.manual)
            if outcome.result == "created":
                summary.skills.proposed += 1
            else:
                summary.skills.updated += 1
    return len(roots)


def sync_library(library: Library) -> str | None:
    """After a run: a shared library (``skillmill sync``) syncs, so the run's candidates reach the team's queue.
    What happened in one line (None: the library is not shared); a remote that does not answer fails nothing."""
    from pipeline.agents.publish import republish
    from pipeline.errors import SkillmillError
    from pipeline.library import sync

    if not sync.is_shared(library):
        return None
    try:
        result = sync.sync(library, publish=republish)
    except SkillmillError as exc:
        return f"library sync failed: {exc.message}"
    if result.offline:
        return f"library sync: {result.remote} did not answer ({result.offline}); the next run tries again"
    return (f"library synced with {result.remote}: {len(result.changed)} skill(s) changed here, "
            f"{len(result.conflicts)} conflict(s)" + ("" if result.pushed else ", nothing pushed"))
