"""The state database's migrations: each stage registers its own, and a database of any earlier
version is brought up to date on open, its rows kept."""

from __future__ import annotations

from pathlib import Path

import pytest

import pipeline.distill.llm.tables
import pipeline.distill.tables
import pipeline.ingest.tables
import pipeline.library.tables
import pipeline.recall.feedback
import pipeline.runs.tables  # noqa: F401  (every stage that owns tables registers its migrations)
from pipeline.index import migrations
from pipeline.index.db import connect, migrate
from pipeline.index.state import StateDB

#: As released: names are recorded in databases, so they never change and new ones come after.
RELEASED = ["001_initial", "010_watermarks", "020_redactions", "030_llm", "040_review_log", "045_protocol_errors",
            "050_recall_folders", "051_skill_feedback"]


def tables(state: StateDB) -> set[str]:
    return {r[0] for r in state.con.execute("SELECT table_name FROM information_schema.tables").fetchall()}


def test_the_stages_register_the_released_migrations_in_order() -> None:
    assert [name for name, _ in migrations.registered()][:len(RELEASED)] == RELEASED


@pytest.mark.parametrize("version", range(1, len(RELEASED) + 1))
def test_a_database_of_any_earlier_version_is_upgraded_on_open(tmp_path: Path, version: int) -> None:
    path = tmp_path / "skillmill.duckdb"
    con = connect(path)
    migrate(con, migrations.registered()[:version])  # the database as that release left it
    con.execute("INSERT INTO runs (id, exit_code) VALUES ('r1', 0)")
    con.close()
    with StateDB(path) as state:
        applied = [r[0] for r in state.con.execute("SELECT name FROM _migrations ORDER BY name").fetchall()]
        assert applied == [name for name, _ in migrations.registered()]
        assert {"trajectories", "steps", "file_watermarks", "redactions", "llm_calls", "review_log",
                "recall_folders", "skill_feedback", "runs"} <= tables(state)
        assert "protocol_error" in {r[0] for r in state.con.execute("DESCRIBE steps").fetchall()}
        assert state.con.execute("SELECT id FROM runs").fetchall() == [("r1",)]


def test_a_stage_registered_after_the_database_opened_gets_its_tables_before_its_first_query(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(migrations, "_REGISTERED", dict(migrations._REGISTERED))
    with StateDB(tmp_path / "skillmill.duckdb") as state:
        assert "late_table" not in tables(state)

        def _m999_late(con: object) -> None:
            con.execute("CREATE TABLE late_table (x INTEGER)")  # type: ignore[attr-defined]

        migrations.register(("999_late", _m999_late))  # a stage imported lazily, after the open
        assert state.con.execute("SELECT count(*) FROM late_table").fetchone() == (0,)


def test_two_stages_cannot_take_one_migration_name() -> None:
    def _m001_initial(con: object) -> None:
        pass

    with pytest.raises(ValueError, match="two migrations named '001_initial'"):
        migrations.register(("001_initial", _m001_initial))
