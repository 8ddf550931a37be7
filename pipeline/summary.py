"""The run summary: what ``skillmill run --json`` prints last, and what ``runs`` stores."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from pipeline.ingest.report import FileReport
from pipeline.redact import Sanitized
from pipeline.trajectory import Trajectory

if TYPE_CHECKING:
    from pipeline.ingest.watermark import Reading

EXIT_OK = 0
EXIT_PARTIAL = 1
EXIT_USAGE = 2


class TrajectoryCounts(BaseModel):
    seen: int = 0
    new: int = 0
    failed: int = 0
    deferred: int = Field(0, description="Sessions still being written: not read now, the next run reads them.")


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
    unchanged: int = Field(0, description="Not opened: same size and mtime as when a run last read them.")


class RunError(BaseModel):
    path: Sanitized | None = None
    line: int | None = None
    reason: Sanitized  # error messages can quote what they choked on


class Deferred(BaseModel):
    path: str
    modified_s_ago: float


class Increments(BaseModel):
    """How files changed since the last run read them (``pipeline.ingest.watermark``)."""

    new: int = 0
    appended: int = Field(0, description="Grown files of which only the new bytes were parsed.")
    reread: int = Field(0, description="Changed files read whole (rewritten, or a format that cannot resume).")
    superseded: int = Field(0, description="Stored trajectories replaced by a newer version of their session.")


class NothingReusable(BaseModel):
    trajectory: str
    reason: Sanitized  # may quote the task
    path: Sanitized | None = Field(None, description="The file the trajectory was read from.")
    task: Sanitized | None = Field(None, description="The task's title (its first line).")


class RedactionCounts(BaseModel):
    """Secrets replaced while reading this run's trajectories: kinds and counts, never values."""

    values: int = 0
    trajectories: int = Field(0, description="Trajectories with at least one redaction.")
    kinds: dict[str, int] = Field(default_factory=dict)

    def add(self, trajectories: list[Trajectory]) -> None:
        for t in {t.id: t for t in trajectories}.values():
            counts = t.redaction_counts()
            if counts:
                self.trajectories += 1
            for kind, count in counts.items():
                self.kinds[kind] = self.kinds.get(kind, 0) + count
                self.values += count
        self.kinds = dict(sorted(self.kinds.items(), key=lambda item: (-item[1], item[0])))


class Reopened(BaseModel):
    """A skill a person rejected, back as a candidate because its evidence changed materially."""

    name: str
    reason: str


class Withdrawn(BaseModel):
    """A candidate taken out of the queue: drafted from an earlier version of a session that has grown since."""

    name: str
    reason: str


class RunSummary(BaseModel):
    run_id: str = ""
    trajectories: TrajectoryCounts = Field(default_factory=TrajectoryCounts)
    skills: SkillCounts = Field(default_factory=SkillCounts)
    files: FileCounts = Field(default_factory=FileCounts)
    nothing_reusable: list[NothingReusable] = Field(default_factory=list)
    written: list[str] = Field(default_factory=list, description="Skills created or changed by this run.")
    unchanged: list[str] = Field(default_factory=list, description="Skills this run produced again, identical.")
    held: list[str] = Field(default_factory=list, description="Rejected skills this run drafted again with nothing "
                                                              "new in their evidence: left rejected.")
    reopened: list[Reopened] = Field(default_factory=list)
    withdrawn: list[Withdrawn] = Field(default_factory=list, description="Candidates of superseded session "
                                                                        "versions, taken out of the queue.")
    library: str = ""
    errors: list[RunError] = Field(default_factory=list)
    deferred: list[Deferred] = Field(default_factory=list, description="Files left for the next run.")
    increments: Increments = Field(default_factory=Increments)
    redactions: RedactionCounts = Field(default_factory=RedactionCounts)
    duration_s: float = Field(0.0, description="The flow's own work, from its start to the run's record.")
    server: str | None = Field(None, description="How the run reached its Prefect server: configured "
                                                 "(PREFECT_API_URL), reused or started (the shared local server), "
                                                 "temporary; None outside `skillmill run`.")
    server_s: float | None = Field(None, description="Seconds spent starting the Prefect server, or checking it "
                                                     "answers, before the flow began.")
    process: str | None = Field(None, description="Where `skillmill run` ran the flow: \"new\" (a process started "
                                                  "for it, importing Prefect) or \"warm\" (a fork of the warm "
                                                  "process a previous run left); None outside `skillmill run`.")
    wall_s: float | None = Field(None, description="Seconds from the command's start to the run's record: start-up, "
                                                   "the server and the flow.")
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

    def add_reading(self, reading: Reading) -> None:
        """Count one file read against its watermark (``pipeline.ingest.watermark``)."""
        if reading.report is None:
            self.files.unchanged += 1  # touched, same bytes: nothing was parsed
            return
        self.add_file(reading.report)
        if reading.watermark is None:
            return  # not read (ignored) or unreadable: it will be tried again, not remembered
        if reading.mode in ("new", "appended", "sessions"):  # a store's changed sessions: its appended part
            mode = "appended" if reading.mode == "sessions" else str(reading.mode)
            setattr(self.increments, mode, getattr(self.increments, mode) + 1)
        else:
            self.increments.reread += 1

    @property
    def exit_code(self) -> int:
        return EXIT_PARTIAL if (self.files.failed or self.files.partial or self.trajectories.failed) else EXIT_OK

    def contract(self) -> dict:
        """The JSON line ``skillmill run --json`` ends with."""
        data = self.model_dump()
        data["exit_code"] = self.exit_code
        return data
