"""The Skill model: the one source of truth for what a skill holds.

A skill is written as ``<name>/SKILL.md`` (see ``markdown.py``) and read back into this
model losslessly; ``schemas/skill.schema.json`` is generated from it. Every procedure
step, pitfall and verification item carries ``evidence``: the trajectory steps it came from.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from pipeline.library import clean

NAME_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
MAX_NAME = 64
MAX_DESCRIPTION = 1024

SkillKind = Literal["procedure", "pitfall", "repo", "reference"]
SkillStatus = Literal["candidate", "approved", "deprecated", "rejected"]
#: Frontmatter ``metadata`` keys skillmill writes from the model's own fields.
OWNED_METADATA = ("generator", "status", "kind", "version", "confidence", "outcome", "repo", "sources")
#: Statuses an agent may be given. Everything else waits for a person.
SERVABLE: frozenset[str] = frozenset({"approved"})


def _text(cleaner: Callable[[str], Any]) -> BeforeValidator:
    """Clean a string before pydantic sees it (a lone surrogate would not even validate as ``str``)."""
    return BeforeValidator(lambda value: cleaner(value) if isinstance(value, str) else value)


#: A string kept on one line, so it renders and parses back identically (``clean.one_line``).
Line = Annotated[str, _text(clean.one_line)]
#: A command: several lines allowed, control characters made visible; blank means none.
Command = Annotated[str | None, _text(lambda v: clean.multi_line(v) if v.strip() else None)]
#: A trajectory id, written bare in provenance comments and the Sources list.
Ref = Annotated[str, _text(lambda v: clean.token(v, "unknown"))]
#: What an item cites: a trajectory id, or a file of the repository a scan read (``Makefile``,
#: ``.github/workflows/ci.yml``), with step or line numbers after it.
Cite = Annotated[str, _text(lambda v: re.sub(r"(?:[^\w./-]|-)+", "-", v) or "unknown")]
#: A word (an outcome in the Sources list).
Word = Annotated[str, _text(lambda v: clean.token(v, "unknown").replace("-", "_"))]
#: Free Markdown; skills skillmill writes get more (``Skill._clean``).
Markdown = Annotated[str, _text(lambda v: clean.multi_line(v).strip("\n"))]


def _metadata(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    cleaned = {clean.one_line(k) if isinstance(k, str) else k: clean.one_line(v) if isinstance(v, str) else v
               for k, v in value.items()}
    return {k: v for k, v in cleaned.items() if k != ""}


class Evidence(BaseModel):
    """Steps of one trajectory an item was distilled from, or lines of a file a scan read it from
    (``trajectory`` is then the file's path in the checkout: see :func:`is_file_ref`)."""

    model_config = ConfigDict(extra="forbid")

    trajectory: Cite
    steps: list[Annotated[int, Field(ge=0)]] = Field(default_factory=list)


class Item(BaseModel):
    """A procedure or verification step: what to do, and the command that does it."""

    model_config = ConfigDict(extra="forbid")

    text: Line
    command: Command = None
    evidence: list[Evidence] = Field(default_factory=list)


class Pitfall(BaseModel):
    """An error met and what got past it: symptom -> (cause) -> fix."""

    model_config = ConfigDict(extra="forbid")

    symptom: Line
    cause: Annotated[Line | None, AfterValidator(lambda v: v or None)] = None
    fix: Line
    command: Command = None
    evidence: list[Evidence] = Field(default_factory=list)


class SourceRef(BaseModel):
    """A trajectory the skill was learned from."""

    model_config = ConfigDict(extra="forbid")

    trajectory: Ref
    agent: Annotated[Line, _text(lambda v: v.replace(",", ";"))] = ""
    outcome: Word = "unknown"
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
    outcome: Line = "unknown"
    repo: Annotated[Line | None, AfterValidator(lambda v: v or None)] = None
    generated: bool = Field(True, description="Written by skillmill (False for skills indexed from elsewhere).")
    sources: list[SourceRef] = Field(default_factory=list)
    procedure: list[Item] = Field(default_factory=list)
    pitfalls: list[Pitfall] = Field(default_factory=list)
    verification: list[Item] = Field(default_factory=list)
    notes: Markdown = Field("", description="Free Markdown kept verbatim (hand edits, other sections).")
    license: Line | None = None
    compatibility: Line | None = None
    allowed_tools: Line | None = None
    extra_metadata: Annotated[dict[str, str], BeforeValidator(_metadata)] = Field(default_factory=dict,
                                           description="Frontmatter metadata keys skillmill does not own.")

    @model_validator(mode="after")
    def _clean(self) -> Skill:
        """What only a skill skillmill writes needs: notes that open no section, metadata it does not own."""
        notes = clean.markdown_block(self.notes) if self.generated else self.notes
        meta = {k: v for k, v in self.extra_metadata.items() if not (self.generated and k in OWNED_METADATA)}
        if notes != self.notes:
            object.__setattr__(self, "notes", notes)
        if meta != self.extra_metadata:
            object.__setattr__(self, "extra_metadata", meta)
        return self

    def trajectory_ids(self) -> list[str]:
        """The source sessions (a scan's file citations are not sessions)."""
        return [s.trajectory for s in self.sources]


def is_file_ref(ref: str) -> bool:
    """Whether an evidence reference names a file of the checkout (``Makefile``, ``tox.ini``) rather
    than a trajectory (16 hex digits, or a word with no dot or slash in a hand-written skill)."""
    return "." in ref or "/" in ref or ref in FILE_NAMES


#: Files a scan cites whose names have neither a dot nor a slash.
FILE_NAMES = frozenset({"Makefile", "makefile", "GNUmakefile", "justfile", "Justfile", "Dockerfile", "README"})
