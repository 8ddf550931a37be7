"""``skillmill formats``: the trajectory formats skillmill reads and where agents keep them."""

from __future__ import annotations

import click

from pipeline.cli._output import emit_json


@click.command("formats")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def command(as_json: bool) -> None:
    """List the trajectory formats (built-in and from plugins)."""
    from pipeline.ingest.lookalikes import LOOKALIKES
    from pipeline.plugins import registered_formats

    rows = [{"name": f.name, "agent": f.agent, "description": f.description, "locations": list(f.locations)}
            for f in registered_formats()]
    if as_json:
        emit_json(rows)
        return
    for row in rows:
        click.echo(f"{row['name']:<16} {row['description']}")
        for location in row["locations"]:
            click.echo(f"{'':<16}   {location}")
    click.echo("\nRecognised but not read yet (`skillmill ingest` says so):")
    for lookalike in LOOKALIKES:
        click.echo(f"{'':<16}   {lookalike.agent} {lookalike.thing}")
