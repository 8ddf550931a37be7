"""The nightly flow: discover -> parse -> distill -> write -> index.

Thin by design: every step is a call into ``pipeline.stages``. Parsing and distilling fan
out as Prefect tasks; writing (skill files, the state database) stays in the flow, so the
one DuckDB writer is this process. Results are neither cached nor persisted by Prefect:
trajectories can hold secrets, and skillmill keeps its own record of what it has done.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from prefect import flow, get_run_logger, task, unmapped
from prefect.cache_policies import NO_CACHE
from prefect.context import get_run_context

from pipeline import config, progress, settings, stages
from pipeline.distill import Distilled
from pipeline.index.state import StateDB
from pipeline.ingest.sources import Ignore
from pipeline.ingest.watermark import Reading, Watermark
from pipeline.library import Library
from pipeline.llm.client import LLMSettings
from pipeline.runs import publish as publish_report
from pipeline.summary import Deferred, RunError, RunSummary
from pipeline.trajectory import Trajectory


@task(name="parse", cache_policy=NO_CACHE, persist_result=False)
def parse_file(path: Path, previous: Watermark | None = None, reader: str = "",
               ignore: Ignore | None = None) -> Reading:
    """Read what is new in one file since its watermark (all of it the first time)."""
    return stages.read(path, previous, reader=reader, ignore=ignore)


@task(name="distill", cache_policy=NO_CACHE, persist_result=False)
def distill_trajectory(trajectory: Trajectory) -> Distilled:
    return stages.distill_one(trajectory)


@flow(name="skillmill-nightly", persist_result=False, validate_parameters=False)
def nightly(paths: list[str], library: str | None = None, defer_minutes: float | None = None) -> dict:
    """Turn the trajectories under ``paths`` into candidate skills in ``library``.

    No ``paths``: the default locations and ``[sources]`` (``skillmill sources``). Files are read
    only as far as they are new since their watermark. Files changed less than ``defer_minutes``
    ago are deferred to the next run (default: ``[sources] defer_minutes`` when discovering, 0
    for paths given explicitly -- the user asked for those files now).
    """
    started, clock = datetime.now(UTC), time.monotonic()
    logger = get_run_logger()
    lib = Library(Path(library) if library else settings.library_dir())
    summary = RunSummary(run_id=str(get_run_context().flow_run.id), library=str(lib.root))
    cfg = config.load()
    if defer_minutes is None:
        defer_minutes = 0.0 if paths else cfg.sources.defer_minutes
    reader, ignore = stages.reader_key(cfg), Ignore(cfg.sources.ignore_paths)

    files = stages.discover(paths, cfg)
    with StateDB() as state:
        plan = stages.plan_reads(state, files, reader=reader, defer_s=defer_minutes * 60)
        summary.files.unchanged = len(plan.unchanged)
        summary.trajectories.deferred = len(plan.deferred)
        summary.deferred = [Deferred(path=str(p), modified_s_ago=round(age, 1)) for p, age in plan.deferred]
        readings: list[Reading] = []
        trajectories: list[Trajectory] = []
        with progress.stage("parse", len(plan.to_read)) as bar:
            for future in parse_file.map([p for p, _ in plan.to_read], [w for _, w in plan.to_read],
                                         unmapped(reader), unmapped(ignore)):
                reading = future.result()
                readings.append(reading)
                summary.add_reading(reading)
                trajectories.extend(reading.trajectories)
                bar.advance()
        summary.trajectories.seen = len({t.id for t in trajectories})
        summary.redactions.add(trajectories)

        summary.trajectories.new = len(stages.store_trajectories(state, trajectories))
        summary.increments.superseded = stages.supersede(state, readings)
        todo = stages.pending(state, trajectories)
        failed: set[str] = set()
        model = LLMSettings.from_config(cfg.llm)
        if model is not None:  # SKILLMILL_MODEL is set: the model distills, the loop below gets nothing
            from flows.llm import distill_with_model

            failed |= distill_with_model(state, lib, trajectories, model, summary)  # undone: re-read next run
            todo = []
        results: list[Distilled] = []
        with progress.stage("distill", len(todo)) as bar:
            for trajectory, future in zip(todo, distill_trajectory.map(todo), strict=True):
                future.wait()
                if future.state.is_completed():
                    results.append(future.result())
                else:
                    summary.trajectories.failed += 1
                    failed.add(trajectory.id)
                    summary.errors.append(RunError(path=trajectory.source_path,
                                                   reason=f"distilling {trajectory.id} failed: {future.state.message}"))
                bar.advance()
        with progress.stage("write", None):
            stages.write(state, lib, results, summary)
        with progress.stage("index", None):
            stages.index(state, lib, summary)
        stages.save_watermarks(state, readings, failed)
        summary.duration_s = round(time.monotonic() - clock, 2)
        state.record_run(summary.run_id, started, summary.exit_code, summary.contract())
        publish_report(state, summary.run_id)  # the report: a Prefect artifact, and the snapshot `skillmill runs` reads

    logger.info("%d trajectories (%d new), %d skills proposed, %d updated", summary.trajectories.seen,
                summary.trajectories.new, summary.skills.proposed, summary.skills.updated)
    return summary.contract()
