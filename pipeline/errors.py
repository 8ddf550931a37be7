"""One root exception; every error carries what to do next."""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterable
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

    def __init__(self, folder: str | Path) -> None:
        super().__init__(f"no space left on {folder}: free some space or point SKILLMILL_HOME/--library elsewhere")
        self.folder = str(folder)


#: How DuckDB and SQLite report a full disk (their errors are not ``OSError``), with the file if they name it.
_FULL = re.compile(r"No space left on device|Disk quota exceeded|database or disk is full", re.I)
_QUOTED_PATH = re.compile(r"""["'](/[^"']+)["']""")
#: Below this many free bytes a folder counts as full (a failed write removes its partial file).
_NEARLY_FULL = 1 << 20


def no_space(exc: BaseException, places: Iterable[str | Path] = ()) -> NoSpace | None:
    """A :class:`NoSpace` when ``exc`` (or what caused it) is a full disk, naming the folder; else None.

    The folder is the one of the file that could not be written when the error says, else the
    first of ``places`` that is (nearly) full, else the first of ``places``.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            return NoSpace(_folder(current.filename, places))
        if not isinstance(current, OSError) and _FULL.search(str(current)):
            found = _QUOTED_PATH.search(str(current))
            return NoSpace(_folder(found.group(1) if found else None, places))
        current = current.__cause__ or current.__context__
    return None


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
