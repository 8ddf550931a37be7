"""``skillmill schedule``: the nightly flow on a cron schedule, served from this machine.

``flow.serve`` registers a deployment on a Prefect server and runs each scheduled flow run
in a subprocess of this one. Scheduled runs are created by the server's scheduler service,
which Prefect's temporary (ephemeral) server does not run: so with no ``PREFECT_API_URL``
this module starts ``prefect server start`` itself, on Prefect's usual local address, and
stops it again on the way out. Teams that already run a server (and workers) point
``PREFECT_API_URL`` at it.

Everything before :func:`serve` is pure planning, so ``--dry-run`` shows the same plan that
would be served. The cron and time zone checks live below the config (``pipeline.cron``):
``config.load`` calls them without importing what they configure.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
import zoneinfo
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from pipeline import private, settings, spawn
from pipeline.cron import local_timezone
from pipeline.errors import SkillmillError, UsageError
from pipeline.execution import api_auth

if TYPE_CHECKING:
    from pipeline.config import Config

FLOW = "skillmill-nightly"
DEPLOYMENT = "nightly"
ENTRYPOINT = "flows.nightly.nightly"

# -- the plan ---------------------------------------------------------------------------------
class Setting(BaseModel):
    value: Any
    origin: str


class Server(BaseModel):
    url: str
    origin: str = Field(description="PREFECT_API_URL (env or Prefect profile), or Prefect's local server.")
    running: bool
    start: bool = Field(description="Whether `skillmill schedule` starts `prefect server start` at this address.")

    @property
    def ui(self) -> str:
        return self.url.removesuffix("/").removesuffix("/api")


class SchedulePlan(BaseModel):
    """What ``skillmill schedule`` serves: ``--dry-run --json`` prints exactly this."""

    flow: str = FLOW
    deployment: str = f"{FLOW}/{DEPLOYMENT}"
    entrypoint: str = ENTRYPOINT
    cron: Setting
    timezone: Setting
    next_runs: list[str]
    parameters: dict[str, Any]
    library: Setting
    sources: list[dict[str, Any]] = Field(description="Where each run looks for sessions (`skillmill sources`).")
    home: str
    server: Server
    sync: Setting | None = Field(None, description="Minutes between syncs of a shared library "
                                 "(`[library] sync_minutes`; the `skillmill-sync` deployment), or None.")


def plan(cfg: Config) -> SchedulePlan:
    """The schedule, from the effective config (``config.load`` with the command's flags applied)."""
    from pipeline import config as config_module
    from pipeline.ingest.sources import Ignore, configured_sources

    cron = cfg.schedule.cron
    zone = cfg.schedule.timezone or local_timezone()
    zone_origin = cfg.source_of("schedule.timezone")
    if cfg.schedule.timezone is None:
        zone_origin = "default (this machine's zone)"
    _, lib_value, lib_origin = next(row for row in config_module.entries(cfg) if row[0] == "library")
    lib = str(Path(lib_value).expanduser().resolve())  # fixed now: the deployment's parameter, shown in the UI
    ignore = Ignore(cfg.sources.ignore_paths)
    return SchedulePlan(
        cron=Setting(value=cron, origin=cfg.source_of("schedule.cron")),
        timezone=Setting(value=zone, origin=zone_origin),
        next_runs=[when.isoformat() for when in next_runs(cron, zone)],
        parameters={"paths": [], "library": lib},
        library=Setting(value=lib, origin=lib_origin),
        sources=[source.row(ignore) for source in configured_sources(cfg)],
        home=str(settings.home()),
        server=find_server(),
        sync=_sync_setting(cfg, lib),
    )


def _sync_setting(cfg: Config, library: str) -> Setting | None:
    """Every ``[library] sync_minutes`` when the library is shared (``skillmill sync``), else None."""
    from pipeline.library import Library, sync

    minutes = cfg.library_sync.sync_minutes
    if not minutes or not sync.is_shared(Library(Path(library))):
        return None
    return Setting(value=minutes, origin=cfg.source_of("library_sync.sync_minutes"))


def next_runs(cron: str, zone: str, count: int = 3, start: datetime | None = None) -> list[datetime]:
    """When the schedule fires next, as Prefect's scheduler computes it (croniter, in ``zone``)."""
    from prefect._vendor.croniter import croniter

    if not croniter.is_valid(cron):
        raise UsageError(f"cron {cron!r} is not a schedule Prefect accepts",
                         hint="use five fields, e.g. '0 2 * * *' (every day at 02:00)")
    tz = zoneinfo.ZoneInfo(zone)
    it = croniter(cron, (start or datetime.now(UTC)).astimezone(tz))
    return [it.get_next(datetime) for _ in range(count)]


def find_server() -> Server:
    """PREFECT_API_URL when set (env or the active Prefect profile), else Prefect's local address."""
    from prefect.settings import Settings

    current = Settings()  # read now: this process's environment and Prefect profile, not a test harness's context
    if current.api.url:
        origin = "env PREFECT_API_URL" if os.environ.get("PREFECT_API_URL") else "PREFECT_API_URL (Prefect profile)"
        return Server(url=current.api.url, origin=origin, running=healthy(current.api.url), start=False)
    host, port = current.server.api.host, current.server.api.port
    host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    url = f"http://{host}:{port}/api"
    running = healthy(url)
    return Server(url=url, origin="Prefect's local server (PREFECT_API_URL unset)", running=running, start=not running)


def healthy(url: str, timeout: float = 3.0) -> bool:
    import httpx

    try:
        return httpx.get(f"{url.rstrip('/')}/health", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


# -- serving ----------------------------------------------------------------------------------
@contextlib.contextmanager
def local_server(server: Server, *, timeout: float = 180.0,
                 notify: Callable[[str], None] = lambda message: None) -> Iterator[Path | None]:
    """Start ``prefect server start`` at ``server.url`` for as long as the block runs (when asked to).

    Its output goes to ``$SKILLMILL_HOME/logs/prefect-server.log`` and its pid to ``prefect-server.pid``
    beside it. It runs in its own process group, so that Ctrl-C reaches the runner first (which
    pauses the schedule through it) and the server after: stopped, or killed if it does not stop,
    on the way out however the block ends.
    """
    if not server.start:
        if not server.running:
            raise SkillmillError(f"the Prefect server at {server.url} does not answer",
                                 hint="start it (`prefect server start`) or unset PREFECT_API_URL so that "
                                      "`skillmill schedule` starts a local one")
        yield None
        return
    host, port = re.match(r"https?://([^:/]+):(\d+)", server.url).groups()  # type: ignore[union-attr]
    log = settings.home() / "logs" / "prefect-server.log"
    private.mkdir(log.parent)
    # Imported here, not at the top: validating a config file imports this module.
    from pipeline.execution.server import exit_with_parent

    notify(f"Starting Prefect's local server at {server.ui} (its first start sets up a database; logs: {log})")
    with private.open_file(log, "ab") as out:
        # Its own session (see above), and the kernel stops it if we are killed (-9 included) before
        # the `finally` below can: a server left behind would hold the port and ~230 MB.
        auth = api_auth.server_env(api_auth.credential(settings.prefect_home()))  # no other account uses its API
        process = spawn.popen(["-m", "prefect", "server", "start", "--host", host, "--port", port],
                              env_base={**os.environ, **settings.OFFLINE_ENV, **auth}, stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=exit_with_parent)
    pid_file = log.with_suffix(".pid")  # its own session, so Ctrl-C here reaches it only through us: say who it is
    private.write_text(pid_file, f"{process.pid}\n")
    try:
        deadline = time.monotonic() + timeout
        while not healthy(server.url, timeout=2.0):
            if process.poll() is not None:
                raise SkillmillError(f"`prefect server start` exited with {process.returncode} before answering",
                                     hint=f"its output is in {log} (is port {port} taken? set "
                                          "PREFECT_SERVER_API_PORT to use another)")
            if time.monotonic() > deadline:
                raise SkillmillError(f"Prefect's server did not answer at {server.url} within {timeout:.0f} s",
                                     hint=f"its output is in {log}")
            time.sleep(0.5)
        yield log
    finally:
        stop_process_group(process)
        with contextlib.suppress(OSError):
            pid_file.unlink()


def stop_process_group(process: subprocess.Popen, grace: float = 15.0) -> None:
    """SIGTERM the group led by ``process`` (started with ``start_new_session``), SIGKILL what stays."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # children the leader left behind, if any
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)


def serve(schedule: SchedulePlan, *, on_ready: Callable[[SchedulePlan], None] | None = None,
          notify: Callable[[str], None] = lambda message: None) -> None:
    """Register the deployment with its cron schedule and run scheduled flow runs until stopped.

    Blocks. SIGTERM and Ctrl-C stop it; the schedule is then paused on the server (nothing
    runs while nobody serves it) and resumed by the next ``skillmill schedule``.
    """
    from prefect.settings import PREFECT_API_URL, temporary_settings


    # Each scheduled run is a subprocess of this one, started in its working folder: ours, and with no
    # working folder on its sys.path (spawn), whatever folder `skillmill schedule` was started in.
    os.environ.update(spawn.SAFE_ENV)
    os.chdir(spawn.folder())
    ours = contextlib.nullcontext()
    if schedule.server.start:  # the server we start asks for our credential; one the user runs is theirs
        ours = api_auth.for_clients(api_auth.credential(settings.prefect_home()))
    with local_server(schedule.server, notify=notify), temporary_settings({PREFECT_API_URL: schedule.server.url}), ours:
        schedule.server.running = True
        if on_ready is not None:
            on_ready(schedule)
        from prefect import serve as serve_all

        serve_all(*deployments(schedule), pause_on_shutdown=True, print_starting_message=False,
                  limit=1)  # one run at a time: the state database has one writer


def deployments(schedule: SchedulePlan) -> list[Any]:
    """What ``serve`` registers: the nightly run on its cron, and the shared library's sync every
    ``[library] sync_minutes`` when there is one (Prefect's ``RunnerDeployment`` objects; nothing is sent yet)."""
    from prefect.deployments.runner import EntrypointType
    from prefect.schedules import Cron

    from flows.nightly import nightly

    found = [nightly.to_deployment(name=DEPLOYMENT, **_nightly(schedule, Cron))]
    if schedule.sync is not None:
        from flows.sync import library_sync

        found.append(library_sync.to_deployment(
            name="every", interval=float(schedule.sync.value) * 60, parameters={"library": schedule.parameters["library"]},
            description="The shared library's sync (`skillmill sync`, every `[library] sync_minutes`).",
            tags=["skillmill"], entrypoint_type=EntrypointType.MODULE_PATH))
    return found


def _nightly(schedule: SchedulePlan, cron: Any) -> dict[str, Any]:
    from prefect.deployments.runner import EntrypointType

    return {"schedule": cron(schedule.cron.value, timezone=schedule.timezone.value),
            "parameters": schedule.parameters, "tags": ["skillmill"], "entrypoint_type": EntrypointType.MODULE_PATH,
            "description": "skillmill's nightly run: new agent sessions -> candidate skills (`skillmill schedule`)."}
