"""``skillmill sources``: where ``skillmill run`` with no paths looks, and what it would find there."""

from __future__ import annotations

import click

from pipeline.cli._output import emit_json


@click.command("sources")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object per source.")
def command(as_json: bool) -> None:
    """List the places discovery reads: each format's default locations and `[sources]` in the config.

    \b
    For each: the folder, whether it exists, how many candidate files it holds, and the
    config key or default it came from. Missing folders are listed, not an error (most
    machines run only some agents). Configure in $SKILLMILL_HOME/skillmill.toml:
      [sources]
      paths = ["~/agent-logs"]        # looked at besides the defaults
      ignore_paths = ["~/work/secret"]  # never read
      repos = ["~/code/app"]          # repo-local histories (Aider)
      defaults = true                 # false: only `paths` and `repos`
    """
    from pipeline import config
    from pipeline.ingest.sources import Ignore, configured_sources

    cfg = config.load()
    ignore = Ignore(cfg.sources.ignore_paths)
    rows = [source.row(ignore) for source in configured_sources(cfg)]
    origin = config.config_path() if cfg.source_of("sources.ignore_paths") != "default" else None
    for path in cfg.sources.ignore_paths:
        rows.append({"path": path, "exists": None, "files": None, "ignored": True, "formats": [], "locations": [],
                     "origin": f"sources.ignore_paths (file {origin})"})
    if as_json:
        emit_json(rows)
        return
    if not rows:
        click.echo("No sources: every format's defaults are off and [sources] paths is empty.")
        return
    for row in rows:
        if row["ignored"]:
            state = click.style(f"{'ignored':>12}", fg="yellow")
        elif row["exists"]:
            state = click.style(f"{row['files']:>6} files", fg="green")
        else:
            state = click.style(f"{'missing':>12}", dim=True)
        formats = ", ".join(row["formats"]) or "any format"
        click.echo(f"{state}  {row['path']}")
        click.echo(f"{'':<14}{formats}; from {row['origin']}")
    total = sum(r["files"] or 0 for r in rows)
    click.echo(f"{total} candidate files; `skillmill run` with no paths reads them "
               "(files changed in the last few minutes wait for the next run).")
