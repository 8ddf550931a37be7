"""The nightly flow on a real Prefect server (``prefect server start``, SQLite), as the README documents it.

Two ways to run it on a schedule, each end to end in subprocesses:

* teams: a process work pool, ``prefect deploy`` of ``flows/nightly.py:nightly`` from this
  repository, ``prefect worker start``, ``prefect deployment run`` with parameters;
* one machine: ``skillmill schedule``, which starts the server itself and serves the flow.

Each waits for the flow run to complete, then checks the skills, the state database's ``runs``
row and the report artifact on the server. Every process is started in its own session and
stopped by its process group (never by name). Timeouts are generous: the machine has 2 busy cores.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pipeline.index.state import StateDB
from pipeline.runs import ARTIFACT_KEY
from pipeline.schedule import stop_process_group
from tests.conftest import ROOT, SAMPLES

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
STARTUP_S = 240  # a cold server migrates its SQLite database first
RUN_S = 420
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def base_env(tmp: Path) -> dict[str, str]:
    """This checkout on the path, Prefect and skillmill state in ``tmp``, nothing from the test session."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PREFECT_", "SKILLMILL_")) and k not in ("PYTHONPATH",)}
    env.update(PYTHONPATH=str(ROOT), PREFECT_HOME=str(tmp / "prefect-home"), SKILLMILL_HOME=str(tmp / "home"),
               DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false", LITELLM_LOCAL_MODEL_COST_MAP="True",
               PREFECT_LOGGING_LEVEL="INFO", PYTHONUNBUFFERED="1")
    return env


class Processes:
    """Subprocesses of one test, each in its own session with its output in a log file; all stopped at the end."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.started: list[tuple[subprocess.Popen, Path]] = []

    def start(self, name: str, args: list[str], env: dict[str, str], cwd: Path = ROOT) -> subprocess.Popen:
        log = self.tmp / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(args, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        self.started.append((process, log))
        return process

    def logs(self) -> str:
        return "\n".join(f"--- {log.name} (exit {p.poll()}) ---\n{log.read_text(errors='replace')[-3000:]}"
                         for p, log in self.started)

    def stop_all(self) -> None:
        for process, _ in reversed(self.started):
            stop_process_group(process, grace=20)


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    procs = Processes(tmp_path)
    try:
        yield procs
    finally:
        procs.stop_all()


def wait_for(what: str, check: Callable[[], Any], timeout: float, procs: Processes, every: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if (result := check()) is not None and result is not False:
                return result
        time.sleep(every)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}\n{procs.logs()}")


#: The credential of a server skillmill started (issue 23.6: its API asks for it), for the calls below.
AUTH: dict[str, tuple[str, str]] = {}


@pytest.fixture(autouse=True)
def no_credential() -> Iterator[None]:
    AUTH.clear()
    yield
    AUTH.clear()


def use_credential(prefect_home: Path) -> None:
    from pipeline.execution import api_auth

    user, _, password = (prefect_home / api_auth.FILE).read_text().strip().partition(":")
    AUTH["auth"] = (user, password)


def healthy(api: str) -> bool:
    return httpx.get(f"{api}/health", timeout=5).status_code == 200


def flow_run_state(api: str, run_id: str) -> str | None:
    state = httpx.get(f"{api}/flow_runs/{run_id}", timeout=10, auth=AUTH.get("auth")).json().get("state_type")
    return state if state in TERMINAL else None


def run_artifacts(api: str, run_id: str) -> list[dict]:
    body = {"artifacts": {"key": {"any_": [ARTIFACT_KEY]}}, "flow_runs": {"id": {"any_": [run_id]}}}
    return httpx.post(f"{api}/artifacts/filter", json=body, timeout=10, auth=AUTH.get("auth")).json()


def check_the_run(api: str, run_id: str, home: Path, library: Path, procs: Processes) -> None:
    """Skills written, the run recorded in the state database, its report on the server."""
    names = sorted(p.parent.name for p in library.rglob("SKILL.md"))
    assert {"working-in-django", "working-in-flask"} <= set(names), procs.logs()
    with StateDB(home / "skillmill.duckdb") as state:
        row = state.con.execute("SELECT exit_code, summary FROM runs WHERE id = ?", [run_id]).fetchone()
    assert row is not None, procs.logs()
    summary = json.loads(row[1])
    n = sample_trajectories()
    assert row[0] == 0 and summary["trajectories"]["seen"] == n and summary["trajectories"]["new"] == n
    assert set(summary["written"]) == set(names)
    artifacts = run_artifacts(api, run_id)
    assert len(artifacts) == 1 and artifacts[0]["type"] == "markdown"
    assert f"| {n} | {n} | 0 | 0 | {summary['skills']['proposed']} |" in artifacts[0]["data"]


def sample_trajectories() -> int:
    """How many trajectories the samples hold (aider gives one per request)."""
    from pipeline.ingest import ingest_file, iter_files

    return sum(len(ingest_file(path)[1]) for path in iter_files([SAMPLES]))


def test_a_team_deployment_on_a_work_pool_runs_on_a_worker(tmp_path: Path, processes: Processes) -> None:
    """README "Scheduled runs", for teams: server, work pool, deployment from this repository, worker, run."""
    env = base_env(tmp_path)
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    clock = time.monotonic()
    processes.start("server", [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                    env)
    wait_for("prefect server start", lambda: healthy(api), STARTUP_S, processes)
    server_s = time.monotonic() - clock
    env["PREFECT_API_URL"] = api

    def prefect(*args: str) -> str:
        done = subprocess.run([str(BIN / "prefect"), *args], env=env, cwd=ROOT, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, f"prefect {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    prefect("work-pool", "create", "skillmill", "--type", "process")
    prefect("--no-prompt", "deploy", "flows/nightly.py:nightly", "--name", "team-nightly", "--pool", "skillmill",
            "--cron", "0 2 * * *", "--timezone", "UTC", "--param", "paths=[]")
    deployment = httpx.get(f"{api}/deployments/name/skillmill-nightly/team-nightly", timeout=10,
                           auth=AUTH.get("auth")).json()
    assert deployment["work_pool_name"] == "skillmill" and deployment["entrypoint"] == "flows/nightly.py:nightly"
    assert [s["schedule"]["cron"] for s in deployment["schedules"]] == ["0 2 * * *"]
    assert deployment["parameters"] == {"paths": []}  # scheduled runs read the places `skillmill sources` lists
    assert deployment["pull_steps"][0]["prefect.deployments.steps.set_working_directory"]["directory"] == str(ROOT)

    processes.start("worker", [str(BIN / "prefect"), "worker", "start", "--pool", "skillmill"],
                    {**env, "PREFECT_WORKER_QUERY_SECONDS": "2"})
    library = tmp_path / "team-skills"
    output = prefect("deployment", "run", "skillmill-nightly/team-nightly", "--param", f"paths={json.dumps([str(SAMPLES)])}",
                     "--param", f"library={json.dumps(str(library))}")
    run_id = re.search(r"UUID: ([0-9a-f-]{36})", output)
    assert run_id, output
    clock = time.monotonic()
    state = wait_for("the flow run on the worker", lambda: flow_run_state(api, run_id[1]), RUN_S, processes)
    assert state == "COMPLETED", processes.logs()
    run_s = time.monotonic() - clock
    check_the_run(api, run_id[1], tmp_path / "home", library, processes)
    print(f"\nreal Prefect server healthy after {server_s:.1f} s; triggered run completed on the worker after "
          f"{run_s:.1f} s")


def test_skillmill_schedule_starts_a_local_server_and_serves_the_cron_schedule(tmp_path: Path,
                                                                             processes: Processes) -> None:
    """One machine: `skillmill schedule` with no PREFECT_API_URL starts the server, serves, and cleans up."""
    env = base_env(tmp_path)
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env.update(PREFECT_SERVER_API_PORT=str(port), PREFECT_RUNNER_POLL_FREQUENCY="2", HOME=str(tmp_path / "user"))
    home, library = tmp_path / "home", tmp_path / "skills"
    home.mkdir()
    (home / "skillmill.toml").write_text(f'library = "{library}"\n[sources]\npaths = ["{SAMPLES}"]\n'
                                         'defaults = false\ndefer_minutes = 0\n'
                                         '[schedule]\ncron = "0 2 * * *"\ntimezone = "Europe/Berlin"\n')
    serving = processes.start("schedule", [sys.executable, "-m", "pipeline", "schedule"], env, cwd=tmp_path)
    pid_file = home / "logs" / "prefect-server.pid"
    server_pid = wait_for("the server's pid file", lambda: pid_file.is_file() and int(pid_file.read_text()),
                          STARTUP_S, processes)
    use_credential(Path(env["PREFECT_HOME"]))
    try:
        def served() -> dict | None:
            response = httpx.get(f"{api}/deployments/name/skillmill-nightly/nightly", timeout=5, auth=AUTH.get("auth"))
            return response.json() if response.status_code == 200 else None

        deployment = wait_for("the served deployment", served, STARTUP_S, processes)
        assert httpx.post(f"{api}/flow_runs/filter", json={}, timeout=30).status_code == 401  # not without it
        assert deployment["entrypoint"] == "flows.nightly.nightly"
        assert deployment["parameters"] == {"paths": [], "library": str(library)}
        assert [s["schedule"] for s in deployment["schedules"]] == [
            {"cron": "0 2 * * *", "timezone": "Europe/Berlin", "day_or": True}]

        def scheduled() -> list[str] | None:  # the server's scheduler has put the next nights on the calendar
            body = {"deployments": {"id": {"any_": [deployment["id"]]}}, "flow_runs": {"state": {"type": {
                "any_": ["SCHEDULED"]}}}}
            runs = httpx.post(f"{api}/flow_runs/filter", json=body, timeout=10, auth=AUTH.get("auth")).json()
            return sorted(r["expected_start_time"] for r in runs) or None

        upcoming = wait_for("scheduled runs", scheduled, 120, processes, every=2)
        from datetime import datetime
        from zoneinfo import ZoneInfo

        local = [datetime.fromisoformat(t).astimezone(ZoneInfo("Europe/Berlin")) for t in upcoming]
        assert all((t.hour, t.minute) == (2, 0) for t in local) and len({t.date() for t in local}) == len(local)

        # Do not wait for 02:00: run the same deployment now; the served runner picks it up.
        run_id = httpx.post(f"{api}/deployments/{deployment['id']}/create_flow_run", json={}, timeout=10,
                            auth=AUTH.get("auth")).json()["id"]
        state = wait_for("the served flow run", lambda: flow_run_state(api, run_id), RUN_S, processes)
        assert state == "COMPLETED", processes.logs()
        check_the_run(api, run_id, home, library, processes)

        serving.send_signal(signal.SIGTERM)  # as a service manager stops it
        assert serving.wait(timeout=120) == 0, processes.logs()
        assert "Stopped; the schedule is paused" in (tmp_path / "schedule.log").read_text()
        assert not pid_file.exists()
        with pytest.raises(httpx.HTTPError):
            healthy(api)  # the server it started is gone with it
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server_pid, signal.SIGKILL)  # only if the test failed before skillmill stopped it


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting for a reaper (whatever adopted it may not reap)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_killed_skillmill_schedule_takes_its_server_with_it(tmp_path: Path, processes: Processes) -> None:
    """kill -9 leaves no `finally` to run: the kernel must stop the server `skillmill schedule` started."""
    env = base_env(tmp_path)
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env.update(PREFECT_SERVER_API_PORT=str(port), HOME=str(tmp_path / "user"))
    home = tmp_path / "home"
    home.mkdir()
    (home / "skillmill.toml").write_text(f'[sources]\npaths = ["{SAMPLES}"]\ndefaults = false\n')
    serving = processes.start("schedule", [sys.executable, "-m", "pipeline", "schedule"], env, cwd=tmp_path)
    pid_file = home / "logs" / "prefect-server.pid"
    server_pid = wait_for("the server's pid file", lambda: pid_file.is_file() and int(pid_file.read_text()),
                          STARTUP_S, processes)
    try:
        wait_for("the server", lambda: healthy(api), STARTUP_S, processes)
        os.kill(serving.pid, signal.SIGKILL)
        serving.wait(timeout=30)
        wait_for("the server to stop", lambda: not _running(server_pid), 60, processes)
        with pytest.raises(httpx.HTTPError):
            healthy(api)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server_pid, signal.SIGKILL)
