"""A warm process for ``skillmill run``: Prefect imported once, each run forked from it.

A warm run's time beyond the flow's own work was 4-6 s, and more than half of it was the interpreter
importing Prefect (~1.7 s) and the flow (~0.7 s) again. After a run that used the shared local
Prefect server (``shared_server``), ``skillmill run`` leaves one more process beside it: this one,
with the flow and the commands imported, listening on a Unix socket. The next ``skillmill run``
connects before importing anything heavy and hands over its arguments, environment, working folder
and its own stdin/stdout/stderr (``SCM_RIGHTS``); the warm process forks, and the fork runs the
command exactly as the client would have -- on the user's terminal, with its progress bar, its
exit status. Nothing else changes: the run takes the same lock, uses the same Prefect server,
writes the same files.

    client (skillmill run)  --argv, env, cwd, fds 0-2-->  warm process (listens; forks per run)
                            <--{"pid"} ... {"exit"}---        supervisor (fork): waits, relays signals
                            --signal numbers, or EOF-->           runner (fork): the command itself

The supervisor sits between so the runner exits as any process does (atexit handlers, buffered
output, ``KeyboardInterrupt`` kills it with SIGINT) and the client still learns its status. Ctrl-C,
SIGTERM and SIGHUP on the client reach the runner; a client killed outright (``kill -9``) takes the
runner with it (SIGKILL), as it would have taken itself.

When it is not used, the run goes on in the client's own process, as before:

* not Linux (abstract sockets, ``SO_PEERCRED``), or ``SKILLMILL_WARM=0``;
* ``--verbose`` (Prefect's logging level is chosen when Prefect is imported) or ``--help``;
* no warm process for this exact setup. Its socket's name is derived from :func:`key`: the Python
  executable, where ``pipeline`` lives, ``HOME``, the locale, every ``PREFECT_*``,
  ``SKILLMILL_*``, ``PYTHON*``, ``LITELLM_*`` and ``DASK_*`` variable and Prefect's profile files,
  so another home, another Prefect API or another interpreter never meets a process set up for
  this one;
* the code changed since it started (any ``pipeline``/``flows`` module it loaded, or the
  site-packages folders): it refuses the run, which goes on here, and exits.

One is left only by a run that used the shared local server (never with the user's own
``PREFECT_API_URL``). The warm process is owner-only: another user's connection is refused (``SO_PEERCRED``). It exits
after ``[run] server_idle_minutes`` without a run (as the shared server does), when its code
changes, or when its ``SKILLMILL_HOME`` is deleted. With ``server_idle_minutes = 0`` none is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from pipeline.execution import clock

MODULE = "pipeline.cli.warm"  # the warm process's entry point (it runs the command group)
KEYED_PREFIXES = ("PREFECT_", "SKILLMILL_", "PYTHON", "LITELLM_", "DASK_", "LC_")
KEYED = ("HOME", "LANG", "DO_NOT_TRACK")
UNKEYED = ("PYTHONSAFEPATH",)
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
REPLY_TIMEOUT_S = 60.0  # a warm process still importing (it listens first) answers when done
POLL_S = 2.0
_MAX_REQUEST = 1 << 20

#: The environment this command started with, while the run goes on here (not in a warm process):
#: a warm process for the next run is started with it (:func:`start`).
started_env: dict[str, str] | None = None


def key(env: dict[str, str], root: Path) -> str:
    """What a warm process must share with a command to run it: interpreter, code, and the environment
    its imports read."""
    import hashlib

    # PYTHONSAFEPATH is the one variable we set for every interpreter we start (pipeline.spawn): a run and the
    # warm process it left differ by it, and neither imports from its working folder either way
    picked = sorted((k, v) for k, v in env.items() if (k.startswith(KEYED_PREFIXES) or k in KEYED) and k not in UNKEYED)
    text = json.dumps([sys.executable, str(root), picked, _profiles(env)])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _profiles(env: dict[str, str]) -> list[str]:
    """Prefect's profile files, as they are now: read when Prefect is imported (``prefect config set`` writes them)."""
    from pipeline import settings

    paths = [env.get("PREFECT_PROFILES_PATH"), str(Path(env.get("HOME", "~")).expanduser() / ".prefect/profiles.toml"),
             str(settings.prefect_home(env) / "profiles.toml")]
    found = []
    for path in filter(None, paths):
        try:
            st = os.stat(path)
            found.append(f"{path}:{st.st_mtime_ns}:{st.st_size}")
        except OSError:
            continue
    return found


def address(digest: str, env: dict[str, str] | None = None) -> Path:
    """The warm process's socket: a file in the owner-only home, where no other account can bind it first or
    connect (an abstract name, guessable from ``/proc/net/unix``, could be taken by anyone once it idled)."""
    from pipeline import settings

    return settings.home(env) / f"warm-{digest[:20]}.sock"


def _connect(sock: socket.socket, path: Path) -> None:
    from pipeline import private

    with private.socket_address(path) as name:
        sock.connect(name)


def code_root() -> Path:
    """The folder holding ``pipeline`` (and ``flows``)."""
    return Path(__file__).resolve().parents[2]


# -- the client ---------------------------------------------------------------------------------
def why_not(args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> str | None:
    """Why this command cannot be handed to a warm process, or None when it can."""
    env = os.environ if env is None else env
    if not sys.platform.startswith("linux"):
        return "not Linux"
    if env.get("SKILLMILL_WARM", "1") in ("0", "false", "no", "off"):
        return "SKILLMILL_WARM=0"
    if any(a in ("-v", "--verbose", "-h", "--help") or (a.startswith("-v") and not a.startswith("--"))
           for a in args):
        return "--verbose or --help"
    try:
        Path.cwd() if cwd is None else cwd
    except OSError:  # the working folder was deleted: the command reports it, as a cold run does
        return "no working folder"
    return None  # the working folder configures nothing: a run works in the home (spawn.work_in_home)


def hand_over(args: list[str], prog: str) -> int | None:
    """Run ``skillmill run ARGS`` in a warm process and return its exit status (a negative number: killed
    by that signal), or None when there is none to take it (the caller runs the command itself)."""
    global started_env
    env = dict(os.environ)
    if why_not(args, env) is not None:
        return None
    digest = key(env, code_root())
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        _connect(sock, address(digest, env))
    except OSError:  # none is up: this run is cold, and leaves one for the next
        sock.close()
        started_env = env
        return None
    with sock:
        if _peer(sock)[1] != os.getuid():  # a socket of that name another user made: never hand it anything
            return None
        ignored = [int(s) for s in FORWARDED if signal.getsignal(s) == signal.SIG_IGN]  # nohup: stays ignored

        relayed: list[int] = []

        def relay(signum: int, _frame: object) -> None:  # from now on the supervisor relays, once the runner is up
            relayed.append(signum)
            with contextlib.suppress(OSError):
                sock.sendall(bytes([signum]))

        previous = {s: signal.signal(s, relay) for s in FORWARDED if int(s) not in ignored}
        handed = False
        try:
            try:
                request = {"key": digest, "argv": [prog, *args], "prog": prog, "env": env, "cwd": os.getcwd(),
                           "started": clock.process_started(), "umask": _umask(), "ignored": ignored}
                sock.settimeout(REPLY_TIMEOUT_S)
                _send(sock, request, fds=[0, 1, 2])
                reply = _receive(sock)
            except (OSError, ValueError):
                reply = None
            if not reply or "pid" not in reply:  # refused (its code changed), or it went away: run here
                started_env = env
                return None
            handed = True  # signals from now on (and any sent before) are the runner's
            return _wait(sock)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            if relayed and not handed:  # Ctrl-C while no runner took it: as if it came to this process
                signal.raise_signal(relayed[0])


def _wait(sock: socket.socket) -> int:
    """The runner's status, once it ends (signals are relayed meanwhile)."""
    sock.settimeout(None)
    try:
        status = _receive(sock)
    except (OSError, ValueError):
        status = None
    if not status or "status" not in status:
        sys.stderr.write("skillmill: the warm process running this command went away; run it again\n")
        return 1
    return int(status["status"])


def _umask() -> int:
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def exit_as(status: int) -> None:
    """Leave as the runner left: its exit code, or killed by the same signal."""
    if status < 0:
        sys.stdout.flush()
        with contextlib.suppress(OSError, ValueError):  # SIGKILL's action cannot be set (nor need be)
            signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        time.sleep(1)
        status = 128 - status
    sys.exit(status)


# -- starting one ------------------------------------------------------------------------------
def start(idle_minutes: float) -> None:
    """Leave a warm process for the next run (when this command ran cold; never for a test's in-process CLI)."""
    if started_env is None or idle_minutes <= 0:
        return
    import subprocess

    from pipeline import private, settings, spawn

    home = settings.home()
    code = f"import sys; sys.path.insert(0, {str(code_root())!r}); from {MODULE} import main; main()"
    try:
        with private.open_file(home / "warm.log", "ab") as log:
            # -P: no working folder on sys.path -- a runner works in the user's folder, and imports must not come from it
            spawn.popen(["-c", code, repr(float(idle_minutes) * 60), str(home)], env_base=started_env, cwd=home,
                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    except OSError:  # a full disk or a vanished home: the next run is simply cold
        pass


def pids(home: Path | None = None, *, under: Path | None = None) -> list[int]:
    """Warm processes running (Linux ``/proc``): those of ``home``, of the homes ``under`` a folder, or all of
    this user's."""
    found = []
    for entry in Path("/proc").iterdir() if sys.platform.startswith("linux") else ():
        if not entry.name.isdigit() or (words := _command_line(entry)) is None:
            continue
        if home is not None and words[-1:] != [str(home)]:
            continue
        if under is None or Path(words[-1]).is_relative_to(under):
            found.append(int(entry.name))
    return sorted(found)


def is_warm(pid: int) -> bool:
    """Whether ``pid`` is one of this user's warm processes (pids are reused; a zombie has no command line)."""
    return _command_line(Path(f"/proc/{pid}")) is not None


def _command_line(proc: Path) -> list[str] | None:
    """The command line of the process in ``/proc/PID`` when it is one of this user's warm processes."""
    try:
        if proc.stat().st_uid != os.getuid():
            return None
        words = [a.decode(errors="replace") for a in (proc / "cmdline").read_bytes().split(b"\0")[:-1]]
    except OSError:
        return None
    return words if any(MODULE in w for w in words) else None


def stop(pid: int, grace: float = 10.0) -> None:
    """SIGTERM a warm process, SIGKILL it after ``grace`` s (as ``shared_server.stop`` stops a server)."""
    from pipeline.execution import shared_server

    shared_server.stop(pid, grace, ours=is_warm)


# -- the warm process ---------------------------------------------------------------------------
@dataclass
class Request:
    """What the runner (a fork of the warm process) runs: the client's command, as the client."""

    argv: list[str]
    prog: str
    started: float


class Listener:
    """The warm process's socket, bound before it imports anything heavy: a client arriving while it
    imports waits in the backlog instead of paying the import again."""

    def __init__(self, digest: str) -> None:
        import errno
        import fcntl

        from pipeline import private

        self.digest = digest
        self.path = address(digest)
        private.mkdir(self.path.parent)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # one warm process per setup: taking the name is check (does one answer?), unlink, bind, under a lock
        with private.open_file(self.path.with_suffix(".lock"), "ab") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                _connect(probe, self.path)
                self.sock.close()
                raise OSError(errno.EADDRINUSE, "another warm process has this setup", str(self.path))
            except (FileNotFoundError, ConnectionRefusedError):
                pass  # none, or the file a killed one left
            finally:
                probe.close()
            self.path.unlink(missing_ok=True)
            with private.socket_address(self.path) as name:
                self.sock.bind(name)
            os.chmod(self.path, 0o600)
            self.inode = os.stat(self.path).st_ino
            self.owner = os.getpid()
            self.sock.listen(16)

    def close(self) -> None:
        """Close the socket, and remove its file if it is still this one's (not a successor's)."""
        self.sock.close()
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self.inode:
                self.path.unlink()

    def serve(self, idle_s: float, home: Path, added_env: dict[str, str], since: float) -> Request | None:
        """Accept runs until idle; in a runner, return its :class:`Request` (the caller runs it).

        ``since``: when the imports began (``time.time()``); a module changed after it may be loaded half
        old, half new, so then none is served.
        """
        try:
            return self._serve(idle_s, home, added_env, since)
        finally:
            if os.getpid() == self.owner:
                self.close()  # a client queued behind the last run gets EOF, and runs cold
            else:
                self.sock.close()  # a runner: the file is the warm process's

    def _serve(self, idle_s: float, home: Path, added_env: dict[str, str], since: float) -> Request | None:
        fingerprint = code_fingerprint(since)
        if fingerprint is None:
            return None
        supervisors: set[int] = set()
        last = time.monotonic()
        self.sock.settimeout(POLL_S)
        while True:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                conn = None
            if conn is not None:
                with conn:
                    if (request := self._accept(conn, fingerprint, added_env, supervisors)) is not None:
                        return request  # this is the runner
            supervisors = {pid for pid in supervisors if not _reaped(pid)}
            if supervisors:  # a run in progress: not idle
                last = time.monotonic()
            if time.monotonic() - last > idle_s or not home.is_dir() or code_fingerprint() != fingerprint:
                return None

    def _accept(self, conn: socket.socket, fingerprint: str, added_env: dict[str, str],
                supervisors: set[int]) -> Request | None:
        """One client: checked, then forked to a supervisor (which forks the runner). None in this process."""
        try:
            conn.settimeout(5)
            if not _same_user_and_filesystem(conn):
                return None
            message, fds = _receive_with_fds(conn)
        except (OSError, ValueError, struct.error, RecursionError):
            return None
        pid = -1
        try:
            if (isinstance(message, dict) and isinstance(message.get("env"), dict) and len(fds) == 3
                    and message.get("key") == self.digest == key(message["env"], code_root())):
                if code_fingerprint() == fingerprint:
                    pid = os.fork()
                else:
                    _send(conn, {"refused": "its code changed since the warm process started"})
        except OSError:
            pass
        if pid == 0:
            self.sock.close()
            return _supervise(conn, fds, message, added_env)
        _close_all(fds)  # the client's: the supervisor and the runner hold their own copies
        if pid > 0:
            supervisors.add(pid)
        return None


def _supervise(conn: socket.socket, fds: list[int], message: dict, added_env: dict[str, str]) -> Request | None:
    """In the fork: start the runner, relay signals to it, report how it ended, and leave (never returns here)."""
    status: int | None = None
    runner = -1
    try:
        for s in FORWARDED:
            signal.signal(s, signal.SIG_IGN)  # the client relays them; the supervisor must outlive the runner
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)  # pending in the runner until it has its handlers
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        runner = os.fork()
        if runner == 0:
            conn.close()
            try:
                return _become(fds, message, added_env)
            except BaseException as exc:  # noqa: BLE001 -- never run on as the warm process
                with contextlib.suppress(OSError):
                    os.write(2, f"skillmill: the warm process could not start this run ({exc!r}); run it again, "
                                "or with SKILLMILL_WARM=0\n".encode())
                os._exit(1)
        _close_all(fds)
        conn.settimeout(None)
        _send(conn, {"pid": runner})
        status = _relay_until_exit(conn, runner)
        _send(conn, {"status": status})
    except BaseException:  # noqa: BLE001 -- the fork failed (the client runs cold), or the client went away
        if runner > 0 and status is None:
            _kill(runner, signal.SIGKILL)
        elif runner < 0:
            with contextlib.suppress(OSError):
                _send(conn, {"refused": "could not start the run"})
    os._exit(0)


def _relay_until_exit(conn: socket.socket, runner: int) -> int:
    import select

    client_gone = False
    while True:
        done, raw = os.waitpid(runner, os.WNOHANG)
        if done:
            return -os.WTERMSIG(raw) if os.WIFSIGNALED(raw) else os.waitstatus_to_exitcode(raw)
        if client_gone:
            time.sleep(0.05)
            continue
        readable, _, _ = select.select([conn], [], [], 0.1)
        if readable:
            data = conn.recv(64)
            if not data:  # the client is gone (killed): so is its run
                _kill(runner, signal.SIGKILL)
                client_gone = True
            for signum in data:
                if signum in FORWARDED:
                    _kill(runner, signum)


def _become(fds: list[int], message: dict, added_env: dict[str, str]) -> Request:
    """In the runner: the client's stdio, folder, environment, umask and arguments; signals as the client had
    them (a fresh process's, but those it ignored)."""
    import tempfile

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        _close(fd)
    os.chdir(message["cwd"])
    os.umask(int(message.get("umask", 0o022)))
    os.environ.clear()
    os.environ.update({**added_env, **message["env"]})
    time.tzset()  # TZ as the client has it
    tempfile.tempdir = None  # TMPDIR too
    sys.argv = list(message["argv"])
    ignored = {int(s) for s in message.get("ignored", [])}
    for s in FORWARDED:
        signal.signal(s, signal.SIG_IGN if int(s) in ignored else
                      signal.default_int_handler if s == signal.SIGINT else signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    sys.stdout.reconfigure(line_buffering=os.isatty(1))
    sys.stderr.reconfigure(line_buffering=True)  # as Python makes it, terminal or not
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)  # a signal relayed meanwhile arrives now
    return Request(argv=list(message["argv"]), prog=str(message["prog"]), started=float(message["started"]))


def finish(main: Callable[[], object]) -> NoReturn:
    """Run the runner's command as an interpreter runs its ``__main__``, then leave with ``os._exit``.

    The runner is a fork of a process that imported DuckDB, whose import starts a C++ thread; the
    fork has the thread's object but not the thread, and its destructor at ``exit()`` aborts the
    process (SIGABRT, "terminate called without an active exception"). So the runner ends as the
    interpreter would -- non-daemon threads joined, ``atexit`` handlers (Prefect's workers flushing),
    output flushed, an uncaught ``KeyboardInterrupt`` leaving by SIGINT -- but skips the C-level exit.
    """
    import atexit
    import threading
    import traceback

    code, signum = 0, 0
    try:
        main()
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        signum = signal.SIGINT
    except BaseException:  # noqa: BLE001 -- as the interpreter: the traceback, exit 1
        traceback.print_exc()
        code = 1
    try:
        try:
            threading._shutdown()  # as the interpreter: concurrent.futures' exit hooks, then non-daemon threads joined
        except KeyboardInterrupt:
            signum = signal.SIGINT
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        if signum:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        os._exit(code & 0xFF)


def code_fingerprint(since: float | None = None) -> str | None:
    """The loaded ``pipeline``/``flows`` modules and the site-packages folders, by mtime and size; None
    when one of them changed after ``since``."""
    import hashlib

    root = str(code_root())
    files = sorted(m.__file__ for name, m in list(sys.modules.items())
                   if name.split(".")[0] in ("pipeline", "flows") and getattr(m, "__file__", None)
                   and m.__file__.startswith(root))
    folders = sorted(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    parts = []
    for path in [*files, *folders]:
        try:
            st = os.stat(path)
        except OSError:
            parts.append(f"{path}:gone")
            continue
        if since is not None and st.st_mtime > since:
            return None
        parts.append(f"{path}:{st.st_mtime_ns}:{st.st_size}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


# -- wire -----------------------------------------------------------------------------------------
def _send(sock: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode()
    frame = struct.pack(">I", len(data)) + data
    if fds:
        socket.send_fds(sock, [frame[:4]], fds)
        sock.sendall(frame[4:])
    else:
        sock.sendall(frame)


def _receive(sock: socket.socket) -> dict | None:
    head = _exactly(sock, 4)
    if head is None:
        return None
    body = _exactly(sock, struct.unpack(">I", head)[0])
    return None if body is None else json.loads(body)


def _receive_with_fds(sock: socket.socket) -> tuple[dict, list[int]]:
    """A request and the descriptors sent with it (closed here when the request is not one)."""
    head, fds, _, _ = socket.recv_fds(sock, 4, 3)
    try:
        if len(head) < 4:
            head += _exactly(sock, 4 - len(head)) or b""
        size = struct.unpack(">I", head)[0]
        if size > _MAX_REQUEST:
            raise ValueError("request too large")
        body = _exactly(sock, size)
        if body is None:
            raise ValueError("request cut short")
        return json.loads(body), list(fds)
    except BaseException:
        _close_all(fds)
        raise


def _exactly(sock: socket.socket, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = sock.recv(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _peer(conn: socket.socket) -> tuple[int, int]:
    """The pid and uid of the process at the other end (``SO_PEERCRED``)."""
    pid, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return pid, uid


def _same_user_and_filesystem(conn: socket.socket) -> bool:
    """Our user, and our view of the files: abstract sockets are shared by every process of the network
    namespace, a sandbox (bwrap, a container on the host's network) included, whose paths are not ours."""
    pid, uid = _peer(conn)
    if uid != os.getuid():
        return False
    try:
        return all(os.readlink(f"/proc/{pid}/{what}") == os.readlink(f"/proc/self/{what}")
                   for what in ("ns/mnt", "root"))
    except OSError:
        return False


def _reaped(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return bool(done)


def _kill(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        _close(fd)
