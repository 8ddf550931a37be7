"""Files in folders skillmill does not own: a checkout it reads, an agent's folder it writes into.

A project's checkout is somebody else's text: it may hold ``.git/config -> /dev/zero``, a FIFO named
``pyproject.toml``, ``.claude/skills -> ~/.ssh`` or ``SKILL.md.tmp -> ~/.bashrc``. Everything skillmill
reads from such a folder or writes into it goes through here, under one rule: a path is taken
component by component below its ``root`` (the checkout, the project, the home folder), and a
symbolic link is followed only when it leads to a place inside that root (a dotfiles manager's
``~/.claude -> ~/dotfiles/claude`` is fine; ``.claude -> /etc`` is refused).

* :func:`read` -- regular files only (no FIFO, device or folder), at most ``limit`` bytes, opened
  without following a link at the last step, never blocking.
* :func:`write` -- a new file under a random name created exclusively in the target's own folder
  (``O_CREAT|O_EXCL|O_NOFOLLOW``, relative to that folder's descriptor), synced, then renamed over
  the target: a link planted at the temporary or the final name is never written through.
* :func:`tree` -- a folder's files as skillmill would compare them, hidden ones included, links
  reported as links (never followed); :func:`remove_tree` removes one without following links.

Standard library only (and ``pipeline.errors``): the hook reads ``.git/config`` through it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path, PurePosixPath

from pipeline.errors import SkillmillError

TEMP_SUFFIX = ".skillmill-tmp"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class Refused(SkillmillError):
    """A path below a root leads out of it (a link), or is not the kind of file expected."""


class Link:
    """What :func:`tree` gives for a symbolic link: never followed, never ours."""

    __slots__ = ("target",)

    def __init__(self, target: str) -> None:
        self.target = target

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Link) and other.target == self.target

    def __repr__(self) -> str:
        return f"Link({self.target!r})"


def inside(path: Path, root: Path) -> bool:
    """Is ``path`` (resolved) ``root`` (resolved) or below it?"""
    real, base = os.path.realpath(path), os.path.realpath(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def _parts(root: Path, path: Path | str) -> tuple[Path, list[str]]:
    """``root`` resolved, and the components of ``path`` below it (an absolute ``path`` must lie below
    ``root`` as written or as resolved)."""
    base = Path(os.path.realpath(Path(root).expanduser()))
    given = Path(path).expanduser()
    if given.is_absolute():
        written = Path(os.path.abspath(given))
        for start in (Path(os.path.abspath(Path(root).expanduser())), base):
            try:
                given = written.relative_to(start)
                break
            except ValueError:
                continue
        else:
            raise Refused(f"{written} is not inside {base}")
    parts = [p for p in PurePosixPath(given.as_posix()).parts if p not in ("", ".")]
    if ".." in parts:
        raise Refused(f"{path} climbs out of {base} ('..')")
    return base, parts


def resolve(root: Path, path: Path | str, *, make_folders: bool = False) -> Path:
    """The real location of ``path`` (relative to ``root``, or absolute below it), each component checked.

    A component that is a link is followed only when it leads inside ``root``; otherwise :class:`Refused`
    says which link and where it leads. Missing folders are created (mode 0777 less the umask) with
    ``make_folders``; the last component need not exist.
    """
    if make_folders:  # the root is the caller's choice (a project folder, the home): made as mkdir -p would
        Path(root).expanduser().mkdir(parents=True, exist_ok=True)
    base, parts = _parts(root, path)
    current = base
    for n, part in enumerate(parts):
        candidate = current / part
        try:
            info = os.lstat(candidate)
        except FileNotFoundError:
            if make_folders and n < len(parts) - 1:
                os.mkdir(candidate)
                info = os.lstat(candidate)
            else:
                current = candidate
                continue
        if stat.S_ISLNK(info.st_mode):
            target = Path(os.path.realpath(candidate))
            if not inside(target, base):
                raise Refused(f"{candidate} is a link to {target}, outside {base}; skillmill does not read or write "
                              "through it", hint="replace the link with a real folder or file, or choose another place")
            current = target
        elif n < len(parts) - 1 and not stat.S_ISDIR(info.st_mode):
            raise Refused(f"{candidate} is not a folder")
        else:
            current = candidate
    return current


def read(root: Path, path: Path | str, limit: int) -> bytes | None:
    """The first ``limit`` bytes of a regular file below ``root``; None when it is missing, not a regular
    file (a FIFO, a device, a folder), unreadable, or reached only through a link leading out of ``root``.

    Longer files are cut at ``limit`` (callers that must not see a cut file compare the length).
    """
    try:
        real = resolve(root, path)
        fd = os.open(real, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    except (OSError, Refused):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, left = [], limit
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_text(root: Path, path: Path | str, limit: int) -> str | None:
    """:func:`read`, decoded as UTF-8 (bad bytes replaced)."""
    data = read(root, path, limit)
    return None if data is None else data.decode("utf-8", errors="replace")


def write(root: Path, path: Path | str, data: bytes | str, *, mode: int = 0o666) -> Path:
    """Replace ``path`` below ``root`` with ``data``, never through a link leading out of ``root``; returns
    where it was written. ``mode`` is for a new file, less the umask (0o600: owner only)."""
    target = resolve(root, path, make_folders=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    folder = os.open(target.parent, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    try:
        temp = f".{target.name}.{secrets.token_hex(6)}{TEMP_SUFFIX}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, target.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=folder)
            raise
    finally:
        os.close(folder)
    return target


def tree(root: Path, path: Path | str, *, limit: int = 16 << 20) -> dict[str, bytes | Link] | None:
    """Every entry below the folder ``path``, hidden ones included: a file's bytes, or a :class:`Link` for a
    link (never followed; a FIFO, a device or a file over ``limit`` is ``Link('?')``). None when the folder
    is missing or is reached only through a link leading out of ``root``."""
    try:
        top = resolve(root, path)
        if not stat.S_ISDIR(os.lstat(top).st_mode):
            return None
    except (OSError, Refused):
        return None
    found: dict[str, bytes | Link] = {}

    def walk(folder: Path, prefix: str) -> None:
        with os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                rel = f"{prefix}{entry.name}"
                if entry.is_symlink():
                    found[rel] = Link(os.readlink(entry.path))
                elif entry.is_dir(follow_symlinks=False):
                    walk(Path(entry.path), rel + "/")
                elif entry.is_file(follow_symlinks=False):
                    data = read(top, rel, limit + 1)
                    found[rel] = Link("?") if data is None or len(data) > limit else data
                else:
                    found[rel] = Link("?")

    try:
        walk(top, "")
    except OSError:
        return None
    return found


def remove_tree(root: Path, path: Path | str) -> None:
    """Remove the folder ``path`` below ``root`` and all it holds, never following a link (a link
    itself is removed, not what it points to)."""
    import shutil

    target = resolve(root, path)
    info = os.lstat(target)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise Refused(f"{target} is not a folder")
    shutil.rmtree(target)  # the fd-based implementation on Linux: links inside are unlinked, not followed


def unlink(root: Path, path: Path | str) -> None:
    """Remove the file (or link) ``path`` below ``root``, if it is there."""
    target = resolve(root, Path(path).parent) / Path(path).name
    try:
        if stat.S_ISDIR(os.lstat(target).st_mode):
            raise Refused(f"{target} is a folder")
        os.unlink(target)
    except FileNotFoundError:
        pass
