"""Shared fixtures: an isolated home, the real trajectory corpus, and one Prefect test server."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

# Before any test swaps sys.stderr (capsys, CliRunner): the mcp SDK binds sys.stderr at import as its
# stdio client's default errlog, which must have a fileno.
import mcp.client.stdio  # noqa: F401
import pytest

pytest_plugins = ["tests.llm_fixtures"]  # the stand-in model server and its fixtures

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"

# Offline before anything imports litellm or prefect (../shared/docs/stack.md).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")


def _find_shared() -> Path | None:
    """The shared corpus: $SKILLMILL_SHARED, ../shared beside the checkout, or /work/shared."""
    candidates = [os.environ.get("SKILLMILL_SHARED"), ROOT.parent / "shared", Path("/work/shared")]
    for candidate in candidates:
        if candidate and (Path(candidate) / "trajectories").is_dir():
            return Path(candidate)
    return None


SHARED = _find_shared()
TRAJECTORIES = SHARED / "trajectories" if SHARED else None


@pytest.fixture(scope="session")
def corpus() -> Path:
    if TRAJECTORIES is None:
        pytest.skip("the shared trajectory corpus is not here (set SKILLMILL_SHARED)")
    return TRAJECTORIES


@pytest.fixture(scope="session")
def skills_corpus() -> Path:
    if SHARED is None or not (SHARED / "skills-corpus").is_dir():
        pytest.skip("the shared skills corpus is not here (set SKILLMILL_SHARED)")
    return SHARED / "skills-corpus"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own SKILLMILL_HOME and library; nothing touches ~/.skillmill."""
    home = tmp_path / "home"
    monkeypatch.setenv("SKILLMILL_HOME", str(home))
    monkeypatch.delenv("SKILLMILL_LIBRARY", raising=False)
    monkeypatch.delenv("SKILLMILL_MODEL", raising=False)
    # A Prefect server per run, gone with it: the shared one would outlive the test (tests of it set their own).
    monkeypatch.setenv("SKILLMILL_SERVER_IDLE_MINUTES", "0")
    for name in ("PREFECT_HOME", "PREFECT_PROFILES_PATH"):  # what a command sets (settings.apply_prefect_home)
        monkeypatch.setenv(name, os.environ.get(name, ""))  # is undone after the test
        if not os.environ[name]:
            monkeypatch.delenv(name)
    # No semantic channel unless a test asks for one: embedding every indexed skill with the default
    # model (when installed) would cost seconds per test, and no hook may start a recall server.
    monkeypatch.setenv("SKILLMILL_EMBEDDER", "none")
    monkeypatch.setenv("SKILLMILL_RECALL_SERVER", "0")
    return home


@pytest.fixture(scope="session", autouse=True)
def no_shared_server_outlives_the_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every shared local Prefect server (and warm process, ``execution.warm``) a test's run started (under this session's temporary folders) is
    stopped when the session ends, by its pid -- also one still starting, with no state file yet, or one
    whose test failed before its own ``stop_shared``. Nothing else is touched."""
    yield
    import psutil

    from pipeline.execution import shared_server, warm

    base = str(tmp_path_factory.getbasetemp())
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if shared_server.MODULE in cmdline and any(arg.startswith(base) for arg in cmdline):
            shared_server.stop(proc.pid)
    for pid in warm.pids(under=Path(base)):  # and the warm processes runs left (execution.warm)
        warm.stop(pid)


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory: pytest.TempPathFactory):
    """One temporary Prefect server for the session, with its own PREFECT_HOME."""
    os.environ["PREFECT_HOME"] = str(tmp_path_factory.mktemp("prefect-home"))
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=90):
        yield


def close_prefect_events() -> None:
    """Stop Prefect's events client (and its other services), as ``prefect_test_harness`` does at exit.

    Left open after a flow ran, the client's websocket keeps pinging from a background thread, and
    each ping draws from the global ``random`` (``websockets``' ping ids): Hypothesis, generating
    examples in a later test, sees the global random state change under it and warns, once per
    draw it catches, that a strategy used ``random``.
    """
    if "prefect.events.worker" in sys.modules:  # a flow ran in this process
        from prefect.events.worker import EventsWorker

        EventsWorker.drain_all(timeout=10)


@pytest.fixture(autouse=True)
def prefect_events_closed() -> Iterator[None]:
    """No Prefect client outlives the test that ran a flow (:func:`close_prefect_events`)."""
    yield
    close_prefect_events()
