"""A warm recall process: the per-prompt hook asks it over a Unix socket, so prompts get the semantic channel.

Embedding a query needs numpy and a model in memory: ~100-200 ms to load, more than a hook call
may cost (the hook's start-up goal is 4x ``python -c pass``). So a long-lived process holds
them and answers queries on ``$SKILLMILL_HOME/recall.sock``: the MCP server runs one in a thread
while an agent session is open, ``skillmill recall-server`` runs one on its own, and the hook
starts one in the background when the index has an embedder and none answers (it exits after
``IDLE_S`` seconds without a question). The hook waits at most ``ASK_TIMEOUT_S`` for an answer and
otherwise answers from the lexical channel alone, in process, as before.

The protocol is one JSON line each way: ``{"query", "limit", "min_score", "repo", "language",
"agent", "include_candidates"}`` -> ``{"results": [Hit.contract(), ...]}`` (or ``{"error"}``).
The client side (:func:`ask`) imports only ``socket`` (and only when the socket file exists) and
``json``: it runs at every prompt.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from pipeline import private, settings

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    import socket
    from typing import Any

SOCKET = "recall.sock"
#: How long the hook waits for the warm process before answering lexically itself.
ASK_TIMEOUT_S = 0.8
#: A server started by the hook exits after this long without a question.
IDLE_S = 1800.0
MAX_LINE = 1_000_000
ENV_AUTOSTART = "SKILLMILL_RECALL_SERVER"


def socket_path() -> Path:
    return settings.home() / SOCKET


# -- client (the hook, ``skillmill recall``) ----------------------------------------------------
def hits(request: dict[str, Any], timeout: float = ASK_TIMEOUT_S) -> list[Any] | None:
    """The warm process's answer to ``request`` as ``Hit``s, or None when none answers in time
    (no socket: at once)."""
    if not socket_path().exists():
        return None
    results = ask(request, timeout)
    if results is None:
        return None
    from pipeline.recall.search import Hit

    try:
        return [Hit(str(r["name"]), str(r["path"]), float(r["score"]), str(r["description"]), str(r["status"]))
                for r in results]
    except (KeyError, TypeError, ValueError):
        return None


def ask(request: dict[str, Any], timeout: float = ASK_TIMEOUT_S, path: Path | None = None) -> list[dict[str, Any]] | None:
    """The warm process's results for ``request``, or None when none answers within ``timeout``."""
    import socket

    path = path or socket_path()
    deadline = time.monotonic() + timeout
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            with private.socket_address(path) as address:
                sock.connect(address)
            if private.peer_uid(sock) not in (os.getuid(), None):  # another account listens: never ask, never print
                return None
            sock.sendall(json.dumps(request).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                chunk = sock.recv(65536)
                if not chunk or len(data) > MAX_LINE:
                    return None
                data += chunk
        answer = json.loads(data)
    except (OSError, ValueError):
        return None
    results = answer.get("results") if isinstance(answer, dict) else None
    return results if isinstance(results, list) else None


def start_in_background() -> None:
    """Start ``skillmill recall-server --idle IDLE_S`` detached from the caller (the hook), unless
    ``SKILLMILL_RECALL_SERVER=0``. Best effort: the caller has already answered without it."""
    if os.environ.get(ENV_AUTOSTART, "1").strip().lower() in ("0", "no", "false", "off"):
        return
    stamp = socket_path().with_name(SOCKET + ".starting")  # one start a minute, however many prompts
    try:
        if time.time() - stamp.stat().st_mtime < 60:
            return
    except OSError:
        pass
    try:
        stamp.touch()
    except OSError:
        return
    import contextlib
    import subprocess

    from pipeline import spawn

    with contextlib.suppress(OSError):  # not from the agent's folder: spawn keeps its files off sys.path
        spawn.popen(["-m", "pipeline", "recall-server", "--idle", str(IDLE_S)],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    start_new_session=True, close_fds=True)


# -- server -------------------------------------------------------------------------------------
class Server:
    """Answers recall questions on the socket with the published index, reopened when it is republished."""

    def __init__(self, path: Path | None = None, index_path: Path | None = None, *, idle: float | None = None) -> None:
        self.path = path or socket_path()
        self.index_path = index_path or settings.recall_index_path()
        self.idle = idle
        self._index: Any = None
        self._stamp: tuple[int, int] | None = None
        self._lock = threading.Lock()
        self._last = time.monotonic()
        self._sock: socket.socket | None = None
        self._stop = threading.Event()

    def bind(self) -> bool:
        """Take the socket; False when another live process serves it already."""
        import socket

        if ask({"query": ""}, timeout=0.5, path=self.path) is not None:
            return False
        self.path.unlink(missing_ok=True)
        private.mkdir(self.path.parent)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with private.socket_address(self.path) as address:
                sock.bind(address)
        except OSError:
            sock.close()
            return False
        os.chmod(self.path, 0o600)  # the owner's questions only: they are the user's prompts
        sock.listen(16)
        sock.settimeout(1.0)
        self._sock = sock
        return True

    def index(self) -> Any:
        from pipeline.recall import RecallIndex

        st = self.index_path.stat()
        stamp = (st.st_ino, st.st_mtime_ns)
        if self._index is None or stamp != self._stamp:
            if self._index is not None:
                self._index.close()
            self._index, self._stamp = RecallIndex(self.index_path), stamp
        return self._index

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        query = str(request.get("query") or "")
        if not query.strip():
            return {"results": []}
        with self._lock:
            index = self.index()
            hits = index.search(query, limit=int(request.get("limit") or 5),
                                include_candidates=bool(request.get("include_candidates")),
                                min_score=request.get("min_score"), repo=request.get("repo"),
                                language=request.get("language"), agent=request.get("agent"))
        return {"results": [h.contract() for h in hits]}

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5.0)
            data = b""
            try:
                while not data.endswith(b"\n") and len(data) < MAX_LINE:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                try:
                    request = json.loads(data)
                    reply = self.answer(request if isinstance(request, dict) else {})
                except Exception as exc:  # a bad question or a missing index: say so, keep serving
                    reply = {"error": f"{type(exc).__name__}: {exc}"}
                conn.sendall(json.dumps(reply).encode() + b"\n")
            except OSError:
                pass

    def serve(self) -> None:
        """Answer until stopped, or until ``idle`` seconds pass without a question."""
        if self._sock is None and not self.bind():
            return
        assert self._sock is not None
        try:
            while not self._stop.is_set():
                try:
                    conn, _ = self._sock.accept()
                except TimeoutError:
                    if self.idle is not None and time.monotonic() - self._last > self.idle:
                        return
                    continue
                except OSError:
                    return
                self._last = time.monotonic()
                self._handle(conn)
        finally:
            self.close()

    def warm(self) -> None:
        """Load the index and its embedder now, so the first question is as fast as the others."""
        try:
            with self._lock:
                index = self.index()
                index.query_vector("warm up")
        except Exception:  # no index yet: the first question will say so
            pass

    def close(self) -> None:
        self._stop.set()
        if self._sock is not None:
            self._sock.close()
            self._sock = None
            import contextlib

            with contextlib.suppress(OSError):
                self.path.unlink()
        if self._index is not None:
            self._index.close()
            self._index = None


def serve_in_thread() -> Server | None:
    """Start a server in a daemon thread (the MCP server does, while its session lasts); None when one runs."""
    server = Server()
    try:
        if not server.bind():
            return None
    except OSError:
        return None
    threading.Thread(target=lambda: (server.warm(), server.serve()), name="skillmill-recall-socket",
                     daemon=True).start()
    return server
