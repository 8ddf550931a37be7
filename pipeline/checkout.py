"""A git checkout on disk: where its root is, and which repository it is (``owner/name`` of its remote).

One reader for every place that asks (the hook at each prompt, ``scan``, staleness, ``export``, the
distiller's repository of a session), and every read bounded through :mod:`pipeline.confined`:
``.git/config -> /dev/zero``, a FIFO or a 2 GB file costs nothing, and no link leads out of the checkout.
No git process is run on the checkout's own git folder (its config could make git run its code: a
``filter`` driver, ``core.fsmonitor``, an include, a worktree config); ``status`` runs git on a git folder of
its own that links the checkout's objects, refs and index beside a config skillmill wrote.

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
    included), or None when it is in none -- or when that ``.git`` belongs to another account: as git's own
    ``safe.directory`` rule, a ``/tmp/.git`` another user planted does not make every folder under ``/tmp`` a
    checkout whose remote picks the skills served, whose files mark them stale and where briefs are filed.
    (Root is trusted with any: a container's agent runs as root in a checkout mounted from the host.)"""
    here = Path(os.path.abspath(Path(folder).expanduser()))
    for candidate in (here, *here.parents):
        try:
            owner = os.lstat(candidate / ".git").st_uid
        except OSError:
            continue
        mine = not hasattr(os, "getuid") or os.getuid() in (0, owner)
        return candidate if mine else None
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


def same_repository(a: str | None, b: str | None) -> bool:
    """Whether two repository names are one: ``owner/name`` both, the same (any case); a bare ``name`` (a
    checkout's folder, a session that recorded only that) against either, the same name. ``evil/hang`` is not
    ``acme/hang``: a checkout whose remote names another owner is another repository."""
    if not a or not b:
        return False
    a, b = a.strip().lower().rstrip("/"), b.strip().lower().rstrip("/")
    if "/" in a and "/" in b:
        return a == b
    return a.rsplit("/", 1)[-1] == b.rsplit("/", 1)[-1]


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


# -- git status, with none of the checkout's configuration ------------------------------------------
#: What of a checkout's ``.git`` folder ``git status`` reads and none of which names a program to run.
#: Its config (filters, fsmonitor, includes, hooksPath, worktree configs), hooks and a linked
#: worktree's ``commondir`` are not among them: git is run on a git folder of our own that links
#: these and holds a config we wrote.
_GIT_ENTRIES = ("objects", "refs", "packed-refs", "index", "shallow", "info")
#: What HEAD may hold: a branch it names, or a commit (git refuses a HEAD that is a link out of its folder,
#: so it is copied, not linked).
_HEAD = re.compile(r"(?:ref: refs/[\w./-]{1,200}|[0-9a-f]{40}|[0-9a-f]{64})\n?")
_FORMATS = {"sha1", "sha256"}
_EXTENSION = re.compile(r"^\s*\[\s*extensions\s*\]\s*$", re.I)
_OBJECT_FORMAT = re.compile(r"^\s*objectformat\s*=\s*(\w+)\s*$", re.I)


def status(root: Path, files: list[str], timeout: float = 1.0) -> dict[str, str] | None:
    """``file -> "uncommitted" | "committed"`` for files of the checkout at ``root``, or None when it cannot be
    told safely: ``.git`` not a plain folder (a link, a worktree's ``gitdir:`` file, a ``commondir``),
    repository extensions other than the object format, git absent, slow or failing.

    git runs with a git folder made for the call: links to the entries of ``_GIT_ENTRIES`` and a config
    of two lines, no system, global or checkout configuration, no optional locks, ``HOME`` an empty
    folder, no ``GIT_*`` of the caller's. A ``.gitattributes`` naming a filter or a diff driver then
    names one git does not have, so nothing of the checkout's runs (tests/test_handoff.py plants each
    way a config could run a program)."""
    import shutil
    import subprocess
    import tempfile

    git = root / ".git"
    try:
        if not files or not git.is_dir() or git.is_symlink() or os.path.lexists(git / "commondir"):
            return None
    except OSError:
        return None
    object_format = _object_format(config_text(root) or "")
    executable = shutil.which("git")
    if object_format is None or executable is None:
        return None
    head = confined.read_text(root, ".git/HEAD", 512)
    if head is None or not _HEAD.fullmatch(head):
        return None
    with tempfile.TemporaryDirectory(prefix="skillmill-git-") as scratch:
        own = Path(scratch) / "git"
        own.mkdir()
        (own / "HEAD").write_text(head)
        for entry in _GIT_ENTRIES:
            if os.path.lexists(git / entry):
                os.symlink(git / entry, own / entry)
        for entry in os.listdir(git):
            if entry.startswith("sharedindex."):  # a split index's shared part
                os.symlink(git / entry, own / entry)
        version = 1 if object_format != "sha1" else 0
        extensions = f"[extensions]\n\tobjectformat = {object_format}\n" if version else ""
        (own / "config").write_text(f"[core]\n\trepositoryformatversion = {version}\n\tbare = false\n{extensions}")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": scratch, "XDG_CONFIG_HOME": scratch,
               "LANG": "C", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_ATTR_NOSYSTEM": "1",
               "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_NO_REPLACE_OBJECTS": "1"}
        argv = [executable, f"--git-dir={own}", f"--work-tree={root}", "-c", "core.fsmonitor=false",
                "-c", "core.untrackedCache=false", "-c", f"core.hooksPath={os.devnull}", "-c", "core.quotePath=false",
                "-c", "diff.ignoreSubmodules=all", "-c", "submodule.recurse=false",
                # a submodule is checked by a git started inside it, which reads the submodule's own config
                "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=all",
                "--", *files[:50]]
        try:
            done = subprocess.run(argv, cwd=root, env=env, capture_output=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            return None
    if done.returncode != 0:
        return None
    dirty = {entry[3:] for entry in done.stdout.decode("utf-8", "replace").split("\0") if len(entry) > 3}
    return {f: ("uncommitted" if f in dirty else "committed") for f in files}


def _object_format(config: str) -> str | None:
    """The repository's object format from its config (``sha1`` when it names none), None for one we do not know.
    Any other extension (partial clone, reftable, worktree config ...) makes the git folder one we do not copy."""
    in_extensions, found = False, "sha1"
    for line in config.splitlines():
        line = line.lstrip("\ufeff")
        if line.strip().startswith("["):
            in_extensions = bool(_EXTENSION.match(line))
            continue
        if in_extensions and line.strip() and not line.strip().startswith(("#", ";")):
            match = _OBJECT_FORMAT.match(line)
            if match is None or match.group(1).lower() not in _FORMATS:
                return None
            found = match.group(1).lower()
    return found
