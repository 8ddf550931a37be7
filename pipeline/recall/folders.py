"""Agent Skills folders indexed from elsewhere: finding their SKILL.md files and what binds them.

A team's ``.claude/skills``, a shared library, another checkout: every ``SKILL.md`` below the
folder is a skill, keyed by its path (two folders may both hold a ``code-review``). They
count as approved: a team already uses them.
"""

from __future__ import annotations

import os
import re
from collections import namedtuple
from collections.abc import Iterator
from pathlib import Path

SKILL_FILE = "SKILL.md"
#: Never descend here: dependencies, VCS data, and skillmill's own review folders.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", "site-packages",
                       ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache"})
#: Hidden folders that hold agent skills and are worth entering.
AGENT_DIRS = frozenset({".claude", ".agents", ".codex", ".gemini", ".github", ".cursor", ".opencode"})
_REMOTE = re.compile(r"url\s*=\s*\S*?[:/]([\w.-]+)/([\w.-]+?)(?:\.git)?/?\s*$", re.M)


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
    """``owner/name`` from the checkout's git config (read directly: no git process), else its folder name."""
    if not cwd:
        return None
    here = Path(cwd)
    for folder in (here, *here.parents):
        git = folder / ".git"
        if git.is_dir() or git.is_file():
            config = git / "config"
            try:
                if git.is_file():  # a worktree: "gitdir: <path>"
                    gitdir = Path(git.read_text(encoding="utf-8").split(":", 1)[1].strip())
                    config = (folder / gitdir).resolve().parent.parent / "config"
                text = config.read_text(encoding="utf-8")
            except (OSError, IndexError):
                return folder.name
            section = text.split('[remote "origin"]', 1)
            match = _REMOTE.search(section[1].split("\n[", 1)[0]) if len(section) == 2 else None
            return f"{match.group(1)}/{match.group(2)}" if match else folder.name
    return None
