"""Ingest: find trajectory files, detect their format by content, parse them.

    from pipeline.ingest import ingest_file, iter_files
    for path in iter_files(["~/.claude/projects"]):
        report, trajectories = ingest_file(path)
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from pipeline.errors import SkillmillError, UsageError
from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.outcome import infer_outcome
from pipeline.ingest.reader import Probe
from pipeline.ingest.report import FileReport
from pipeline.plugins import registered_formats
from pipeline.trajectory import Trajectory

__all__ = ["FileReport", "Trajectory", "detect", "ingest_file", "iter_files"]


def _suffixes() -> tuple[str, ...]:
    return tuple(sorted({s for f in registered_formats() for s in f.suffixes}))


def iter_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Files named directly, and files below directories whose suffix some format reads.

    Symlinked directories are not followed (no loops); a path that does not exist is a
    usage error, raised before any work starts.
    """
    roots = [Path(p).expanduser() for p in paths]
    missing = [str(p) for p in roots if not p.exists() and not p.is_symlink()]
    if missing:
        raise UsageError(f"no such file or directory: {', '.join(missing)}",
                         hint="pass trajectory files or folders that hold them")
    suffixes = _suffixes()
    seen: set[Path] = set()
    for root in roots:
        if root.is_dir():
            for folder, dirs, files in os.walk(root, followlinks=False):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") or d == ".claude")
                for name in sorted(files):
                    if name.endswith(suffixes) and not name.endswith(".report.json"):
                        path = Path(folder) / name
                        if path not in seen:
                            seen.add(path)
                            yield path
        elif root not in seen:
            seen.add(root)
            yield root


def detect(probe: Probe) -> TrajectoryFormat | None:
    return next((fmt for fmt in registered_formats() if fmt.sniff(probe)), None)


def ingest_file(path: Path) -> tuple[FileReport, list[Trajectory]]:
    """Parse one file into trajectories. Never raises for bad content: it is in the report."""
    report = FileReport(path=str(path))
    try:
        if not path.is_file():
            report.status = "failed"
            report.error("not a regular file (broken symlink, directory or device)")
            return report, []
        probe = Probe.read(path)
    except OSError as exc:
        report.status = "failed"
        report.error(f"cannot read: {exc.strerror or exc}")
        return report, []
    if not probe.head.strip():
        report.status = "skipped"
        report.error("empty file")
        return report, []
    fmt = detect(probe)
    if fmt is None:
        report.status = "skipped"
        report.error("not a trajectory of any known format (see `skillmill formats`)")
        return report, []
    report.format = fmt.name
    trajectories: list[Trajectory] = []
    try:
        for trajectory in fmt.parse(path, report):
            trajectory.outcome = infer_outcome(trajectory)
            trajectories.append(trajectory.with_id())
    except OSError as exc:
        report.error(f"read failed part-way: {exc.strerror or exc}")
    except SkillmillError:
        raise
    except Exception as exc:  # a plugin bug: report it (redacted) rather than let raw content reach logs
        report.error(f"the {fmt.name} parser failed: {type(exc).__name__}: {exc}")
    return report.finish(trajectories), trajectories
