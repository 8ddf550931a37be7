"""The Prefect server a ``skillmill run`` talks to: the user's, a shared local one, or one for this run.

In this order:

1. ``PREFECT_API_URL``, wherever the user set it (the environment or a Prefect profile; never the
   ``.env`` / ``prefect.toml`` of the folder a run starts in, which works in skillmill's home): that
   server, and nothing is started;
2. ``[run] server_idle_minutes`` above 0 (default 10): the local server of
   :mod:`pipeline.execution.shared_server`, found up (milliseconds) or started detached; it
   serves the next runs and stops by itself once idle;
3. ``server_idle_minutes = 0``: a temporary server for this run only, as Prefect would start one,
   which stops when the run does -- even on ``kill -9``. A run killed that way never reaches its
   exit handlers, so Prefect's own temporary server would live on (~230 MB); this one is started
   through :func:`_child`, which asks the kernel for SIGTERM when its parent dies (Linux
   ``PR_SET_PDEATHSIG``) and also watches its parent's pid (elsewhere).

The run then talks to the server through ``PREFECT_API_URL``, as it would to any server -- and so
do Dask workers, which could not reach a server private to the run's process otherwise. Either
local server is the one Prefect would start (same app, UI off, the database in ``PREFECT_HOME``).

Finding out whether the user configured a server does not import Prefect (~2 s) when the
environment and the active profile say it, so a run can say within a second what it waits for;
the server then starts while the run imports the flow (``meanwhile``). :func:`current` tells the
flow how long the server took, for the run's report.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pipeline import settings
from pipeline import spawn as interpreters
from pipeline.errors import SkillmillError
from pipeline.execution import api_auth

STARTUP_TIMEOUT_S = 90.0  # first start migrates Prefect's database: 6-11 s on an idle 2-core machine
_ENV = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}


@dataclass
class Startup:
    """How the run reached its Prefect server, and what that cost."""

    how: str  # "configured" (PREFECT_API_URL), "reused" or "started" (the shared server), "temporary"
    url: str
    seconds: float = 0.0  # starting the server, or checking that it answers
    command_started: float = field(default_factory=time.monotonic)  # time.monotonic() when the command began

    def wall(self) -> float:
        """Seconds since the command began."""
        return round(time.monotonic() - self.command_started, 2)


_current: Startup | None = None


def current() -> Startup | None:
    """The server of the run in progress in this process (:func:`for_run`), or None (a deployment, a test)."""
    return _current


class TemporaryServer:
    def __init__(self, process: subprocess.Popen, port: int, auth: str | None = None) -> None:
        self.process = process
        self.url = f"http://127.0.0.1:{port}/api"
        self.auth = auth  # the credential its API asks for (pipeline.execution.api_auth)

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


def configured() -> tuple[str | None, str]:
    """The Prefect API the user configured and where it comes from; ``(None, "")`` when there is none.

    Read without importing Prefect from the environment and the active Prefect profile; Prefect's
    own settings decide when Prefect is imported already (a test harness).
    """
    if "prefect.settings" in sys.modules:
        url = configured_url()
        return url, ("PREFECT_API_URL" if url and os.environ.get("PREFECT_API_URL") == url else "Prefect's settings")
    if url := os.environ.get("PREFECT_API_URL"):
        return url, "PREFECT_API_URL"
    path = Path(os.environ.get("PREFECT_PROFILES_PATH") or settings.prefect_home() / "profiles.toml").expanduser()
    try:
        profiles = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, ""
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        url = configured_url()  # Prefect says what it makes of the file
        return url, "Prefect's settings"
    name = os.environ.get("PREFECT_PROFILE") or profiles.get("active") or "ephemeral"
    profile = (profiles.get("profiles") or {}).get(name) or {}
    url = profile.get("PREFECT_API_URL") if isinstance(profile, dict) else None
    return (str(url), f"PREFECT_API_URL of Prefect profile {name!r} in {path}") if url else (None, "")


def spawn(port: int | None = None) -> tuple[TemporaryServer, int]:
    """Start a temporary server tied to this process (not waiting for it); with the port it will listen on."""
    env = {**os.environ, **_ENV}
    if "prefect.settings" in sys.modules:  # settings of this process that the environment may not hold (a harness)
        from prefect.settings import get_current_settings

        env.update(get_current_settings().to_environment_variables(exclude_unset=True))
    env.pop("PREFECT_API_URL", None)
    auth = f"{api_auth.USER}:{secrets.token_urlsafe(32)}"  # this run's alone: no other account may use its API
    env.update(api_auth.server_env(auth))
    port = port or _free_port()
    process = interpreters.popen(["-m", "pipeline.execution.server", str(os.getpid()), str(port)], env_base=env,
                                 stdin=subprocess.DEVNULL)
    return TemporaryServer(process, port, auth), port


def wait_for(server: TemporaryServer, timeout: float = STARTUP_TIMEOUT_S) -> TemporaryServer:
    """Return ``server`` (or a replacement on another port) once it answers ``/health``."""
    deadline = time.monotonic() + timeout
    for _attempt in range(3):  # a port taken between choosing it and binding it: choose another
        while time.monotonic() < deadline:
            if server.process.poll() is not None:
                break
            if _healthy(server.url):
                return server
            time.sleep(0.1)
        else:
            server.stop()
            raise SkillmillError(f"the temporary Prefect server did not start within {timeout:.0f} s",
                                 hint="set PREFECT_API_URL to a running Prefect server (`prefect server start`)")
        code = server.process.returncode
        server, _ = spawn()
    server.stop()
    raise SkillmillError(f"the temporary Prefect server exited at start (code {code})",
                         hint="run with -v to see its log, or set PREFECT_API_URL to a running Prefect server")


def start(timeout: float = STARTUP_TIMEOUT_S) -> TemporaryServer:
    """Start a temporary server tied to this process; return once it answers ``/health``."""
    return wait_for(spawn()[0], timeout)


@contextlib.contextmanager
def for_run(idle_minutes: float = 0.0, *, say: Callable[[str], None] = lambda _: None,
            meanwhile: Callable[[], object] | None = None,
            command_started: float | None = None) -> Iterator[Startup]:
    """The run's Prefect server for the block (see the module's docstring for which one).

    ``say`` gets one line as soon as it is known what the run waits for, and one when a server it
    started answers; ``meanwhile`` runs while a server starts (importing the flow).
    """
    global _current
    began = time.monotonic()
    command_started = began if command_started is None else command_started
    url, origin = configured()
    try:
        if url:
            say(f"using the Prefect server at {url} ({origin})")
            _then(meanwhile)
            _current = Startup("configured", url, 0.0, command_started)
            yield _current
        elif idle_minutes > 0:
            from pipeline.execution import shared_server

            with shared_server.use(idle_minutes * 60, say=say, timeout=STARTUP_TIMEOUT_S) as shared:
                stays = f"it stays up {_minutes(idle_minutes)} after the run, for the next one"
                if shared.how == "started":
                    say(f"starting a local Prefect server ({stays}) ...")
                    _then(meanwhile)
                else:
                    say(f"using the local Prefect server at {shared.url} (pid {shared.pid}, up "
                        f"{_minutes((time.time() - shared.started) / 60)})")
                    checked = time.monotonic() - began
                    _then(meanwhile)
                    began = time.monotonic() - checked  # what the import took is not the server's
                shared.wait(STARTUP_TIMEOUT_S)
                _current = Startup(shared.how, shared.url, round(time.monotonic() - began, 2), command_started)
                if shared.how == "started":
                    say(f"the Prefect server answered after {_current.seconds:.1f} s, at {shared.url} "
                        f"(pid {shared.pid})")
                with _pointing_at(shared.url), api_auth.for_clients(api_auth.credential(shared.folder)):
                    yield _current
        else:
            say("starting a temporary Prefect server for this run ...")
            server, _ = spawn()
            try:
                _then(meanwhile)
                server = wait_for(server)
                _current = Startup("temporary", server.url, round(time.monotonic() - began, 2), command_started)
                say(f"the Prefect server answered after {_current.seconds:.1f} s")
                with _pointing_at(server.url), api_auth.for_clients(server.auth):
                    yield _current
            finally:
                server.stop()
    finally:
        _current = None


def _then(meanwhile: Callable[[], object] | None) -> None:
    if meanwhile is not None:
        meanwhile()


def _minutes(minutes: float) -> str:
    return f"{minutes * 60:.0f} s" if minutes < 1 else f"{minutes:.0f} min"


@contextlib.contextmanager
def _pointing_at(url: str) -> Iterator[None]:
    """``PREFECT_API_URL`` for the block: in the environment (child processes, Dask's local workers, a
    Prefect imported later) and in Prefect's settings when it is imported already."""
    previous = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = url
    try:
        if "prefect.settings" in sys.modules:
            from prefect.settings import PREFECT_API_URL, temporary_settings

            with temporary_settings({PREFECT_API_URL: url}):
                yield
        else:
            yield
    finally:
        if previous is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = previous


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
