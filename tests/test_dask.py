"""`skillmill run --task-runner dask`: distillation on a Dask cluster of two worker processes.

The cluster is a real ``distributed.LocalCluster`` with process workers, so every parcel of
trajectories is pickled to a worker and its drafts pickled back. The run must give the same
library as the thread runner, and secrets planted in the input must stay redacted.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.index.state import StateDB
from tests.conftest import SAMPLES
from tests.planted import SOURCES, Planter
from tests.run_support import library_files

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server")]


def run(*args: str) -> dict:
    result = CliRunner().invoke(main, ["run", "--json", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output.strip().splitlines()[-1])


def test_distillation_runs_on_two_dask_workers_and_gives_the_thread_runners_library(
        corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from distributed import Client, LocalCluster, get_task_stream

    inputs = tmp_path / "in"
    shutil.copytree(SAMPLES, inputs)
    method, relative = SOURCES["mini-swe-agent"]
    planter = Planter(seed=11)
    source = corpus / relative
    (inputs / "planted").mkdir()
    method(planter, source, inputs / "planted" / source.name)
    report = source.with_name(source.name.replace(".traj.json", ".report.json"))
    shutil.copy(report, inputs / "planted" / report.name)  # its SWE-bench label: it joins the django manual

    monkeypatch.setenv("SKILLMILL_HOME", str(tmp_path / "threads-home"))
    threads = run(str(inputs), "--library", str(tmp_path / "threads"), "--task-runner", "thread")

    monkeypatch.setenv("SKILLMILL_HOME", str(tmp_path / "dask-home"))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client, get_task_stream(client) as stream:
        on_dask = run(str(inputs), "--library", str(tmp_path / "dask"), "--task-runner", "dask",
                      "--dask-address", cluster.scheduler_address)
        workers = set(cluster.scheduler.workers)

    distilled = [t for t in stream.data if "distill" in str(t["key"])]
    assert len(distilled) >= 2 and {t["worker"] for t in distilled} <= workers
    # The samples' 36 trajectories (7 mini-swe-agent runs, 4 Claude Code, 25 aider requests) and the planted run.
    assert on_dask["trajectories"] == threads["trajectories"] and on_dask["trajectories"]["new"] == 37
    assert on_dask["skills"] == threads["skills"] and on_dask["skills"]["proposed"] == 5  # one manual per repository
    assert on_dask["written"] == threads["written"]
    assert library_files(tmp_path / "dask") == library_files(tmp_path / "threads")
    text = b"\n".join(library_files(tmp_path / "dask").values()).decode()
    leaks = [s.kind for s in planter.secrets() for fragment in s.fragments() if fragment in text]
    assert leaks == []
    with StateDB() as state:  # the flow, not the workers, wrote the state database
        assert state.count("distillations") == on_dask["trajectories"]["seen"]


def test_the_local_cluster_answers_only_this_run(tmp_path: Path) -> None:
    """Issue 23: its scheduler and workers listen on 127.0.0.1; without this run's certificate nobody gets in
    (a worker would run any function it is sent, as the user)."""
    from distributed import Client

    from pipeline.config import RunConfig
    from pipeline.execution import runners

    with runners.task_runner(RunConfig(task_runner="dask", concurrency=1)) as runner:
        client = runner.client if hasattr(runner, "client") else runner._client
        assert client.submit(sum, [1, 2]).result() == 3
        address = client.scheduler.address
        workers = list(client.scheduler_info()["workers"])
        assert address.startswith("tls://") and all(w.startswith("tls://") for w in workers)
        for target in (address, address.replace("tls://", "tcp://"), *workers):
            with pytest.raises(Exception):  # noqa: B017, PT011 -- refused, however it is refused
                Client(target, timeout=3)
