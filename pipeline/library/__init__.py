"""The skill library: the Skill model, SKILL.md files, and the folder that holds them."""

from pipeline.library.model import Evidence, Item, Pitfall, Skill, SourceRef
from pipeline.library.store import Library, StoredSkill

__all__ = ["Evidence", "Item", "Library", "Pitfall", "Skill", "SourceRef", "StoredSkill"]
