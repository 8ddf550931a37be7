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

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.context import get_run_context

from pipeline import config, progress, settings, stages
from pipeline.distill import Distilled
from pipeline.index.state import StateDB
from pipeline.ingest import FileReport
from pipeline.library import Library
from pipeline.llm.client import LLMSettings
from pipeline.summary import RunError, RunSummary
from pipeline.trajectory import Trajectory


@task(name="parse", cache_policy=NO_CACHE, persist_result=False)
def parse_file(path: Path) -> tuple[FileReport, list[Trajectory]]:
    return stages.parse(path)


@task(name="distill", cache_policy=NO_CACHE, persist_result=False)
def distill_trajectory(trajectory: Trajectory) -> Distilled:
    return stages.distill_one(trajectory)


@flow(name="skillmill-nightly", persist_result=False, validate_parameters=False)
def nightly(paths: list[str], library: str | None = None) -> dict:
    """Turn the trajectories under ``paths`` into candidate skills in ``library``."""
    started, clock = datetime.now(UTC), time.monotonic()
    logger = get_run_logger()
    lib = Library(Path(library) if library else settings.library_dir())
    summary = RunSummary(run_id=str(get_run_context().flow_run.id), library=str(lib.root))

    files = stages.discover(paths)
    trajectories: list[Trajectory] = []
    with progress.stage("parse", len(files)) as bar:
        for future in parse_file.map(files):
            report, found = future.result()
            summary.add_file(report)
            trajectories.extend(found)
            bar.advance()
    summary.trajectories.seen = len({t.id for t in trajectories})

    with StateDB() as state:
        summary.trajectories.new = len(stages.store_trajectories(state, trajectories))
        todo = stages.pending(state, trajectories)
        model = LLMSettings.from_config(config.load().llm)
        if model is not None:  # SKILLMILL_MODEL is set: the model distills, the loop below gets nothing
            from flows.llm import distill_with_model

            distill_with_model(state, lib, trajectories, model, summary)
            todo = []
        results: list[Distilled] = []
        with progress.stage("distill", len(todo)) as bar:
            for trajectory, future in zip(todo, distill_trajectory.map(todo), strict=True):
                future.wait()
                if future.state.is_completed():
                    results.append(future.result())
                else:
                    summary.trajectories.failed += 1
                    summary.errors.append(RunError(path=trajectory.source_path,
                                                   reason=f"distilling {trajectory.id} failed: {future.state.message}"))
                bar.advance()
        with progress.stage("write", None):
            stages.write(state, lib, results, summary)
        with progress.stage("index", None):
            stages.index(state, lib, summary)
        summary.duration_s = round(time.monotonic() - clock, 2)
        state.record_run(summary.run_id, started, summary.exit_code, summary.contract())

    logger.info("%d trajectories (%d new), %d skills proposed, %d updated", summary.trajectories.seen,
                summary.trajectories.new, summary.skills.proposed, summary.skills.updated)
    return summary.contract()
