"""``skillmill schedule``: serve the nightly flow on a cron schedule (``flow.serve``)."""

from __future__ import annotations

import click

from pipeline.cli._output import emit_json
from pipeline.schedule import SchedulePlan


@click.command("schedule")
@click.option("--cron", default=None, metavar="EXPR",
              help='When to run, five cron fields (default: [schedule] cron in the config, "0 2 * * *").')
@click.option("--library", type=click.Path(file_okay=False),
              help="Skill library folder (default: $SKILLMILL_LIBRARY, the config file, $SKILLMILL_HOME/skills).")
@click.option("--dry-run", is_flag=True, help="Print what would be scheduled; start nothing.")
@click.option("--json", "as_json", is_flag=True, help="With --dry-run: print the plan as one JSON object.")
def command(cron: str | None, library: str | None, dry_run: bool, as_json: bool) -> None:
    """Run the nightly flow on a cron schedule until stopped (Ctrl-C or SIGTERM).

    Each scheduled run reads what is new in the places `skillmill sources` lists and writes
    candidate skills to the library, as `skillmill run` with no paths does; its report shows in
    the Prefect UI and in `skillmill runs`. Uses the Prefect server at PREFECT_API_URL; without
    it, starts `prefect server start` on 127.0.0.1:4200 (PREFECT_SERVER_API_PORT) for as long as
    it runs (logs in $SKILLMILL_HOME/logs/prefect-server.log). Stopping pauses the schedule.

    \b
    Teams with a Prefect server and workers deploy flows/nightly.py:nightly to a work
    pool instead (README, "Scheduled runs").
    """
    import os

    from pipeline import config, schedule, spawn

    library = os.path.abspath(os.path.expanduser(library)) if library else None
    spawn.work_in_home()  # Prefect reads settings files from its working folder: never a checkout's
    cfg = config.load({"schedule.cron": cron, "library": library})
    plan = schedule.plan(cfg)
    if dry_run:
        if as_json:
            emit_json(plan.model_dump())
        else:
            _print_plan(plan, heading="Would serve (dry run: nothing started)")
        return
    if as_json:
        raise click.UsageError("--json describes the plan: use it with --dry-run")
    schedule.serve(plan, on_ready=_ready, notify=lambda message: click.echo(message, err=True))
    click.echo("Stopped; the schedule is paused until `skillmill schedule` runs again.", err=True)


def _ready(plan: SchedulePlan) -> None:
    _print_plan(plan, heading="Serving")
    click.echo("Ctrl-C stops it.", err=True)


def _print_plan(p: SchedulePlan, heading: str) -> None:
    echo = click.echo
    echo(f"{heading}: flow {p.flow}, deployment {p.deployment} ({p.entrypoint})")
    echo(f"  cron       {p.cron.value}  ({p.timezone.value})    from {p.cron.origin}; zone from {p.timezone.origin}")
    echo(f"  next runs  {', '.join(_short(t, p.timezone.value) for t in p.next_runs)}")
    echo(f"  library    {p.library.value}    from {p.library.origin}")
    if p.sync is not None:
        echo(f"  sync       the shared library every {p.sync.value:g} min (deployment skillmill-sync/every)    "
             f"from {p.sync.origin}")
    echo(f"  home       {p.home}    (state database, run history, config)")
    found = sum(s["files"] or 0 for s in p.sources)
    places = f"{len(p.sources)} place{'' if len(p.sources) == 1 else 's'}"
    echo(f"  sources    {places}, {found} candidate files now (`skillmill sources` for details):")
    for source in p.sources:
        state = "missing" if not source["exists"] else f"{source['files']} files"
        echo(f"             {source['path']}  ({state})")
    server = p.server
    if server.running:
        status = "started by `skillmill schedule`" if server.start else "answering"
    else:
        status = "not running: `skillmill schedule` starts it" if server.start else "NOT answering"
    echo(f"  server     {server.url}  ({server.origin}; {status})")
    echo(f"  UI         {server.ui}")


def _short(iso: str, zone: str) -> str:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    return datetime.fromisoformat(iso).astimezone(ZoneInfo(zone)).strftime("%a %Y-%m-%d %H:%M %Z")
