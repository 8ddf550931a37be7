"""The library's sync as a flow: what ``skillmill schedule`` serves every ``[library] sync_minutes``.

Thin: one call into ``pipeline.stages.sync_library`` (a shared library pulls and pushes, then republishes
what changed); a library that is not shared, or a remote that does not answer, is a line in the log.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger

from pipeline import settings, stages
from pipeline.library import Library


@flow(name="skillmill-sync", log_prints=False, persist_result=False)
def library_sync(library: str | None = None) -> str:
    """Sync the library with the team's remote (``skillmill sync``)."""
    lib = Library(Path(library) if library else settings.library_dir())
    said = stages.sync_library(lib) or f"{lib.root} is not shared (`skillmill sync --remote URL`): nothing to do"
    get_run_logger().info("%s", said)
    return said
