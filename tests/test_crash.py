"""kill -9 a real `skillmill run` at every stage, rerun, and find the same result as a run never killed.

The input is the whole shared corpus (137 files, ~1,100 trajectories, a manual for each of 8
repositories): each stage takes long enough for a kill to land inside it. Each killed run is followed by another
`skillmill run` (which must not find a stale lock); the last one runs to the end. The library
and the state database must then equal those of one uninterrupted run, with no temporary file,
no half-written or duplicate skill, the indexes matching the library, and no process left.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from pipeline.execution import lock
from pipeline.index.state import StateDB
from pipeline.library import Library
from tests.run_support import Run, half_written, library_files, temporary_names, wait_gone

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server")]

#: Where to kill, as the run's log shows it. The first kill also tests Prefect's temporary server.
def half_way(stage: str, share: float = 0.5) -> Callable[[str], bool]:
    def test(line: str) -> bool:
        found = re.search(rf"{stage}: (\d+)/(\d+)$", line)
        return found is not None and int(found[1]) >= share * int(found[2])

    return test


KILLS: list[str | Callable[[str], bool]] = [
    r"discover: started",  # the flow just began (its temporary Prefect server is up)
    r"parse: \d+/",        # reading files
    r"store: started",     # trajectories and steps being bulk-inserted (NDJSON staging files)
    half_way("write"),     # distillations and repo facts recorded in the open transaction, not committed
    half_way("write", 0.9),  # the last of them, then the manuals rebuilt from the facts (files), not committed
    r"index: started",     # the recall index being built in a temporary file
    r"index: done",        # after the index, before the watermarks and the run record
]
TABLES = {
    "trajectories": "id",
    "steps": "trajectory_id, idx, text",
    "distillations": "trajectory_id, distiller, version, reason, skills",
    "repo_facts": "trajectory_id, repo, kind, template, fact::VARCHAR",
    "redactions": "trajectory_id, step, field, kind, count",
    "skill_sources": "skill, trajectory_id, steps",
}


@pytest.fixture
def api_url() -> str:
    from prefect.settings import PREFECT_API_URL

    return str(PREFECT_API_URL.value())


def tables(db: Path) -> dict[str, list[tuple]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: con.execute(f"SELECT {cols} FROM {t} ORDER BY ALL").fetchall() for t, cols in TABLES.items()}
    finally:
        con.close()


def test_kill_9_at_every_stage_then_rerun_gives_the_uninterrupted_result(
        corpus: Path, tmp_path: Path, isolated_home: Path, api_url: str) -> None:
    env = {**os.environ, "PREFECT_API_URL": api_url}
    library = tmp_path / "skills"

    reference_home, reference_library = tmp_path / "reference-home", tmp_path / "reference-skills"
    reference = Run([str(corpus), "--library", str(reference_library)], {**env, "SKILLMILL_HOME": str(reference_home)},
                    tmp_path / "reference.out").until(None)
    assert reference.code in (0, 1) and reference.summary["skills"]["proposed"] >= 5, reference.stderr[-5:]

    for i, marker in enumerate(KILLS):
        run_env = dict(env)
        if i == 0:  # no PREFECT_API_URL: skillmill starts a temporary server, which must die with the run
            run_env.pop("PREFECT_API_URL")
            run_env["PREFECT_HOME"] = str(tmp_path / "prefect-home")
        killed = Run([str(corpus), "--library", str(library)], run_env, tmp_path / f"kill-{i}.out").until(marker)
        assert killed.killed_at is not None, f"the run ended before {marker!r}: {killed.stderr[-5:]}"
        assert killed.code == -9
        assert half_written(library) == [], f"after a kill at {killed.killed_at!r}"
        assert wait_gone(isolated_home) == [], f"processes outlived a kill at {killed.killed_at!r}"

    final = Run([str(corpus), "--library", str(library)], env, tmp_path / "final.out").until(None)
    assert final.code == reference.code, final.stderr[-10:]
    assert lock.holder() is None

    # the same library, byte for byte, as the run that was never killed: nothing half-written or doubled
    assert library_files(library) == library_files(reference_library)
    assert temporary_names(isolated_home, library) == []
    assert tables(isolated_home / "skillmill.duckdb") == tables(reference_home / "skillmill.duckdb")

    # the indexes match the library
    stored = {(s.skill.name, str(s.path), s.skill.version) for s in Library(library)}
    with StateDB() as state:
        assert set(state.con.execute("SELECT name, path, version FROM skills").fetchall()) == stored
        runs = state.count("runs")
    recall = duckdb.connect(str(isolated_home / "recall.duckdb"), read_only=True)
    assert {(n, p) for n, p in recall.execute("SELECT name, path FROM skills WHERE root = 'library'").fetchall()} == \
        {(n, p) for n, p, _ in stored}
    recall.close()
    assert runs == 1  # killed runs record nothing

    # and a run over the same input now changes nothing
    mtimes = {p: p.stat().st_mtime_ns for p in library.rglob("*")}
    again = Run([str(corpus), "--library", str(library)], env, tmp_path / "again.out").until(None)
    assert again.summary["trajectories"]["new"] == 0
    assert again.summary["skills"] == {"proposed": 0, "updated": 0, "unchanged": 0}
    assert {p: p.stat().st_mtime_ns for p in library.rglob("*")} == mtimes
