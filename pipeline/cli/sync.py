"""``skillmill sync``: the library as a team's git repository (``pipeline.library.sync``)."""

from __future__ import annotations

import click

from pipeline.cli._output import emit_json
from pipeline.terminal import visible


@click.command("sync")
@click.option("--remote", metavar="URL",
              help="The team's repository: any URL your git reaches (a bare repository on a shared disk, GitHub, "
                   "GitLab). Needed once; later calls use the one remembered.")
@click.option("--branch", metavar="NAME",
              help="Push this library's candidates to branch NAME as approved, for review in your forge: merging "
                   "it approves them. Nothing else is pulled or pushed.")
@click.option("--by", "who", metavar="WHO", help="The author of commits this call makes (default: git's user).")
@click.option("--library", type=click.Path(file_okay=False),
              help="Skill library folder (default: $SKILLMILL_LIBRARY, the config file, $SKILLMILL_HOME/skills).")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object: library, remote, created, committed, changed, pushed, conflicts, offline.")
def command(remote: str | None, branch: str | None, who: str | None, library: str | None, as_json: bool) -> None:
    """Share the skill library with a team through git: commit what changed here, pull, push.

    \b
    The first call with --remote makes the library a repository: a new remote gets it as it is, an
    existing one is merged with what is here. Review decisions are commits by the reviewer. What
    two machines changed or decided differently is kept as a conflict (`skillmill review list`),
    never merged into one file. Only the library is shared: handoffs, usage logs, feedback and
    everything else in $SKILLMILL_HOME stay on this machine. Pushes use your own git credentials.
    """
    from pathlib import Path

    from pipeline import config, settings
    from pipeline.agents.publish import republish
    from pipeline.library import Library
    from pipeline.library.sync import sync

    chosen = config.load({"library": library}).library
    lib = Library(Path(chosen).expanduser() if chosen else settings.library_dir())
    result = sync(lib, remote, publish=republish, branch=branch, by=who)
    if as_json:
        emit_json(result.contract())
        return
    if result.offline:
        click.secho(visible(f"skillmill sync: {result.remote} did not answer ({result.offline}); the library here "
                            "is unchanged and keeps working"), fg="yellow", err=True)
        return
    if branch:
        click.echo(visible(f"pushed this library's candidates to {branch} on {result.remote}, as approved: "
                           "merging that branch approves them"))
        return
    what = [f"{'shared' if result.created else 'synced'} {result.library} with {result.remote}"]
    if result.changed:
        what.append(f"{len(result.changed)} skill(s) changed here: {', '.join(result.changed[:8])}"
                    + (" ..." if len(result.changed) > 8 else ""))
    what.append("pushed" if result.pushed else "nothing pushed")
    click.echo(visible("; ".join(what)))
    for conflict in result.conflicts:
        click.secho(visible(f"  ⇄ {conflict.name}: {conflict.other}, {conflict.kept} here -- kept both "
                            f"(`skillmill review resolve {conflict.name}`)"), fg="yellow")
