"""Ingest: find trajectory files, detect their format by content, parse them.

    from pipeline.ingest import ingest_file, iter_files
    for path in iter_files(["~/.claude/projects"]):
        report, trajectories = ingest_file(path)
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.errors import SkillmillError, UsageError, validation_summary
from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.identity import Locator
from pipeline.ingest.lookalikes import looks_like
from pipeline.ingest.outcome import infer_outcome
from pipeline.ingest.reader import Checkpoint, Probe
from pipeline.ingest.report import FileReport
from pipeline.plugins import registered_formats
from pipeline.trajectory import Trajectory

if TYPE_CHECKING:
    from pipeline.ingest.sources import Ignore

__all__ = ["Checkpoint", "FileReport", "Trajectory", "detect", "ingest_file", "iter_files"]

logger = logging.getLogger(__name__)
_NO_MAP = Locator()
#: Hidden folders agents keep their sessions in (``~/.continue/sessions``, a project's ``.crush``); other hidden
#: ones are not entered.
AGENT_FOLDERS = frozenset({".claude", ".continue", ".crush", ".opencode", ".specstory"})


def _suffixes() -> tuple[str, ...]:
    return tuple(sorted({s for f in registered_formats() for s in f.suffixes}))


def iter_files(paths: Iterable[str | Path], *, ignore: Ignore | None = None) -> Iterator[Path]:
    """Files named directly, and files below directories whose suffix some format reads.

    Hidden folders are not entered, but for the ones agents keep sessions in (``AGENT_FOLDERS``:
    ``.claude``, Crush's ``.crush``, the Go OpenCode's ``.opencode``, SpecStory's ``.specstory``).
    Symlinked directories are not followed (no loops); a path that does not exist is a
    usage error, raised before any work starts. Folders ``ignore`` covers
    (``[sources] ignore_paths``) are not entered; a file named directly is yielded even
    there, so the caller can report it as ignored rather than lose it silently.
    """
    roots = [Path(p).expanduser() for p in paths]
    missing = [str(p) for p in roots if not p.exists() and not p.is_symlink()]
    if missing:
        raise UsageError(f"no such file or directory: {', '.join(missing)}",
                         hint="pass trajectory files or folders that hold them")
    suffixes = _suffixes()
    seen: set[Path | tuple[int, int]] = set()
    for root in roots:
        if root.is_dir():
            if ignore and ignore.covers(root):
                continue
            for folder, dirs, files in os.walk(root, followlinks=False):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") or d in AGENT_FOLDERS)
                if ignore:
                    dirs[:] = [d for d in dirs if not ignore.covers(Path(folder) / d)]
                for name in sorted(files):
                    if name.endswith(suffixes) and not name.endswith(".report.json"):
                        path = Path(folder) / name
                        if _first_time(path, seen):
                            yield path
        elif _first_time(root, seen):
            yield root


def _first_time(path: Path, seen: set[Path | tuple[int, int]]) -> bool:
    """A file reached twice (through a symlink, or named twice) is read once."""
    try:
        stat = path.stat()
        key: Path | tuple[int, int] = (stat.st_dev, stat.st_ino)
    except OSError:  # a broken symlink or a loop: still listed, so its report says what is wrong
        key = path
    if key in seen:
        return False
    seen.add(key)
    return True


def detect(probe: Probe) -> TrajectoryFormat | None:
    """The format that names itself in the file (``declared``), else the first whose ``sniff`` says yes."""
    formats = registered_formats()
    for question in ("declared", "sniff"):
        for fmt in formats:
            try:
                if getattr(fmt, question, None) is not None and getattr(fmt, question)(probe):
                    return fmt
            except Exception:  # noqa: BLE001 -- a plugin's bug must not stop the others from looking
                logger.exception("format %s failed to sniff %s", fmt.name, probe.path)
    return None


def ingest_file(path: Path, *, checkpoint: Checkpoint | None = None,
                fmt: TrajectoryFormat | None = None, locator: Locator | None = None) -> tuple[FileReport, list[Trajectory]]:
    """Parse one file into trajectories. Never raises for bad content: it is in the report.

    ``fmt`` skips detection (the caller knows the format, e.g. when resuming); with a
    ``checkpoint``, an incremental format resumes from it and leaves it where it stopped
    (``pipeline.ingest.watermark``), others parse the whole file. ``locator`` (default: no
    ``repos_map``) names each session's repository from this machine when it can: the checkout at its
    working folder, or the user's map (``pipeline.ingest.identity.Locator``).
    """
    locator = locator or _NO_MAP
    report = FileReport(path=str(path))
    try:
        if not path.is_file():
            report.status = "failed"
            report.error(_not_a_file(path))
            return report, []
        probe = Probe.read(path) if fmt is None else None
    except OSError as exc:
        report.status = "failed"
        report.error(f"cannot read: {exc.strerror or exc}")
        return report, []
    if probe is not None:
        if not probe.head.strip(b" \t\r\n\x00"):
            report.status = "skipped"
            report.error("empty file" if not probe.head else "empty file (only whitespace or NUL bytes)")
            return report, []
        fmt = detect(probe)
    if fmt is None:
        report.status = "skipped"
        known = looks_like(probe) if probe is not None else None
        report.error(f"{known} (see `skillmill formats`)" if known else
                     "not a trajectory of any known format (see `skillmill formats`)")
        return report, []
    report.format = fmt.name
    trajectories: list[Trajectory] = []
    if checkpoint is not None and fmt.incremental:
        parsed = fmt.resume(path, report, checkpoint)
    else:
        parsed = fmt.parse(path, report)
    try:
        for trajectory in parsed:
            fmt.mark_protocol_errors(trajectory)
            locator.locate(trajectory)  # before the id: a session filed under another repository is another one
            trajectory.outcome = infer_outcome(trajectory)
            trajectories.append(trajectory.with_id())  # the one place the id is set: it hashes the outcome
    except OSError as exc:
        report.error(f"read failed part-way: {exc.strerror or exc}")
    except SkillmillError:
        raise  # configuration and usage errors stop the run; they are not one file's problem
    except Exception as exc:  # noqa: BLE001 -- one file's surprise must not end a run over thousands
        if checkpoint is not None:  # a saved state this code cannot use: the caller reads the file whole
            raise ResumeFailed(f"cannot resume {path}: {type(exc).__name__}: {exc}") from exc
        logger.exception("the %s parser failed on %s", fmt.name, path)
        report.error(f"{PARSER_FAILED} {fmt.name} parser: {type(exc).__name__}: {validation_summary(exc)}"[:500])
    return report.finish(trajectories), trajectories


class ResumeFailed(SkillmillError):
    """An incremental read could not continue from its checkpoint (``pipeline.ingest.watermark``
    then reads the file whole)."""


#: Prefix of the error a parser's unexpected exception leaves in the report (a bug to fix).
PARSER_FAILED = "internal error in the"


def _not_a_file(path: Path) -> str:
    if path.is_symlink():
        try:
            path.resolve(strict=True)
        except RuntimeError:
            return "symlink loop"
        except OSError as exc:
            return "symlink loop" if exc.errno == errno.ELOOP else "broken symlink (its target does not exist)"
    if path.is_dir():
        return "a directory, not a file"
    return "not a regular file (a device, socket or pipe)"
