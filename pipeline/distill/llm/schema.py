"""The answers a model must give, as pydantic models (instructor validates and re-asks).

Field descriptions are part of the prompt (instructor puts the JSON schema in it): they are
short on purpose, since every byte is paid for on every request.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator
from typing_extensions import TypeAliasType


def _compact(node: Any) -> Any:
    """A JSON schema without titles and defaults, ``anyOf [T, null]`` as ``type: [T, null]``.

    instructor puts ``model_json_schema()`` (indented) into every prompt; this keeps the
    meaning (types, required fields, descriptions) at about half the bytes.
    """
    if isinstance(node, list):
        return [_compact(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("title", "default"):
            continue
        if key == "properties":
            out[key] = {name: _compact(schema) for name, schema in value.items()}
        else:
            out[key] = _compact(value)
    options = out.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        other = next(o for o in options if o != {"type": "null"})
        if set(other) == {"type"} and isinstance(other["type"], str):
            out.pop("anyOf")
            out["type"] = [other["type"], "null"]
    return out


class _Answer(BaseModel):
    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return _compact(super().model_json_schema(*args, **kwargs))


#: Defined once and referred to by every field that cites steps (each copy costs ~100 bytes of indented JSON).
Steps = TypeAliasType("Steps", Annotated[list[int], Field(description="Transcript step numbers [N] it comes from")])


class StepDraft(_Answer):
    text: str = Field(description="What to do, in general words")
    command: str | None = None
    files: list[str] = Field(default_factory=list, description="Files involved")
    steps: Steps = Field(default_factory=list)


class PitfallDraft(_Answer):
    symptom: str = Field(description="What went wrong, as the next agent would notice it")
    error: str | None = None
    cause: str | None = None
    fix: str = Field(description="What got past it")
    command: str | None = Field(None, description="The command that fixed it")
    files: list[str] = Field(default_factory=list)
    steps: Steps = Field(default_factory=list)


class AttemptDraft(_Answer):
    approach: str = Field(description="An approach that was tried and did not work")
    why: str = Field(description="Why it did not work")
    steps: Steps = Field(default_factory=list)


class SkillDraft(_Answer):
    name: str = Field(description="kebab-case, at most 6 words")
    kind: Literal["procedure", "pitfall"]
    title: str
    when_to_use: str = Field(description="One sentence starting with 'Use when'")
    procedure: list[StepDraft] = Field(default_factory=list)
    pitfalls: list[PitfallDraft] = Field(default_factory=list)
    verification: list[StepDraft] = Field(default_factory=list, description="The check that proved it worked")
    did_not_work: list[AttemptDraft] = Field(default_factory=list)

    @model_validator(mode="after")
    def _has_content(self) -> SkillDraft:
        if not (self.procedure or self.pitfalls or self.verification or self.did_not_work):
            raise ValueError(f"draft {self.name!r} is empty: give procedure steps, pitfalls, verification "
                             "or approaches that did not work")
        return self


class CorrectionNote(_Answer):
    quote: str
    step: int | None = None


class FixNote(_Answer):
    error: str
    command: str = Field(description="What got past it")
    steps: Steps = Field(default_factory=list)


class CommandNote(_Answer):
    purpose: Literal["test", "build", "lint", "install"]
    command: str
    steps: Steps = Field(default_factory=list)


class Extraction(_Answer):
    """Zero or more drafts, or why nothing in the transcript is reusable."""

    drafts: list[SkillDraft] = Field(default_factory=list)
    nothing_reusable: str | None = Field(None, description="Why nothing would help a future task (no drafts)")
    # Notes for the repository's manual (``working-in-<repo>``), with or without drafts; what they are is
    # said once, in the system prompt (a description here would be sent again in every schema).
    corrections: list[CorrectionNote] = Field(default_factory=list)
    fixes: list[FixNote] = Field(default_factory=list)
    commands: list[CommandNote] = Field(default_factory=list)

    @property
    def notes(self) -> int:
        """How many notes for the repository's manual the answer holds."""
        return len(self.corrections) + len(self.fixes) + len(self.commands)

    @model_validator(mode="after")
    def _one_answer(self) -> Extraction:
        if not self.drafts and not self.notes and not (self.nothing_reusable or "").strip():
            raise ValueError("give at least one draft or note, or set nothing_reusable to the reason there is none")
        return self


class Decision(_Answer):
    """Where a draft goes in the library."""

    action: Literal["new", "update", "duplicate"]
    target: str | None = Field(None, description="Name of the existing skill (update / duplicate)")
    add_procedure: list[int] = Field(default_factory=list, description="Draft procedure numbers to add")
    add_pitfalls: list[int] = Field(default_factory=list, description="Draft pitfall numbers to add")
    add_verification: list[int] = Field(default_factory=list, description="Draft verification numbers to add")
    reason: str = ""

    @field_validator("target")
    @classmethod
    def _known(cls, value: str | None, info: ValidationInfo) -> str | None:
        names = (info.context or {}).get("candidates")
        if value is not None and names is not None and value not in names:
            raise ValueError(f"target must be one of {sorted(names)}")
        return value

    @model_validator(mode="after")
    def _target_given(self, info: ValidationInfo) -> Decision:
        if self.action != "new" and not self.target:
            raise ValueError(f"action {self.action!r} needs the target skill's name")
        sizes = (info.context or {}).get("sizes", {})
        for field_name in ("add_procedure", "add_pitfalls", "add_verification"):
            size = sizes.get(field_name)
            wrong = [i for i in getattr(self, field_name) if size is not None and not 0 <= i < size]
            if wrong:
                raise ValueError(f"{field_name} has numbers outside the draft: {wrong}")
        return self
