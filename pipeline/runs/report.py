"""One run's report, from its row in the ``runs`` table: a model, markdown, and where it is published.

A report is derived, never stored separately: the row (``id``, times, exit code, the summary
``skillmill run --json`` prints) is the truth, so the Prefect artifact, ``skillmill runs`` and
the snapshot always agree with the database.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, Field

from pipeline import atomic, settings

log = logging.getLogger(__name__)

#: The Prefect artifact key: the UI's Artifacts page lists every run's report under it.
ARTIFACT_KEY = "skillmill-run-report"
#: Runs kept in the snapshot ``skillmill runs`` reads while a run holds the database.
SNAPSHOT_RUNS = 100
MAX_ERRORS_SHOWN = 50

_SELECT = "SELECT id, started_at, finished_at, exit_code, summary FROM runs"


class Trajectories(BaseModel):
    seen: int = 0
    new: int = 0
    deferred: int = 0
    failed: int = 0


class Skills(BaseModel):
    proposed: int = 0
    updated: int = 0
    unchanged: int = 0


class LLM(BaseModel):
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


class Problem(BaseModel):
    path: str | None = None
    line: int | None = None
    reason: str


class RunReport(BaseModel):
    """What one run did. ``skillmill runs --json`` prints these; the artifact renders one."""

    id: str
    started_at: datetime | None = None
    finished_at: datetime | None = None
    exit_code: int | None = None
    status: str = Field(description="ok (exit 0), partial (some inputs failed, exit 1), failed, or unfinished.")
    duration_s: float | None = Field(None, description="The flow's own work.")
    server: str | None = Field(None, description="configured, reused, started or temporary (see RunSummary).")
    server_s: float | None = Field(None, description="Starting the Prefect server (or checking it answers).")
    wall_s: float | None = Field(None, description="The command, from its start to the run's record.")
    library: str = ""
    distiller: str = "heuristic"
    model: str | None = None
    trajectories: Trajectories = Field(default_factory=Trajectories)
    skills: Skills = Field(default_factory=Skills)
    llm: LLM = Field(default_factory=LLM)
    stopped: str | None = Field(None, description="Why distillation stopped early (budget, model down).")
    errors: list[Problem] = Field(default_factory=list)

    @classmethod
    def from_row(cls, row: tuple) -> RunReport:
        run_id, started, finished, exit_code, summary = row
        data: dict[str, Any] = orjson.loads(summary) if isinstance(summary, str | bytes) else (summary or {})
        info = data.get("distillation") or {}
        status = "unfinished" if exit_code is None else {0: "ok", 1: "partial"}.get(exit_code, "failed")
        return cls(
            id=str(run_id), started_at=started, finished_at=finished, exit_code=exit_code, status=status,
            duration_s=data.get("duration_s"), server=data.get("server"), server_s=data.get("server_s"),
            wall_s=data.get("wall_s"), library=data.get("library") or "",
            distiller=info.get("distiller") or "heuristic", model=info.get("model"),
            trajectories=Trajectories.model_validate(data.get("trajectories") or {}),  # extra keys are ignored
            skills=Skills.model_validate(data.get("skills") or {}),
            llm=LLM.model_validate(data.get("llm") or {}),
            stopped=info.get("stopped"),
            errors=[Problem.model_validate(e) for e in data.get("errors") or []],
        )

    def took(self) -> str:
        """``22.1 s (+ 9.8 s starting the Prefect server; 33.5 s in all)``: the work, the server apart."""
        if self.duration_s is None:
            return "?"
        notes = []
        if self.server in ("started", "temporary") and self.server_s is not None:
            notes.append(f"+ {self.server_s:.1f} s starting the Prefect server")
        if self.wall_s is not None:
            notes.append(f"{self.wall_s:.1f} s in all")
        return f"{self.duration_s:.1f} s" + (f" ({'; '.join(notes)})" if notes else "")

    # -- markdown -----------------------------------------------------------------------------
    def headline(self) -> str:
        t, s = self.trajectories, self.skills
        return (f"skillmill run {self.status}: {t.seen} trajectories ({t.new} new), "
                f"{s.proposed} skills proposed, {s.updated} updated, {len(self.errors)} errors")

    def markdown(self) -> str:
        """The report as the Prefect UI shows it (an artifact renders GitHub-flavoured markdown)."""
        t, s, m = self.trajectories, self.skills, self.llm
        when = self.started_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if self.started_at else "?"
        duration = self.took()
        exit_code = "?" if self.exit_code is None else self.exit_code
        model = f"model `{self.model}`" if self.model else "zero-LLM distiller"
        lines = [
            f"# skillmill run: {self.status}",
            "",
            f"Started {when}, took {duration}, exit code {exit_code}. Library: `{self.library}`. "
            f"Distilled with the {model}.",
            "",
            "| trajectories seen | new | deferred | failed | skills proposed | updated | unchanged |",
            "|---:|---:|---:|---:|---:|---:|---:|",
            f"| {t.seen} | {t.new} | {t.deferred} | {t.failed} | {s.proposed} | {s.updated} | {s.unchanged} |",
            "",
            "| LLM requests | input tokens | output tokens | cost |",
            "|---:|---:|---:|---:|",
            f"| {m.requests} | {m.input_tokens:,} | {m.output_tokens:,} | ${m.cost_usd:.4f} |",
        ]
        if self.stopped:
            lines += ["", f"**Distillation stopped early:** {_escape(self.stopped)}"]
        lines += ["", f"## Errors ({len(self.errors)})", ""]
        if not self.errors:
            lines.append("None.")
        for error in self.errors[:MAX_ERRORS_SHOWN]:
            where = f"{error.path}:{error.line}" if error.line else (error.path or "")
            lines.append(f"- `{_escape(where, code=True)}` {_escape(error.reason)}" if where
                         else f"- {_escape(error.reason)}")
        if len(self.errors) > MAX_ERRORS_SHOWN:
            lines.append(f"- ... and {len(self.errors) - MAX_ERRORS_SHOWN} more (`skillmill runs --json`)")
        lines += ["", f"Run id `{self.id}`. New skills are candidates: `skillmill review` before any agent sees them."]
        return "\n".join(lines) + "\n"


def _escape(text: str, code: bool = False) -> str:
    """Keep a reason (which can quote anything) from breaking the markdown around it."""
    text = " ".join(text.split())
    if code:
        return text.replace("`", "'")
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace("*", "\\*")[:500]


# -- reading the table --------------------------------------------------------------------------
def read(con: Any, limit: int | None = None, run_id: str | None = None) -> list[RunReport]:
    """Reports from a connection to the state database, newest first."""
    sql, args = _SELECT, []
    if run_id is not None:
        sql, args = f"{_SELECT} WHERE id = ?", [run_id]
    sql += " ORDER BY started_at DESC NULLS LAST, finished_at DESC NULLS LAST"
    if limit is not None:
        sql, args = f"{sql} LIMIT ?", [*args, limit]
    return [RunReport.from_row(row) for row in con.execute(sql, args).fetchall()]


# -- publishing ---------------------------------------------------------------------------------
def snapshot_path() -> Path:
    return settings.home() / "runs-snapshot.json"


def publish(state: Any, run_id: str) -> RunReport | None:
    """Publish the report of run ``run_id`` (already recorded): a Prefect markdown artifact and the snapshot.

    Called by the flow while it still holds the state database. Neither step may fail the run
    that did the work: a problem is logged and the report stays in the database.
    """
    reports = read(state.con, run_id=run_id)
    if not reports:
        log.warning("run %s is not in the runs table; nothing to publish", run_id)
        return None
    report = reports[0]
    try:
        from prefect.artifacts import create_markdown_artifact

        create_markdown_artifact(markdown=report.markdown(), key=ARTIFACT_KEY, description=report.headline())
    except Exception as exc:  # the Prefect API may be down at the end of a long run
        log.warning("could not publish the run report to Prefect: %s", exc)
    try:
        write_snapshot(read(state.con, limit=SNAPSHOT_RUNS))
    except OSError as exc:
        log.warning("could not write %s: %s", snapshot_path(), exc)
    return report


def write_snapshot(reports: list[RunReport]) -> Path:
    """Recent reports as JSON beside the database, replaced atomically (readers never see half a file)."""
    path = snapshot_path()
    payload = {"written_at": datetime.now(UTC).isoformat(), "runs": [r.model_dump(mode="json") for r in reports]}
    atomic.write(path, orjson.dumps(payload, option=orjson.OPT_INDENT_2))
    return path
