"""Helpers for the review tests: a library distilled from real sessions by the pipeline's own stages."""

from __future__ import annotations

import shutil
from pathlib import Path

from pipeline import stages
from pipeline.index.state import StateDB
from pipeline.library import Library
from pipeline.summary import RunSummary
from tests.conftest import SAMPLES

DJANGO = ("django__django-16255", "django__django-16938", "django__django-10999")


def build(paths: list[Path], library: Path) -> RunSummary:
    """What `skillmill run` does, minus Prefect: parse, store, distill, write, index (same stage functions)."""
    lib = Library(library)
    summary = RunSummary(library=str(lib.root))
    trajectories = []
    for file in stages.discover(paths):
        report, found = stages.parse(file)
        summary.add_file(report)
        trajectories.extend(found)
    with StateDB() as state:
        stages.store_trajectories(state, trajectories)
        results = [stages.distill_one(t) for t in stages.pending(state, trajectories)]
        stages.write(state, lib, results, summary)
        stages.index(state, lib, summary)
    return summary


def django_inputs(tmp_path: Path, *names: str) -> Path:
    """A folder holding some of the real mini-swe-agent django sessions (with their report.json labels)."""
    folder = tmp_path / ("in-" + "-".join(n.rsplit("-", 1)[-1] for n in names))
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        for file in (SAMPLES / "mini_swe_agent").glob(f"{name}.*"):
            shutil.copy(file, folder / file.name)
    return folder
