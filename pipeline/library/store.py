"""The skill library on disk: folders of ``<name>/SKILL.md``, the source of truth.

Layout, chosen so that an agent loading ``<library>/*/SKILL.md`` only ever sees approved
skills (underscored folders cannot be skill names)::

    <library>/<name>/SKILL.md              approved
    <library>/_candidates/<name>/SKILL.md  waiting for review
    <library>/_deprecated/<name>/SKILL.md
    <library>/_rejected/<name>/SKILL.md
    <library>/_proposed/<name>/SKILL.md    a proposed change to an approved skill

Writes are atomic: a new skill folder is assembled under a temporary name and renamed
into place; an existing SKILL.md is replaced with ``os.replace``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pipeline.errors import SkillFileError
from pipeline.library import markdown
from pipeline.library.model import Skill, SkillStatus

SKILL_FILE = "SKILL.md"
STATUS_DIRS: dict[str, str] = {
    "approved": "",
    "candidate": "_candidates",
    "deprecated": "_deprecated",
    "rejected": "_rejected",
}
#: Proposed changes to an approved skill wait here for review (never loaded by agents).
PROPOSED_DIR = "_proposed"
SaveResult = Literal["created", "updated", "unchanged"]


@dataclass(frozen=True)
class StoredSkill:
    skill: Skill
    path: Path  # the skill folder

    @property
    def file(self) -> Path:
        return self.path / SKILL_FILE


class Library:
    def __init__(self, root: Path) -> None:
        self.root = Path(root).expanduser().absolute()  # paths in the index must not depend on the cwd

    def folder(self, name: str, status: SkillStatus) -> Path:
        sub = STATUS_DIRS[status]
        return (self.root / sub / name) if sub else (self.root / name)

    def __iter__(self) -> Iterator[StoredSkill]:
        """Every skill, approved first, in name order. Unreadable files raise SkillFileError."""
        return self.entries()

    def entries(self, on_error: Callable[[Path, SkillFileError], None] | None = None) -> Iterator[StoredSkill]:
        """Every skill; with ``on_error``, a file that does not parse is reported there and skipped."""
        for status, sub in STATUS_DIRS.items():
            base = self.root / sub if sub else self.root
            if not base.is_dir():
                continue
            for folder in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
                file = folder / SKILL_FILE
                if not file.is_file():
                    continue
                try:
                    skill = read_skill(file)
                except SkillFileError as exc:
                    if on_error is None:
                        raise
                    on_error(file, exc)
                    continue
                if skill.generated and skill.status != status:
                    skill = skill.model_copy(update={"status": status})  # the folder is the truth
                yield StoredSkill(skill, folder)

    def get(self, name: str) -> StoredSkill | None:
        for status in STATUS_DIRS:
            file = self.folder(name, status) / SKILL_FILE  # type: ignore[arg-type]
            if file.is_file():
                return StoredSkill(read_skill(file), file.parent)
        return None

    def save(self, skill: Skill) -> SaveResult:
        """Write the skill where its status says; move it if its status changed."""
        target = self.folder(skill.name, skill.status)
        text = _redacted(markdown.render(skill))
        existing = self.get(skill.name)
        if existing and existing.path != target:
            _atomic_move(existing.path, target)
        file = target / SKILL_FILE
        if file.is_file():
            if file.read_text(encoding="utf-8") == text:
                return "unchanged"
            atomic_write(file, text)
            return "updated"
        _atomic_new_folder(target, text)
        return "created" if existing is None else "updated"

    def propose(self, skill: Skill) -> Path:
        """Stage a change to an approved skill for review; the approved file is not touched."""
        target = self.root / PROPOSED_DIR / skill.name
        text = _redacted(markdown.render(skill))
        if (target / SKILL_FILE).is_file():
            atomic_write(target / SKILL_FILE, text)
        else:
            _atomic_new_folder(target, text)
        return target

    def proposal(self, name: str) -> StoredSkill | None:
        file = self.root / PROPOSED_DIR / name / SKILL_FILE
        return StoredSkill(read_skill(file), file.parent) if file.is_file() else None

    def remove(self, name: str) -> bool:
        existing = self.get(name)
        if existing is None:
            return False
        shutil.rmtree(existing.path)
        return True


def _redacted(text: str) -> str:
    """Skill files are shared with a team: the last check before one is written.

    Drafts come from redacted trajectories, so this finds nothing unless a distiller (an LLM)
    made up something key-shaped -- which is then written as a placeholder too.
    """
    from pipeline.redact import redact

    return redact(text)


def read_skill(file: Path) -> Skill:
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillFileError(f"cannot read {file}: {exc}", path=str(file)) from exc
    return markdown.parse(text, path=str(file))


def atomic_write(file: Path, text: str) -> None:
    file.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{file.name}.", suffix=".tmp", dir=file.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, file)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _atomic_new_folder(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        atomic_write(staging / SKILL_FILE, text)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _atomic_move(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        shutil.rmtree(target)
    os.rename(source, target)
