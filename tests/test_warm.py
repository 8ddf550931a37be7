"""The warm process of `skillmill run` (``pipeline.execution.warm``): a run after a cold one is forked from
a process with Prefect imported, and must be indistinguishable from a cold run but for its time.

Real `skillmill run` processes as a user starts them (``tests.test_startup.user_env``), all on one
shared local Prefect server (one ``PREFECT_HOME`` for the module), each test with its own
``SKILLMILL_HOME`` -- so its own warm process. Every warm process a test leaves is stopped by pid.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from pipeline import private
from pipeline.execution import shared_server, warm
from pipeline.execution.lock import run_lock
from tests.conftest import ROOT, SAMPLES
from tests.run_support import Run, warm_processes
from tests.test_startup import on_a_terminal, summary_of, user_env

pytestmark = pytest.mark.slow
VOLATILE = {"run_id", "duration_s", "server", "server_s", "wall_s", "process", "library"}


@pytest.fixture(scope="module")
def prefect_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("warm-prefect")
    yield folder
    shared_server.stop_shared(folder)


@pytest.fixture
def homes(tmp_path: Path) -> Iterator[list[Path]]:
    """SKILLMILL_HOMEs whose warm process the test may leave: stopped (by pid) at the end."""
    found: list[Path] = []
    yield found
    for home in found:
        for pid in warm.pids(home):
            warm.stop(pid)
        assert warm.pids(home) == []


def env_for(tmp: Path, name: str, prefect_home: Path, homes: list[Path], **extra: str) -> dict[str, str]:
    (tmp / name).mkdir(exist_ok=True)
    env = {**user_env(tmp / name, PREFECT_HOME=str(prefect_home), SKILLMILL_SERVER_IDLE_MINUTES="5"), **extra}
    homes.append(Path(env["SKILLMILL_HOME"]))
    return env


def skillmill(args: list[str], env: dict[str, str], cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600, stdin=subprocess.DEVNULL)


def primed(env: dict[str, str], cwd: Path = ROOT) -> psutil.Process:
    """A no-op run (an empty folder: nothing read), which leaves the warm process for this setup."""
    empty = Path(env["HOME"]) / "empty"
    empty.mkdir(exist_ok=True)
    done = skillmill(["run", str(empty), "--json"], env, cwd)
    assert done.returncode == 0, done.stderr
    assert summary_of(done.stdout)["process"] == "new"
    deadline = time.monotonic() + 30
    while not (found := warm_processes(Path(env["SKILLMILL_HOME"]))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(found) == 1, "the cold run left no warm process"
    return found[0]


def without(summary: dict, keys: set[str]) -> dict:
    return {k: v for k, v in summary.items() if k not in keys}


def report_lines(stdout: str, library: Path) -> list[str]:
    """The printed report, but for its time and where the library is."""
    return [line.replace(str(library), "LIBRARY") for line in stdout.splitlines()[:-1] if not line.startswith("Took ")]


def test_a_run_after_a_cold_one_is_run_by_the_warm_process_with_the_same_result(
        tmp_path: Path, prefect_home: Path, homes: list[Path]) -> None:
    cold_env = env_for(tmp_path, "cold", prefect_home, homes, SKILLMILL_WARM="0")
    cold = skillmill(["run", str(SAMPLES), "--library", str(tmp_path / "lib-cold"), "--json"], cold_env)
    assert cold.returncode == 0, cold.stderr
    assert summary_of(cold.stdout)["process"] == "new" and warm_processes(Path(cold_env["SKILLMILL_HOME"])) == []

    warm_env = env_for(tmp_path, "warm", prefect_home, homes)
    keeper = primed(warm_env)
    done = skillmill(["run", str(SAMPLES), "--library", str(tmp_path / "lib-warm"), "--json"], warm_env)
    assert done.returncode == 0, done.stderr
    summary, expected = summary_of(done.stdout), summary_of(cold.stdout)
    assert summary["process"] == "warm" and summary["server"] == "reused"
    assert summary["wall_s"] >= summary["duration_s"]
    assert without(summary, VOLATILE) == without(expected, VOLATILE)
    assert report_lines(done.stdout, tmp_path / "lib-warm") == report_lines(cold.stdout, tmp_path / "lib-cold")
    assert re.search(r"^Took [\d.]+ s \(the local Prefect server was up; run by the warm process; [\d.]+ s in all\)$",
                     done.stdout, re.M), done.stdout
    assert done.stderr.startswith("skillmill: using the local Prefect server at ")

    def files(library: Path) -> dict[str, str]:
        return {str(p.relative_to(library)): p.read_text() for p in sorted(library.rglob("*")) if p.is_file()}

    assert files(tmp_path / "lib-warm") and files(tmp_path / "lib-warm").keys() == files(tmp_path / "lib-cold").keys()
    assert warm_processes(Path(warm_env["SKILLMILL_HOME"])) == [keeper]  # one, and it stays for the next run
    assert _children_gone(keeper)  # the run's forks are gone (reaped)


def test_on_a_terminal_the_warm_run_draws_its_progress_there(tmp_path: Path, prefect_home: Path,
                                                              homes: list[Path]) -> None:
    """The runner writes to the client's own terminal (its fds, passed over the socket): a terminal it is."""
    env = env_for(tmp_path, "user", prefect_home, homes)
    primed(env)
    code, output = on_a_terminal(["run", str(SAMPLES), "--library", str(tmp_path / "skills")], env)
    assert code == 0, output
    assert "run by the warm process" in output
    assert "\x1b[?25l" in output and "\x1b[2K" in output  # a live progress bar (cursor hidden, line redrawn) ...
    assert re.search(r"parse +\S*━", output)  # ... with its stages: only drawn on a terminal
    assert [str(p.relative_to(tmp_path)) for p in tmp_path.rglob(".sdk_telemetry")] == []


def test_usage_errors_and_a_held_lock_answer_as_a_cold_run_does(tmp_path: Path, prefect_home: Path,
                                                               homes: list[Path]) -> None:
    env = env_for(tmp_path, "user", prefect_home, homes)
    primed(env)
    cold_env = {**env, "SKILLMILL_WARM": "0"}
    missing = ["run", str(tmp_path / "nowhere"), "--json"]
    warm_done, cold_done = skillmill(missing, env), skillmill(missing, cold_env)
    assert warm_done.returncode == cold_done.returncode == 2
    assert warm_done.stderr == cold_done.stderr and "nowhere" in warm_done.stderr

    with run_lock(Path(env["SKILLMILL_HOME"])):
        held = skillmill(["run", str(SAMPLES)], env)
    assert held.returncode == 75, held.stderr
    assert "another skillmill run" in held.stderr.lower() or "in progress" in held.stderr, held.stderr

    usage = skillmill(["run", "--no-such-flag"], env)
    assert usage.returncode == 2 and usage.stderr.startswith("Usage: python -m pipeline run "), usage.stderr


def test_ctrl_c_and_kill_9_reach_the_run_in_the_warm_process(tmp_path: Path, prefect_home: Path, homes: list[Path],
                                                             corpus: Path) -> None:
    env = env_for(tmp_path, "user", prefect_home, homes)
    home = Path(env["SKILLMILL_HOME"])
    keeper = primed(env)

    interrupted = Run([str(corpus), "--library", str(tmp_path / "skills")], env, tmp_path / "int.out", ctrl_c=True)
    assert interrupted.until(r"distill: started", kill=False) is None
    interrupted.process.send_signal(signal.SIGINT)
    outcome = interrupted.until(None)
    assert outcome.code == 1 and "Aborted!" in outcome.stderr, outcome.stderr[-5:]  # as a cold run's Ctrl-C
    assert _children_gone(keeper)

    killed = Run([str(corpus), "--library", str(tmp_path / "skills")], env, tmp_path / "kill.out") \
        .until(r"distill: started")
    assert killed.code == -9
    assert _children_gone(keeper)  # the runner went with its client

    done = Run([str(corpus), "--library", str(tmp_path / "skills")], env, tmp_path / "done.out").until(None)
    assert done.code in (0, 1), done.stderr[-5:]  # the lock is free, and the run completes the work
    assert done.summary["process"] == "warm" and done.summary["trajectories"]["seen"] > 100
    assert warm_processes(home) == [keeper]


def test_the_clients_umask_and_ignored_hangup_hold_in_the_warm_run(tmp_path: Path, prefect_home: Path,
                                                                   homes: list[Path], corpus: Path) -> None:
    """`umask 077; nohup skillmill run &`: folders made owner-only, and the hang-up ignored, as a cold run would."""
    env = env_for(tmp_path, "user", prefect_home, homes)
    primed(env)

    def as_nohup_with_umask_077() -> None:
        os.umask(0o077)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    library = tmp_path / "skills"
    process = subprocess.Popen([sys.executable, "-m", "pipeline", "run", "--progress", "lines", "--json", str(corpus),
                                "--library", str(library)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env, cwd=ROOT, preexec_fn=as_nohup_with_umask_077)
    assert process.stderr is not None
    for line in process.stderr:
        if "distill: started" in line:
            process.send_signal(signal.SIGHUP)
            break
    stdout, _ = process.communicate(timeout=600)
    assert process.returncode in (0, 1)
    assert summary_of(stdout)["process"] == "warm"
    made = [p for p in library.rglob("*") if p.is_dir()]
    assert made and {p.stat().st_mode & 0o777 for p in made} == {0o700}


def test_a_socket_another_user_made_is_never_handed_anything(tmp_path: Path, prefect_home: Path,
                                                             homes: list[Path]) -> None:
    """The socket lives in the owner-only home (issue 23.4: an abstract name could be taken by anyone once the
    warm process idled): another account cannot make it; and the client checks who listens before it sends."""
    if os.geteuid() != 0:
        pytest.skip("needs root to listen as another user")
    env = env_for(tmp_path, "user", prefect_home, homes)
    name = warm.address(warm.key(env, ROOT), env)
    Path(env["SKILLMILL_HOME"]).mkdir(mode=0o700, exist_ok=True)
    read, write = os.pipe()
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # as nobody: take the name, and report what a client sends
        try:
            os.setgid(65534)
            os.setuid(65534)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                try:
                    with private.socket_address(name) as at:
                        sock.bind(at)
                except PermissionError:  # the owner-only home: it cannot make the socket at all
                    os.write(ready_write, b"!")
                    os.write(write, b"nothing")
                    os._exit(0)
                sock.listen(1)
                sock.settimeout(120)
                os.write(ready_write, b"!")
                conn, _ = sock.accept()
                conn.settimeout(30)
                got = _answer(conn)
                os.write(write, b"sent " + repr(got[:20]).encode() if got else b"nothing")
        except BaseException as exc:  # noqa: BLE001 -- said to the test
            os.write(write, repr(exc).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.close(ready_write)
    assert os.read(ready_read, 1) == b"!"
    empty = Path(env["HOME"]) / "empty"
    empty.mkdir()
    done = skillmill(["run", str(empty), "--json"], env)
    os.waitpid(pid, 0)
    assert os.read(read, 200) == b"nothing"
    assert done.returncode == 0 and summary_of(done.stdout)["process"] == "new"


def _children_gone(keeper: psutil.Process, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while keeper.children(recursive=True) and time.monotonic() < deadline:
        time.sleep(0.1)
    return keeper.children(recursive=True) == []


def test_changed_code_is_never_run_warm(tmp_path: Path, prefect_home: Path, homes: list[Path]) -> None:
    """A warm process whose code changed (an upgrade, a `git pull`) refuses the run, which goes on cold, and exits."""
    code = tmp_path / "code"
    for package in ("pipeline", "flows"):
        shutil.copytree(ROOT / package, code / package, ignore=shutil.ignore_patterns("__pycache__"))
    env = env_for(tmp_path, "user", prefect_home, homes, PYTHONPATH=str(code))
    old = primed(env, cwd=code)
    empty = Path(env["HOME"]) / "empty"
    assert summary_of(skillmill(["run", str(empty), "--json"], env, cwd=code).stdout)["process"] == "warm"
    summary_py = code / "pipeline" / "summary.py"
    os.utime(summary_py, ns=(summary_py.stat().st_atime_ns, summary_py.stat().st_mtime_ns + 10**9))

    done = skillmill(["run", str(empty), "--json"], env, cwd=code)
    assert done.returncode == 0, done.stderr
    assert summary_of(done.stdout)["process"] == "new"
    old.wait(timeout=30)  # it exits
    deadline = time.monotonic() + 30
    while not (new := warm_processes(Path(env["SKILLMILL_HOME"]))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [p.pid for p in new] != [old.pid] and len(new) == 1  # the cold run left a fresh one
    again = skillmill(["run", str(empty), "--json"], env, cwd=code)
    assert summary_of(again.stdout)["process"] == "warm"


def test_verbose_or_another_environment_run_cold_a_prefect_config_here_does_not(tmp_path: Path, prefect_home: Path,
                                                                     homes: list[Path]) -> None:
    env = env_for(tmp_path, "user", prefect_home, homes)
    primed(env)
    empty = Path(env["HOME"]) / "empty"
    verbose = skillmill(["run", str(empty), "--json", "-v"], env)
    assert summary_of(verbose.stdout)["process"] == "new"  # Prefect's logging level is set when it is imported
    other = skillmill(["run", str(empty), "--json"], {**env, "PREFECT_LOGGING_LEVEL": "DEBUG"})
    assert summary_of(other.stdout)["process"] == "new"
    here = tmp_path / "project"
    here.mkdir()
    (here / "pyproject.toml").write_text('[tool.prefect]\nlogging.level = "DEBUG"\n')
    configured = skillmill(["run", str(empty), "--json"], env, cwd=here)
    assert configured.returncode == 0, configured.stderr
    # a run works in the home: the folder it starts in configures nothing (issue 23: a checkout's prefect.toml
    # could name a logging config that runs code), so the warm process may take it
    assert summary_of(configured.stdout)["process"] == "warm"
    assert warm.why_not(["run"], env, here) is None
    assert warm.why_not(["run", "x"], {**env, "SKILLMILL_WARM": "0"}, here.parent / "user") == "SKILLMILL_WARM=0"
    same = skillmill(["run", str(empty), "--json"], env)
    assert summary_of(same.stdout)["process"] == "warm"


def test_it_stops_when_idle_or_when_its_home_is_deleted(tmp_path: Path, prefect_home: Path,
                                                       homes: list[Path]) -> None:
    idle = env_for(tmp_path, "idle", prefect_home, homes, SKILLMILL_SERVER_IDLE_MINUTES="0.1")
    keeper = primed(idle)
    started = time.monotonic()
    keeper.wait(timeout=60)
    assert time.monotonic() - started >= 6 - 2 * warm.POLL_S - 1  # idle 6 s, polled

    deleted = env_for(tmp_path, "deleted", prefect_home, homes)
    keeper = primed(deleted)
    shutil.rmtree(deleted["SKILLMILL_HOME"])
    keeper.wait(timeout=30)


def test_another_users_connection_is_refused(tmp_path: Path, prefect_home: Path, homes: list[Path]) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to connect as another user")
    env = env_for(tmp_path, "user", prefect_home, homes)
    keeper = primed(env)
    name = warm.address(warm.key(env, ROOT), env)  # in the owner-only home
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # as nobody: connect and send a well-formed request
        try:
            os.setgid(65534)
            os.setuid(65534)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(20)
                try:
                    with private.socket_address(name) as at:
                        sock.connect(at)
                except PermissionError:  # the home is closed to it: it never reaches the socket
                    os.write(write, b"refused")
                    os._exit(0)
                request = json.dumps({"key": warm.key(env, ROOT), "argv": ["skillmill", "run"], "prog": "skillmill",
                                      "env": env, "cwd": "/", "started": 0.0}).encode()
                socket.send_fds(sock, [struct.pack(">I", len(request))], [0, 1, 2])
                sock.sendall(request)
                os.write(write, b"answered" if _answer(sock) else b"refused")
        except BaseException as exc:  # noqa: BLE001 -- said to the test
            os.write(write, repr(exc).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 100) == b"refused"
    os.close(read)
    assert keeper.children() == [] and keeper.is_running()


def test_the_wire_refuses_a_request_that_is_not_one(tmp_path: Path, prefect_home: Path, homes: list[Path]) -> None:
    env = env_for(tmp_path, "user", prefect_home, homes)
    keeper = primed(env)
    assert summary_of(skillmill(["run", str(Path(env["HOME"]) / "empty"), "--json"], env).stdout)["process"] == "warm"
    open_files = keeper.num_fds()
    wrong_key = json.dumps({"key": "0" * 32, "argv": ["skillmill", "run"], "env": {}, "cwd": "/"}).encode()
    for payload in (b"\x00\x00\x00\x05[1,2]", b"\xff\xff\xff\xffxx", b"\x00\x00\x00\x02{}",
                    struct.pack(">I", len(wrong_key)) + wrong_key, b"\x00\x00\x00\x09[[[[[[[[[" + b"x" * 3):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(20)
            with private.socket_address(warm.address(warm.key(env, ROOT), env)) as at:
                sock.connect(at)
            socket.send_fds(sock, [payload[:4]], [0, 1, 2])
            try:
                sock.sendall(payload[4:])
            except (BrokenPipeError, ConnectionResetError):  # refused on the length alone: hung up already
                continue
            assert not _answer(sock)
    assert _children_gone(keeper) and keeper.is_running()  # nothing forked (the warm run's fork reaped)
    assert keeper.num_fds() == open_files  # the descriptors each request carried were closed
    empty = Path(env["HOME"]) / "empty"
    assert summary_of(skillmill(["run", str(empty), "--json"], env).stdout)["process"] == "warm"


def _answer(sock: socket.socket) -> bytes:
    """What the warm process said before closing the connection (nothing: it refused)."""
    try:
        return sock.recv(100)
    except ConnectionResetError:  # closed with our request unread
        return b""
