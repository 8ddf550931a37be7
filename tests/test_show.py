"""`skillmill show ID`: a trajectory id printed anywhere leads back to the session, on real sessions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner, Result

from pipeline import settings, stages
from pipeline.cli import main
from pipeline.library import Library
from pipeline.summary import RunSummary
from tests.conftest import SAMPLES
from tests.review_support import SERIALIZATION_SESSION, build
from tests.test_runs import hold_the_database

SESSION_FILE = SAMPLES / "mini_swe_agent" / "django__django-16938.traj.json"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, RunSummary]:
    """One run over samples/ for the module: (its home, its library, what it reported)."""
    root = tmp_path_factory.mktemp("show")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SKILLMILL_HOME", str(root / "home"))
        summary = build([SAMPLES], root / "skills")
    return root / "home", root / "skills", summary


@pytest.fixture
def library(built: tuple[Path, Path, RunSummary], monkeypatch: pytest.MonkeyPatch) -> Library:
    monkeypatch.setenv("SKILLMILL_HOME", str(built[0]))  # read-only: every test can share the run
    return Library(built[1])


def show(*args: str) -> Result:
    return CliRunner().invoke(main, ["show", *args])


def cited_steps(library: Library, name: str, trajectory: str) -> list[int]:
    stored = library.get(name)
    assert stored is not None
    s = stored.skill
    return sorted({step for item in [*s.procedure, *s.pitfalls, *s.verification] for ev in item.evidence
                   if ev.trajectory == trajectory for step in ev.steps})


def test_an_id_or_its_prefix_shows_the_session_its_distillation_and_the_skills_citing_it(library: Library) -> None:
    _, (session,) = stages.parse(SESSION_FILE)
    assert session.id == SERIALIZATION_SESSION
    result = show(SERIALIZATION_SESSION, "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["id"] == session.id and info["source_path"] == str(SESSION_FILE)
    assert (info["source_format"], info["agent"], info["repo"]) == ("mini-swe-agent", "mini-swe-agent", "django/django")
    assert info["task"] == session.task
    assert (info["outcome"], info["outcome_source"]) == ("resolved", "label") == (session.outcome.status,
                                                                                  session.outcome.source)
    assert info["outcome_evidence"] == session.outcome.evidence and "resolved=True" in info["outcome_evidence"]
    assert (info["steps"], info["tool_calls"]) == (len(session.steps), len(session.tool_calls()))
    distilled = stages.distill_one(session)
    assert [(d["distiller"], d["reason"]) for d in info["distillations"]] == [("heuristic", None)]
    assert sorted((f["kind"], f["template"], f["steps"]) for f in info["facts"]) == sorted(
        (f.kind, f.template, f.steps) for f in distilled.facts)
    assert {"test", "location"} <= {f["kind"] for f in info["facts"]}
    assert info["cited_by"] == [{"skill": "working-in-django", "status": "candidate",
                                 "path": str(library.get("working-in-django").path),  # type: ignore[union-attr]
                                 "steps": cited_steps(library, "working-in-django", session.id)}]

    assert json.loads(show(SERIALIZATION_SESSION[:6].upper(), "--json").stdout) == info, "a prefix, any case"
    text = show(SERIALIZATION_SESSION[:8])
    assert text.exit_code == 0, text.output
    for shown in (f"trajectory {session.id}", str(SESSION_FILE), "(mini-swe-agent format)", "django/django",
                  "Serialization of m2m relation fails", "resolved (by label): SWE-bench report", "resolved=True",
                  f"{len(session.steps)} steps, {len(session.tool_calls())} tool calls", "Distilled by heuristic",
                  "./tests/runtests.py <tests> ok", "location  django/core/serializers/python.py",
                  "working-in-django (candidate, steps 58,59)"):
        assert shown in text.output, (shown, text.output)


def test_a_session_the_distiller_gave_nothing_says_why(library: Library, built: tuple[Path, Path, RunSummary]) -> None:
    nothing = built[2].nothing_reusable[0]  # what the run said of a session it learned nothing from
    info = json.loads(show(nothing.trajectory, "--json").stdout)
    assert info["facts"] == [] and info["cited_by"] == []
    assert [d["reason"] for d in info["distillations"]] == [nothing.reason]
    text = show(nothing.trajectory).output
    assert f"nothing ({nothing.reason})" in text and "No skill cites it." in text


def test_every_id_a_skill_cites_can_be_looked_up(library: Library) -> None:
    cited = [(stored.skill.name, source.trajectory) for stored in library for source in stored.skill.sources]
    assert len(cited) >= 5
    for name, trajectory in cited:
        assert name in [c["skill"] for c in json.loads(show(trajectory, "--json").stdout)["cited_by"]]


def test_what_is_not_one_trajectory_id_says_what_to_do(library: Library) -> None:
    skill = show("working-in-django")
    assert skill.exit_code == 2 and "'working-in-django' is a skill" in skill.output
    assert "skillmill review show working-in-django" in skill.output
    short = show(SERIALIZATION_SESSION[:5])
    assert short.exit_code == 2 and "give at least 6" in short.output
    unknown = show("0123456789abcdef")
    assert unknown.exit_code == 1 and "no trajectory 0123456789abcdef among the" in unknown.output
    assert "Traceback" not in skill.output + short.output + unknown.output


def test_an_ambiguous_prefix_lists_the_ids_it_starts(built: tuple[Path, Path, RunSummary]) -> None:
    db = settings.state_db_path()
    db.parent.mkdir(parents=True)
    shutil.copy(built[0] / db.name, db)
    twin = SERIALIZATION_SESSION[:8] + "00000000"
    with duckdb.connect(str(db)) as con:
        con.execute("INSERT INTO trajectories (id) VALUES (?)", [twin])
    result = show(SERIALIZATION_SESSION[:8])
    assert result.exit_code == 2 and SERIALIZATION_SESSION in result.output and twin in result.output
    assert "give more digits" in result.output
    assert json.loads(show(SERIALIZATION_SESSION[:9], "--json").stdout)["id"] == SERIALIZATION_SESSION


def test_no_database_or_one_a_run_holds_is_said_so(built: tuple[Path, Path, RunSummary]) -> None:
    missing = show(SERIALIZATION_SESSION)
    assert missing.exit_code == 1 and "no state database at" in missing.output and "skillmill run" in missing.output
    db = settings.state_db_path()
    db.parent.mkdir(parents=True)
    shutil.copy(built[0] / db.name, db)
    holder = hold_the_database(db)
    try:
        held = show(SERIALIZATION_SESSION)
    finally:
        holder.kill()
        holder.wait()
    assert held.exit_code == 1 and "in use by another skillmill process" in held.output
    assert "wait for the running `skillmill run` to finish" in held.output and "Traceback" not in held.output
