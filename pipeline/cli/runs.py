"""``skillmill runs``: what the recent runs did, newest first."""

from __future__ import annotations

import sys

import click

from pipeline.cli._output import emit_json
from pipeline.terminal import visible


@click.command("runs")
@click.option("--limit", type=click.IntRange(min=1), default=10, show_default=True, help="How many runs to show.")
@click.option("--json", "as_json", is_flag=True,
              help='Print {"runs": [...], "source": "state"|"snapshot"|null, "note"} as one JSON object.')
def command(limit: int, as_json: bool) -> None:
    """List recent runs: times, trajectories seen/new/deferred/failed, skills proposed/updated, LLM use, errors.

    \b
    took     the flow's own work
    server   +N s: the run started a Prefect server first; up: it used one already running
    total    the command, from its start to the run's record

    Reads the runs table of the state database. While a run writes it (DuckDB then lets no
    other process in), shows the snapshot the last finished run left, and says so. Each
    run's full report is also in the Prefect UI (artifact "skillmill-run-report").
    Exit 1 only when nothing could be read.
    """
    from pipeline.runs import recent

    history = recent(limit)
    if as_json:
        emit_json(history.contract())
    else:
        _print(history)
    if not history.available:
        sys.exit(1)


def _print(history: object) -> None:
    from pipeline.runs import RunHistory

    assert isinstance(history, RunHistory)
    if history.note:
        click.secho(f"note: {visible(history.note)}", err=True, fg="yellow" if history.source == "snapshot" else None)
    if not history.runs:
        if history.available:
            click.echo("No runs recorded yet: `skillmill run` or `skillmill schedule` records one per run.")
        return
    columns = ["started", "status", "took", "server", "total", "seen", "new", "deferred", "failed", "proposed",
               "updated", "LLM req", "tokens", "cost", "errors"]
    rows = []
    for r in history.runs:
        t, s, m = r.trajectories, r.skills, r.llm
        rows.append([r.started_at.astimezone().strftime("%Y-%m-%d %H:%M") if r.started_at else "?", r.status,
                     _seconds(r.duration_s), _server(r), _seconds(r.wall_s), t.seen, t.new, t.deferred,
                     t.failed, s.proposed, s.updated, m.requests, f"{m.input_tokens + m.output_tokens:,}",
                     f"${m.cost_usd:.4f}", len(r.errors)])
    widths = [max(len(str(v)) for v in column) for column in zip(columns, *rows, strict=True)]
    click.echo("  ".join(f"{c:<{w}}" if i < 2 else f"{c:>{w}}" for i, (c, w) in enumerate(zip(columns, widths,
                                                                                               strict=True))))
    for row in rows:
        cells = [f"{v:<{w}}" if i < 2 else f"{v!s:>{w}}" for i, (v, w) in enumerate(zip(row, widths, strict=True))]
        cells[1] = click.style(cells[1], fg={"ok": "green", "partial": "yellow"}.get(str(row[1]), "red"))
        click.echo("  ".join(cells))
    latest = history.runs[0]
    for error in latest.errors[:5]:
        where = f"{error.path}:{error.line}" if error.line else (error.path or "")
        click.secho(visible(f"  ! {where}  {error.reason}"), fg="yellow")
    if len(latest.errors) > 5:
        click.echo(f"  ... {len(latest.errors) - 5} more errors in the latest run (`skillmill runs --json`)")


def _seconds(value: float | None) -> str:
    return f"{value:.1f} s" if value is not None else "-"


def _server(report: object) -> str:
    """``+9.8 s`` when the run started its server, ``up`` when it found one (shared, or PREFECT_API_URL)."""
    server, seconds = getattr(report, "server", None), getattr(report, "server_s", None)
    if server in ("started", "temporary") and seconds is not None:
        return f"+{seconds:.1f} s"
    return {"reused": "up", "configured": "up"}.get(server or "", "-")
