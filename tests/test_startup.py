"""Start-up of `skillmill run` (issue 15): what it says first, what it checks before any Prefect server,
the local server that back-to-back runs share, and where Prefect's files go.

Real `skillmill run` processes, each with its own SKILLMILL_HOME and HOME, no PREFECT_API_URL and
no PREFECT_HOME, as a user starts them. A shared server a test starts is stopped by its pid at the
end (``shared_server.stop_shared``), never by name.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.execution import shared_server, warm
from tests.conftest import ROOT, SAMPLES
from tests.run_support import Run, processes_of, wait_gone

STARTING = r"^skillmill: starting a (local|temporary) Prefect server"


def user_env(tmp: Path, **extra: str) -> dict[str, str]:
    """A user's environment: HOME and SKILLMILL_HOME in ``tmp``; nothing of Prefect's or skillmill's set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "SKILLMILL_", "DO_NOT_TRACK"))}
    (tmp / "user").mkdir(exist_ok=True)
    env.update(PYTHONPATH=str(ROOT), HOME=str(tmp / "user"), SKILLMILL_HOME=str(tmp / "home"),
               LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONUNBUFFERED="1", **extra)
    return env


def skillmill(args: list[str], env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=timeout, stdin=subprocess.DEVNULL)


def on_a_terminal(args: list[str], env: dict[str, str], timeout: float = 600) -> tuple[int, str]:
    """``skillmill ARGS`` with stdout and stderr on a pseudo-terminal (where Prefect writes its telemetry files)."""
    master, slave = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "pipeline", *args], stdin=subprocess.DEVNULL, stdout=slave,
                               stderr=slave, env=env, cwd=ROOT)
    os.close(slave)
    chunks = []
    with contextlib.suppress(OSError):  # EIO: the terminal's last writer is gone
        while data := os.read(master, 65536):
            chunks.append(data)
    os.close(master)
    return process.wait(timeout=timeout), b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")


def summary_of(output: str) -> dict:
    return json.loads(output.strip().splitlines()[-1])


@pytest.fixture
def stop_servers(tmp_path: Path) -> Iterator[list[Path]]:
    """Prefect homes whose shared server the test may have left up: stopped (by pid) at the end."""
    homes: list[Path] = []
    yield homes
    for folder in homes:
        shared_server.stop_shared(folder)


# -- first line, and checks before any server -----------------------------------------------------
@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A folder nobody may write: a read-only tmpfs (root ignores permission bits), else mode 0555."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"root, and cannot mount a read-only tmpfs: {done.stderr.strip() or done.returncode}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def no_server_was_started(prefect_home: Path, stderr: str) -> None:
    assert not re.search(STARTING, stderr, re.M), stderr
    assert not (prefect_home / "prefect.db").exists() and shared_server.read_state(prefect_home) is None


@pytest.mark.slow
def test_an_unwritable_library_or_home_is_a_one_line_error_before_any_server(tmp_path: Path,
                                                                             read_only: Path) -> None:
    env = user_env(tmp_path)
    home = tmp_path / "home"
    library = read_only / "skills"
    done = skillmill(["run", str(SAMPLES), "--library", str(library), "--progress", "lines"], env)
    assert done.returncode == 2, done.stderr
    state = "is read-only" if os.geteuid() == 0 else "is not writable (permission denied)"
    assert done.stderr == (f"Error: cannot create {library}: {read_only} {state}: point SKILLMILL_HOME/--library "
                           "elsewhere or make it writable\n")
    no_server_was_started(home / "prefect", done.stderr)

    env["SKILLMILL_HOME"] = str(read_only / "home")
    done = skillmill(["run", str(SAMPLES), "--library", str(tmp_path / "skills"), "--progress", "lines"], env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"Error: cannot create {read_only / 'home'}: {read_only} {state}: "), done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    no_server_was_started(read_only / "home" / "prefect", done.stderr)

    env["SKILLMILL_HOME"] = str(home)
    done = skillmill(["run", str(tmp_path / "nowhere"), "--progress", "lines"], env)
    assert (done.returncode, done.stderr.splitlines()[0]) == (2, f"Error: no such file or directory: "
                                                                 f"{tmp_path / 'nowhere'}")
    no_server_was_started(home / "prefect", done.stderr)


@pytest.mark.slow
def test_the_first_line_says_what_it_waits_for_and_a_second_run_meanwhile_exits_75(tmp_path: Path) -> None:
    """The lock is taken before the server starts: a second run started while the first waits for its
    server is refused at once, naming the first, and starts no server of its own."""
    env = user_env(tmp_path, SKILLMILL_SERVER_IDLE_MINUTES="0")  # a temporary server, gone with the run
    first = Run([str(SAMPLES), "--library", str(tmp_path / "skills")], env, tmp_path / "first.out")
    assert first.until(STARTING, kill=False) is None, first.stderr  # its first line, before the server answers
    assert first.stderr == ["skillmill: starting a temporary Prefect server for this run ..."]

    second = skillmill(["run", str(SAMPLES), "--library", str(tmp_path / "skills"), "--progress", "lines"], env,
                       timeout=120)
    assert second.returncode == 75, second.stderr
    assert second.stderr.startswith(f"Error: another skillmill run is in progress (pid {first.process.pid} ")
    assert not re.search(STARTING, second.stderr, re.M)

    done = first.until(None)
    assert done.code == 0, done.stderr[-5:]
    answered = [line for line in done.stderr if "the Prefect server answered after" in line]
    assert len(answered) == 1 and done.stderr.index(answered[0]) < done.stderr.index("skillmill: discover: started")
    assert done.summary["server"] == "temporary" and done.summary["server_s"] > 0
    assert wait_gone(tmp_path / "home") == []  # the temporary server went with the run


# -- the shared local server ---------------------------------------------------------------------
@pytest.mark.slow
def test_back_to_back_runs_share_one_local_server_and_report_its_start_apart(tmp_path: Path,
                                                                             stop_servers: list[Path]) -> None:
    """The first run starts the server (on a terminal: no telemetry file may appear), the second reuses it;
    both report the server's time apart from the flow's, and Prefect's files live in SKILLMILL_HOME."""
    env = user_env(tmp_path, SKILLMILL_SERVER_IDLE_MINUTES="5")
    prefect_home = tmp_path / "home" / "prefect"
    stop_servers.append(prefect_home)
    library = tmp_path / "skills"

    code, output = on_a_terminal(["run", str(SAMPLES), "--library", str(library), "--json", "--progress", "lines"],
                                 env)
    assert code == 0, output
    assert [str(p.relative_to(tmp_path)) for p in tmp_path.rglob(".sdk_telemetry")] == []  # no telemetry file
    # Prefect's database and files under SKILLMILL_HOME, nothing in ~/.prefect
    assert (prefect_home / "prefect.db").is_file() and not (tmp_path / "user" / ".prefect").exists()
    lines = output.splitlines()
    assert lines[0] == "skillmill: starting a local Prefect server (it stays up 5 min after the run, for the next one) ..."
    first = summary_of(output)
    info = shared_server.read_state(prefect_home)
    assert info is not None and shared_server.alive(info["pid"])
    assert f"skillmill: the Prefect server answered after {first['server_s']:.1f} s, at {info['url']} " \
           f"(pid {info['pid']})" in lines
    assert first["server"] == "started" and first["server_s"] > 0
    assert first["wall_s"] >= first["server_s"] + first["duration_s"]
    assert (f"Took {first['duration_s']:.1f} s (+ {first['server_s']:.1f} s starting the local Prefect server; "
            f"{first['wall_s']:.1f} s in all)") in lines

    done = skillmill(["run", str(SAMPLES), "--library", str(library), "--json", "--progress", "lines"], env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(f"skillmill: using the local Prefect server at {info['url']} (pid {info['pid']}, up ")
    second = summary_of(done.stdout)
    assert second["server"] == "reused" and second["server_s"] < first["server_s"]
    assert second["process"] == "warm"  # forked from the warm process the first run left (tests/test_warm.py)
    assert f"Took {second['duration_s']:.1f} s (the local Prefect server was up; run by the warm process; " \
           f"{second['wall_s']:.1f} s in all)" in done.stdout
    assert shared_server.read_state(prefect_home)["pid"] == info["pid"]

    table = skillmill(["runs"], env).stdout.splitlines()
    assert table[0].split()[:5] == ["started", "status", "took", "server", "total"]
    assert table[1].split()[5] == "up" and table[2].split()[5] == f"+{first['server_s']:.1f}"

    assert shared_server.stop_shared(prefect_home) == info["pid"]
    assert not shared_server.alive(info["pid"]) and shared_server.read_state(prefect_home) is None
    for pid in warm.pids(tmp_path / "home"):
        warm.stop(pid)


@pytest.mark.slow
def test_a_run_killed_with_kill_9_leaves_only_the_idle_server_which_then_stops(tmp_path: Path,
                                                                                stop_servers: list[Path]) -> None:
    idle_s = 15
    env = user_env(tmp_path, SKILLMILL_SERVER_IDLE_MINUTES=str(idle_s / 60))
    home, prefect_home = tmp_path / "home", tmp_path / "home" / "prefect"
    stop_servers.append(prefect_home)
    killed = Run([str(SAMPLES), "--library", str(tmp_path / "skills")], env, tmp_path / "killed.out") \
        .until(r"discover: started")
    assert killed.code == -9, killed.stderr
    info = shared_server.read_state(prefect_home)
    assert info is not None and shared_server.alive(info["pid"])  # it outlives the run ...
    assert [p.pid for p in processes_of(home)] == [info["pid"]]   # ... alone
    clock = time.monotonic()
    assert wait_gone(home, timeout=idle_s + 90) == []  # ... and stops by itself once idle
    print(f"\nthe idle server stopped {time.monotonic() - clock:.1f} s after the run was killed (idle time {idle_s} s)")
    assert time.monotonic() - clock >= idle_s - 6  # idle from the kill (polled), not from the start of the run
    assert shared_server.read_state(prefect_home) is None


def test_a_server_whose_home_is_deleted_stops(tmp_path: Path) -> None:
    """`make run` starts from an empty home: the server of the last run must not live on without its database."""
    folder = tmp_path / "prefect"
    folder.mkdir()
    server = shared_server._start(folder, 600.0)
    try:
        server.wait(timeout=180)
        shutil.rmtree(folder)
        deadline = time.monotonic() + 60
        while shared_server.alive(server.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not shared_server.alive(server.pid), "the server outlived its deleted home"
    finally:
        shared_server.stop(server.pid)


def test_a_stale_or_foreign_state_file_is_removed_not_trusted(tmp_path: Path) -> None:
    """A pid that is gone, or now another program's, is no server of ours."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for pid in (dead.pid, os.getpid()):  # gone; alive but not a server
        (tmp_path / shared_server.STATE).write_text(json.dumps({"protocol": 1, "pid": pid, "url": "http://x/api"}))
        assert not shared_server.alive(pid)
        assert shared_server._find(tmp_path, say=lambda _: None, timeout=60) is None
        assert not (tmp_path / shared_server.STATE).exists()


def test_a_users_own_prefect_api_url_wins_without_importing_prefect(tmp_path: Path) -> None:
    """From the environment, or the active profile of ~/.prefect/profiles.toml (kept when PREFECT_HOME moves)."""
    user = tmp_path / "user"
    (user / ".prefect").mkdir(parents=True)
    (user / ".prefect" / "profiles.toml").write_text('active = "local"\n[profiles.local]\n'
                                                     'PREFECT_API_URL = "http://127.0.0.1:4200/api"\n')
    probe = ("from pipeline import settings; settings.apply_offline_env()\n"
             "from pipeline.execution import server; import json, os, sys\n"
             "print(json.dumps([*server.configured(), 'prefect' in sys.modules, os.environ['PREFECT_HOME']]))")
    env = user_env(tmp_path)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path,
                          check=True)
    url, origin, imported, prefect_home = json.loads(done.stdout)
    assert (url, imported, prefect_home) == ("http://127.0.0.1:4200/api", False, str(tmp_path / "home" / "prefect"))
    assert origin == f"PREFECT_API_URL of Prefect profile 'local' in {user / '.prefect' / 'profiles.toml'}"
    env["PREFECT_API_URL"] = "http://10.0.0.1:4200/api"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path,
                          check=True)
    assert json.loads(done.stdout)[:3] == ["http://10.0.0.1:4200/api", "PREFECT_API_URL", False]
    env.pop("PREFECT_API_URL")
    (user / ".prefect" / "profiles.toml").write_text('active = "ephemeral"\n[profiles.ephemeral]\n')
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path,
                          check=True)
    assert json.loads(done.stdout)[:3] == [None, "", False]


PROBE_FIRST_LINE = """
import os, sys, click
from pipeline.cli import main

def echo(message=None, *args, **kwargs):
    # the run's first line, and whether Prefect (~2 s to import) was loaded before it
    print(repr(message), "prefect" in sys.modules, flush=True)
    os._exit(0)

click.echo = echo
main(sys.argv[1:])
"""


@pytest.mark.parametrize("server", ["temporary", "configured"])
def test_the_first_line_comes_before_prefect_is_imported(server: str, tmp_path: Path) -> None:
    """What makes the first line fast: it is said before the run imports Prefect (or the flow)."""
    extra = ({"SKILLMILL_SERVER_IDLE_MINUTES": "0"} if server == "temporary"  # its server dies with the probe
             else {"PREFECT_API_URL": "http://127.0.0.1:9/api"})
    done = subprocess.run([sys.executable, "-c", PROBE_FIRST_LINE, "run", str(SAMPLES), "--progress", "lines"],
                          capture_output=True, text=True, env=user_env(tmp_path, **extra), cwd=ROOT, timeout=120)
    said = {"temporary": "'skillmill: starting a temporary Prefect server for this run ...'",
            "configured": "'skillmill: using the Prefect server at http://127.0.0.1:9/api (PREFECT_API_URL)'"}
    assert done.stdout == f"{said[server]} False\n", done.stderr


@pytest.mark.slow
def test_a_run_with_the_users_prefect_api_url_uses_that_server_and_starts_none(
        tmp_path: Path, prefect_server: None) -> None:
    from prefect.settings import PREFECT_API_URL

    url = str(PREFECT_API_URL.value())
    env = user_env(tmp_path, PREFECT_API_URL=url, SKILLMILL_SERVER_IDLE_MINUTES="5")
    done = skillmill(["run", str(SAMPLES / "aider"), "--library", str(tmp_path / "skills"), "--json",
                      "--progress", "lines"], env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == f"skillmill: using the Prefect server at {url} (PREFECT_API_URL)"
    summary = summary_of(done.stdout)
    assert (summary["server"], summary["server_s"]) == ("configured", 0)
    assert f"Took {summary['duration_s']:.1f} s (Prefect server from PREFECT_API_URL; " in done.stdout
    prefect_home = tmp_path / "home" / "prefect"  # no server of ours: no database, no state file
    assert not (prefect_home / "prefect.db").exists() and shared_server.read_state(prefect_home) is None
    assert processes_of(tmp_path / "home") == []


def test_prefect_home_is_under_skillmill_home_unless_the_user_set_it(tmp_path: Path) -> None:
    """Where Prefect itself (its settings, once imported) puts its database and files."""
    probe = ("from pipeline.execution.prefect_env import prepare; prepare()\n"
             "from prefect.settings import PREFECT_HOME; print(PREFECT_HOME.value())")
    env = user_env(tmp_path)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path,
                          check=True)
    assert done.stdout.strip() == str(tmp_path / "home" / "prefect")
    assert (tmp_path / "home" / "prefect").is_dir() and not (tmp_path / "user" / ".prefect").exists()
    env["PREFECT_HOME"] = str(tmp_path / "mine")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path,
                          check=True)
    assert done.stdout.strip() == str(tmp_path / "mine")


def test_a_folder_path_through_a_file_is_refused_before_any_server(tmp_path: Path) -> None:
    """Not a permission problem, so not "read-only": which path, what is in the way, how to choose another."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where a folder should be\n")
    env = user_env(tmp_path)
    done = skillmill(["run", str(SAMPLES), "--library", str(blocker / "skills"), "--progress", "lines"], env)
    assert (done.returncode, done.stderr.splitlines()) == (2, [
        f"Error: the library {blocker / 'skills'} cannot be created: {blocker} is not a folder",
        "  hint: pass --library DIR (or set SKILLMILL_LIBRARY) with a folder you can write"])
    no_server_was_started(tmp_path / "home" / "prefect", done.stderr)
    env["PREFECT_HOME"] = str(blocker / "prefect")
    done = skillmill(["run", str(SAMPLES), "--library", str(tmp_path / "skills"), "--progress", "lines"], env)
    assert (done.returncode, done.stderr.splitlines()) == (2, [
        f"Error: PREFECT_HOME {blocker / 'prefect'} cannot be created: {blocker} is not a folder",
        "  hint: set PREFECT_HOME to a folder you can write"])
