"""One run at a time: the run lock, in-process, across a killed process, and two real `skillmill run`s."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pipeline.execution import lock
from pipeline.index.state import StateDB
from pipeline.library import Library
from tests.conftest import ROOT
from tests.run_support import Run, half_written

HOLD = "from pipeline.execution.lock import run_lock\nimport time\nwith run_lock():\n    print('held', flush=True)\n" \
       "    time.sleep(120)\n"


def test_a_second_holder_is_refused_with_who_holds_it_then_waits_for_it(isolated_home: Path) -> None:
    released = threading.Event()

    def hold() -> None:
        with lock.run_lock():
            entered.set()
            released.wait(30)

    entered = threading.Event()
    holder = threading.Thread(target=hold)
    holder.start()
    assert entered.wait(10)
    try:
        assert lock.holder()["pid"] == os.getpid()
        with pytest.raises(lock.RunInProgress) as refused, lock.run_lock():
            pass
        assert refused.value.exit_code == 75
        assert f"another skillmill run is in progress (pid {os.getpid()}" in refused.value.message
        assert "--wait" in refused.value.hint
        waited: list[dict | None] = []
        threading.Timer(0.5, released.set).start()
        with lock.run_lock(wait=30, on_wait=waited.append):
            assert lock.holder()["pid"] == os.getpid()
        assert waited and waited[0]["pid"] == os.getpid()  # told once whom it waited for
    finally:
        released.set()
        holder.join()
    assert lock.holder() is None


def test_a_lock_held_by_a_killed_process_is_free_at_once(isolated_home: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", HOLD], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        assert lock.holder()["pid"] == proc.pid
        with pytest.raises(lock.RunInProgress), lock.run_lock():
            pass
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert lock.lock_path().exists()  # the file stays, but nobody holds it: no stale lock
    assert lock.holder() is None
    with lock.run_lock(wait=0):
        pass


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_server")
def test_two_runs_at_once_the_second_exits_75_and_a_waiting_one_runs_after(
        corpus: Path, tmp_path: Path, isolated_home: Path) -> None:
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value())}
    library = tmp_path / "skills"
    args = [str(corpus), "--library", str(library)]
    first = Run(args, env, tmp_path / "first.out")
    seen = first.until(lambda line: "parse: started" in line, kill=False)
    assert seen is None  # still running, holding the lock

    refused = subprocess.run([sys.executable, "-m", "pipeline", "run", *args], capture_output=True, text=True,
                             cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert refused.returncode == 75
    assert f"another skillmill run is in progress (pid {first.process.pid}" in refused.stderr
    assert "Traceback" not in refused.stderr

    waiting = Run([*args, "--wait", "600"], env, tmp_path / "waiting.out")
    time.sleep(1)  # not an assertion on time: only to start it while the first one runs
    assert first.process.poll() is None, "the first run ended before the second started: use a bigger corpus"
    done = first.until(None)
    after = waiting.until(None)
    assert done.code == after.code and done.code in (0, 1)
    # ~1,100 trajectories of the shared corpus consolidate into a manual per repository (8 of them)
    assert done.summary["trajectories"]["new"] > 700 and done.summary["skills"]["proposed"] >= 5
    # the waiting run started its work after the first had stored everything: nothing was new to it
    assert after.summary["trajectories"]["new"] == 0 and after.summary["skills"]["proposed"] == 0
    assert half_written(library) == []
    with StateDB() as state:
        assert state.count("runs") == 2
        assert state.count("skills") == len(list(Library(library)))


def test_the_runs_own_lock_lets_its_flow_in_and_nobody_else(isolated_home: Path) -> None:
    """`skillmill run` holds the lock before starting a server; the flow it runs in the same process enters."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with lock.run_lock(for_process=True):
        with lock.run_lock():  # the flow, in this process
            assert lock.holder()["pid"] == os.getpid()
        assert lock.holder()["pid"] == os.getpid()  # still held: the flow's exit does not release the run's lock
        other = subprocess.run([sys.executable, "-c", "from pipeline.execution.lock import run_lock\n"
                                "with run_lock(): pass"], env=env, capture_output=True, text=True)
        assert other.returncode != 0 and "RunInProgress" in other.stderr
    assert lock.holder() is None
    with pytest.raises(lock.RunInProgress), lock.run_lock(), lock.run_lock():
        pass  # without for_process, a second holder in one process is refused as before
