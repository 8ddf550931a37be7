"""The nightly flow: discover -> parse -> distill -> write -> index.

Thin by design: every step is a call into ``pipeline.stages``. Parsing and distilling fan
out as Prefect tasks, in parcels (``pipeline.execution.runners``): parsing on a bounded thread
pool in this process, distilling on the ``[run] task_runner`` (threads, or a Dask cluster).
Writing (skill files, the state database) stays in the flow, so the one DuckDB writer is this
process. Results are neither cached nor persisted by Prefect: trajectories can hold secrets,
and skillmill keeps its own record of what it has done.

Crash safety: the run holds the run lock (``execution.lock``) throughout, starts by removing
what a killed run left (``execution.recovery``), and every stage's writes are atomic
(transactions, renames), so a rerun after ``kill -9`` completes the work.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.context import get_run_context

from pipeline import config, progress, settings, stages
from pipeline.distill import Distilled
from pipeline.distill.llm import tables as llm_tables  # noqa: F401  (a run's database holds every stage's tables)
from pipeline.execution import recovery, runners, server
from pipeline.execution.clock import adopted
from pipeline.execution.lock import describe, run_lock
from pipeline.execution.runners import Failed, Parcel
from pipeline.index.state import StateDB
from pipeline.ingest import FileReport
from pipeline.ingest.identity import Locator
from pipeline.ingest.sources import Ignore
from pipeline.ingest.watermark import Mode, Reading, Watermark
from pipeline.library import Library
from pipeline.llm.client import LLMSettings
from pipeline.runs import publish as publish_report
from pipeline.runs import tables as runs_tables
from pipeline.summary import Deferred, RunError, RunSummary
from pipeline.trajectory import Trajectory


@task(name="parse", cache_policy=NO_CACHE, persist_result=False)
def parse_files(parcel: Parcel[tuple[Path, Watermark | None]], reader: str = "",
                ignore: Ignore | None = None, locator: Locator | None = None) -> Parcel[Reading | Failed]:
    """Read what is new in each file since its watermark (all of it the first time)."""
    return runners.each(lambda item: stages.read(item[0], item[1], reader=reader, ignore=ignore, locator=locator),
                        parcel)


@task(name="distill", cache_policy=NO_CACHE, persist_result=False)
def distill_trajectories(parcel: Parcel[Trajectory]) -> Parcel[Distilled | Failed]:
    return runners.each(stages.distill_one, parcel)


@flow(name="skillmill-nightly", persist_result=False, validate_parameters=False)
def nightly(paths: list[str], library: str | None = None, defer_minutes: float | None = None,
            task_runner: str | None = None, dask_address: str | None = None, concurrency: int | None = None,
            wait: float = 0.0) -> dict:
    """Turn the trajectories under ``paths`` into candidate skills in ``library``.

    No ``paths``: the default locations and ``[sources]`` (``skillmill sources``). Files are read
    only as far as they are new since their watermark. Files changed less than ``defer_minutes``
    ago are deferred to the next run (default: ``[sources] defer_minutes`` when discovering, 0
    for paths given explicitly -- the user asked for those files now). ``task_runner``,
    ``dask_address`` and ``concurrency`` override ``[run]``. Another run in progress: wait up to
    ``wait`` seconds, then raise ``RunInProgress``.
    """
    started, clock = datetime.now(UTC), time.monotonic()
    logger = get_run_logger()
    lib = Library(Path(library) if library else settings.library_dir())
    summary = RunSummary(run_id=str(get_run_context().flow_run.id), library=str(lib.root))
    cfg = config.load({"run.task_runner": task_runner, "run.dask_address": dask_address,
                       "run.concurrency": concurrency})
    if defer_minutes is None:
        defer_minutes = 0.0 if paths else cfg.sources.defer_minutes
    reader, ignore = stages.reader_key(cfg), Ignore(cfg.sources.ignore_paths)

    waiting = lambda holder: logger.warning("waiting: %s", describe(holder))  # noqa: E731
    with run_lock(wait=wait, on_wait=waiting), StateDB() as state:
        for leftover in recovery.clean(settings.home(), lib.root):
            logger.warning("removed %s, left by an interrupted run", leftover)
        with progress.stage("discover", None):
            files = stages.discover(paths, cfg)
            plan = stages.plan_reads(state, files, reader=reader, defer_s=defer_minutes * 60)
        summary.files.unchanged = len(plan.unchanged)
        summary.trajectories.deferred = len(plan.deferred)
        summary.deferred = [Deferred(path=str(p), modified_s_ago=round(age, 1)) for p, age in plan.deferred]
        readings: list[Reading] = []
        trajectories: list[Trajectory] = []
        with progress.stage("parse", len(plan.to_read)) as bar, runners.local(cfg.run.concurrency) as local:
            for (path, previous), reading in runners.fan_out(local, parse_files, plan.to_read, cfg.run.concurrency,
                                                             on_parcel=bar.advance, reader=reader, ignore=ignore,
                                                             locator=Locator(cfg.sources.repos_map)):
                if isinstance(reading, Failed):
                    report = FileReport(path=str(path), status="failed")
                    report.error(f"reading failed: {reading.reason}")
                    reading = Reading(path, Mode.NEW, report, previous=previous)  # no watermark: read next run
                readings.append(reading)
                summary.add_reading(reading)
                trajectories.extend(reading.trajectories)
        summary.trajectories.seen = len({t.id for t in trajectories})
        summary.redactions.add(trajectories)

        with progress.stage("store", None):
            summary.trajectories.new = len(stages.store_trajectories(state, trajectories))
            summary.increments.superseded = stages.supersede(state, readings)
            todo = stages.pending(state, trajectories)
        failed: set[str] = set()
        model = LLMSettings.from_config(cfg.llm)
        if model is not None:  # SKILLMILL_MODEL is set: the model distills, the loop below gets nothing
            from flows.llm import distill_with_model

            failed |= distill_with_model(state, lib, trajectories, model, summary)  # undone: re-read next run
            todo = []
        with progress.stage("distill", len(todo)) as bar:
            results = _distill(todo, cfg.run, bar, summary, failed)
        with progress.stage("write", len(results)) as bar:
            stages.write(state, lib, results, summary, advance=bar.advance)
        if cfg.scan.enabled:  # the checkouts the sessions ran in: manuals kept current, stale skills marked
            with progress.stage("scan", None):
                stages.scan_checkouts(state, lib, trajectories, summary)
        with progress.stage("index", None):
            stages.index(state, lib, summary)
        stages.save_watermarks(state, readings, failed)
        stages.describe_nothing_reusable(summary, trajectories)
        summary.duration_s = round(time.monotonic() - clock, 2)
        if (startup := server.current()) is not None:  # run by `skillmill run`: what came before the flow
            summary.server, summary.server_s, summary.wall_s = startup.how, startup.seconds, startup.wall()
            summary.process = "warm" if adopted() else "new"
        runs_tables.record_run(state, summary.run_id, started, summary.exit_code, summary.contract())
        publish_report(state, summary.run_id)  # the report: a Prefect artifact, and the snapshot `skillmill runs` reads

    if cfg.library_sync.sync_after_run and (said := stages.sync_library(lib)):  # (outside the run lock: a sync of
        logger.info("%s", said)  # a slow remote holds no other run back)
    logger.info("%d trajectories (%d new), %d skills proposed, %d updated", summary.trajectories.seen,
                summary.trajectories.new, summary.skills.proposed, summary.skills.updated)
    return summary.contract()


def _distill(todo: list[Trajectory], run: config.RunConfig, bar: progress.Stage, summary: RunSummary,
             failed: set[str]) -> list[Distilled]:
    """Distill on the configured runner (started only when there is work: a Dask cluster takes seconds)."""
    results: list[Distilled] = []
    if not todo:
        return results
    with runners.task_runner(run) as runner:
        for trajectory, result in runners.fan_out(runner, distill_trajectories, todo, run.concurrency,
                                                  on_parcel=bar.advance):
            if isinstance(result, Failed):
                summary.trajectories.failed += 1
                failed.add(trajectory.id)
                summary.errors.append(RunError(path=trajectory.source_path,
                                               reason=f"distilling {trajectory.id} failed: {result.reason}"))
            else:
                results.append(result)
    return results
