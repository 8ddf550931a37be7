"""Agent Skills folders indexed from elsewhere: finding their SKILL.md files and what binds them.

A team's ``.claude/skills``, a shared library, another checkout: every ``SKILL.md`` below the
folder is a skill, keyed by its path (two folders may both hold a ``code-review``). They
count as approved: a team already uses them.
"""

from __future__ import annotations

import os
from collections import namedtuple
from collections.abc import Iterator
from pathlib import Path

from pipeline import checkout

SKILL_FILE = "SKILL.md"
#: Never descend here: dependencies, VCS data, and skillmill's own review folders.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", "site-packages",
                       ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache"})
#: Hidden folders that hold agent skills and are worth entering.
AGENT_DIRS = frozenset({".claude", ".agents", ".codex", ".gemini", ".github", ".cursor", ".opencode"})
#: A SKILL.md found, with what decides whether to read it again (a named tuple: ``repo_of`` below
#: is on the hook path, where importing ``dataclasses`` costs milliseconds).
FoundFile = namedtuple("FoundFile", "file size mtime_ns")


def find_skill_files(root: Path) -> Iterator[FoundFile]:
    """Every SKILL.md below ``root`` (and ``root/SKILL.md``), in path order, symlinks followed once."""
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:  # a symlink cycle, or the same folder linked twice
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames[:] = sorted(d for d in dirnames if _enter(d))
        if SKILL_FILE in filenames:
            file = Path(dirpath) / SKILL_FILE
            try:
                st = file.stat()
            except OSError:
                continue
            yield FoundFile(file, st.st_size, st.st_mtime_ns)


def _enter(name: str) -> bool:
    if name in SKIP_DIRS or name.startswith("_"):
        return False
    return not name.startswith(".") or name in AGENT_DIRS


def sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def project_repo(folder: Path) -> str | None:
    """``owner/name`` of the git checkout a project-local skills folder belongs to.

    Only folders inside an agent's project folder (``<repo>/.claude/skills`` ...) are bound to
    a repository; a shared skills library is for every repository.
    """
    parts = folder.absolute().parts
    try:
        anchor = max(i for i, p in enumerate(parts) if p in AGENT_DIRS)
    except ValueError:
        return None
    return repo_of(str(Path(*parts[:anchor])))


def repo_of(cwd: str | None) -> str | None:
    """``owner/name`` from the checkout's git config (read directly, bounded: no git process), else its folder
    name (:func:`pipeline.checkout.repo_of`)."""
    return checkout.repo_of(cwd)
