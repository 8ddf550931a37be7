"""A git checkout on disk: where its root is, and which repository it is (``owner/name`` of its remote).

One reader for every place that asks (the hook at each prompt, ``scan``, staleness, ``export``, the
distiller's repository of a session), and every read bounded through :mod:`pipeline.confined`:
``.git/config -> /dev/zero``, a FIFO or a 2 GB file costs nothing, and no link leads out of the checkout.
No git process is run (a checkout's own config could make git run its code: ``core.fsmonitor``).

Standard library only (and ``pipeline.confined``): the hook calls it at every prompt.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pipeline import confined

#: A git config larger than this is not read (real ones are a few KB).
MAX_CONFIG_BYTES = 256 * 1024
_SECTION = re.compile(r'^\s*\[\s*remote\s+"([^"]*)"\s*\]\s*$')
_URL = re.compile(r"^\s*url\s*=\s*(\S+)\s*$", re.I)


def root_of(folder: str | Path) -> Path | None:
    """The checkout ``folder`` is in (the nearest folder up holding ``.git``), wherever it is (``/tmp``
    included), or None when it is in none."""
    here = Path(os.path.abspath(Path(folder).expanduser()))
    for candidate in (here, *here.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return None


def config_text(root: Path) -> str | None:
    """The checkout's git config, bounded: ``.git/config``, or a worktree's (``.git`` is a file naming its git
    folder: ``gitdir: <path>``; its config is the main repository's)."""
    git = root / ".git"
    text = confined.read_text(root, ".git/config", MAX_CONFIG_BYTES)
    if text is not None:
        return text
    pointer = confined.read_text(root, ".git", 4096)
    if not pointer or not pointer.startswith("gitdir:"):
        return None
    gitdir = Path(pointer.split(":", 1)[1].strip())
    gitdir = gitdir if gitdir.is_absolute() else git.parent / gitdir
    main = Path(os.path.realpath(gitdir)).parent.parent  # <main>/.git/worktrees/<name>
    return confined.read_text(main, "config", MAX_CONFIG_BYTES)


def remote_url(text: str) -> str | None:
    """The URL of the ``origin`` remote of a git config, else of the first remote."""
    urls: dict[str, str] = {}
    current: str | None = None
    for line in text.splitlines():
        if line.lstrip().startswith("["):
            match = _SECTION.match(line)
            current = match.group(1) if match else None
            continue
        if current is not None and current not in urls and (url := _URL.match(line)):
            urls[current] = url.group(1)
    return urls.get("origin") or next(iter(urls.values()), None)


def owner_name(url: str) -> str | None:
    """``owner/name`` of a remote URL (``https://github.com/o/n.git``, ``git@host:o/n``, ``ssh://...``).

    Split by hand, not by a regular expression: a crafted URL in a checkout's config must not make the hook
    backtrack for minutes (a 256 KB ``a:b////...c`` did, with a lazy group before ``/*$``).
    """
    url = url.strip()
    if not url or len(url) > MAX_URL or any(c.isspace() for c in url):
        return None
    path = after_host(url)
    if path is None:
        return None
    parts = [p for p in path.split("/") if p]
    if len(parts) < 2:
        return None
    name = parts[-1].removesuffix(".git")
    return f"{parts[-2]}/{name}" if name else None


MAX_URL = 2048


def after_host(url: str) -> str | None:
    """What follows the host of a git URL: ``scheme://[user@]host[:port]/PATH`` or ``[user@]host:PATH``."""
    scheme, sep, rest = url.partition("://")
    if sep:
        if not scheme or not all(c.isalnum() or c in "+.-" for c in scheme):
            return None
        host, slash, path = rest.partition("/")
        return path if slash and host else None
    head, colon, path = url.partition(":")
    if not colon or "/" in head or not head.rpartition("@")[2]:
        return None
    return path


def remote(root: Path) -> str | None:
    """``owner/name`` of the checkout at ``root`` (its remote), or None when it has no remote."""
    text = config_text(root)
    url = remote_url(text) if text else None
    return owner_name(url) if url else None


def repo_of(folder: str | Path | None) -> str | None:
    """``owner/name`` of the checkout ``folder`` is in, else that checkout's folder name; None outside any."""
    if not folder:
        return None
    root = root_of(folder)
    if root is None:
        return None
    return remote(root) or root.name
