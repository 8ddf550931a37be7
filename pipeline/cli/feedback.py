"""``skillmill feedback``: record and review what agents said about skills."""

from __future__ import annotations

import click

from pipeline.cli._help import Group
from pipeline.cli._output import emit_json
from pipeline.terminal import visible


@click.group("feedback", cls=Group)
def command() -> None:
    """Verdicts on served skills: helpful, not_helpful, wrong, stale.

    They move a skill's rank at the next index and tell reviewers which skills to fix or deprecate."""


@command.command("add")
@click.argument("name")
@click.argument("verdict", type=click.Choice(["helpful", "not_helpful", "wrong", "stale"]))
@click.option("--note", default="", help="What happened, in at most 4,000 characters (secrets in it are redacted).")
def add(name: str, verdict: str, note: str) -> None:
    """Record a verdict on skill NAME (what the MCP tool skill_feedback does).

    NAME is a skill of the recall index or the library (a name `skillmill recall` or `skillmill
    review list` shows); any other is refused. The note is redacted before it is stored; a note
    over 4,000 characters is refused.
    """
    from pipeline.recall import feedback

    feedback.check(name, note)
    feedback.check_known(name)
    event = feedback.record(name, verdict, note, source="cli")
    click.echo(f"Recorded {event['verdict']} for {event['skill']}.")


@command.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per skill.")
def list_(as_json: bool) -> None:
    """Verdicts per skill, worst first: stored ones and those still in the journal."""
    from pipeline.errors import IndexError_
    from pipeline.index.state import StateDB
    from pipeline.recall import feedback

    try:
        with StateDB() as state:
            events = feedback.events(state.con)
    except IndexError_:  # a run holds the state DB: the journal alone is still worth showing
        events = feedback.events()
    rows = feedback.summary(events)
    if as_json:
        for row in rows:
            emit_json(row)
        return
    if not rows:
        click.echo("No feedback yet.")
    for row in rows:
        counts = ", ".join(f"{v} {k}" for k, v in row["verdicts"].items())
        note = f" — last note: {row['last_note']}" if row["last_note"] else ""  # an agent's words, via MCP
        click.echo(visible(f"{row['skill']}: {counts}{note}"))
