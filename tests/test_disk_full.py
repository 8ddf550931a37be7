"""A full disk is a message that says where and what to do, exit 2 -- never "internal error".

Each test mounts a small tmpfs and fills it: as SKILLMILL_HOME (DuckDB and SQLite report the
full disk in their own words), as the skill library (Python's ``OSError`` ENOSPC), and as the
home the error handler keeps its traceback in. Mounting needs root (CAP_SYS_ADMIN); without
it the tests are skipped and say why.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from tests.mounts import fill
from tests.review_support import build, django_inputs

MANUAL = "working-in-django"  # what the django sitemaps session gives
ADVICE = "free some space or point SKILLMILL_HOME/--library elsewhere"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs, unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0755", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill (needs root): {done.stderr.strip() or done.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def skillmill(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_a_full_home_is_named_when_the_recall_index_is_built(small_disk: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    home = small_disk / "home"
    home.mkdir()
    monkeypatch.setenv("SKILLMILL_HOME", str(home))
    fill(small_disk)
    team = tmp_path / "team"
    (team / "tidy").mkdir(parents=True)
    (team / "tidy" / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidy the imports.\n---\n\n# Tidy\n")
    code, output = skillmill("index", "--skills", str(team))
    assert (code, output) == (2, f"Error: no space left on {home}: {ADVICE}\n")


def test_a_full_library_is_named_when_a_decision_is_written(small_disk: Path, tmp_path: Path) -> None:
    built = tmp_path / "skills"
    build([django_inputs(tmp_path, "django__django-16255")], built)
    library = small_disk / "skills"
    shutil.copytree(built, library)
    fill(small_disk)
    code, output = skillmill("review", "approve", MANUAL, "--by", "alice", "--library", str(library))
    assert code == 2, output
    assert output.startswith(f"Error: no space left on {library}") and output.endswith(f": {ADVICE}\n")
    assert len(output.splitlines()) == 1 and "internal error" not in output


def test_the_error_handler_survives_a_home_it_cannot_write_its_traceback_to(
        small_disk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = small_disk / "home"
    home.mkdir()
    monkeypatch.setenv("SKILLMILL_HOME", str(home))
    fill(small_disk)
    from pipeline.recall import service

    def bug(*args: object, **kwargs: object) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr(service, "reindex", bug)
    code, output = skillmill("index")
    assert code == 1
    assert output.splitlines() == [
        "Error: internal error: KeyError: 'a bug'",
        f"  hint: the traceback could not be saved to {home / 'logs'} (No space left on device); please report the "
        "message above"]
