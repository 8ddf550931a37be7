"""Issue 23.6: the Prefect servers skillmill starts answer only their owner.

They listen on 127.0.0.1, which every local account reaches. Without the credential (kept 0600 in the
Prefect home, unreadable to others) their API answers 401: no reading the flow runs' parameters (the
paths of a user's sessions), no deleting them, no queueing runs. Health stays open.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from pipeline.execution import api_auth, server, shared_server
from tests.conftest import ROOT
from tests.test_startup import user_env

pytestmark = pytest.mark.slow


def basic(value: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(value.encode()).decode()}


def as_nobody_get(url: str) -> int:
    """The status another account gets, asking without the credential (which it cannot read)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(65534)
            os.setuid(65534)
            os.write(write, str(httpx.post(f"{url}/flow_runs/filter", json={}, timeout=10).status_code).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    return int(os.read(read, 10) or 0)


def test_the_shared_server_refuses_anyone_without_the_owners_credential(tmp_path: Path) -> None:
    prefect_home = tmp_path / "prefect"
    env = user_env(tmp_path, PREFECT_HOME=str(prefect_home), SKILLMILL_SERVER_IDLE_MINUTES="1", SKILLMILL_WARM="0")
    empty = tmp_path / "empty"
    empty.mkdir()
    try:
        done = subprocess.run([sys.executable, "-m", "pipeline", "run", str(empty), "--json"], capture_output=True,
                              text=True, env=env, cwd=ROOT, timeout=300)
        assert done.returncode == 0, done.stderr
        url = json.loads((prefect_home / shared_server.STATE).read_text())["url"]
        file = prefect_home / api_auth.FILE
        assert file.stat().st_mode & 0o777 == 0o600
        credential = file.read_text().strip()
        assert httpx.get(f"{url}/health", timeout=10).status_code == 200  # that it is up, nothing more
        runs = httpx.post(f"{url}/flow_runs/filter", json={}, timeout=10, headers=basic(credential))
        assert runs.status_code == 200 and runs.json(), "the owner's run is there"
        assert httpx.post(f"{url}/flow_runs/filter", json={}, timeout=10).status_code == 401
        assert httpx.delete(f"{url}/flow_runs/{runs.json()[0]['id']}", timeout=10).status_code == 401
        assert httpx.post(f"{url}/flow_runs/filter", json={}, timeout=10,
                          headers=basic("skillmill:guess")).status_code == 401
        if os.geteuid() == 0:
            assert as_nobody_get(url) == 401
        # the next run finds the server it left and still talks to it
        again = subprocess.run([sys.executable, "-m", "pipeline", "run", str(empty), "--json"], capture_output=True,
                               text=True, env=env, cwd=ROOT, timeout=300)
        assert again.returncode == 0 and json.loads(again.stdout.splitlines()[-1])["server"] == "reused", again.stderr
    finally:
        shared_server.stop_shared(prefect_home)


def test_a_runs_temporary_server_has_a_credential_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    started = server.start()
    try:
        assert started.auth and started.auth.startswith("skillmill:")
        assert httpx.post(f"{started.url}/flow_runs/filter", json={}, timeout=10).status_code == 401
        assert httpx.post(f"{started.url}/flow_runs/filter", json={}, timeout=10,
                          headers=basic(started.auth)).status_code == 200
    finally:
        started.stop()


def test_the_credential_is_made_once_owner_only_and_never_read_from_another_accounts_file(tmp_path: Path) -> None:
    first = api_auth.credential(tmp_path)
    assert first == api_auth.credential(tmp_path) and len(first) > 40
    assert (tmp_path / api_auth.FILE).stat().st_mode & 0o777 == 0o600
    if os.geteuid() == 0:
        os.chown(tmp_path / api_auth.FILE, 65534, 65534)
        with pytest.raises(PermissionError):
            api_auth.credential(tmp_path)
