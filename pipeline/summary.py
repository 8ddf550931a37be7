"""The run summary: what ``skillmill run --json`` prints last, and what ``runs`` stores."""

from __future__ import annotations

from pydantic import BaseModel, Field

from pipeline.ingest.report import FileReport

EXIT_OK = 0
EXIT_PARTIAL = 1
EXIT_USAGE = 2


class TrajectoryCounts(BaseModel):
    seen: int = 0
    new: int = 0
    failed: int = 0


class SkillCounts(BaseModel):
    proposed: int = 0
    updated: int = 0
    unchanged: int = 0


class LLMUsage(BaseModel):
    """Model calls of the run (all zero with the zero-LLM distiller). Contract: these four keys."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


class GroundingCounts(BaseModel):
    checked: int = Field(0, description="Commands, paths and error messages looked up in the trajectories.")
    removed: int = Field(0, description="Draft items removed because what they cite is not in the trajectory.")
    drafts_dropped: int = Field(0, description="Drafts dropped because they depended on removed items.")


class Distillation(BaseModel):
    """How this run distilled: which distiller, what the model path did and where it stopped."""

    distiller: str = "heuristic"
    model: str | None = None
    cached_requests: int = Field(0, description="Model answers taken from the cache instead of being paid again.")
    drafts: int = 0
    grounding: GroundingCounts = Field(default_factory=GroundingCounts)
    flagged: dict[str, list[str]] = Field(default_factory=dict, description="skill -> risk flags for review.")
    proposed_changes: list[str] = Field(default_factory=list,
                                        description="Approved skills with a change waiting in _proposed/.")
    stopped: str | None = Field(None, description="Why distillation stopped early (budget, model down).")
    left_for_next_run: int = Field(0, description="Trajectories not distilled; the next run picks them up.")
    notes: list[str] = Field(default_factory=list)


class FileCounts(BaseModel):
    seen: int = 0
    ok: int = 0
    partial: int = 0
    failed: int = 0
    skipped: int = 0


class RunError(BaseModel):
    path: str | None = None
    line: int | None = None
    reason: str


class NothingReusable(BaseModel):
    trajectory: str
    reason: str


class RunSummary(BaseModel):
    run_id: str = ""
    trajectories: TrajectoryCounts = Field(default_factory=TrajectoryCounts)
    skills: SkillCounts = Field(default_factory=SkillCounts)
    files: FileCounts = Field(default_factory=FileCounts)
    nothing_reusable: list[NothingReusable] = Field(default_factory=list)
    written: list[str] = Field(default_factory=list, description="Skills created or changed by this run.")
    unchanged: list[str] = Field(default_factory=list, description="Skills this run produced again, identical.")
    library: str = ""
    errors: list[RunError] = Field(default_factory=list)
    duration_s: float = 0.0
    llm: LLMUsage = Field(default_factory=LLMUsage)
    distillation: Distillation = Field(default_factory=Distillation)

    def add_file(self, report: FileReport) -> None:
        self.files.seen += 1
        setattr(self.files, report.status, getattr(self.files, report.status) + 1)
        if report.status in ("failed", "partial"):
            for error in report.errors:
                self.errors.append(RunError(path=report.path, line=error.line, reason=error.reason))
            if report.errors_dropped:
                self.errors.append(RunError(path=report.path, reason=f"... and {report.errors_dropped} more"))
        if report.status == "failed":
            self.trajectories.failed += 1

    @property
    def exit_code(self) -> int:
        return EXIT_PARTIAL if (self.files.failed or self.files.partial or self.trajectories.failed) else EXIT_OK

    def contract(self) -> dict:
        """The JSON line ``skillmill run --json`` ends with."""
        data = self.model_dump()
        data["exit_code"] = self.exit_code
        return data
