"""Owner-only files and folders: what skillmill keeps holds text from people's sessions.

The state database (steps, commands, tool output), the recall index and its serving
snapshot (skill text), logs (error messages quote what they choked on) and run snapshots are
readable by their owner only, as skill files already are (``atomic.write`` creates them through
``mkstemp``, mode 0600): files 0600, folders 0700. ``$SKILLMILL_HOME`` itself is kept 0700, so
what other programs create in it (DuckDB's write-ahead log, its spill files) is covered too.

Standard library only: the hook and ``recall`` log through it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    from typing import IO

FILE_MODE = 0o600
DIR_MODE = 0o700


def mkdir(folder: Path) -> Path:
    """Create ``folder`` and any missing parents owner-only; a folder of ours found open to others is closed."""
    make_folders(folder)
    restrict(folder, DIR_MODE)
    return folder


def make_folders(folder: Path) -> Path:
    """Create ``folder`` and any missing parents owner-only, leaving folders already there as they are
    (a library outside the home is not listable by others: skill and repository names are the user's)."""
    missing = []
    parent = Path(folder)
    while not parent.exists() and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    for path in reversed(missing):
        path.mkdir(mode=DIR_MODE, exist_ok=True)
    return folder


def restrict(path: Path, mode: int = FILE_MODE) -> None:
    """Make ``path`` owner-only if it has group or other bits (a missing file is not an error)."""
    with contextlib.suppress(FileNotFoundError, PermissionError):
        if os.stat(path).st_mode & 0o077:
            os.chmod(path, mode)


def open_file(path: Path, mode: str = "ab", *, encoding: str = "utf-8") -> IO:
    """``open(path, mode)`` for writing, creating the file 0600 (and its folder 0700) if it is new."""
    mkdir(path.parent)
    flags = os.O_CREAT | (os.O_RDWR if "+" in mode else os.O_WRONLY)
    flags |= os.O_APPEND if "a" in mode else (os.O_TRUNC if "w" in mode else 0)
    fd = os.open(path, flags, FILE_MODE)
    try:
        restrict(path)  # an older file, created before this rule
        return os.fdopen(fd, mode, encoding=None if "b" in mode else encoding)
    except BaseException:
        os.close(fd)
        raise


def write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path``, owner-only."""
    with open_file(path, "wb") as handle:
        handle.write(text.encode("utf-8"))


def why_unsafe(folder: Path) -> str | None:
    """Why ``folder`` may not hold skillmill's state, or None when it may (checked as ssh checks its files).

    The folder itself, once it exists, must belong to this user and be closed to writes by group and
    others; each folder above it must belong to this user or root and be closed to writes by others unless
    it is sticky (``/tmp``): otherwise another account could have made it, or could swap what is in it --
    bind the recall socket first and answer the prompts, plant the skills the hook serves.
    """
    uid = os.geteuid()
    path = Path(os.path.abspath(Path(folder).expanduser()))
    try:
        real = Path(os.path.realpath(path))
    except OSError:
        return None
    for place in [real, *real.parents]:
        try:
            info = os.stat(place)
        except FileNotFoundError:
            continue  # not made yet: made by us, owner-only
        except OSError:
            return None  # unreadable: whoever opens it says why
        if place == real:
            if info.st_uid != uid:
                return f"{path} belongs to another account (uid {info.st_uid}), not to you (uid {uid})"
            if info.st_mode & 0o022:
                return f"{path} may be written by {'others' if info.st_mode & 0o002 else 'its group'} " \
                       f"(mode {stat.S_IMODE(info.st_mode):o})"
        else:
            if info.st_uid not in (uid, 0):
                return f"{place}, which holds {path}, belongs to another account (uid {info.st_uid})"
            if info.st_mode & 0o002 and not info.st_mode & stat.S_ISVTX:
                return f"{place}, which holds {path}, may be written by others (mode {stat.S_IMODE(info.st_mode):o})"
            if info.st_mode & 0o020 and not info.st_mode & stat.S_ISVTX and not _own_group(info.st_gid, uid):
                return f"{place}, which holds {path}, may be written by its group (gid {info.st_gid}, mode " \
                       f"{stat.S_IMODE(info.st_mode):o})"
    return None


def _own_group(gid: int, uid: int) -> bool:
    """Whether the group ``gid`` is this user's alone (a user private group: its name is the user's, it has no other
    members), so its write bit lets nobody else in -- as Debian's ssh allows."""
    try:
        import grp
        import pwd

        user = pwd.getpwuid(uid)
        group = grp.getgrgid(gid)
    except (ImportError, KeyError):
        return False
    return group.gr_gid == user.pw_gid and group.gr_name == user.pw_name and not set(group.gr_mem) - {user.pw_name}


@contextlib.contextmanager
def socket_address(path: Path):  # type: ignore[no-untyped-def]
    """The name to bind or connect a Unix socket at ``path`` by: the path itself, or, when it is longer than
    the 107 bytes a socket name may hold, the same file reached through this process's descriptor of its
    folder (``/proc/self/fd/N/name``), valid while the block runs."""
    name = os.fsencode(path)
    if len(name) < 100:
        yield str(path)
        return
    fd = os.open(Path(path).parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        yield f"/proc/self/fd/{fd}/{Path(path).name}"
    finally:
        os.close(fd)


def peer_uid(sock: object) -> int | None:
    """The user id of the process at the other end of a connected Unix socket (``SO_PEERCRED``; None where the
    system does not say)."""
    import socket
    import struct

    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    raw = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))  # type: ignore[attr-defined]
    return struct.unpack("3i", raw)[1]
