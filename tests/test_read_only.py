"""A folder skillmill cannot write is one line naming it and what to do, exit 2 -- never a traceback
or "internal error".

Every folder skillmill writes, read-only and full, through the real commands that write it: the
home (state database, recall index, feedback journal), the library (skills, _history, _audit.jsonl,
its lock), the logs (the traceback file of an internal error), an export's target (an agent's
skills folder) and PREFECT_HOME (where the run's Prefect server keeps its database). Read-only is a read-only
mount, full a small filled tmpfs (``tests/mounts.py``); without root the tests skip and say why.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.errors import NotWritable, environment_error, not_writable
from tests.conftest import ROOT, SAMPLES
from tests.mounts import Mounts, mounting
from tests.review_support import build, django_inputs

MANUAL = "working-in-django"  # what the django sitemaps session gives
ADVICE = "point SKILLMILL_HOME/--library elsewhere or make it writable"
SPACE = "free some space or point SKILLMILL_HOME/--library elsewhere"


@pytest.fixture
def mounts() -> Iterator[Mounts]:
    with mounting() as made:
        yield made


def skillmill(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """A library with one candidate, its state database and recall index in the isolated home."""
    built = tmp_path / "skills"
    build([django_inputs(tmp_path, "django__django-16255")], built)
    return built


@pytest.fixture
def team(tmp_path: Path) -> Path:
    folder = tmp_path / "team"
    (folder / "tidy").mkdir(parents=True)
    (folder / "tidy" / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidy the imports.\n---\n\n# Tidy\n")
    return folder


def writes_of_home(library: Path, team: Path) -> dict[str, list[str | Path]]:
    return {"index": ["index"],
            "index --skills": ["index", "--skills", team],
            "review approve": ["review", "approve", MANUAL, "--by", "alice", "--library", library],
            "review reject": ["review", "reject", MANUAL, "--reason", "not now", "--by", "alice", "--library", library],
            "feedback add": ["feedback", "add", MANUAL, "helpful"]}


HOME_COMMANDS = ["index", "index --skills", "review approve", "review reject", "feedback add"]


# -- the home -------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", HOME_COMMANDS)
def test_a_read_only_home_is_named_in_one_line(command: str, library: Path, team: Path, isolated_home: Path,
                                              mounts: Mounts) -> None:
    mounts.read_only(isolated_home)
    code, output = skillmill(*writes_of_home(library, team)[command])
    assert (code, output) == (2, f"Error: {isolated_home} is read-only: {ADVICE}\n")
    assert (library / "_candidates" / MANUAL / "SKILL.md").is_file(), "nothing was decided"


@pytest.mark.parametrize("command", HOME_COMMANDS)
def test_a_full_home_is_named_in_one_line(command: str, library: Path, team: Path, isolated_home: Path,
                                          mounts: Mounts) -> None:
    mounts.full(isolated_home)
    code, output = skillmill(*writes_of_home(library, team)[command])
    assert code == 2, output
    assert len(output.splitlines()) == 1 and output.startswith(f"Error: no space left on {isolated_home}"), output
    assert output.endswith(f": {SPACE}\n")


def test_a_home_that_cannot_be_created_names_the_read_only_folder_it_would_be_in(
        tmp_path: Path, team: Path, mounts: Mounts, monkeypatch: pytest.MonkeyPatch) -> None:
    parent = mounts.read_only(tmp_path / "readonly")
    home = parent / "home"
    monkeypatch.setenv("SKILLMILL_HOME", str(home))
    code, output = skillmill("index", "--skills", team)
    assert (code, output) == (2, f"Error: cannot create {home}: {parent} is read-only: {ADVICE}\n")


# -- the library ----------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [["review", "approve", MANUAL, "--by", "alice"],
                                  ["review", "reject", MANUAL, "--reason", "not now", "--by", "alice"],
                                  ["index"]], ids=["approve", "reject", "index"])
def test_a_read_only_library_is_named_in_one_line(args: list[str], library: Path, mounts: Mounts) -> None:
    mounts.read_only(library)
    code, output = skillmill(*args, "--library", library)
    assert (code, output) == (2, f"Error: {library} is read-only: {ADVICE}\n")


@pytest.mark.parametrize("args", [["review", "approve", MANUAL, "--by", "alice"],
                                  ["review", "reject", MANUAL, "--reason", "not now", "--by", "alice"]],
                         ids=["approve", "reject"])
def test_a_full_library_is_named_in_one_line(args: list[str], library: Path, mounts: Mounts) -> None:
    mounts.full(library)
    code, output = skillmill(*args, "--library", library)
    assert code == 2, output
    assert len(output.splitlines()) == 1 and output.startswith(f"Error: no space left on {library}"), output


def test_the_library_from_the_environment_is_named_too(library: Path, mounts: Mounts,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLMILL_LIBRARY", str(library))
    mounts.read_only(library)
    code, output = skillmill("review", "approve", MANUAL, "--by", "alice")
    assert (code, output) == (2, f"Error: {library} is read-only: {ADVICE}\n")


# -- the logs -------------------------------------------------------------------------------------
def a_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.recall import service

    def bug(*args: object, **kwargs: object) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr(service, "reindex", bug)


@pytest.mark.parametrize("how", ["read-only", "full"])
def test_an_internal_error_says_in_one_hint_that_its_traceback_could_not_be_kept(
        how: str, isolated_home: Path, mounts: Mounts, monkeypatch: pytest.MonkeyPatch) -> None:
    logs = isolated_home / "logs"
    (mounts.read_only if how == "read-only" else mounts.full)(logs)
    a_bug(monkeypatch)
    code, output = skillmill("index")
    reason = "Read-only file system" if how == "read-only" else "No space left on device"
    assert code == 1
    assert output.splitlines() == [
        "Error: internal error: KeyError: 'a bug'",
        f"  hint: the traceback could not be saved to {logs} ({reason}); please report the message above"]


def test_an_internal_error_in_a_read_only_home_is_two_lines_not_a_traceback(
        isolated_home: Path, mounts: Mounts, monkeypatch: pytest.MonkeyPatch) -> None:
    mounts.read_only(isolated_home)
    a_bug(monkeypatch)
    code, output = skillmill("index")
    assert code == 1
    assert output.splitlines() == [
        "Error: internal error: KeyError: 'a bug'",
        f"  hint: the traceback could not be saved to {isolated_home / 'logs'} (Read-only file system); "
        "please report the message above"]


# -- an export's target -----------------------------------------------------------------------------
@pytest.fixture
def approved(library: Path) -> Path:
    code, output = skillmill("review", "approve", MANUAL, "--by", "alice", "--library", library)
    assert code == 0, output
    return library


def test_a_read_only_export_target_is_named_in_one_line(approved: Path, tmp_path: Path, mounts: Mounts) -> None:
    project = mounts.read_only(tmp_path / "project")
    code, output = skillmill("export", "--agent", "claude-code", "--project", project, "--library", approved)
    assert (code, output) == (2, f"Error: {project} is read-only: export elsewhere with --project DIR or make it "
                                 "writable\n")


def test_a_full_export_target_is_named_in_one_line(approved: Path, tmp_path: Path, mounts: Mounts) -> None:
    project = mounts.full(tmp_path / "project")
    code, output = skillmill("export", "--agent", "claude-code", "--project", project, "--library", approved)
    assert code == 2, output
    assert len(output.splitlines()) == 1 and output.startswith(f"Error: no space left on {project}"), output
    assert output.endswith(": free some space or export elsewhere with --project DIR\n")


# -- skillmill run --------------------------------------------------------------------------------
def run_process(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """``skillmill run`` as a user runs it: a process of its own, Prefect's logging as the CLI sets it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "PREFECT_LOGGING"))} | env
    return subprocess.run([sys.executable, "-m", "pipeline", "run", str(SAMPLES / "aider"), *args],
                          capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)}, timeout=300,
                          check=False)


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_server")
@pytest.mark.parametrize("which", ["home", "library"])
def test_a_run_into_a_read_only_folder_is_one_line(which: str, tmp_path: Path, isolated_home: Path,
                                                   mounts: Mounts) -> None:
    from prefect.settings import PREFECT_API_URL

    library = tmp_path / "skills"
    library.mkdir()
    isolated_home.mkdir()
    folder = mounts.read_only(isolated_home if which == "home" else library)
    done = run_process(["--library", str(library)], {"PREFECT_API_URL": str(PREFECT_API_URL.value())})
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"Error: {folder} is read-only: {ADVICE}\n")


def run_with_prefect_home(prefect_home: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    """A run that starts its own Prefect server (no PREFECT_API_URL), with its database in ``prefect_home``."""
    return run_process(["--library", str(tmp_path / "skills")], {"PREFECT_HOME": str(prefect_home)})


@pytest.mark.slow
@pytest.mark.parametrize("how", ["read-only", "full"])
def test_a_run_with_an_unwritable_prefect_home_is_one_line(how: str, tmp_path: Path, mounts: Mounts) -> None:
    prefect_home = tmp_path / "prefect-home"
    (mounts.read_only if how == "read-only" else mounts.full)(prefect_home)
    done = run_with_prefect_home(prefect_home, tmp_path)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert str(prefect_home) in done.stderr and "PREFECT_HOME" in done.stderr, done.stderr


# -- how errors are recognised --------------------------------------------------------------------
def test_a_refused_write_deep_in_the_chain_names_the_folder(tmp_path: Path, mounts: Mounts) -> None:
    folder = mounts.read_only(tmp_path / "ro")
    try:
        try:
            (folder / "skill.md").write_text("x")
        except OSError as exc:
            raise RuntimeError("writing the skill failed") from exc
    except RuntimeError as exc:
        found = environment_error(exc, places=[])
    assert isinstance(found, NotWritable) and found.exit_code == 2
    assert found.message == f"{folder} is read-only: {ADVICE}"


def test_duckdb_and_sqlite_saying_read_only_are_recognised(tmp_path: Path, mounts: Mounts) -> None:
    import sqlite3

    import duckdb

    folder = tmp_path / "ro"
    folder.mkdir()
    sqlite3.connect(folder / "serve.sqlite").execute("CREATE TABLE t (x INT)").connection.commit()
    mounts.read_only(folder)
    with pytest.raises(duckdb.Error) as duck:
        duckdb.connect(str(folder / "state.duckdb"))
    assert not_writable(duck.value).message == f"{folder} is read-only: {ADVICE}"
    with pytest.raises(sqlite3.Error) as lite:  # SQLite names no file: the place that cannot be written is named
        sqlite3.connect(folder / "serve.sqlite").execute("INSERT INTO t VALUES (1)")
    assert not_writable(lite.value, places=[tmp_path / "elsewhere", folder]).message == f"{folder} is read-only: {ADVICE}"


def test_permission_denied_on_a_write_is_named_but_not_on_a_read(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Root may write anywhere, so the modes are what ``os.access`` is made to say here."""
    closed, open_ = tmp_path / "closed", tmp_path / "open"
    closed.mkdir()
    open_.mkdir()
    (open_ / "secret.txt").write_text("x")
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) in (closed, open_ / "secret.txt")
                        else real(p, mode))
    for number in (errno.EACCES, errno.EPERM):
        write = PermissionError(number, os.strerror(number), str(closed / "new.json"))
        assert not_writable(write).message == f"{closed} is not writable (permission denied): {ADVICE}"
        read = PermissionError(number, os.strerror(number), str(open_ / "secret.txt"))
        assert not_writable(read) is None  # a file we may not read, in a folder we may write


def test_prefect_home_gets_its_own_advice(tmp_path: Path, mounts: Mounts, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = mounts.read_only(tmp_path / "prefect")
    monkeypatch.setenv("PREFECT_HOME", str(folder))
    error = OSError(errno.EROFS, "Read-only file system", str(folder / "prefect.db"))
    assert not_writable(error).message == f"{folder} is read-only: point PREFECT_HOME elsewhere or make it writable"
