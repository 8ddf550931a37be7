"""The canonical trajectory: every agent format is read into this one model.

A trajectory is an ordered list of steps (user message, assistant message, tool call,
tool result) plus what we know about the session around it. Tool results point back at
their call (``call_index``) and calls forward at their result (``result_index``).
``schemas/trajectory.schema.json`` is generated from these classes.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from enum import StrEnum
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

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


class Step(BaseModel):
    """One event of a trajectory."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(description="Position in the trajectory, from 0.")
    kind: StepKind
    timestamp: datetime | None = None
    text: str = Field("", description="Message text, tool input summary or tool output (truncated).")
    text_size: int = Field(0, description="Length in characters of the text before truncation.")
    tool: str | None = Field(None, description="Tool name as the agent called it (Bash, Edit, bash ...).")
    call_id: str | None = Field(None, description="The agent's id pairing a tool call with its result.")
    command: str | None = Field(None, description="Shell command, for tool calls that run one.")
    paths: list[str] = Field(default_factory=list, description="Files the step reads or writes.")
    diff: str | None = Field(None, description="Unified diff of an edit, where the format gives one.")
    exit_code: int | None = None
    is_error: bool | None = None
    call_index: int | None = Field(None, description="For a tool result: the index of its call.")
    result_index: int | None = Field(None, description="For a tool call: the index of its result.")
    sidechain: bool = Field(False, description="True for steps of a subagent inside the session.")
    meta: bool = Field(False, description="Injected context (system reminders, command wrappers), not a person.")


class Outcome(BaseModel):
    """Did the session achieve what was asked, and why we think so."""

    model_config = ConfigDict(extra="forbid")

    status: OutcomeStatus = "unknown"
    source: Literal["label", "heuristic", "none"] = "none"
    evidence: str = ""
    step: int | None = Field(None, description="The step the evidence points at, if any.")


class Trajectory(BaseModel):
    """One agent session, in canonical form."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field("", description="Content hash of the canonical form (see content_id).")
    source_format: str
    source_path: str = ""
    agent: str
    agent_version: str | None = None
    model: str | None = None
    session_id: str | None = None
    parent_session_id: str | None = None
    cwd: str | None = None
    repo: str | None = Field(None, description="Repository slug, e.g. django/django or the cwd's basename.")
    git_branch: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    task: str | None = Field(None, description="The first real user request.")
    steps: list[Step] = Field(default_factory=list)
    outcome: Outcome = Field(default_factory=Outcome)

    # -- derived views ------------------------------------------------------------------
    def tool_calls(self) -> list[Step]:
        return [s for s in self.steps if s.kind is StepKind.TOOL_CALL]

    def result_of(self, call: Step) -> Step | None:
        return self.steps[call.result_index] if call.result_index is not None else None

    def content_id(self) -> str:
        """sha256 over the canonical form, without the id itself and where the file lay.

        The same session copied to two places has the same id, so it is stored once.
        """
        data = self.model_dump(mode="json", exclude={"id", "source_path"})
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
