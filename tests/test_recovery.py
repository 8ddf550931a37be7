"""What a killed run leaves is recognised exactly: the names the real writers use, nothing else."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from pipeline import settings
from pipeline.distill import consolidate
from pipeline.execution import recovery
from pipeline.index.state import StateDB
from pipeline.ingest import ingest_file
from pipeline.ingest import tables as ingest_tables
from pipeline.library import Library
from pipeline.library.store import atomic_write
from pipeline.recall.index import IndexedSkill, publish
from pipeline.stages import distill_one
from tests.conftest import SAMPLES

SITEMAPS = SAMPLES / "mini_swe_agent/django__django-16255.traj.json"


@pytest.fixture
def temp_names(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every temporary file or folder the code under test creates through ``tempfile``."""
    made: list[Path] = []
    real_file, real_dir = tempfile.mkstemp, tempfile.mkdtemp

    def mkstemp(*args, **kwargs):  # type: ignore[no-untyped-def]
        fd, name = real_file(*args, **kwargs)
        made.append(Path(name))
        return fd, name

    def mkdtemp(*args, **kwargs):  # type: ignore[no-untyped-def]
        name = real_dir(*args, **kwargs)
        made.append(Path(name))
        return name

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    return made


def test_the_temporary_names_of_every_writer_are_recognised_and_only_they_are_removed(
        tmp_path: Path, isolated_home: Path, temp_names: list[Path]) -> None:
    library = Library(tmp_path / "skills")
    _, trajectories = ingest_file(SITEMAPS)
    # A session gives facts, not skills: the drafts a run writes are its repository's manual.
    drafts = [d for t in trajectories if t.repo and (d := consolidate(t.repo, distill_one(t).facts)) is not None]
    assert [d.name for d in drafts] == ["working-in-django"]
    with StateDB() as state:
        ingest_tables.save_trajectories(state, trajectories)                        # bulk_insert: NDJSON staging files
        for draft in drafts:
            library.save(draft)                                      # a staging folder, then SKILL.md and history
            atomic_write(library.folder(draft.name, "candidate") / "SKILL.md",
                         (library.folder(draft.name, "candidate") / "SKILL.md").read_text() + "\n")
        publish([IndexedSkill.of(s) for s in library])               # the recall index's temporary file
    prefixes = {p.name.split(".")[1] for p in temp_names}
    # NDJSON staging of each table, SKILL.md, its history version, the skill folder, the recall index
    assert {"trajectories", "steps", "SKILL", "v1", "recall"} <= prefixes
    assert {d.name for d in drafts} <= prefixes
    assert all(recovery.TEMPORARY.match(p.name) for p in temp_names), [p.name for p in temp_names]
    assert not any(p.exists() for p in temp_names)  # they all went: the run was not killed

    # now as if killed between writing and renaming: each name is left behind
    left = []
    for p in temp_names:
        if p.parent.is_dir():
            p.write_text("half") if p.suffix in (".tmp", ".ndjson") else p.mkdir()
            left.append(p)
    wal = settings.recall_index_path().with_name(".recall.duckdb.abcd_123.tmp.wal")
    wal.write_text("")
    staging = library.root / "_candidates" / ".some-skill.k2j4h5g6.tmp"
    staging.mkdir()
    (staging / "SKILL.md").write_text("---\nname: some-skill\n")
    keep = [library.root / "notes.tmp", library.root / ".git" / "objects" / ".pack.abcdefgh.tmp",
            isolated_home / "tmp" / "mine.ndjson", library.root / "_candidates" / ".hidden"]
    for p in keep:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("a user's file")
    found = recovery.leftovers(isolated_home, library.root)
    assert set(found) == {*left, wal, staging}

    assert set(recovery.clean(isolated_home, library.root)) == set(found)
    assert recovery.leftovers(isolated_home, library.root) == []
    assert all(p.exists() for p in keep)
    assert [s.skill.name for s in library] == sorted(d.name for d in drafts)
