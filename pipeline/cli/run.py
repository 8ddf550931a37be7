"""``skillmill run``: the nightly flow over trajectory files or folders."""

from __future__ import annotations

import os
import sys

import click

from pipeline.cli._output import emit_json, progress_bar
from pipeline.terminal import visible


@click.command("run")
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--library", type=click.Path(file_okay=False),
              help="Skill library folder (default: $SKILLMILL_LIBRARY, the config file, $SKILLMILL_HOME/skills).")
@click.option("--json", "as_json", is_flag=True, help="End with one JSON line summarizing the run.")
@click.option("-v", "--verbose", is_flag=True,
              help="List each trajectory that gave nothing reusable (id, reason, file, task); show Prefect's logs.")
@click.option("--defer-minutes", type=click.FloatRange(min=0), default=None,
              help="Leave files changed less than this long ago for the next run "
                   "(default: [sources] defer_minutes, 5, with no PATHS; 0 for PATHS given).")
@click.option("--task-runner", type=click.Choice(["thread", "dask"]), default=None,
              help="Where distillation tasks run: a thread pool here, or a Dask cluster (default: [run] task_runner, "
                   "thread).")
@click.option("--dask-address", metavar="TCP://HOST:PORT", default=None,
              help="Scheduler of a running Dask cluster (default: [run] dask_address; unset: a local cluster).")
@click.option("--concurrency", type=click.IntRange(min=1), default=None,
              help="Distillation tasks at once: threads, or local Dask workers (default: [run] concurrency, 4).")
@click.option("--wait", "wait", type=click.FloatRange(min=0), default=0.0, metavar="SECONDS",
              help="When another run is in progress, wait up to SECONDS for it (default 0: exit 75 at once).")
@click.option("--progress", "progress_mode", type=click.Choice(["auto", "lines", "none"]), default="auto",
              help="auto: a progress bar on a terminal; lines: one line per stage and every 10% on stderr "
                   "(for logs); none: not even the line saying which Prefect server the run waits for.")
def command(paths: tuple[str, ...], library: str | None, as_json: bool, verbose: bool,
            defer_minutes: float | None, task_runner: str | None, dask_address: str | None,
            concurrency: int | None, wait: float, progress_mode: str) -> None:
    """Distill the trajectories in PATHS (files or folders) into candidate skills.

    With no PATHS, reads the places agents keep their sessions (`skillmill sources` lists
    them). Only what is new since the last run is read: unchanged files are skipped, grown
    sessions are read from where the last run stopped. Runs the Prefect flow discover ->
    parse -> distill -> write -> index. Exit 0 when every input was processed, 1 when some
    failed (the rest is kept), 2 for usage errors (a missing path, a folder it cannot write).

    \b
    Prefect server: PREFECT_API_URL if set (environment or Prefect profile); else a local
    server the first run starts (~10 s) and the next runs reuse; it stops by itself after
    [run] server_idle_minutes (10) unused, and with 0 a run starts its own and stops it.
    Beside it a run leaves a warm process with Prefect imported, which the next run is forked
    from (~2.5 s sooner; SKILLMILL_WARM=0 turns it off; not for --verbose). The summary says
    how long it took apart from the run's work.

    \b
    Distills with a model when SKILLMILL_MODEL is set (a litellm model string, e.g.
    openai/gpt-4o-mini; SKILLMILL_API_BASE for a local OpenAI-compatible server; the key in
    the provider's usual variable), within SKILLMILL_BUDGET_USD / SKILLMILL_BUDGET_TOKENS.
    Without it, the zero-LLM distiller runs. Answers are cached: unchanged input is never
    sent twice. A model that stays down ends the run with exit 1; the next run continues.

    \b
    One run at a time per SKILLMILL_HOME: while another runs, exit 75 (EX_TEMPFAIL) with a
    message, or wait for it with --wait SECONDS. A run killed at any moment (even kill -9)
    leaves nothing half-written; the next run cleans up and completes the work.
    """
    from pipeline import spawn
    from pipeline.execution import clock, server, warm

    started = clock.process_started()
    say = _say(progress_mode)
    paths = tuple(os.path.abspath(os.path.expanduser(p)) for p in paths)
    library = os.path.abspath(os.path.expanduser(library)) if library else None
    cfg = _preflight(paths, library, task_runner, dask_address, concurrency)
    if cfg.library:
        cfg.library = os.path.abspath(os.path.expanduser(cfg.library))
    spawn.work_in_home()  # nothing of the folder it was started in configures Prefect (its settings files)
    if not verbose:
        quiet_prefect()
    from pipeline.execution import lock

    def waiting(holder: dict | None) -> None:
        say(f"waiting: {lock.describe(holder)} (--wait {wait:.0f} s) ...")

    # The lock before any server: a second run exits 75 at once, and --wait waits before a server starts.
    with lock.run_lock(wait=wait, on_wait=waiting, for_process=True), \
            server.for_run(cfg.run.server_idle_minutes, say=say, meanwhile=_import_flow,
                           command_started=started) as startup:
        from flows.nightly import nightly

        with progress_bar(progress_mode):
            result = nightly(paths=list(paths), library=cfg.library, defer_minutes=defer_minutes,
                             task_runner=task_runner, dask_address=dask_address, concurrency=concurrency, wait=wait)
    if startup.how in ("reused", "started"):  # beside the shared local server, for the next run (execution.warm)
        warm.start(cfg.run.server_idle_minutes)
    _print(result, verbose)
    if not paths and not (result["files"]["seen"] or result["files"]["unchanged"] or result["deferred"]):
        click.echo("No trajectory files in the default locations; `skillmill sources` shows where skillmill "
                   "looked, [sources] paths in the config adds places.", err=True)
    if as_json:
        emit_json(result)
    sys.exit(result["exit_code"])


def _preflight(paths: tuple[str, ...], library: str | None, task_runner: str | None, dask_address: str | None,
               concurrency: int | None) -> object:
    """Every check that needs no Prefect server, before one starts (``pipeline.execution.preflight``)."""
    from pathlib import Path

    from pipeline import config, settings
    from pipeline.errors import PREFECT_ADVICE
    from pipeline.execution.preflight import writable
    from pipeline.ingest import iter_files

    next(iter(iter_files(paths)), None)  # a path that does not exist is a usage error
    cfg = config.load({"library": library, "run.task_runner": task_runner, "run.dask_address": dask_address,
                       "run.concurrency": concurrency})  # so is a bad value
    writable(settings.home(), "SKILLMILL_HOME", elsewhere="set SKILLMILL_HOME to a folder you can write")
    writable(Path(cfg.library).expanduser() if cfg.library else settings.library_dir(), "the library",
             elsewhere="pass --library DIR (or set SKILLMILL_LIBRARY) with a folder you can write")
    writable(settings.prefect_home(), "PREFECT_HOME", advice=PREFECT_ADVICE,
             space_advice="free some space or point PREFECT_HOME elsewhere",
             elsewhere="set PREFECT_HOME to a folder you can write")
    settings.ensure_prefect_home()
    return cfg


def quiet_prefect() -> None:
    """Prefect's own log lines off (``--verbose`` shows them): set before Prefect is imported."""
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "CRITICAL")
    os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")


def _import_flow() -> None:
    """Import the flow (and Prefect, ~2 s) while a server starts."""
    import flows.nightly  # noqa: F401


def _say(progress_mode: str):  # noqa: ANN202
    """A progress line on stderr (``skillmill: ...``), unless ``--progress none``."""
    if progress_mode == "none":
        return lambda text: None
    return lambda text: click.echo(visible(f"skillmill: {text}"), err=True)


def _print(result: dict, verbose: bool = False) -> None:
    """The summary. Paths, names and reasons can quote what a session held: each line is printed ``visible``."""

    def echo(text: str = "") -> None:
        click.echo(visible(text))

    t, s, f = result["trajectories"], result["skills"], result["files"]
    unchanged = f", {f['unchanged']} unchanged since the last run" if f.get("unchanged") else ""
    echo(f"Files: {f['seen']} read ({f['ok']} ok, {f['partial']} partial, {f['failed']} failed, "
         f"{f['skipped']} not trajectories){unchanged}")
    deferred = f", {t['deferred']} deferred" if t.get("deferred") else ""
    echo(f"Trajectories: {t['seen']} seen, {t['new']} new, {t['failed']} failed{deferred}")
    if result.get("deferred"):
        echo("Still being written, read by the next run:")
        for item in result["deferred"]:
            echo(f"  ~ {item['path']}  (changed {item['modified_s_ago']:.0f} s ago)")
    held = f", {len(result['held'])} held back (rejected before)" if result.get("held") else ""
    echo(f"Skills: {s['proposed']} proposed, {s['updated']} updated, {s['unchanged']} unchanged{held} "
         f"-> {result['library']}")
    redacted = result.get("redactions") or {}
    if redacted.get("values"):
        kinds = ", ".join(f"{kind} {count}" for kind, count in redacted["kinds"].items())
        n = redacted["trajectories"]
        echo(f"Redacted: {redacted['values']} secrets in {n} trajector{'y' if n == 1 else 'ies'} ({kinds})")
    for name in result["written"]:
        echo(f"  + {name}")
    for name in result["unchanged"]:
        echo(f"  = {name}")
    for name in result.get("held", []):
        echo(f"  x {name}  (rejected before; nothing new in its evidence, so not proposed again)")
    for item in result.get("withdrawn", []):
        echo(f"  - {item['name']}  (withdrawn from the queue: {item['reason']})")
    for item in result.get("reopened", []):
        click.secho(visible(f"  ! {item['name']} was rejected before and is back for review: {item['reason']}"),
                    fg="yellow")
    _print_nothing_reusable(result["nothing_reusable"], verbose, echo)
    _print_llm(result)
    for error in result["errors"]:
        where = f"{error['path']}:{error['line']}" if error.get("line") else (error.get("path") or "")
        click.secho(visible(f"  ! {where}  {error['reason']}"), err=True, fg="yellow")
    if s["proposed"] or s["updated"]:
        echo("New skills are candidates: review them before any agent sees them.")
    if (took := took_line(result)) is not None:
        echo(took)


def _print_nothing_reusable(items: list[dict], verbose: bool, echo) -> None:  # noqa: ANN001
    """How many trajectories gave nothing, by reason; with ``-v`` each one with its file and task."""
    if not items:
        return
    if verbose:
        echo(f"Nothing reusable in {len(items)} trajectories:")
        for item in items:
            echo(f"  {item['trajectory']}  {item['reason']}  {item.get('path') or '?'}  {item.get('task') or ''}"
                 .rstrip())
        return
    counts: dict[str, int] = {}
    for item in items:
        counts[item["reason"]] = counts.get(item["reason"], 0) + 1
    echo(f"Nothing reusable in {len(items)} trajectories (-v lists them, with file and task):")
    width = len(str(max(counts.values())))
    for reason, count in sorted(counts.items(), key=lambda pair: (-pair[1], pair[0])):
        echo(f"  {count:>{width}}  {reason}")


def took_line(result: dict) -> str | None:
    """``Took 22.1 s (+ 9.8 s starting the Prefect server; 33.5 s in all)``: the flow's work, the server apart."""
    work, wall, server_s = result.get("duration_s"), result.get("wall_s"), result.get("server_s") or 0.0
    if work is None:
        return None
    parts = {"started": f"+ {server_s:.1f} s starting the local Prefect server",
             "temporary": f"+ {server_s:.1f} s starting a temporary Prefect server",
             "reused": "the local Prefect server was up", "configured": "Prefect server from PREFECT_API_URL"}
    notes = [parts[how]] if (how := result.get("server")) in parts else []
    if result.get("process") == "warm":
        notes.append("run by the warm process")
    if wall is not None:
        notes.append(f"{wall:.1f} s in all")
    return f"Took {work:.1f} s" + (f" ({'; '.join(notes)})" if notes else "")


def _print_llm(result: dict) -> None:
    """What the model path did: usage, grounding, risk flags, proposals, and why it stopped."""
    info, usage = result.get("distillation") or {}, result.get("llm") or {}
    if info.get("distiller") != "llm":
        return
    echo = click.echo
    cached = f", {info['cached_requests']} answered from the cache" if info.get("cached_requests") else ""
    echo(f"LLM: {usage['requests']} requests{cached}, {usage['input_tokens']:,} tokens in, "
         f"{usage['output_tokens']:,} out, ${usage['cost_usd']:.4f} ({info['model']})")
    grounding = info.get("grounding") or {}
    if grounding.get("removed") or grounding.get("drafts_dropped"):
        echo(f"The grounding check removed {grounding['removed']} items and dropped {grounding['drafts_dropped']} "
             f"drafts that cite what the trajectories do not show ({grounding['checked']} citations checked).")
    if info.get("proposed_changes"):
        echo("Proposed changes to approved skills, waiting for review in _proposed/:")
        for name in info["proposed_changes"]:
            echo(f"  ~ {name}")
    for name, flags in sorted((info.get("flagged") or {}).items()):
        click.secho(visible(f"  ! {name}: risky commands for review: {', '.join(flags)}"), fg="yellow")
    for note in info.get("notes") or []:
        click.secho(visible(f"  note: {note}"), err=True)
    if info.get("stopped"):
        click.secho(visible(f"Distillation stopped early: {info['stopped']}"), fg="yellow", err=True)
