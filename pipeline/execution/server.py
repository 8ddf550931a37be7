"""The temporary Prefect server of a ``skillmill run``, which stops when the run does -- even on ``kill -9``.

With no ``PREFECT_API_URL``, Prefect starts a temporary server (uvicorn in a child process)
and stops it at exit. A run killed with ``kill -9`` never reaches its exit handlers, and
Prefect's server then lives on (~230 MB) with nobody to stop it; one more after each crash.
``skillmill run`` therefore starts the same server itself, through :func:`_child`, which asks
the kernel for SIGTERM when its parent dies (Linux ``PR_SET_PDEATHSIG``) and also watches its
parent's pid (elsewhere). The run then talks to it through ``PREFECT_API_URL``, as it would
to any server -- and so do Dask workers, which could not reach a server private to the run's
process otherwise.

The server is the one Prefect would start (same app, UI off, same database in PREFECT_HOME).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

from pipeline.errors import SkillmillError

STARTUP_TIMEOUT_S = 90.0  # first start migrates Prefect's database: 6-11 s on an idle 2-core machine
_ENV = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}


class TemporaryServer:
    def __init__(self, process: subprocess.Popen, port: int) -> None:
        self.process = process
        self.url = f"http://127.0.0.1:{port}/api"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def configured_url() -> str | None:
    """The Prefect API the run would use anyway (environment, profile, a test harness), if any."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value() or None


def start(timeout: float = STARTUP_TIMEOUT_S) -> TemporaryServer:
    """Start a temporary server tied to this process; return once it answers ``/health``."""
    from prefect.settings import get_current_settings

    env = {**os.environ, **_ENV, **get_current_settings().to_environment_variables(exclude_unset=True)}
    env.pop("PREFECT_API_URL", None)
    deadline = time.monotonic() + timeout
    for _attempt in range(3):  # a port taken between choosing it and binding it: choose another
        port = _free_port()
        process = subprocess.Popen([sys.executable, "-m", "pipeline.execution.server", str(os.getpid()), str(port)],
                                   env=env, stdin=subprocess.DEVNULL)
        server = TemporaryServer(process, port)
        while time.monotonic() < deadline:
            if process.poll() is not None:
                break
            if _healthy(server.url):
                return server
            time.sleep(0.1)
        else:
            server.stop()
            raise SkillmillError(f"the temporary Prefect server did not start within {timeout:.0f} s",
                                 hint="set PREFECT_API_URL to a running Prefect server (`prefect server start`)")
    raise SkillmillError(f"the temporary Prefect server exited at start (code {process.returncode})",
                         hint="run with -v to see its log, or set PREFECT_API_URL to a running Prefect server")


@contextlib.contextmanager
def for_run() -> Iterator[str | None]:
    """Use the configured Prefect API, or a temporary server tied to this process for the block."""
    url = configured_url()
    if url:
        yield url
        return
    from prefect.settings import PREFECT_API_URL, temporary_settings

    server = start()
    previous = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = server.url  # for child processes (Dask's local workers)
    try:
        with temporary_settings({PREFECT_API_URL: server.url}):
            yield server.url
    finally:
        if previous is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = previous
        server.stop()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


# -- the child --------------------------------------------------------------------------------
def exit_with_parent() -> None:
    """Ask the kernel for SIGTERM when this process's parent dies (Linux ``PR_SET_PDEATHSIG``).

    A no-op elsewhere. The request survives ``exec``, so it also serves as ``preexec_fn`` for a
    server started as a command (``skillmill schedule``'s ``prefect server start``).
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _die_with(parent: int) -> None:
    """End this process when ``parent`` ends: the kernel's parent-death signal, and a watcher thread."""
    exit_with_parent()
    if os.getppid() != parent:  # it died before the signal was armed
        os._exit(0)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)
        os._exit(0)  # uvicorn did not stop on SIGTERM

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _child(parent: int, port: int) -> None:
    _die_with(parent)
    import uvicorn

    uvicorn.run("prefect.server.api.server:create_app", factory=True, host="127.0.0.1", port=port,
                log_level="error", lifespan="on")


if __name__ == "__main__":
    _child(int(sys.argv[1]), int(sys.argv[2]))
