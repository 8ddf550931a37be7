"""The credential of the Prefect servers skillmill starts: no other local account may use their API.

A Prefect server listens on 127.0.0.1, where every account of the machine can reach it: unguarded,
anyone could read the flow runs' parameters (the paths of a user's sessions) and reports, delete
them, or queue runs that ``skillmill schedule`` would execute. So every server we start (the shared
one, a run's temporary one, ``schedule``'s) runs with Prefect's own basic authentication
(``PREFECT_SERVER_API_AUTH_STRING``), and our clients send it (``PREFECT_API_AUTH_STRING``).

The credential is random, kept owner-only (0600) in the Prefect home beside the server's database
(``skillmill-api-auth``), made once and reused, so every run of this user finds the server it left.
``/api/health`` stays open (Prefect leaves it so): anyone may see that a server is up, nothing more.
A server the user configured (``PREFECT_API_URL``) is theirs: nothing here touches it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from pipeline import private

FILE = "skillmill-api-auth"
USER = "skillmill"
SERVER_VARIABLE = "PREFECT_SERVER_API_AUTH_STRING"
CLIENT_VARIABLE = "PREFECT_API_AUTH_STRING"


def credential(folder: Path) -> str:
    """``skillmill:<random>`` for the servers whose database is in ``folder`` (made on first use, 0600)."""
    private.mkdir(folder)
    file = folder / FILE
    for _ in range(2):
        try:
            fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            made = f"{USER}:{secrets.token_urlsafe(32)}"
            try:
                fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, private.FILE_MODE)
            except FileExistsError:
                continue  # another run made it first: read theirs
            with os.fdopen(fd, "w") as handle:
                handle.write(made + "\n")
            return made
        with os.fdopen(fd) as handle:
            if os.fstat(handle.fileno()).st_uid != os.geteuid():
                raise PermissionError(f"{file} belongs to another account")
            private.restrict(file)
            value = handle.read(4096).strip()
        if value.startswith(f"{USER}:") and len(value) > len(USER) + 20:
            return value
        os.unlink(file)  # damaged: a new one (the server that used it no longer matches and is replaced)
    raise OSError(f"cannot make {file}")


def server_env(value: str) -> dict[str, str]:
    """What a server process we start gets."""
    return {SERVER_VARIABLE: value}


@contextlib.contextmanager
def for_clients(value: str) -> Iterator[None]:
    """``PREFECT_API_AUTH_STRING`` for the block: in the environment (child processes, Dask's local
    workers, a Prefect imported later) and in Prefect's settings when it is imported already."""
    import sys

    previous = os.environ.get(CLIENT_VARIABLE)
    os.environ[CLIENT_VARIABLE] = value
    try:
        if "prefect.settings" in sys.modules:
            from prefect.settings import PREFECT_API_AUTH_STRING, temporary_settings

            with temporary_settings({PREFECT_API_AUTH_STRING: value}):
                yield
        else:
            yield
    finally:
        if previous is None:
            os.environ.pop(CLIENT_VARIABLE, None)
        else:
            os.environ[CLIENT_VARIABLE] = previous
