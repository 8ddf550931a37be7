"""The trajectory excerpts behind a skill: what the agent actually did at the cited steps.

A skill's items cite ``trajectory:step,step`` (``Evidence``); the steps themselves are in the
state database's ``steps`` table. The database is opened read-only for one query and closed
again, so a review page never keeps a nightly run from opening it. When the excerpts cannot
be read (no database under this ``SKILLMILL_HOME``, a run writing right now, a trajectory
never ingested here) the skill is still shown, with a note that says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pipeline import settings
from pipeline.errors import IndexError_
from pipeline.index.db import connect
from pipeline.index.state import STATE_DB_LOCK
from pipeline.library import markdown
from pipeline.library.model import Evidence, Skill, is_file_ref

_STEPS = """
    SELECT trajectory_id, idx, kind, tool, command, paths, diff, exit_code, is_error, text, text_size
    FROM steps WHERE list_contains($ids, trajectory_id) AND list_contains($keys, trajectory_id || ':' || idx)
    ORDER BY trajectory_id, idx"""
_TRAJECTORIES = """
    SELECT id, agent, model, task, outcome, source_path, repo, steps FROM trajectories
    WHERE list_contains($ids, id)"""




@dataclass(frozen=True)
class Step:
    trajectory: str
    idx: int
    kind: str
    tool: str | None
    command: str | None
    paths: list[str]
    diff: str | None
    exit_code: int | None
    is_error: bool | None
    text: str
    text_size: int

    @property
    def label(self) -> str:
        what = {"tool_call": "call", "tool_result": "result"}.get(self.kind, self.kind)
        tool = f" {self.tool}" if self.tool else ""
        status = ""
        if self.kind == "tool_result":
            status = " error" if self.is_error else ""
            status += f" exit {self.exit_code}" if self.exit_code is not None else ""
        return f"step {self.idx} {what}{tool}{status}"

    def body(self, max_lines: int = 8, max_chars: int = 600) -> list[str]:
        """The lines worth showing: the command, the edited paths and diff, the start of the output."""
        if self.kind == "tool_call" and self.command:
            lines = [f"$ {line}" if i == 0 else f"  {line}" for i, line in enumerate(self.command.split("\n"))]
        elif self.kind == "tool_call":
            lines = [f"edit {', '.join(self.paths)}"] if self.paths else []
            lines += (self.diff or self.text or "").split("\n")
        else:
            lines = (self.text or "").split("\n")
        lines = _collapse([line.rstrip() for line in lines if line.strip()])
        total = len(lines)
        if total > max_lines:  # the head says what ran, the tail how it ended ("OK", "Ran 12 tests")
            head = (max_lines + 1) // 2
            tail = max_lines - head
            lines = [*lines[:head], f"… {total - head - tail} lines …", *(lines[-tail:] if tail else [])]
        shown, size = [], 0
        for line in lines:
            if size + len(line) > max_chars:
                shown.append(line[: max(0, max_chars - size)] + "…")
                break
            shown.append(line)
            size += len(line)
        if self.text_size > len(self.text or ""):
            shown.append(f"… (the agent saw {self.text_size} characters; the trajectory kept {len(self.text)})")
        return shown or ["(no output)"]


@dataclass(frozen=True)
class Source:
    id: str
    agent: str | None
    model: str | None
    task: str | None
    outcome: str | None
    source_path: str | None
    repo: str | None
    steps: int | None


@dataclass
class Excerpts:
    """Steps and trajectories for one or more skills; ``note`` says why some are missing."""

    steps: dict[tuple[str, int], Step] = field(default_factory=dict)
    sources: dict[str, Source] = field(default_factory=dict)
    note: str | None = None

    def for_evidence(self, evidence: list[Evidence]) -> list[Step]:
        return [self.steps[(e.trajectory, i)] for e in evidence for i in e.steps if (e.trajectory, i) in self.steps]

    def missing(self, evidence: list[Evidence]) -> list[str]:
        """Cited steps the database does not hold (``trajectory:step``)."""
        return [f"{e.trajectory}:{i}" for e in evidence for i in e.steps if (e.trajectory, i) not in self.steps]


def cited(skill: Skill) -> list[Evidence]:
    """The steps a skill cites: its items' evidence, and the provenance comments in its notes."""
    items = [e for item in [*skill.procedure, *skill.pitfalls, *skill.verification] for e in item.evidence]
    return [e for e in items + markdown.provenance(skill.notes) if not is_file_ref(e.trajectory)]  # a scan's file:line


def load(skills: list[Skill], path: Path | None = None) -> Excerpts:
    """Read the cited steps and source trajectories of ``skills`` from the state database."""
    path = path or settings.state_db_path()
    ids = sorted({t for s in skills for t in s.trajectory_ids()} | {e.trajectory for s in skills for e in cited(s)})
    keys = sorted({f"{e.trajectory}:{i}" for s in skills for e in cited(s) for i in e.steps})
    out = Excerpts()
    if not ids:
        return out
    if not path.exists():
        out.note = (f"no state database at {path}: trajectory excerpts come from the SKILLMILL_HOME of the run "
                    "that distilled these skills")
        return out
    try:
        with STATE_DB_LOCK:
            # Same configuration as the writer: in one process DuckDB shares an instance between
            # connections with one configuration and refuses a read-only one beside a writer (the review
            # server republishes in a background thread while pages read excerpts). Nothing is written.
            con = connect(path)
    except IndexError_ as exc:
        out.note = f"trajectory excerpts unavailable: {exc.message} ({exc.hint})" if exc.hint else exc.message
        return out
    try:
        for row in con.execute(_STEPS, {"ids": ids, "keys": keys}).fetchall():
            step = Step(trajectory=row[0], idx=row[1], kind=row[2], tool=row[3], command=row[4], paths=row[5] or [],
                        diff=row[6], exit_code=row[7], is_error=row[8], text=row[9] or "", text_size=row[10] or 0)
            out.steps[(step.trajectory, step.idx)] = step
        for row in con.execute(_TRAJECTORIES, {"ids": ids}).fetchall():
            out.sources[row[0]] = Source(*row)
    finally:
        with STATE_DB_LOCK:
            con.close()
    absent = [t for t in ids if t not in out.sources]
    if absent:
        out.note = (f"{len(absent)} source trajectories are not in {path} "
                    f"({', '.join(a[:12] for a in absent[:3])}{', ...' if len(absent) > 3 else ''})")
    return out


def _collapse(lines: list[str]) -> list[str]:
    """Runs of identical lines become one line with a count (test runners repeat themselves)."""
    out: list[str] = []
    count = 0
    for i, line in enumerate(lines):
        count += 1
        if i + 1 < len(lines) and lines[i + 1] == line:
            continue
        out.append(f"{line}  (×{count})" if count > 1 else line)
        count = 0
    return out
