"""The canonical trajectory: every agent format is read into this one model.

A trajectory is an ordered list of steps (user message, assistant message, tool call,
tool result) plus what we know about the session around it. Tool results point back at
their call (``call_index``) and calls forward at their result (``result_index``).
``schemas/trajectory.schema.json`` is generated from these classes.

Every text a session carries can hold a secret, so the text fields are :class:`Sanitized`:
the builder fills them with redacted text, and anything else put into them (construction,
assignment, ``model_copy(update=...)``, a JSON read-back) is redacted on the way in.
``redactions`` records what was replaced -- kind, count, step and field, never the value.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, Self, cast

import orjson
from pydantic import BaseModel, ConfigDict, Field, ModelWrapValidatorHandler, model_validator

from pipeline.redact.sanitized import EMPTY, Sanitized, collect

#: Text longer than this is cut to head + tail; ``text_size`` keeps the original length.
MAX_STEP_TEXT = 6000
_HEAD = 4000
_TAIL = MAX_STEP_TEXT - _HEAD


class StepKind(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"


OutcomeStatus = Literal["resolved", "failed", "unknown"]


class _Sanitizing(BaseModel):
    """Validation of assignments and of ``model_copy(update=...)`` too: no plain text slips in."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        copy = super().model_copy(deep=deep)
        for key, value in (update or {}).items():
            setattr(copy, key, value)
        return copy


class Step(_Sanitizing):
    """One event of a trajectory."""

    index: int = Field(description="Position in the trajectory, from 0.")
    kind: StepKind
    timestamp: datetime | None = None
    text: Sanitized = Field(EMPTY, description="Message text, tool input summary or tool output (truncated).")
    text_size: int = Field(0, description="Length in characters of the text before truncation.")
    tool: Sanitized | None = Field(None, description="Tool name as the agent called it (Bash, Edit, bash ...).")
    call_id: Sanitized | None = Field(None, description="The agent's id pairing a tool call with its result.")
    command: Sanitized | None = Field(None, description="Shell command, for tool calls that run one.")
    paths: list[Sanitized] = Field(default_factory=list, description="Files the step reads or writes.")
    diff: Sanitized | None = Field(None, description="Unified diff of an edit, where the format gives one.")
    exit_code: int | None = None
    is_error: bool | None = None
    call_index: int | None = Field(None, description="For a tool result: the index of its call.")
    result_index: int | None = Field(None, description="For a tool call: the index of its result.")
    sidechain: bool = Field(False, description="True for steps of a subagent inside the session.")
    meta: bool = Field(False, description="Injected context (system reminders, command wrappers), not a person.")
    protocol_error: bool = Field(False, description="For a tool result: the agent's harness refused the call "
                                 "(a malformed edit, a file not read first ...), not the project failing. "
                                 "Set by the format that knows its harness; never a lesson.")


class Redaction(BaseModel):
    """What was redacted where: never the value."""

    model_config = ConfigDict(extra="forbid")

    step: int | None = Field(None, description="The step's index; None for a header field (task, cwd ...).")
    field: str = Field(description="text, command, paths, diff, tool, task, cwd ...")
    kind: str = Field(description="Detector kind, as in the placeholder [REDACTED:<kind>].")
    count: int = 1


class Outcome(_Sanitizing):
    """Did the session achieve what was asked, and why we think so."""

    status: OutcomeStatus = "unknown"
    source: Literal["label", "heuristic", "none"] = "none"
    evidence: Sanitized = EMPTY
    step: int | None = Field(None, description="The step the evidence points at, if any.")


class Trajectory(_Sanitizing):
    """One agent session, in canonical form."""

    id: str = Field("", description="Content hash of the canonical form (see content_id).")
    source_format: str
    source_path: Sanitized = EMPTY
    agent: Sanitized
    agent_version: Sanitized | None = None
    model: Sanitized | None = None
    session_id: Sanitized | None = None
    parent_session_id: Sanitized | None = None
    cwd: Sanitized | None = None
    repo: Sanitized | None = Field(None, description="Repository slug, e.g. django/django or the cwd's basename.")
    git_branch: Sanitized | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    task: Sanitized | None = Field(None, description="The first real user request.")
    steps: list[Step] = Field(default_factory=list)
    outcome: Outcome = Field(default_factory=Outcome)
    redactions: list[Redaction] = Field(default_factory=list, description="What was redacted (kinds, counts).")

    @model_validator(mode="wrap")
    @classmethod
    def _record_redactions(cls, data: Any, handler: ModelWrapValidatorHandler[Trajectory]) -> Trajectory:
        """Values redacted while validating (plain text put in from outside the builder) are recorded."""
        validated, found = collect(lambda: handler(data))
        trajectory = cast(Trajectory, validated)
        for where, kind, count in found:
            step, _, name = where.rpartition(":")
            trajectory.redactions.append(Redaction(step=int(step) if step else None, field=name, kind=kind,
                                                   count=count))
        return trajectory

    def redaction_counts(self, *, include_task: bool = False) -> dict[str, int]:
        """Values replaced, by kind. ``task`` repeats a user step's text, so it is left out by default."""
        counts: dict[str, int] = {}
        for r in self.redactions:
            if include_task or r.field != "task":
                counts[r.kind] = counts.get(r.kind, 0) + r.count
        return counts

    # -- derived views ------------------------------------------------------------------
    def tool_calls(self) -> list[Step]:
        return [s for s in self.steps if s.kind is StepKind.TOOL_CALL]

    def result_of(self, call: Step) -> Step | None:
        return self.steps[call.result_index] if call.result_index is not None else None

    def content_id(self) -> str:
        """sha256 over the canonical form, without the id itself and where the file lay.

        The same session copied to two places has the same id, so it is stored once.
        ``redactions`` is left out: the redacted text already differs wherever it matters.
        """
        # protocol_error is read off the text by the format: deriving it better changes no session.
        data = self.model_dump(mode="json", exclude={"id": True, "source_path": True, "redactions": True,
                                                     "steps": {"__all__": {"protocol_error"}}})
        digest = hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()
        return digest[:16]

    def with_id(self) -> Trajectory:
        self.id = self.content_id()
        return self


def clip(text: str) -> tuple[str, int]:
    """Cut long text to head and tail around a marker; return it with the original length."""
    size = len(text)
    if size <= MAX_STEP_TEXT:
        return text, size
    cut = size - _HEAD - _TAIL
    return f"{text[:_HEAD]}\n[... {cut} characters elided ...]\n{text[-_TAIL:]}", size
