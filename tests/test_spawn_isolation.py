"""Issue 23.1: nothing in the folder an agent works in runs as the user.

skillmill runs in whatever folder the agent is in. A checkout that ships ``pipeline.py``,
``pipeline/__main__.py``, ``prefect.py`` (or ``flows``, ``sitecustomize``) must not have them
imported by any interpreter skillmill starts: the hook's recall server, the MCP server, recall,
``run`` cold and warm (the shared Prefect server, the warm process), the per-run server
(``server_idle_minutes = 0``), ``schedule``'s ``prefect server start`` and its flow runs, and the
commands ``install`` writes (the ``python -m pipeline`` fallback included). Every planted module
writes a mark; the test asserts there is none, and that each path still did its work.

The processes are started as a user's agent starts them: the installed ``skillmill`` executable (or
the command ``install`` wrote), in the planted folder, with no ``PYTHONPATH``.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline import spawn
from pipeline.execution import api_auth, shared_server, warm
from pipeline.recall import daemon
from pipeline.schedule import DEPLOYMENT
from tests.conftest import SAMPLES

pytestmark = pytest.mark.slow

SKILLMILL = Path(sys.executable).with_name("skillmill")
FLOW = "skillmill-nightly"
#: module file -> what it is planted as (both layouts: plain modules, and packages with __main__)
LAYOUTS = {
    "modules": ["pipeline.py", "prefect.py", "flows.py", "duckdb.py", "orjson.py", "sitecustomize.py",
                "usercustomize.py", "click.py", "httpx.py"],
    "packages": ["pipeline/__init__.py", "pipeline/__main__.py", "prefect/__init__.py", "prefect/__main__.py",
                 "flows/__init__.py", "flows/nightly.py", "uvicorn/__init__.py"],
}


def plant(folder: Path, files: list[str], marks: Path) -> Path:
    for name in files:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"import os\nopen(os.path.join({str(marks)!r}, {name.replace('/', '.')!r} + '.' + "
                        "str(os.getpid())), 'w').write(os.getcwd())\n")
    # Prefect's settings files, as a checkout may ship them: each names a logging config whose factory runs code
    logging_config = folder / "logging.yml"
    logging_config.write_text(f'version: 1\nformatters:\n  x:\n    "()": subprocess.getoutput\n'
                              f'    cmd: "touch {marks}/prefect-settings.$$"\n')
    (folder / "prefect.toml").write_text(f'[logging]\nconfig_path = "{logging_config}"\n')
    (folder / ".env").write_text(f"PREFECT_LOGGING_CONFIG_PATH={logging_config}\n")
    (folder / "pyproject.toml").write_text(f'[tool.prefect.logging]\nconfig_path = "{logging_config}"\n')
    (folder / "bin").mkdir()  # a fork of sympy, say: the hook serves its skills (and finds them current)
    (folder / "bin" / "test").write_text("#!/usr/bin/env python\n")
    (folder / "sympy/core/tests").mkdir(parents=True)
    (folder / "sympy/core/tests/test_symbol.py").write_text("")
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "remote", "add", "origin", "https://github.com/sympy/sympy.git"], check=True)
    return folder


def marks_in(marks: Path) -> list[str]:
    return sorted(p.name for p in marks.iterdir())


@pytest.fixture(scope="module")
def prefect_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("isolation-prefect")
    yield folder
    shared_server.stop_shared(folder)


@pytest.fixture(params=sorted(LAYOUTS))
def checkout(request: pytest.FixtureRequest, tmp_path: Path, prefect_home: Path) -> Iterator[tuple[Path, dict]]:
    marks = tmp_path / "marks"
    marks.mkdir()
    folder = plant(tmp_path / "hostile-checkout", LAYOUTS[request.param], marks)
    user = tmp_path / "user"
    user.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PREFECT_", "SKILLMILL_", "DO_NOT_TRACK", "PYTHON"))}
    env.update(HOME=str(user), SKILLMILL_HOME=str(tmp_path / "home"), PREFECT_HOME=str(prefect_home),
               LITELLM_LOCAL_MODEL_COST_MAP="True", SKILLMILL_SERVER_IDLE_MINUTES="5", SKILLMILL_HOOK_MIN_SCORE="0.1",
               PATH=f"{SKILLMILL.parent}{os.pathsep}{env.get('PATH', '')}")
    yield folder, env
    for pid in warm.pids(Path(env["SKILLMILL_HOME"])):
        warm.stop(pid)
    _stop_recall_servers(Path(env["SKILLMILL_HOME"]))
    assert marks_in(marks) == [], "a module planted in the working folder was imported"


def _stop_recall_servers(home: Path) -> None:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                words = (entry / "cmdline").read_bytes().split(b"\0")
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if b"recall-server" in words and f"SKILLMILL_HOME={home}".encode() in environ:
                os.kill(int(entry.name), signal.SIGTERM)


def run(args: list[str], env: dict, cwd: Path, stdin: str | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout,
                          input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)


def test_runs_recall_hook_and_mcp_from_a_hostile_checkout_import_nothing_of_it(checkout: tuple[Path, dict],
                                                                               tmp_path: Path) -> None:
    folder, env = checkout
    library = tmp_path / "library"
    cold = run([str(SKILLMILL), "run", str(SAMPLES), "--library", str(library), "--json"], env, folder)
    assert cold.returncode == 0, cold.stderr
    assert json.loads(cold.stdout.splitlines()[-1])["process"] == "new"  # the shared server, the warm process
    deadline = time.monotonic() + 60
    while not warm.pids(Path(env["SKILLMILL_HOME"])) and time.monotonic() < deadline:
        time.sleep(0.2)
    again = run([str(SKILLMILL), "run", str(SAMPLES), "--library", str(library), "--json"], env, folder)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout.splitlines()[-1])["process"] == "warm"
    one_off = run([str(SKILLMILL), "run", str(SAMPLES), "--library", str(library), "--json"],
                  {**env, "SKILLMILL_SERVER_IDLE_MINUTES": "0", "SKILLMILL_WARM": "0"}, folder)
    assert one_off.returncode == 0, one_off.stderr
    assert json.loads(one_off.stdout.splitlines()[-1])["server"] == "temporary", one_off.stdout

    env = {**env, "SKILLMILL_LIBRARY": str(library)}
    run([str(SKILLMILL), "review", "approve", "working-in-sympy", "--by", "test"], env, folder)
    found = run([str(SKILLMILL), "recall", "--json", "sympy tests fail with pytest: command not found"], env, folder)
    assert found.returncode == 0 and "working-in-sympy" in found.stdout, found.stderr

    # the hook, as installed: the installed executable, and the fallback when none is on PATH
    assert run([str(SKILLMILL), "install", "--agent", "claude-code"], env, folder).returncode == 0
    hooks = json.loads((Path(env["HOME"]) / ".claude" / "settings.json").read_text())["hooks"]
    command = hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "cwd": str(folder), "session_id": "s1",
                          "prompt": "sympy tests fail with pytest: command not found"})
    answer = run(["sh", "-c", command], env, folder, stdin=payload)
    assert answer.returncode == 0 and "working-in-sympy" in answer.stdout, (command, answer.stderr)
    deadline = time.monotonic() + 60  # the hook started the warm recall server: it must answer, from our code
    sock = Path(env["SKILLMILL_HOME"]) / daemon.SOCKET
    while time.monotonic() < deadline and not (sock.exists() and daemon.ask({"query": "sympy"}, 2.0, sock)):
        time.sleep(0.3)
    assert daemon.ask({"query": "sympy"}, 2.0, sock) is not None, "the recall server the hook started never answered"

    mcp = json.loads((Path(env["HOME"]) / ".claude.json").read_text())["mcpServers"]["skillmill"]
    _mcp_answers([mcp["command"], *mcp["args"]], env, folder)

    fallback = spawn.argv("-m", "pipeline")  # what install writes where no skillmill is on PATH
    assert fallback[:2] == [sys.executable, "-P"]
    bare = {**env, "PATH": "/usr/bin:/bin"}
    answer = run(["sh", "-c", shlex.join([*fallback, "hook", "claude-code"])], bare, folder,
                 stdin=payload.replace("s1", "s2"))
    assert answer.returncode == 0 and "working-in-sympy" in answer.stdout, answer.stderr
    _mcp_answers([*fallback, "mcp"], bare, folder)


def _mcp_answers(command: list[str], env: dict, cwd: Path) -> None:
    """Start the MCP server as the agent would and ask it for a skill over stdio."""
    messages = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "test", "version": "0"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {"name": "recall_skills", "arguments": {"task": "sympy tests fail with pytest"}}}]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=env, cwd=cwd, text=True)
    try:
        assert process.stdin is not None and process.stdout is not None
        for message in messages:
            process.stdin.write(json.dumps(message) + "\n")
            process.stdin.flush()
        answers = [json.loads(process.stdout.readline()) for _ in range(2)]
    finally:
        process.kill()
        process.wait(timeout=30)
    assert "working-in-sympy" in json.dumps(answers[1]), answers


def test_schedule_and_its_flow_runs_import_nothing_of_the_folder_it_was_started_in(
        checkout: tuple[Path, dict], tmp_path: Path) -> None:
    folder, env = checkout
    port = _free_port()
    env = {**env, "PREFECT_SERVER_API_PORT": str(port), "PREFECT_HOME": str(tmp_path / "schedule-prefect"),
           "PREFECT_RUNNER_POLL_FREQUENCY": "1"}
    process = subprocess.Popen([str(SKILLMILL), "schedule", "--cron", "* * * * *"], env=env, cwd=folder,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        deadline = time.monotonic() + 240
        assert process.stdout is not None
        while time.monotonic() < deadline and (line := process.stdout.readline()):
            lines.append(line)
            if line.startswith("Serving:"):
                break
        assert process.poll() is None, "".join(lines)
        # a run now, not at the next minute: the runner starts it as a subprocess of `schedule`
        credential = (Path(env["PREFECT_HOME"]) / api_auth.FILE).read_text().strip()  # the server asks for it
        api = {**env, "PREFECT_API_URL": f"http://127.0.0.1:{port}/api", "PREFECT_API_AUTH_STRING": credential}
        # "Serving:" is printed as the runner starts registering: on a busy machine the deployment comes a moment later
        started = run([sys.executable, "-m", "prefect", "deployment", "run", f"{FLOW}/{DEPLOYMENT}"], api, tmp_path)
        while started.returncode != 0 and "not found" in started.stdout and time.monotonic() < deadline:
            started = run([sys.executable, "-m", "prefect", "deployment", "run", f"{FLOW}/{DEPLOYMENT}"], api, tmp_path)
        assert started.returncode == 0, started.stdout + started.stderr
        assert _flow_run_completes(api, deadline=time.monotonic() + 180), "".join(lines)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)


def _flow_run_completes(env: dict, deadline: float) -> bool:
    import httpx

    while time.monotonic() < deadline:
        auth = base64.b64encode(env["PREFECT_API_AUTH_STRING"].encode()).decode()
        runs = httpx.post(f"{env['PREFECT_API_URL']}/flow_runs/filter", json={}, timeout=10,
                          headers={"Authorization": f"Basic {auth}"}).json()
        states = {r["state"]["type"] for r in runs if r.get("state")}
        if "COMPLETED" in states:
            return True
        assert not states & {"FAILED", "CRASHED"}, runs
        time.sleep(1)
    return False


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_spawned_interpreters_keep_their_children_off_the_working_folder_too(tmp_path: Path) -> None:
    """PYTHONSAFEPATH reaches the grandchildren (Prefect's own subprocesses); they start in our home."""
    shutil.rmtree(tmp_path / "home", ignore_errors=True)
    child = spawn.popen(["-c", "import os, sys; print(os.environ['PYTHONSAFEPATH'], os.getcwd(), '' in sys.path)"],
                        stdout=subprocess.PIPE, text=True)
    out, _ = child.communicate(timeout=60)
    safe, cwd, on_path = out.split()
    assert (safe, on_path) == ("1", "False")
    from pipeline import settings

    assert Path(cwd) == settings.home() and (settings.home().stat().st_mode & 0o777) == 0o700
