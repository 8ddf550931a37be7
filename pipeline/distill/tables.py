"""Distill's tables in the state database: what each distiller did with each trajectory, and the
repo facts the "working in <repo>" skills are built from (both created by ``001_initial``).

Facts are read from current trajectories only: a superseded version (ingest's
``trajectory_lineage``) would count a session twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pipeline.distill.facts import RepoFact
from pipeline.index.db import bulk_insert

if TYPE_CHECKING:
    from pipeline.index.state import StateDB


def distilled(state: StateDB, ids: Iterable[str], distiller: str, version: str) -> set[str]:
    rows = state.con.execute(
        "SELECT trajectory_id FROM distillations WHERE distiller = ? AND version = ? "
        "AND list_contains(?, trajectory_id)", [distiller, version, list(ids)]).fetchall()
    return {r[0] for r in rows}


def save_distillation(state: StateDB, trajectory_id: str, distiller: str, version: str, reason: str | None,
                      skills: list[str], facts: list[RepoFact]) -> None:
    with state.transaction():
        con = state.con
        con.execute("DELETE FROM distillations WHERE trajectory_id = ? AND distiller = ?",
                    [trajectory_id, distiller])
        con.execute("INSERT INTO distillations VALUES (?, ?, ?, ?, ?, ?)",
                    [trajectory_id, distiller, version, reason, skills, datetime.now(UTC)])
        con.execute("DELETE FROM repo_facts WHERE trajectory_id = ?", [trajectory_id])
        for fact in facts:
            con.execute("INSERT INTO repo_facts VALUES (?, ?, ?, ?, ?)",
                        [fact.trajectory, fact.repo, fact.kind, fact.template, fact.model_dump_json()])


def save_distillations(state: StateDB, done: list[tuple[str, str | None, list[str], list[RepoFact]]],
                       distiller: str, version: str) -> int:
    """:func:`save_distillation` for many ``(trajectory_id, reason, skills, facts)`` at once.

    Four statements instead of four per trajectory (~14 ms each: 11 s for 800 trajectories).
    """
    if not done:
        return 0
    ids = [d[0] for d in done]
    now = datetime.now(UTC)
    with state.transaction():
        con = state.con
        con.execute("DELETE FROM distillations WHERE distiller = ? AND list_contains(?, trajectory_id)",
                    [distiller, ids])
        bulk_insert(con, "distillations", _DISTILLATION_COLUMNS,
                    ({"trajectory_id": i, "distiller": distiller, "version": version, "reason": reason,
                      "skills": skills, "distilled_at": now} for i, reason, skills, _ in done), scratch=state.scratch)
        con.execute("DELETE FROM repo_facts WHERE list_contains(?, trajectory_id)", [ids])
        bulk_insert(con, "repo_facts", _REPO_FACT_COLUMNS,
                    ({"trajectory_id": f.trajectory, "repo": f.repo, "kind": f.kind, "template": f.template,
                      "fact": f.model_dump_json()} for *_, facts in done for f in facts), scratch=state.scratch)
    return len(done)


def facts(state: StateDB, repo: str) -> list[RepoFact]:
    """Facts of every repo with the same name (``owner/x`` and a checkout folder ``x``), from
    current trajectories only (a superseded version would count a session twice)."""
    name = repo.rsplit("/", 1)[-1].lower()
    rows = state.con.execute(
        "SELECT fact FROM repo_facts WHERE lower(regexp_extract(repo, '[^/]*$')) = ? AND trajectory_id NOT IN "
        "(SELECT trajectory_id FROM trajectory_lineage) ORDER BY trajectory_id", [name])
    return [RepoFact.model_validate_json(r[0]) for r in rows.fetchall()]


def facts_of_kind(state: StateDB, *kinds: str) -> list[RepoFact]:
    """Facts of these kinds in every repository (current trajectories only): what generalizes."""
    rows = state.con.execute(
        "SELECT fact FROM repo_facts WHERE list_contains(?, kind) AND trajectory_id NOT IN "
        "(SELECT trajectory_id FROM trajectory_lineage) ORDER BY trajectory_id", [list(kinds)])
    return [RepoFact.model_validate_json(r[0]) for r in rows.fetchall()]


_DISTILLATION_COLUMNS = {"trajectory_id": "VARCHAR", "distiller": "VARCHAR", "version": "VARCHAR",
                         "reason": "VARCHAR", "skills": "VARCHAR[]", "distilled_at": "TIMESTAMPTZ"}
_REPO_FACT_COLUMNS = {"trajectory_id": "VARCHAR", "repo": "VARCHAR", "kind": "VARCHAR", "template": "VARCHAR",
                      "fact": "VARCHAR"}
