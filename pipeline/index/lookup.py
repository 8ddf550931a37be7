"""Everything the state database knows about one trajectory, from its id (or a unique prefix).

Trajectory ids (16 hex digits) are printed by ``skillmill run``, listed under a skill's sources
and cited in its provenance comments; :func:`trajectory` turns one back into the session it names:
where it came from, what happened in it, what the distiller made of it and which skills cite it.
The database is opened read-only, so a lookup changes nothing (and needs no run to be idle
longer than the lookup itself).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from pipeline import settings
from pipeline.errors import SkillmillError, UsageError
from pipeline.index.db import connect

#: The shortest prefix taken for an id: 6 hex digits tell ~16 million trajectories apart.
MIN_PREFIX = 6
_HEX = re.compile(r"[0-9a-f]+")

_TRAJECTORY = """
    SELECT id, source_path, source_format, agent, agent_version, model, session_id, repo, git_branch, cwd,
           started_at, ended_at, task, outcome, outcome_source, outcome_evidence, steps, tool_calls, ingested_at
    FROM trajectories WHERE id = ?"""
_MATCHES = "SELECT id FROM trajectories WHERE starts_with(id, ?) ORDER BY id LIMIT 11"
_DISTILLATIONS = """
    SELECT distiller, version, reason, skills, distilled_at FROM distillations WHERE trajectory_id = ?
    ORDER BY distilled_at"""
_FACTS = "SELECT fact FROM repo_facts WHERE trajectory_id = ? ORDER BY kind, template"
_CITED_BY = """
    SELECT src.skill, sk.status, sk.path, src.steps FROM skill_sources src LEFT JOIN skills sk ON sk.name = src.skill
    WHERE src.trajectory_id = ? ORDER BY src.skill"""
_SUPERSEDED_BY = "SELECT superseded_by FROM trajectory_lineage WHERE trajectory_id = ?"
_SUPERSEDES = "SELECT trajectory_id FROM trajectory_lineage WHERE superseded_by = ? ORDER BY trajectory_id"
_REDACTIONS = "SELECT kind, sum(count)::INTEGER FROM redactions WHERE trajectory_id = ? GROUP BY kind ORDER BY kind"
_IS_SKILL = "SELECT count(*) FROM skills WHERE name = ?"


@dataclass
class Distillation:
    distiller: str
    version: str
    reason: str | None  # why it gave nothing (None: it found something)
    skills: list[str]
    distilled_at: datetime | None


@dataclass
class TrajectoryInfo:
    id: str
    source_path: str | None
    source_format: str | None
    agent: str | None
    agent_version: str | None
    model: str | None
    session_id: str | None
    repo: str | None
    git_branch: str | None
    cwd: str | None
    started_at: datetime | None
    ended_at: datetime | None
    task: str | None
    outcome: str | None
    outcome_source: str | None
    outcome_evidence: str | None
    steps: int | None
    tool_calls: int | None
    ingested_at: datetime | None
    distillations: list[Distillation] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)  # ``RepoFact`` as stored
    cited_by: list[dict[str, Any]] = field(default_factory=list)  # {"skill", "status", "path", "steps"}
    superseded_by: str | None = None  # the newer version of a session that grew
    supersedes: list[str] = field(default_factory=list)
    redactions: dict[str, int] = field(default_factory=dict)  # kind -> values redacted

    def contract(self) -> dict[str, Any]:
        """What ``skillmill show ID --json`` prints."""
        return asdict(self)


def trajectory(ref: str, path: Path | None = None) -> TrajectoryInfo:
    """The trajectory ``ref`` names: a whole id or a unique prefix of at least :data:`MIN_PREFIX` digits.

    Raises ``UsageError`` for what is not an id (a skill's name, a short or ambiguous prefix),
    ``SkillmillError`` for an id this home never read, ``IndexError_`` when the database is missing
    or held by a running ``skillmill run``.
    """
    path = path or settings.state_db_path()
    wanted = ref.strip().lower()
    if not path.exists():
        raise SkillmillError(f"no state database at {path}: no trajectory has been read under this home",
                             hint="`skillmill run PATHS` reads sessions; or set SKILLMILL_HOME to the home that did")
    con = connect(path, read_only=True, threads=1)  # held by a run: IndexError_ saying so
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if not _HEX.fullmatch(wanted):
            raise _not_an_id(ref, is_skill="skills" in tables and con.execute(_IS_SKILL, [ref]).fetchone()[0] > 0)
        if len(wanted) < MIN_PREFIX:
            raise UsageError(f"{ref!r} is too short to pick one trajectory",
                             hint=f"give at least {MIN_PREFIX} of its 16 hex digits")
        ids = [r[0] for r in con.execute(_MATCHES, [wanted]).fetchall()]
        if not ids:
            count = con.execute("SELECT count(*) FROM trajectories").fetchone()[0]  # type: ignore[index]
            raise SkillmillError(f"no trajectory {ref} among the {count} read under this home ({path})",
                                 hint="ids come from `skillmill run`, `skillmill review show` and SKILL.md "
                                      "provenance (`skillmill ingest` stores nothing); each SKILLMILL_HOME keeps "
                                      "its own")
        if len(ids) > 1:
            shown = ", ".join(ids[:10]) + (", ..." if len(ids) > 10 else "")
            raise UsageError(f"{ref!r} starts more than one trajectory id: {shown}", hint="give more digits")
        return _read(con, ids[0], tables)
    finally:
        con.close()


def _not_an_id(ref: str, *, is_skill: bool) -> UsageError:
    if is_skill:
        return UsageError(f"{ref!r} is a skill, not a trajectory", hint=f"use `skillmill review show {ref}`")
    return UsageError(f"{ref!r} is not a trajectory id (16 hex digits, or a unique prefix of {MIN_PREFIX} or more)",
                      hint="for a skill, use `skillmill review show NAME`")


def _read(con: Any, tid: str, tables: set[str]) -> TrajectoryInfo:
    row = con.execute(_TRAJECTORY, [tid]).fetchone()
    columns = [d[0] for d in con.description]
    info = TrajectoryInfo(**dict(zip(columns, row, strict=True)))
    info.distillations = [Distillation(d, v, reason, list(skills or []), at)
                          for d, v, reason, skills, at in con.execute(_DISTILLATIONS, [tid]).fetchall()]
    info.facts = [orjson.loads(r[0]) for r in con.execute(_FACTS, [tid]).fetchall()]
    info.cited_by = [{"skill": s, "status": status, "path": p, "steps": list(steps or [])}
                     for s, status, p, steps in con.execute(_CITED_BY, [tid]).fetchall()]
    if "trajectory_lineage" in tables:
        newer = con.execute(_SUPERSEDED_BY, [tid]).fetchone()
        info.superseded_by = newer[0] if newer else None
        info.supersedes = [r[0] for r in con.execute(_SUPERSEDES, [tid]).fetchall()]
    if "redactions" in tables:
        info.redactions = dict(con.execute(_REDACTIONS, [tid]).fetchall())
    return info
