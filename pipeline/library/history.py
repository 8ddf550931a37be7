"""Every version of every skill, kept as a plain file so any of them can be restored.

``<library>/_history/<name>/v<N>.md`` holds the SKILL.md text of version N as it was first
written. The files are the record (like the skills themselves); nothing here needs the index.

One rule keeps versions meaningful: **a version number names exactly one content**. A review
decision (approve, reject, deprecate) changes a skill's status, not its content, so it keeps
its version; anything that changes the content gets a number never used before for that name
(see :meth:`History.settle`). Only skills skillmill writes (``generated``) have versions.
"""

from __future__ import annotations

import re
from pathlib import Path

from pipeline import atomic
from pipeline.errors import SkillFileError
from pipeline.library import markdown
from pipeline.library.model import Skill

HISTORY_DIR = "_history"
#: Frontmatter keys that record a review decision: they change with status, not with content.
REVIEW_KEYS = frozenset({"reviewed", "reopened"})
_VERSION_FILE = re.compile(r"^v(\d+)\.md$")


def same_content(a: Skill, b: Skill) -> bool:
    """Equal apart from review state (status, version and the review notes)."""

    def strip(skill: Skill) -> Skill:
        meta = {k: v for k, v in skill.extra_metadata.items() if k not in REVIEW_KEYS}
        return skill.model_copy(update={"status": "candidate", "version": 1, "extra_metadata": meta})

    return strip(a) == strip(b)


class History:
    def __init__(self, root: Path) -> None:
        self.root = root / HISTORY_DIR

    def folder(self, name: str) -> Path:
        return self.root / name

    def file(self, name: str, version: int) -> Path:
        return self.folder(name) / f"v{version}.md"

    def versions(self, name: str) -> list[int]:
        folder = self.folder(name)
        if not folder.is_dir():
            return []
        found = (_VERSION_FILE.match(p.name) for p in folder.iterdir())
        return sorted(int(m.group(1)) for m in found if m)

    def latest(self, name: str) -> int:
        versions = self.versions(name)
        return versions[-1] if versions else 0

    def text(self, name: str, version: int) -> str | None:
        file = self.file(name, version)
        return file.read_text(encoding="utf-8") if file.is_file() else None

    def read(self, name: str, version: int) -> Skill | None:
        text = self.text(name, version)
        if text is None:
            return None
        return markdown.parse(text, path=str(self.file(name, version)))

    def settle(self, skill: Skill, *, at_least: int = 1) -> Skill:
        """The skill with a version that names its content: its own when unused or same, else the next free one."""
        if not skill.generated:
            return skill
        version = max(skill.version, at_least)
        try:
            kept = self.read(skill.name, version)
            taken = kept is not None and not same_content(kept, skill)
        except SkillFileError:
            taken = True  # an unreadable snapshot still occupies its number
        if taken:
            version = max(self.latest(skill.name), version) + 1
        return skill if version == skill.version else skill.model_copy(update={"version": version})

    def keep(self, skill: Skill, text: str) -> bool:
        """Record ``text`` as the skill's current version unless that version is already recorded."""
        if not skill.generated:
            return False
        file = self.file(skill.name, skill.version)
        if file.is_file():
            return False
        atomic.write(file, text)
        return True
