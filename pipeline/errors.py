"""One root exception; every error carries what to do next."""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path


class SkillmillError(Exception):
    """Root of every error skillmill raises on purpose.

    ``hint`` tells the user what to do next; the CLI prints it under the message.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class UsageError(SkillmillError):
    """Bad arguments or configuration (CLI exit code 2)."""


class ParseError(SkillmillError):
    """A trajectory file (or one line of it) could not be read."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.path = path
        self.line = line


class SkillFileError(SkillmillError):
    """A SKILL.md file is malformed or does not validate."""

    def __init__(self, message: str, *, path: str | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.path = path


class IndexError_(SkillmillError):
    """The DuckDB index is missing, locked or unreadable."""


class NoSpace(SkillmillError):
    """The disk (or the user's quota) is full where skillmill writes (CLI exit code 2)."""

    exit_code = 2

    def __init__(self, folder: str | Path, *, advice: str | None = None) -> None:
        super().__init__(f"no space left on {folder}: {advice or SPACE_ADVICE}")
        self.folder = str(folder)


SPACE_ADVICE = "free some space or point SKILLMILL_HOME/--library elsewhere"


#: How DuckDB and SQLite report a full disk (their errors are not ``OSError``), with the file if they name it.
_FULL = re.compile(r"No space left on device|Disk quota exceeded|database or disk is full", re.I)
_QUOTED_PATH = re.compile(r"""["'](/[^"']+)["']""")
#: Below this many free bytes a folder counts as full (a failed write removes its partial file).
_NEARLY_FULL = 1 << 20


def no_space(exc: BaseException, places: Iterable[str | Path] = (), *, advice: str | None = None) -> NoSpace | None:
    """A :class:`NoSpace` when ``exc`` (or what caused it) is a full disk, naming the folder; else None.

    The folder is the one of the file that could not be written when the error says, else the
    first of ``places`` that is (nearly) full, else the first of ``places``.
    """
    for current in _chain(exc):
        if isinstance(current, NoSpace):  # said already, with its own advice
            return current
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            return NoSpace(_folder(current.filename, places), advice=advice)
        if not isinstance(current, OSError) and _FULL.search(str(current)):
            found = _QUOTED_PATH.search(str(current))
            return NoSpace(_folder(found.group(1) if found else None, places), advice=advice)
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what caused it (``__cause__``, else ``__context__``), each once."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


WRITABLE_ADVICE = "point SKILLMILL_HOME/--library elsewhere or make it writable"
PREFECT_ADVICE = "point PREFECT_HOME elsewhere or make it writable"


class NotWritable(SkillmillError):
    """A folder skillmill writes is read-only, or not ours to write (CLI exit code 2)."""

    exit_code = 2

    def __init__(self, folder: str | Path, *, read_only: bool = True, advice: str | None = None,
                 creating: str | Path | None = None) -> None:
        state = "is read-only" if read_only else "is not writable (permission denied)"
        prefix = f"cannot create {creating}: " if creating else ""
        super().__init__(f"{prefix}{folder} {state}: {advice or WRITABLE_ADVICE}")
        self.folder = str(folder)


#: How DuckDB and SQLite say they may not write (their errors are not ``OSError``).
_READ_ONLY = re.compile(r"Read-only file system|attempt to write a readonly database", re.I)
_DENIED = re.compile(r"Permission denied|Operation not permitted", re.I)
_UNWRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)


def not_writable(exc: BaseException, places: Iterable[str | Path] = (), *,
                 advice: str | None = None) -> NotWritable | None:
    """A :class:`NotWritable` when ``exc`` (or what caused it) is a write refused by the file system; else None.

    Names the folder that could not be written: the nearest existing one of the file the error
    names, else the first of ``places`` that cannot be written. A permission error on reading
    (a file we may not read, in a folder we may write) is not this error: None. ``advice`` replaces
    the default what-to-do (which names SKILLMILL_HOME/--library, or PREFECT_HOME for Prefect's folder).
    """
    places = [Path(p) for p in places]
    for current in _chain(exc):
        if isinstance(current, NotWritable):  # said already, with its own advice
            return current
        if isinstance(current, OSError) and current.errno in _UNWRITABLE:
            found = _unwritable(current.filename, places, read_only=current.errno == errno.EROFS, advice=advice)
            if found is not None:
                return found
        elif _from_database(current) and (_READ_ONLY.search(str(current)) or _DENIED.search(str(current))):
            quoted = _QUOTED_PATH.search(str(current))
            found = _unwritable(quoted.group(1) if quoted else None, places,
                                read_only=bool(_READ_ONLY.search(str(current))), advice=advice)
            if found is not None:
                return found
    return None


def _from_database(exc: BaseException) -> bool:
    """DuckDB's and SQLite's errors, whose words are trusted here (an HTTP 403 says "Permission denied" too)."""
    return type(exc).__module__.lstrip("_").split(".")[0] in ("duckdb", "sqlite3")


def environment_error(exc: BaseException, places: Iterable[str | Path] | None = None) -> SkillmillError | None:
    """A full disk or a folder skillmill may not write, however deep in ``exc``'s chain; else None.

    What the CLI says instead of "internal error": one line naming the folder and what to do, exit 2.
    ``places`` (default: the home and the library) are named when the error names no file.
    """
    if places is None:
        from pipeline import settings

        places = [settings.home(), settings.library_dir()]
    places = list(places)
    return no_space(exc, places) or not_writable(exc, places)


def _unwritable(filename: object, places: list[Path], *, read_only: bool, advice: str | None) -> NotWritable | None:
    if isinstance(filename, (str, bytes, os.PathLike)) and filename:
        path = Path(os.fsdecode(filename))
        folder = _existing(path if path.is_dir() else path.parent)
        if not read_only and (path.is_file() and not os.access(path, os.R_OK)
                              or _writable(folder) and (not path.exists() or os.access(path, os.W_OK))):
            return None  # a read was refused, or the folder and the file may be written: not this error
        creating = path if not path.exists() and path in places else None
        return NotWritable(folder, read_only=read_only or _read_only_mount(folder), advice=advice or _advice(path),
                           creating=creating)
    for place in places:
        folder = _existing(place)
        if not _writable(folder):
            return NotWritable(folder, read_only=read_only or _read_only_mount(folder),
                               advice=advice or _advice(place),
                               creating=place if folder != place else None)
    return None


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _read_only_mount(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _writable(folder: Path) -> bool:
    """Whether files can be created in ``folder`` (root ignores modes, not a read-only mount)."""
    return os.access(folder, os.W_OK | os.X_OK) and not _read_only_mount(folder)


def _advice(path: Path) -> str:
    try:
        prefect = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    except RuntimeError:  # no home directory to expand
        return WRITABLE_ADVICE
    try:
        path.absolute().relative_to(prefect.absolute())
    except ValueError:
        return WRITABLE_ADVICE
    return PREFECT_ADVICE


def _folder(filename: object, places: Iterable[str | Path]) -> str:
    if isinstance(filename, (str, bytes, os.PathLike)) and filename:
        path = Path(os.fsdecode(filename))
        return str(path.parent if not path.is_dir() else path)
    candidates = [Path(p) for p in places]
    for place in candidates:
        probe = place
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        try:
            info = os.statvfs(probe)
        except OSError:
            continue
        if info.f_bavail * info.f_frsize < _NEARLY_FULL:
            return str(place)
    return str(candidates[0]) if candidates else "the disk skillmill writes to"


#: Pydantic ends each error with a link to its documentation: for the developer, not for the user.
_DOC_URL = re.compile(r"\s*For further information visit https://errors\.pydantic\.dev/\S*|https://errors\.pydantic\.dev/\S*")


def plain(text: str) -> str:
    """``text`` without pydantic's documentation links."""
    return _DOC_URL.sub("", text)


def validation_summary(exc: BaseException) -> str:
    """A pydantic ``ValidationError`` as one line a user can act on: ``field: what is wrong (got 'value')``;
    any other exception as its text, without documentation links. Pydantic is not imported here."""
    errors = getattr(exc, "errors", None)
    try:
        found = errors(include_url=False) if callable(errors) else None
    except Exception:  # noqa: BLE001 -- not pydantic's: its text will do
        found = None
    if not found:
        return plain(str(exc))
    parts = []
    for error in found:
        where = ".".join(str(part) for part in error.get("loc", ())) or "(top level)"
        message = str(error.get("msg", "")).removeprefix("Value error, ")
        value = error.get("input")
        got = f" (got {value[:60]!r})" if isinstance(value, str) and error.get("type") != "missing" else ""
        parts.append(f"{where}: {message}{got}")
    return "; ".join(parts)
