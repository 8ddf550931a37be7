"""A local Prefect server that outlives one run, serves the next ones, and stops by itself when idle.

Starting Prefect's server takes 10-25 s on a 2-core machine (importing it, its services, the
database), more than a nightly run's own work. With no ``PREFECT_API_URL``, ``skillmill run``
therefore starts one detached server and leaves it up; the next run finds it and only checks that
it answers (milliseconds). Nothing lingers for long: the server stops itself once no run has used
it for ``[run] server_idle_minutes`` (default 10).

Its files live in ``$PREFECT_HOME``, beside its database, so every ``SKILLMILL_HOME`` sharing a
Prefect home shares one server, and no two servers of ours serve one database:

* ``skillmill-server.json``: who it is (pid, port, url, start time, Python and Prefect), written by
  the server once its socket is bound, removed when it stops;
* ``skillmill-server.lock``: held exclusively and briefly by whoever checks, starts or stops the
  server (a run, or the server deciding that it is idle), so a run never picks a stopping server;
* ``skillmill-server.users``: held shared by each run for as long as it uses the server, and
  touched when it lets go. The server is idle when it can take this lock exclusively and the
  file has not been touched for the idle time. An ``flock`` dies with its holder, so a run killed
  with ``kill -9`` leaves at most this server, which then stops on its own;
* ``skillmill-server.log``: its output (errors only), rewritten at each start.

A state file whose process is gone is stale and removed. A server of another Python or Prefect
is stopped and replaced; one that does not answer is waited for while it is young (a run was
killed while starting it), else stopped and replaced.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson

from pipeline import atomic, private, settings, spawn
from pipeline.errors import SkillmillError
from pipeline.execution import api_auth

STATE, LOCK, USERS, LOG = "skillmill-server.json", "skillmill-server.lock", "skillmill-server.users", "skillmill-server.log"
PROTOCOL = 2  # what the state file and the locks mean; a server speaking another is replaced (2: API credential)
LOCK_TIMEOUT_S = 120.0  # a server that decided to stop holds the lock until it has exited
MODULE = "pipeline.execution.shared_server"
_SERVER_ENV = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}


@dataclass
class Shared:
    """The shared server a run uses: found up (``reused``) or just started (``started``)."""

    folder: Path
    pid: int
    how: str
    url: str = ""
    started: float = 0.0  # epoch seconds
    process: subprocess.Popen | None = None

    def wait(self, timeout: float) -> None:
        """Return once it answers ``/health``; raise a :class:`SkillmillError` saying why not."""
        log = self.folder / LOG
        deadline = time.monotonic() + timeout
        while True:
            if not self.url and (info := read_state(self.folder)) and info.get("pid") == self.pid:
                self.url = info["url"]
            if self.url and healthy(self.url):
                return
            gone = self.process.poll() is not None if self.process is not None else not alive(self.pid)
            if gone:
                raise SkillmillError("the local Prefect server exited as it started",
                                     hint=f"its output is in {log}; or set PREFECT_API_URL to a running Prefect "
                                          "server")
            if time.monotonic() > deadline:
                stop(self.pid)
                forget(self.folder, self.pid)
                raise SkillmillError(f"the local Prefect server did not answer within {timeout:.0f} s",
                                     hint=f"its output is in {log}; or set PREFECT_API_URL to a running Prefect "
                                          "server")
            time.sleep(0.1)


@contextlib.contextmanager
def use(idle_s: float, *, say: Callable[[str], None], timeout: float) -> Iterator[Shared]:
    """The shared server for the ``with`` block: found, or started (not yet answering: call ``wait``)."""
    folder = settings.prefect_home()
    private.mkdir(folder)
    with _exclusive(folder / LOCK, say):
        server = _find(folder, say, timeout) or _start(folder, idle_s)
        users = _join(folder / USERS)
    try:
        yield server
    finally:
        _leave(users, folder / USERS)


def _find(folder: Path, say: Callable[[str], None], timeout: float) -> Shared | None:
    info = read_state(folder)
    if info is None:
        return None
    pid = info.get("pid")
    if not isinstance(pid, int) or not alive(pid):
        forget(folder)  # stale: its server is gone (killed, or the machine restarted)
        return None
    if (info.get("protocol"), info.get("python"), info.get("prefect")) != (PROTOCOL, sys.executable, prefect_version()):
        say(f"stopping the local Prefect server of another installation (pid {pid}, Prefect {info.get('prefect')})")
        stop(pid)
        forget(folder, pid)
        return None
    server = Shared(folder=folder, pid=pid, how="reused", url=str(info.get("url") or ""),
                    started=float(info.get("started") or 0))
    if server.url and healthy(server.url):
        return server
    young = timeout - (time.time() - server.started)
    if young > 0:  # a run was killed while starting it: it answers soon
        say(f"waiting for the local Prefect server another run started (pid {pid}) ...")
        with contextlib.suppress(SkillmillError):
            server.wait(young)
            return server
    stop(pid)  # it does not answer: replace it
    forget(folder, pid)
    return None


def _start(folder: Path, idle_s: float) -> Shared:
    env = {**os.environ, **settings.OFFLINE_ENV, **_SERVER_ENV, **api_auth.server_env(api_auth.credential(folder))}
    env.pop("PREFECT_API_URL", None)
    # Its own session: Ctrl-C and a closing terminal reach the run, not the server the next run will use.
    with private.open_file(folder / LOG, "wb") as out:
        process = spawn.popen(["-m", MODULE, str(folder), repr(float(idle_s))], env_base=env, cwd=folder,
                              stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return Shared(folder=folder, pid=process.pid, how="started", started=time.time(), process=process)


# -- the files ---------------------------------------------------------------------------------
def read_state(folder: Path | None = None) -> dict | None:
    try:
        data = orjson.loads(((folder or settings.prefect_home()) / STATE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def forget(folder: Path, pid: int | None = None) -> None:
    """Remove the state file (only if it still names ``pid``, when given)."""
    info = read_state(folder)
    if info is not None and pid is not None and info.get("pid") != pid:
        return
    with contextlib.suppress(FileNotFoundError):
        (folder / STATE).unlink()


@contextlib.contextmanager
def _exclusive(path: Path, say: Callable[[str], None]) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, private.FILE_MODE)
    try:
        deadline, told = time.monotonic() + LOCK_TIMEOUT_S, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise SkillmillError(f"{path} stayed locked for {LOCK_TIMEOUT_S:.0f} s",
                                         hint="another skillmill run is starting or stopping the local Prefect "
                                              "server; try again, or set PREFECT_API_URL") from None
                if not told:
                    say("waiting for another run to start the local Prefect server, or for the idle one to stop ...")
                    told = True
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)  # releases the lock


def _join(path: Path) -> int:
    """Count as a user of the server until :func:`_leave` (or until this process dies)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, private.FILE_MODE)
    fcntl.flock(fd, fcntl.LOCK_SH)  # never blocks: the server takes it exclusively only under the lock we hold
    os.utime(path)
    return fd


def _leave(fd: int, path: Path) -> None:
    with contextlib.suppress(OSError):
        os.utime(path)  # the idle time counts from now
    os.close(fd)


# -- processes ---------------------------------------------------------------------------------
def alive(pid: int) -> bool:
    """A live process that is one of our servers (on Linux, its command line says so: pids are reused)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's process: not a server of ours
    proc = Path(f"/proc/{pid}")
    if not proc.is_dir():
        return True  # no /proc (macOS): trust the pid
    try:
        zombie = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        return not zombie and MODULE.encode() in (proc / "cmdline").read_bytes()
    except (OSError, IndexError):
        return False


def stop(pid: int, grace: float = 10.0, *, ours: Callable[[int], bool] = alive) -> None:
    """SIGTERM one of our servers (or whatever ``ours`` recognises: ``warm.is_warm``), SIGKILL it if it is
    still there after ``grace`` seconds."""
    if not ours(pid):
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # our own child: reap it
            if not ours(pid):
                return
            time.sleep(0.1)


def stop_shared(folder: Path | None = None) -> int | None:
    """Stop the shared server of ``folder`` (default ``$PREFECT_HOME``) now; its pid, or None if none ran."""
    folder = folder or settings.prefect_home()
    if not folder.is_dir():
        return None
    with _exclusive(folder / LOCK, lambda _: None):
        info = read_state(folder)
        pid = info.get("pid") if info else None
        if isinstance(pid, int):
            stop(pid)
        forget(folder)
    return pid if isinstance(pid, int) else None


def healthy(url: str, timeout: float = 2.0) -> bool:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def prefect_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("prefect")
    except PackageNotFoundError:
        return "?"


# -- the server process --------------------------------------------------------------------------
def serve(folder: Path, idle_s: float) -> None:
    """Run Prefect's server (as Prefect runs its temporary one: same app, UI off) until idle for ``idle_s``."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))  # a free port, bound here: no other process can take it in between
    port = sock.getsockname()[1]
    started = time.time()
    server = uvicorn.Server(uvicorn.Config("prefect.server.api.server:create_app", factory=True, log_level="error",
                                           lifespan="on"))
    atomic.write(folder / STATE, orjson.dumps({
        "protocol": PROTOCOL, "pid": os.getpid(), "port": port, "url": f"http://127.0.0.1:{port}/api",
        "started": started, "started_at": datetime.fromtimestamp(started, UTC).isoformat(timespec="seconds"),
        "python": sys.executable, "prefect": prefect_version(), "idle_s": idle_s}))
    threading.Thread(target=_watch, args=(folder, idle_s, started, server), name="idle-watch", daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # uvicorn re-raises it after shutting down: exit cleanly
    try:
        server.run(sockets=[sock])
    finally:
        forget(folder, os.getpid())


def _watch(folder: Path, idle_s: float, started: float, server: object) -> None:
    """Stop the server once no run has used it for ``idle_s`` seconds."""
    lock = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, private.FILE_MODE)
    users_path = folder / USERS
    users = os.open(users_path, os.O_RDWR | os.O_CREAT, private.FILE_MODE)
    last_used = started
    every = min(5.0, max(0.2, idle_s / 10))
    while True:
        time.sleep(every)
        if not folder.is_dir():  # its home was deleted (`make run` starts afresh): no run can find it any more,
            break                # and its database is gone
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            last_used = time.time()  # a run is finding (or starting) a server
            continue
        try:
            fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            last_used = time.time()  # a run is using it
            fcntl.flock(lock, fcntl.LOCK_UN)
            continue
        fcntl.flock(users, fcntl.LOCK_UN)
        with contextlib.suppress(OSError):
            last_used = max(last_used, users_path.stat().st_mtime)
        if time.time() - last_used < idle_s:
            fcntl.flock(lock, fcntl.LOCK_UN)
            continue
        # Idle: no run can pick it from now on (the state file goes), and none can start another
        # until this process has exited (it keeps the lock until then).
        forget(folder, os.getpid())
        break
    server.should_exit = True  # type: ignore[attr-defined]
    time.sleep(30)
    os._exit(0)  # it did not shut down


if __name__ == "__main__":
    serve(Path(sys.argv[1]), float(sys.argv[2]))
