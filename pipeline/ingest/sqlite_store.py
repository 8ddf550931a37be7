"""SQLite stores agents keep (Crush, Go OpenCode, OpenCode 1.2+, Cursor, Goose), read from a private copy.

An agent keeps its store open while it runs, most in WAL mode: the newest rows live in
``<db>-wal`` until a checkpoint moves them into the file (a Crush store can be a 4 KB header
with every row in the WAL). Opening such a store in place, even ``mode=ro``, makes SQLite
create or write ``<db>-shm`` beside it and take read locks that hold back the agent's
checkpoints; ``immutable=1`` takes no locks but ignores the WAL, so its latest rows. So a store
is copied -- the file, its ``-wal`` and a hot ``-journal`` -- into a private temporary folder,
and the copy is opened: SQLite replays the WAL (or rolls the journal back) there, and the
agent's files are only ever read as bytes. The copy is taken again when the files changed
while they were copied (a checkpoint between the file and its WAL would tear it).

Detection needs only the table names: the store is asked through ``immutable=1`` in place (no
lock, no side file, its WAL not read); only when that finds no table and a WAL or journal is
there (a store never checkpointed keeps its schema in the WAL too) is it copied, and that copy
is kept for the parse that follows (one at a time). Other programs' ``.db`` files met on the way
cost a read of their schema, not a copy.

Everything read is bounded: the store's size (:data:`MAX_STORE_BYTES`), the rows of a query
(:data:`MAX_ROWS`), the size of one value (:data:`MAX_VALUE_BYTES`, skipped and reported past
it) and the time of one query. Text is decoded as the line readers do: NUL bytes dropped and
invalid UTF-8 replaced, both reported.
"""

from __future__ import annotations

import atexit
import logging
import shutil
import sqlite3
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from pipeline.ingest import reader
from pipeline.ingest.reader import Probe
from pipeline.ingest.report import FileReport

log = logging.getLogger(__name__)

MAGIC = b"SQLite format 3\x00"
#: Files that belong to a store: its write-ahead log and the journal of a write in progress.
COMPANIONS = ("-wal", "-journal")
#: The largest store (file, WAL and journal together) copied to be read.
MAX_STORE_BYTES = 2 * 1024 * 1024 * 1024
#: The longest value read from one cell (a message's JSON); longer ones are skipped and reported.
MAX_VALUE_BYTES = reader.MAX_LINE_BYTES
#: Rows one query returns at most; the rest are reported, not read.
MAX_ROWS = 200_000
#: Tables read from a store's schema at most.
MAX_TABLES = 500
#: Seconds one query may run (a damaged or hostile store must not stall a run).
MAX_QUERY_SECONDS = 120.0
_COPY_ATTEMPTS = 3
_CHUNK = 1024 * 1024
_NUL = b"\x00"

#: What a damaged store raises: SQLite's errors, and a name or message in it that is not UTF-8.
_DAMAGED = (sqlite3.Error, UnicodeDecodeError)

Tables = dict[str, frozenset[str]]
Signature = tuple[tuple[int, int] | None, ...]


class StoreError(Exception):
    """The store cannot be read (too large, not a database, kept changing); the message says why."""


def is_sqlite(probe: Probe) -> bool:
    """The file starts with SQLite's magic (the probe drops NUL bytes, so the file is asked again)."""
    if not probe.head.startswith(MAGIC[:-1]):
        return False
    try:
        with open(probe.path, "rb") as handle:  # noqa: PTH123 -- detection, before any parse
            return handle.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def signature(path: Path) -> Signature:
    """(size, mtime) of the file and of each companion that exists: a grown WAL is a change."""
    marks: list[tuple[int, int] | None] = []
    for suffix in ("", *COMPANIONS):
        try:
            st = Path(f"{path}{suffix}").stat()
        except OSError:
            marks.append(None)
            continue
        marks.append((st.st_size, st.st_mtime_ns))
    return tuple(marks)


# -- the copy -----------------------------------------------------------------------------------
@dataclass
class Store:
    """An open private copy of a store."""

    path: Path
    con: sqlite3.Connection
    tables: Tables
    folder: tempfile.TemporaryDirectory[str]
    head: bytes = b""
    signature: Signature = ()
    _started: float = field(default=0.0, repr=False)

    def close(self) -> None:
        try:
            self.con.close()
        finally:
            self.folder.cleanup()

    # -- queries ---------------------------------------------------------------------------
    def has(self, table: str, *columns: str) -> bool:
        return table in self.tables and all(c in self.tables[table] for c in columns)

    def select(self, table: str, columns: Sequence[str], report: FileReport, *, where: str = "",
               order: str = "rowid", params: Sequence[Any] = (), limit: int = MAX_ROWS,
               raw: Sequence[str] = ()) -> Iterator[dict[str, Any]]:
        """Rows of ``table`` as ``{column: value}``; a column the store does not have reads None.

        ``table``, ``columns``, ``where`` and ``order`` are the reader's constants (checked against
        the store's schema); values come in ``params``. Text arrives decoded (see :func:`text`);
        a value longer than :data:`MAX_VALUE_BYTES` is None, reported with its size. Columns in
        ``raw`` keep their bytes (a compressed or binary value).
        """
        known = self.tables.get(table)
        if known is None:
            return
        present = [c for c in columns if c in known]
        parts = ["rowid"]
        for column in present:
            quoted = _quote(column)
            parts.append(f"CASE WHEN length(CAST({quoted} AS BLOB)) > {MAX_VALUE_BYTES} THEN NULL ELSE {quoted} END")
            parts.append(f"length(CAST({quoted} AS BLOB))")
        sql = f"SELECT {', '.join(parts)} FROM {_quote(table)}"  # noqa: S608 -- identifiers checked above
        if where:
            sql += f" WHERE {where}"
        sql += f" ORDER BY {order} LIMIT {int(limit) + 1}"
        count = 0
        for got in self._execute(sql, params):
            count += 1
            if count > limit:
                report.error(f"{table}: more than {limit} rows; only the first {limit} are read")
                return
            row: dict[str, Any] = dict.fromkeys(columns)
            for index, column in enumerate(present):
                value, size = got[1 + 2 * index], got[2 + 2 * index]
                if value is None and size is not None and size > MAX_VALUE_BYTES:
                    report.error(f"{table} row {got[0]}: {column} of {size} bytes is longer than the "
                                 f"{MAX_VALUE_BYTES}-byte limit; skipped")
                    continue
                row[column] = text(value, report, f"{table} row {got[0]} {column}") \
                    if isinstance(value, bytes) and column not in raw else value
            yield row

    def rows(self, sql: str, report: FileReport, params: Sequence[Any] = (), *,
             limit: int = MAX_ROWS) -> Iterator[tuple[Any, ...]]:
        """The rows of one of the reader's SQL constants (aggregates, joins), values as stored.

        Text arrives as bytes (decode it with :func:`text`); at most ``limit`` rows, the rest reported.
        """
        for count, row in enumerate(self._execute(sql, params), 1):
            if count > limit:
                report.error(f"more than {limit} rows; only the first {limit} are read")
                return
            yield row

    def _execute(self, sql: str, params: Sequence[Any]) -> Iterator[tuple[Any, ...]]:
        self._started = time.monotonic()
        cursor = self.con.execute(sql, tuple(params))
        try:
            while True:
                rows = cursor.fetchmany(256)
                if not rows:
                    return
                yield from rows
                self._started = time.monotonic()  # the budget is per batch: slow consumers are not the query
        finally:
            cursor.close()

    def _progress(self) -> int:
        return 1 if time.monotonic() - self._started > MAX_QUERY_SECONDS else 0


def text(value: bytes, report: FileReport, where: str) -> str:
    """A cell's bytes as text: NUL bytes dropped, invalid UTF-8 replaced, each reported."""
    if _NUL in value:
        kept = value.replace(_NUL, b"")
        report.error(f"{where}: {len(value) - len(kept)} NUL bytes dropped")
        value = kept
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        report.error(f"{where}: invalid UTF-8 bytes replaced with U+FFFD")
        return value.decode("utf-8", errors="replace")


def loads(value: Any, report: FileReport, where: str) -> Any:
    """A JSON cell; None (reported) when it holds no JSON."""
    if value is None:
        return None
    if not isinstance(value, str | bytes):
        report.error(f"{where}: expected JSON text, found {type(value).__name__}")
        return None
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        report.error(f"{where}: invalid JSON: {exc}")
        return None


@contextmanager
def open_store(path: Path, report: FileReport) -> Iterator[Store | None]:
    """The store at ``path``, copied and open; None (the reason reported) when it cannot be read.

    The copy a detection just took is used when the files are still the ones it copied; the
    first bytes are read again either way, so a store gone or unreadable since fails here.
    """
    with path.open("rb") as handle:  # an I/O error here is the file's, raised as one
        head = handle.read(100)
    if not head.startswith(MAGIC):
        report.error("not an SQLite database (its first bytes are not SQLite's magic)")
        yield None
        return
    store = _take_parked(path, head)
    if store is None:
        try:
            store = _snapshot(path, Path.open)
        except StoreError as exc:
            report.error(str(exc))
            yield None
            return
    try:
        yield store
    except _DAMAGED as exc:
        report.error(f"the store is damaged: {exc}")
    finally:
        store.close()


def _snapshot(path: Path, opener: Callable[..., IO[bytes]]) -> Store:
    """Copy the store and its companions into a private folder and open the copy."""
    folder = tempfile.TemporaryDirectory(prefix="skillmill-store-")
    try:
        copy = Path(folder.name) / "store.db"
        for _ in range(_COPY_ATTEMPTS):
            before = signature(path)
            total = sum(mark[0] for mark in before if mark)
            if total > MAX_STORE_BYTES:
                raise StoreError(f"the store and its WAL hold {total} bytes, more than the {MAX_STORE_BYTES}-byte "
                                 "limit for SQLite stores; not read")
            for suffix, mark in zip(("", *COMPANIONS), before, strict=True):
                target = Path(f"{copy}{suffix}")
                target.unlink(missing_ok=True)
                if mark is not None:
                    _copy_file(Path(f"{path}{suffix}"), target, opener)
            if signature(path) == before:
                break
        else:
            raise StoreError(f"the store changed each of the {_COPY_ATTEMPTS} times it was copied (the agent is "
                             "writing it); the next run reads it")
        with opener(copy, "rb") as handle:
            head = handle.read(100)
        store = _connect(path, copy, folder)
        store.head, store.signature = head, before
        return store
    except BaseException:
        folder.cleanup()
        raise


def _copy_file(source: Path, target: Path, opener: Callable[..., IO[bytes]]) -> None:
    with opener(source, "rb") as src, target.open("wb") as dst:
        shutil.copyfileobj(src, dst, _CHUNK)


def _connect(path: Path, copy: Path, folder: tempfile.TemporaryDirectory[str]) -> Store:
    try:
        con = sqlite3.connect(copy, check_same_thread=False, isolation_level=None)
    except _DAMAGED as exc:
        raise StoreError(f"cannot open the copy of the store: {exc}") from exc
    store = Store(path=path, con=con, tables={}, folder=folder)
    try:
        con.text_factory = bytes
        con.set_progress_handler(store._progress, 10_000)
        store._started = time.monotonic()
        con.execute("PRAGMA query_only = ON")
        con.execute("PRAGMA trusted_schema = OFF")
        store.tables = _tables(con)
    except _DAMAGED as exc:
        con.close()
        raise StoreError(f"not a readable SQLite database: {exc}") from exc
    return store


def _tables(con: sqlite3.Connection) -> Tables:
    names = [row[0] for row in con.execute(
        f"SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name LIMIT {MAX_TABLES}")]
    tables: Tables = {}
    for raw in names:
        name = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw)
        columns = con.execute(f"PRAGMA table_info({_quote(name)})").fetchall()
        tables[name] = frozenset(c[1].decode("utf-8", errors="replace") if isinstance(c[1], bytes) else str(c[1])
                                 for c in columns)
    return tables


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


# -- detection ----------------------------------------------------------------------------------
_LOCK = threading.Lock()
_SCHEMAS: OrderedDict[tuple[str, Signature], Tables] = OrderedDict()
_SCHEMAS_KEPT = 256
#: The copy a detection took, kept for the parse that follows (one at a time).
_PARKED: dict[str, Store] = {}


def schema(probe: Probe) -> Tables:
    """The tables (and their columns) of the SQLite store ``probe`` starts; {} when it is none.

    For format detection: cheap and cached by the files' signature. It never raises.
    """
    if not is_sqlite(probe):
        return {}
    path = probe.path
    marks = signature(path)
    key = (str(path), marks)
    with _LOCK:
        if key in _SCHEMAS:
            _SCHEMAS.move_to_end(key)
            return _SCHEMAS[key]
    tables = _schema_in_place(path)
    if not tables and (marks[1] or marks[2]):  # the schema is only in the WAL (never checkpointed)
        tables = _schema_of_copy(path)
    with _LOCK:
        _SCHEMAS[key] = tables
        while len(_SCHEMAS) > _SCHEMAS_KEPT:
            _SCHEMAS.popitem(last=False)
    return tables


def ask(probe: Probe, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """The first rows of a detection query (one of the reader's constants), read in place like
    :func:`schema` (``immutable=1``: no lock, no side file); [] when the store cannot answer."""
    if not is_sqlite(probe):
        return []
    try:
        con = sqlite3.connect(f"{probe.path.absolute().as_uri()}?mode=ro&immutable=1", uri=True,
                              check_same_thread=False)
    except (sqlite3.Error, ValueError):
        return []
    try:
        con.text_factory = bytes
        started = time.monotonic()
        con.set_progress_handler(lambda: 1 if time.monotonic() - started > 5.0 else 0, 10_000)
        return con.execute(sql, tuple(params)).fetchmany(16)
    except _DAMAGED:
        return []
    finally:
        con.close()


def _schema_in_place(path: Path) -> Tables:
    """The schema read in place with ``immutable=1``: no lock, no ``-shm``, nothing written."""
    try:
        con = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro&immutable=1", uri=True, check_same_thread=False)
    except (sqlite3.Error, ValueError):
        return {}
    try:
        con.text_factory = bytes
        return _tables(con)
    except _DAMAGED:
        return {}
    finally:
        con.close()


def _schema_of_copy(path: Path) -> Tables:
    try:
        store = _snapshot(path, open)
    except (StoreError, OSError, *_DAMAGED) as exc:
        log.debug("cannot copy %s to read its schema: %s", path, exc)
        return {}
    _park(store)
    return store.tables


def _park(store: Store) -> None:
    with _LOCK:
        old = _PARKED.pop(str(store.path), None)
        others = list(_PARKED.values())
        _PARKED.clear()
        _PARKED[str(store.path)] = store
    for stale in [s for s in (old, *others) if s is not None]:
        stale.close()


def _take_parked(path: Path, head: bytes) -> Store | None:
    with _LOCK:
        store = _PARKED.pop(str(path), None)
    if store is None:
        return None
    if store.signature == signature(path) and store.head == head:
        return store
    store.close()  # the files changed since: copy them again
    return None


@atexit.register
def _release() -> None:
    with _LOCK:
        stores = list(_PARKED.values())
        _PARKED.clear()
    for store in stores:
        store.close()
