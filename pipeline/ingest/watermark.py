"""Per-file watermarks: a nightly run reads only new files and the appended part of growing ones.

For every file it read, the state DB keeps a :class:`Watermark`: the file's size and mtime at
that read, how many bytes were consumed (``offset``, the end of the last complete line for
JSONL), a sha256 of exactly those bytes, the trajectories they gave, and -- for formats that
can resume (``TrajectoryFormat.incremental``) -- the parser's state at ``offset``.

On the next run, :func:`check` decides from ``stat`` alone and :func:`read` does the rest:

* same size and mtime: **unchanged**, not opened;
* changed less than ``defer`` seconds ago: still being written, **deferred** (the run reports
  it, the next run reads it);
* grown, and the first ``offset`` bytes hash as before: **appended** -- an incremental format
  resumes from its saved state and parses only the new bytes; a format that cannot resume
  re-reads the file whole (its trajectory could not be continued otherwise);
* touched but the same bytes: unchanged, the watermark gets the new mtime;
* otherwise (never seen, shrunk, rewritten in place): read **whole**.

An agent's SQLite store (a format with ``store`` set, ``pipeline.ingest.formats._stores``) is
rewritten in place, so a prefix of its bytes says nothing: its watermark digests the whole store
and keeps the marks of its sessions (updated time, message count, last message) as the state.
When it changed, the format resumes from those marks: only new and changed sessions are read
again (**sessions**), and the watermark lists their trajectories with the earlier ones.

A file's write-ahead log (``<file>-wal``, SQLite's) is part of it: the newest rows of an agent's
SQLite store live there until a checkpoint, so its bytes count with the file's -- in the size,
the mtime (the later of the two) and the digest -- and a grown or rewritten WAL is a change.

Everything a watermark says is only trusted by the reader that wrote it: :func:`reader_key`
hashes skillmill's version, the code of every registered format and the trajectory model, and
what the caller adds (the distiller). When any of it changes, every file is read whole again,
so a pickled parser state is never fed to different code, and a fixed parser re-reads old files.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import time
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from functools import cache
from pathlib import Path

from pydantic import BaseModel, Field

from pipeline import __version__
from pipeline.ingest import Checkpoint, FileReport, Trajectory, ingest_file
from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.identity import Locator
from pipeline.plugins import registered_formats

log = logging.getLogger(__name__)
_CHUNK = 1024 * 1024
_CLOCK_SKEW_S = 120.0
#: Files whose bytes belong to the file they are named after (``pipeline.ingest.sqlite_store``).
_COMPANIONS = ("-wal",)


class Watermark(BaseModel):
    """What the last read of one file consumed, and what it gave."""

    path: str
    size: int = Field(description="File size (bytes) when it was read.")
    mtime_ns: int
    offset: int = Field(description="Bytes consumed: the prefix the digest covers and a resume starts after.")
    line: int = Field(0, description="Lines consumed, so line numbers in errors stay right after a resume.")
    digest: str = Field(description="sha256 of the first `offset` bytes.")
    format: str | None = None
    status: str = "ok"
    trajectories: list[str] = Field(default_factory=list)
    state: bytes | None = Field(None, description="zlib-compressed parser state at `offset` (incremental formats).")
    reader: str = ""
    read_at: datetime | None = None


class Decision(StrEnum):
    UNCHANGED = "unchanged"
    DEFERRED = "deferred"
    READ = "read"


@dataclass
class Check:
    decision: Decision
    age_s: float = 0.0
    #: Grown past what was consumed: worth loading the saved parser state to resume.
    may_resume: bool = False


class Mode(StrEnum):
    NEW = "new"              # never read before
    APPENDED = "appended"    # only the new bytes were parsed, from the saved state
    REREAD = "reread"        # grown or reader changed, read whole (the format cannot resume)
    REWRITTEN = "rewritten"  # the bytes read before changed: read whole
    UNCHANGED = "unchanged"  # touched, same bytes
    SESSIONS = "sessions"    # a store: only its new and changed sessions were read


@dataclass
class Reading:
    """One file's read: what the run stores, and the watermark to save once it is stored."""

    path: Path
    mode: Mode
    report: FileReport | None = None
    trajectories: list[Trajectory] = field(default_factory=list)
    watermark: Watermark | None = None
    previous: Watermark | None = None


@cache
def _code_digest() -> str:
    """Hash of the code that turns bytes into stored trajectories (formats, reader, model)."""
    import pipeline.ingest as ingest_pkg
    import pipeline.trajectory as trajectory_pkg

    digest = hashlib.sha256(__version__.encode())
    files = {Path(inspect.getsourcefile(type(f)) or "") for f in registered_formats()}
    for package in (ingest_pkg, trajectory_pkg):
        files.update(Path(package.__file__).parent.glob("*.py"))  # type: ignore[arg-type]
    for path in sorted(files):
        try:
            digest.update(path.name.encode() + path.read_bytes())
        except OSError:  # no source (frozen install): the version and names must do
            digest.update(str(path).encode())
    digest.update(",".join(sorted(f.name for f in registered_formats())).encode())
    return digest.hexdigest()[:16]


def reader_key(extra: str = "") -> str:
    """Identifies the code a watermark is valid for; ``extra`` is what the caller adds (its distiller)."""
    return f"{_code_digest()}:{hashlib.sha256(extra.encode()).hexdigest()[:12]}" if extra else _code_digest()


def check(path: Path, previous: Watermark | None, *, reader: str, defer_s: float = 0.0,
          now: float | None = None) -> Check:
    """Decide from ``stat`` alone whether ``path`` needs reading now."""
    try:
        st = _stat(path)
    except OSError:
        return Check(Decision.READ)  # reading reports why it cannot
    if previous is not None and previous.reader == reader and (st.st_size, st.st_mtime_ns) == (
            previous.size, previous.mtime_ns):
        return Check(Decision.UNCHANGED)
    age = (time.time() if now is None else now) - st.st_mtime
    if defer_s and -_CLOCK_SKEW_S < age < defer_s:  # an mtime far in the future is skew, not activity
        return Check(Decision.DEFERRED, age_s=max(age, 0.0))
    grown = (previous is not None and previous.reader == reader and previous.format is not None
             and (st.st_size >= previous.offset or _store(previous.format) is not None))
    return Check(Decision.READ, age_s=age, may_resume=grown)


def read(path: Path, previous: Watermark | None, *, reader: str, locator: Locator | None = None) -> Reading:
    """Read what is new in ``path`` since ``previous`` (see the module docstring)."""
    try:
        st = _stat(path)
    except OSError:
        report, trajectories = ingest_file(path, locator=locator)  # reports the error
        return Reading(path, Mode.NEW, report, trajectories, previous=previous)
    if previous is not None and previous.reader == reader and (store := _store(previous.format)) is not None:
        return _sessions(path, st, previous, store, reader, locator)
    if previous is None or previous.reader != reader or st.st_size < previous.offset or not previous.format:
        return _whole(path, previous, reader, Mode.NEW if previous is None else Mode.REREAD, locator)
    hasher = _hash(path, previous.offset)
    if hasher is None or hasher.hexdigest() != previous.digest:
        return _whole(path, previous, reader, Mode.REWRITTEN, locator)
    if st.st_size == previous.size:
        touched = previous.model_copy(update={"mtime_ns": st.st_mtime_ns, "read_at": datetime.now(UTC)})
        return Reading(path, Mode.UNCHANGED, watermark=touched, previous=previous)
    fmt = next((f for f in registered_formats() if f.name == previous.format), None)
    if fmt is None or not fmt.incremental or previous.state is None:
        return _whole(path, previous, reader, Mode.REREAD, locator)
    try:
        checkpoint = Checkpoint(offset=previous.offset, line=previous.line, state=zlib.decompress(previous.state))
        report, trajectories = ingest_file(path, checkpoint=checkpoint, fmt=fmt, locator=locator)
    except Exception as exc:  # a state this code cannot use: the whole file is the safe answer
        log.warning("cannot resume %s (%s: %s); reading it whole", path, type(exc).__name__, exc)
        return _whole(path, previous, reader, Mode.REREAD, locator)
    _extend(hasher, path, previous.offset, checkpoint.offset)
    mark = _watermark(path, st, report, trajectories, reader, checkpoint, hasher.hexdigest())
    return Reading(path, Mode.APPENDED, report, trajectories, mark, previous)


def _store(name: str | None) -> TrajectoryFormat | None:
    """The registered format ``name`` when it reads SQLite stores by session."""
    fmt = next((f for f in registered_formats() if f.name == name), None) if name else None
    return fmt if fmt is not None and getattr(fmt, "store", False) and fmt.incremental else None


def _sessions(path: Path, st: _Stat, previous: Watermark, fmt: TrajectoryFormat, reader: str,
              locator: Locator | None) -> Reading:
    """A store read before: unchanged when its bytes are; otherwise its new and changed sessions."""
    hasher = _hash(path, st.st_size)
    if hasher is None:
        return _whole(path, previous, reader, Mode.REWRITTEN, locator)
    if hasher.hexdigest() == previous.digest and st.st_size == previous.offset:
        touched = previous.model_copy(update={"mtime_ns": st.st_mtime_ns, "read_at": datetime.now(UTC)})
        return Reading(path, Mode.UNCHANGED, watermark=touched, previous=previous)
    if previous.state is None:
        return _whole(path, previous, reader, Mode.REWRITTEN, locator)
    try:
        checkpoint = Checkpoint(state=zlib.decompress(previous.state))
        report, trajectories = ingest_file(path, checkpoint=checkpoint, fmt=fmt, locator=locator)
    except Exception as exc:  # a state this code cannot use: the whole store is the safe answer
        log.warning("cannot resume %s (%s: %s); reading it whole", path, type(exc).__name__, exc)
        return _whole(path, previous, reader, Mode.REWRITTEN, locator)
    if report.status == "failed" and not trajectories:
        return Reading(path, Mode.SESSIONS, report, trajectories, previous=previous)  # try again next run
    checkpoint.offset = st.st_size
    mark = _watermark(path, st, report, trajectories, reader, checkpoint, hasher.hexdigest())
    mark.trajectories = list(dict.fromkeys([*previous.trajectories, *mark.trajectories]))
    return Reading(path, Mode.SESSIONS, report, trajectories, mark, previous)


def _whole(path: Path, previous: Watermark | None, reader: str, mode: Mode, locator: Locator | None = None) -> Reading:
    try:
        st: _Stat | None = _stat(path)
    except OSError:
        st = None
    checkpoint = Checkpoint()
    report, trajectories = ingest_file(path, checkpoint=checkpoint, locator=locator)
    if st is None or (report.status == "failed" and report.format is None):
        return Reading(path, mode, report, trajectories, previous=previous)  # unreadable: try again next run
    if checkpoint.state is None or _store(report.format) is not None:  # what was read is the file as stat'ed
        checkpoint.offset = st.st_size
    hasher = _hash(path, checkpoint.offset)
    if hasher is None:
        return Reading(path, mode, report, trajectories, previous=previous)
    mark = _watermark(path, st, report, trajectories, reader, checkpoint, hasher.hexdigest())
    return Reading(path, mode, report, trajectories, mark, previous)


def _watermark(path: Path, st: _Stat, report: FileReport, trajectories: list[Trajectory], reader: str,
               checkpoint: Checkpoint, digest: str) -> Watermark:
    state = zlib.compress(checkpoint.state, 6) if checkpoint.state is not None else None
    return Watermark(path=str(path), size=st.st_size, mtime_ns=st.st_mtime_ns,
                     offset=checkpoint.offset, line=checkpoint.line, digest=digest, format=report.format,
                     status=report.status, trajectories=[t.id for t in trajectories], state=state, reader=reader,
                     read_at=datetime.now(UTC))


@dataclass(frozen=True)
class _Stat:
    """A file's size and mtime, its companions' included."""

    st_size: int
    st_mtime_ns: int

    @property
    def st_mtime(self) -> float:
        return self.st_mtime_ns / 1e9


def _parts(path: Path) -> list[Path]:
    return [path, *(p for p in (Path(f"{path}{suffix}") for suffix in _COMPANIONS) if p.is_file())]


def _stat(path: Path) -> _Stat:
    """``path.stat()`` (raising as it does) with the companions' bytes and latest mtime added."""
    st = path.stat()
    size, mtime = st.st_size, st.st_mtime_ns
    for part in _parts(path)[1:]:
        try:
            companion = part.stat()
        except OSError:
            continue
        size, mtime = size + companion.st_size, max(mtime, companion.st_mtime_ns)
    return _Stat(size, mtime)


def _hash(path: Path, length: int) -> hashlib._Hash | None:
    """sha256 of the first ``length`` bytes, streamed; None when the file is shorter or unreadable."""
    hasher = hashlib.sha256()
    return hasher if _extend(hasher, path, 0, length) else None


def _extend(hasher: hashlib._Hash, path: Path, start: int, end: int) -> bool:
    """Hash bytes ``start`` to ``end`` of the file followed by its companions."""
    base = 0
    for part in _parts(path):
        if start >= end:
            return True
        try:
            with part.open("rb") as handle:
                size = handle.seek(0, 2)
                if start < base + size:
                    handle.seek(start - base)
                    remaining = min(end, base + size) - start
                    while remaining > 0:
                        chunk = handle.read(min(_CHUNK, remaining))
                        if not chunk:
                            return False
                        hasher.update(chunk)
                        remaining -= len(chunk)
                        start += len(chunk)
        except OSError:
            return False
        base += size
    return start >= end
