"""``skillmill ingest``: parse files and report, per file, what was read."""

from __future__ import annotations

import sys

import click

from pipeline.cli._output import emit_json, progress_bar
from pipeline.terminal import visible


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per input file.")
def command(paths: tuple[str, ...], as_json: bool) -> None:
    """Read trajectory files (or folders) and report format, status and trajectories.

    Nothing is stored: this shows what `skillmill run` would read. Exit 1 when a file
    failed or was read only in part.
    """
    from pipeline import progress
    from pipeline.ingest import ingest_file, iter_files
    from pipeline.summary import EXIT_OK, EXIT_PARTIAL  # not at the top: every command loads this module

    files = list(iter_files(paths))
    worst = EXIT_OK
    with progress_bar(not as_json), progress.stage("ingest", len(files)) as bar:
        for path in files:
            report, _ = ingest_file(path)
            if report.status in ("failed", "partial"):
                worst = EXIT_PARTIAL
            if as_json:
                emit_json(report.contract())
            else:
                _print(report)
            bar.advance()
    sys.exit(worst)


def _print(report) -> None:  # type: ignore[no-untyped-def]
    color = {"ok": "green", "partial": "yellow", "failed": "red", "skipped": None}[report.status]
    click.secho(f"{report.status:<8}", fg=color, nl=False)
    click.echo(visible(f" {report.format or '-':<15} {report.path}"))
    for t in report.trajectories:  # the task is the session's own text
        click.echo(visible(f"         {t.id}  {t.steps} steps, {t.tool_calls} tool calls, {t.outcome}: {t.task or ''}"[:160]))
    for error in report.errors[:5]:
        line = f"line {error.line}: " if error.line else ""
        click.echo(visible(f"         ! {line}{error.reason}"))
