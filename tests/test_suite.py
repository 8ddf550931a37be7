"""`make test`'s own output: the slowest tests listed, the summary last, no Hypothesis deprecations."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, close_prefect_events

pytestmark = pytest.mark.slow

SAMPLE = '''
import random

from hypothesis import given, strategies as st


@given(st.integers().map(lambda n: n + random.randint(0, 1)))  # a draw that moves the global random state
def test_a_strategy_using_the_global_random(n):
    pass


def test_fine():
    pass
'''


def test_the_suite_lists_its_slowest_tests_ends_on_the_summary_and_fails_on_a_hypothesis_deprecation(
        tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-c", str(ROOT / "pyproject.toml"),
                           "--rootdir", str(tmp_path), "test_sample.py"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300, check=False)
    out = proc.stdout
    assert proc.returncode == 1, out
    slowest = out.split("slowest 15 durations", 1)[-1]
    assert "test_sample.py::test_a_strategy_using_the_global_random" in slowest, out
    assert re.fullmatch(r"=+ 1 failed, 1 passed in [\d.]+s.* =+", out.rstrip().splitlines()[-1]), out[-500:]
    assert "FAILED test_sample.py::test_a_strategy_using_the_global_random" in out
    assert "HypothesisDeprecationWarning: Do not use the `random` module inside strategies" in out
    assert "warnings summary" not in out


@pytest.mark.usefixtures("prefect_server")
def test_no_prefect_events_client_outlives_the_test_that_ran_a_flow() -> None:
    from prefect import flow
    from prefect.events.worker import EventsWorker

    @flow
    def one() -> int:
        return 1

    def open_clients() -> list[EventsWorker]:
        return [w for w in EventsWorker._instances.values() if isinstance(w, EventsWorker) and not w._stopped]

    assert one() == 1
    assert open_clients(), "a flow run opens Prefect's events client (a websocket that pings)"
    close_prefect_events()  # what the autouse fixture prefect_events_closed does after every test
    assert open_clients() == []
