"""What the SQLite-store readers share: the read by sessions, and where a session ran.

:class:`StoreFormat` is a format whose file is an agent's SQLite store holding many sessions.
It is detected by its tables (``sqlite_store.schema``), read from a private copy
(``sqlite_store.open_store``) and followed by **session**: a store is rewritten in place, so a
byte offset means nothing, and each session carries a mark instead -- its updated time, its
message count and its last message id. ``resume`` reads again only the sessions whose mark
changed (or that are new) and leaves the marks of all of them in ``checkpoint.state``
(``pipeline.ingest.watermark`` keeps it between runs).

Stores like Crush's and the Go OpenCode's keep no working folder: the project is the folder
their data folder (``.crush/``, ``.opencode/``) sits in, on the machine that wrote them, and the
tools say it too -- a shell's working directory, or a relative path the tool resolved to an
absolute one (``view .gitignore`` answered for ``/home/me/app/.gitignore``).
"""

from __future__ import annotations

import os
import posixpath
from abc import abstractmethod
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import orjson

from pipeline.ingest import sqlite_store
from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats._common import SHAPE_ERRORS, shape_error
from pipeline.ingest.reader import Checkpoint, Probe
from pipeline.ingest.report import FileReport
from pipeline.ingest.sqlite_store import Store, Tables
from pipeline.trajectory import Trajectory

#: What a store says about one session: (id, its mark, how to read it).
SessionEntry = tuple[str, Any, Callable[[], Trajectory | None]]


class StoreFormat(TrajectoryFormat):
    """An agent's SQLite store of sessions (see the module docstring)."""

    suffixes = (".db",)
    incremental = True
    #: The file is rewritten in place: increments go by session marks, not by bytes.
    store = True
    #: Said when the store holds no session with a message.
    empty = "store without sessions"

    def sniff(self, probe: Probe) -> bool:
        tables = sqlite_store.schema(probe)
        return bool(tables) and self.claims(tables, probe.path)

    @abstractmethod
    def claims(self, tables: Tables, path: Path) -> bool:
        """True when a store with these tables is this format's."""

    @abstractmethod
    def sessions(self, store: Store, report: FileReport) -> Iterator[SessionEntry]:
        """Each session of the store: its id, its mark (JSON-able) and a function that reads it."""

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        return self._read(path, report, None)

    def resume(self, path: Path, report: FileReport, checkpoint: Checkpoint) -> Iterator[Trajectory]:
        """The sessions whose mark differs from the one ``checkpoint.state`` kept (see the module docstring)."""
        return self._read(path, report, checkpoint)

    def _read(self, path: Path, report: FileReport, checkpoint: Checkpoint | None) -> Iterator[Trajectory]:
        before = _marks(checkpoint.state) if checkpoint is not None and checkpoint.state else {}
        marks: dict[str, Any] = {}
        found = unchanged = yielded = 0
        with sqlite_store.open_store(path, report) as store:
            if store is None:
                return
            for session_id, mark, read in self.sessions(store, report):
                found += 1
                mark = orjson.loads(orjson.dumps(mark, default=str))  # as it comes back from the state
                marks[session_id] = mark
                if session_id in before and before[session_id] == mark:
                    unchanged += 1
                    continue
                try:
                    trajectory = read()
                except SHAPE_ERRORS as exc:
                    report.error(shape_error(f"session {session_id}", exc))
                    continue
                if trajectory is not None:
                    yielded += 1
                    yield trajectory
        if checkpoint is not None:
            checkpoint.state = orjson.dumps(marks)
        if yielded or report.errors:
            return
        report.status = "skipped"
        if unchanged and unchanged == found:
            report.error(f"{found} session(s), none changed since the last read")
        else:
            report.error(f"{self.empty} ({found} session(s), none with a message)" if found else self.empty)


def _marks(state: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(state)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def ms(value: Any) -> Any:
    """An epoch number in milliseconds, whether the store wrote seconds or milliseconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value if value > 1e11 else value * 1000
    return value


def project_folder(path: Path, data_folders: tuple[str, ...]) -> str | None:
    """The folder holding the store's data folder (``<project>/.crush/crush.db`` -> ``<project>``)."""
    parent = path.absolute().parent
    return str(parent.parent) if parent.name in data_folders else None


def _pure(path: str) -> PurePosixPath | PureWindowsPath:
    return PureWindowsPath(path) if len(path) > 2 and path[1] == ":" else PurePosixPath(path)


def root_of(relative: str, absolute: str) -> str | None:
    """``absolute`` with ``relative`` taken off its end, when it ends with it (the folder it was relative to)."""
    rel, full = _pure(relative.strip()), _pure(absolute.strip())
    if rel.is_absolute() or not full.is_absolute() or not rel.parts or rel.parts[0] == "..":
        return None
    parts = [p for p in rel.parts if p != "."]
    if not parts or tuple(full.parts[-len(parts):]) != tuple(parts) or len(full.parts) <= len(parts):
        return None
    return str(type(full)(*full.parts[:-len(parts)]))


class Workdir:
    """The evidence for a session's working folder, best first."""

    def __init__(self, store_folder: str | None = None, project: str | None = None) -> None:
        self.stated: str | None = None
        self.resolved: str | None = None
        self.store_folder = store_folder
        #: The folder the whole store's files share (a store kept per project: its other sessions too).
        self.project = project
        self.absolute: list[str] = []

    def state(self, folder: object) -> None:
        """A folder the agent says it worked in (a shell's working directory)."""
        if isinstance(folder, str) and folder.strip() and not self.stated and _pure(folder).is_absolute():
            self.stated = folder.rstrip("/\\") or folder

    def pair(self, relative: object, absolute: object) -> None:
        """A path the tool was given and the absolute path it answered for."""
        if not self.resolved and isinstance(relative, str) and isinstance(absolute, str):
            self.resolved = root_of(relative, absolute)

    def seen(self, path: object) -> None:
        """An absolute path a tool was given."""
        if isinstance(path, str) and _pure(path).is_absolute() and len(self.absolute) < 1000:
            self.absolute.append(path)

    def best(self) -> str | None:
        if self.stated or self.resolved:
            return self.stated or self.resolved
        folder = self.store_folder
        if folder and (not self.absolute or any(_under(p, folder) for p in self.absolute)):
            return folder
        project = self.project
        if project and (not self.absolute or all(_under(p, project) for p in self.absolute)):
            return project
        if self.absolute:  # the store was moved: the folder its tools' paths share
            common = _common_folder(self.absolute)
            if common:
                return common
        return folder


def _under(path: str, folder: str) -> bool:
    folder = folder.rstrip("/\\")
    return path == folder or path.startswith(folder + "/") or path.startswith(folder + "\\")


def common_folder(paths: list[str]) -> str | None:
    """The folder absolute paths share (the parent of a single file); None when only ``/`` is."""
    return _common_folder(paths)


def _common_folder(paths: list[str]) -> str | None:
    posix = [p for p in paths if p.startswith("/")]
    if not posix:
        return None
    try:
        common = posixpath.commonpath(posix)
    except ValueError:
        return None
    # a path the tools named whole (a file) is not a folder: its parent is
    if common in posix and not any(p.rstrip("/") == common and p.endswith("/") for p in posix) \
            and len(set(posix)) == 1:
        common = posixpath.dirname(common)
    return common if common not in ("/", "") and os.sep else None
