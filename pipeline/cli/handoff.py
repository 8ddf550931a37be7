"""``skillmill handoff``: where the last unfinished sessions in a checkout stopped; ``capture`` records ended ones."""

from __future__ import annotations

import click

from pipeline.cli._output import emit_json


@click.command("handoff")
@click.argument("args", nargs=-1, metavar="[PATH] | drop ID")
@click.option("--json", "as_json", is_flag=True, help="Print the briefs as JSON (a list of objects).")
@click.option("--all", "everything", is_flag=True,
              help="Every brief this home holds (all checkouts), those given to a session already included.")
def command(args: tuple[str, ...], as_json: bool, everything: bool) -> None:
    """The handoffs of the checkout at PATH (default: the current folder): what the last unfinished
    sessions there (any agent) were doing, what failed, what is still open.

    \b
    A session-end hook (`skillmill install` registers it) writes a brief when a session stops
    unfinished; the next session in that checkout gets it at its start, once. Nothing here claims one.
    `skillmill handoff drop ID` removes a brief; `[handoff] enabled = false` in skillmill.toml stops
    them; `[handoff] expire_days` (7) is how long one is kept. Briefs stay in $SKILLMILL_HOME/handoffs:
    never exported, shared or written into a repository.
    """
    from pathlib import Path

    from pipeline import checkout
    from pipeline.errors import UsageError
    from pipeline.handoff import store

    if args[:1] == ("drop",):
        if len(args) != 2:
            raise UsageError("usage: skillmill handoff drop ID", hint="the id is the one `skillmill handoff` shows")
        removed = store.drop(args[1])
        if not removed:
            raise UsageError(f"no handoff whose id starts with {args[1]!r}",
                             hint="`skillmill handoff --all` lists them (give at least 6 characters)")
        if as_json:
            emit_json({"dropped": removed})
        else:
            click.echo(f"Dropped {', '.join(r[:8] for r in removed)}.")
        return
    if len(args) > 1:
        raise UsageError("give one PATH (or `drop ID`)", hint="skillmill handoff [PATH] [--json] [--all]")
    if everything:
        briefs = list(store.everywhere())
    else:
        folder = Path(args[0] if args else ".").expanduser().absolute()
        if not folder.is_dir():
            raise UsageError(f"{folder}: no such folder", hint="give a checkout's folder, or run it inside one")
        root = checkout.root_of(folder)
        if root is None:
            raise UsageError(f"{folder} is in no git checkout: handoffs are kept per checkout",
                             hint="run it inside the checkout the session worked in, or use --all")
        briefs = store.for_checkout(str(root))
    if as_json:
        emit_json(briefs)
        return
    if not briefs:
        click.echo("No handoff: no unfinished session here (or it was given to a session already; --all shows all).")
        return
    from pipeline import terminal

    for brief in briefs:  # a brief's texts are flat already; escapes are written out should one come from disk
        click.echo(terminal.visible(store.render(brief, budget=10_000), newlines=True))
        click.echo()


@click.command("capture", hidden=True)
@click.option("--wait", "wait_s", type=float, default=0.0, help="Seconds to wait before starting.")
def capture_command(wait_s: float) -> None:
    """Record the sessions session-end hooks spooled, and write their handoffs (run in the background)."""
    from pipeline.execution import capture

    capture.main(wait_s)


COMMANDS = (command, capture_command)
