"""What ingesting one file produced: the ``skillmill ingest --json`` contract."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from pipeline.redact import Sanitized, sanitize
from pipeline.trajectory import StepKind, Trajectory

#: Errors kept per file; the rest are counted, so a broken 1 GB file cannot flood memory.
MAX_ERRORS_KEPT = 50

FileStatus = Literal["ok", "partial", "failed", "skipped"]


class LineError(BaseModel):
    line: int | None = None
    #: Parsers quote file content in reasons (a bad value, an exception message): redacted too.
    reason: Sanitized


class TrajectorySummary(BaseModel):
    id: str
    task: Sanitized | None
    steps: int
    tool_calls: int
    outcome: str

    @classmethod
    def of(cls, trajectory: Trajectory) -> TrajectorySummary:
        task = sanitize(trajectory.task, then=_first_line) if trajectory.task else None
        return cls(id=trajectory.id, task=task, steps=len(trajectory.steps),
                   tool_calls=sum(1 for s in trajectory.steps if s.kind is StepKind.TOOL_CALL),
                   outcome=trajectory.outcome.status)


def _first_line(text: str) -> str:
    return text.splitlines()[0][:200]


class FileReport(BaseModel):
    path: str
    format: str | None = None
    status: FileStatus = "ok"
    errors: list[LineError] = Field(default_factory=list)
    errors_dropped: int = Field(0, description="Errors beyond the ones kept.")
    trajectories: list[TrajectorySummary] = Field(default_factory=list)

    def error(self, reason: str, line: int | None = None) -> None:
        """Record a problem in the file; valid content around it is still used."""
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(LineError(line=line, reason=reason))
        else:
            self.errors_dropped += 1

    def finish(self, trajectories: list[Trajectory]) -> FileReport:
        self.trajectories = [TrajectorySummary.of(t) for t in trajectories]
        if self.status == "skipped":
            return self
        if not trajectories:
            self.status = "failed"
            if not self.errors:
                self.error("no trajectory found in the file")
        elif self.errors:
            self.status = "partial"
        return self

    def contract(self) -> dict:
        """The JSON object ``skillmill ingest --json`` prints for this file."""
        return self.model_dump(include={"path", "format", "status", "errors", "trajectories"})
