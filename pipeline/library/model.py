"""The Skill model: the one source of truth for what a skill holds.

A skill is written as ``<name>/SKILL.md`` (see ``markdown.py``) and read back into this
model losslessly; ``schemas/skill.schema.json`` is generated from it. Every procedure
step, pitfall and verification item carries ``evidence``: the trajectory steps it came from.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

NAME_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
MAX_NAME = 64
MAX_DESCRIPTION = 1024

SkillKind = Literal["procedure", "pitfall", "repo", "reference"]
SkillStatus = Literal["candidate", "approved", "deprecated", "rejected"]
#: Statuses an agent may be given. Everything else waits for a person.
SERVABLE: frozenset[str] = frozenset({"approved"})


def _one_line(text: str) -> str:
    # Single-line fields render as one Markdown line; "---" would end YAML frontmatter early.
    return re.sub(r"-{3,}", "\u2014", " ".join(text.split()))


#: A string kept on one line, so it renders and parses back identically.
Line = Annotated[str, AfterValidator(_one_line)]


class Evidence(BaseModel):
    """Steps of one trajectory an item was distilled from."""

    model_config = ConfigDict(extra="forbid")

    trajectory: str
    steps: list[int] = Field(default_factory=list)


class Item(BaseModel):
    """A procedure or verification step: what to do, and the command that does it."""

    model_config = ConfigDict(extra="forbid")

    text: Line
    command: str | None = None
    evidence: list[Evidence] = Field(default_factory=list)


class Pitfall(BaseModel):
    """An error met and what got past it: symptom -> (cause) -> fix."""

    model_config = ConfigDict(extra="forbid")

    symptom: Line
    cause: Line | None = None
    fix: Line
    command: str | None = None
    evidence: list[Evidence] = Field(default_factory=list)


class SourceRef(BaseModel):
    """A trajectory the skill was learned from."""

    model_config = ConfigDict(extra="forbid")

    trajectory: str
    agent: Line = ""
    outcome: Line = "unknown"
    task: Line = ""


class Skill(BaseModel):
    """An Agent Skill plus the provenance and review state skillmill keeps for it."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN, max_length=MAX_NAME)
    description: Line = Field(min_length=1, max_length=MAX_DESCRIPTION)
    title: Line = ""
    kind: SkillKind = "procedure"
    status: SkillStatus = "candidate"
    version: int = 1
    confidence: Annotated[float, AfterValidator(lambda v: round(v, 2))] = Field(0.5, ge=0, le=1)
    outcome: str = "unknown"
    repo: str | None = None
    generated: bool = Field(True, description="Written by skillmill (False for skills indexed from elsewhere).")
    sources: list[SourceRef] = Field(default_factory=list)
    procedure: list[Item] = Field(default_factory=list)
    pitfalls: list[Pitfall] = Field(default_factory=list)
    verification: list[Item] = Field(default_factory=list)
    notes: str = Field("", description="Free Markdown kept verbatim (hand edits, other sections).")
    license: str | None = None
    compatibility: str | None = None
    allowed_tools: str | None = None
    extra_metadata: dict[str, str] = Field(default_factory=dict,
                                           description="Frontmatter metadata keys skillmill does not own.")

    def trajectory_ids(self) -> list[str]:
        return [s.trajectory for s in self.sources]
