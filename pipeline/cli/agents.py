"""Agent-facing commands: ``mcp``, ``hook``, ``install``, ``export``, ``setup``."""

from __future__ import annotations

import click

from pipeline.agents import cli as hook_cli
from pipeline.agents.wiring import NAMES as AGENTS
from pipeline.cli._output import emit_json
from pipeline.cli.fast import click_command


@click.command("mcp")
def mcp_command() -> None:
    """Serve recall_skills, get_skill and skill_feedback over MCP (stdio)."""
    from pipeline.agents.mcp_server import serve

    serve()


@click.command("install")
@click.option("--agent", required=True, type=click.Choice(AGENTS), help="The agent to connect.")
@click.option("--project", type=click.Path(file_okay=False), help="Install into this project, not user-wide.")
@click.option("--dry-run", is_flag=True, help="Show the plan and change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def install_command(agent: str, project: str | None, dry_run: bool, as_json: bool) -> None:
    """Register skillmill with an agent: the task-start hook and the MCP server.

    Claude Code, Codex and Gemini CLI get both; the other agents get the MCP server (the plan's
    notes say why there is no hook, and what to add by hand where a file is not safe to edit).
    `skillmill setup` does this for every agent found on the machine. Shows the plan first (each file and what changes in it), then applies it. Only skillmill's
    own entries are added or updated; every other setting in those files is kept as it is.
    """
    from pathlib import Path

    from pipeline.agents import install

    plan = install.plan(agent, Path(project) if project else None)
    if as_json:
        emit_json(plan.contract(applied=not dry_run))
    else:
        click.echo(plan.describe())
    if dry_run:
        if not as_json:
            click.echo("Dry run: nothing was changed.")
        return
    planned = bool(plan.changes)
    plan.apply()
    if not as_json:
        click.echo("Done." if plan.changes else "Already installed: nothing to change." if planned
                   else "Nothing to write here for this agent (see the notes).")


@click.command("export")
@click.option("--agent", required=True, type=click.Choice(AGENTS), help="The agent whose skills folder to fill.")
@click.option("--project", type=click.Path(file_okay=False), help="Export into this project, not user-wide.")
@click.option("--library", type=click.Path(file_okay=False), help="Skill library folder.")
@click.option("--repo", metavar="OWNER/NAME",
              help="Only skills for this repository (and those for any repository). Default with --project: "
                   "the project's own repository.")
@click.option("--all-repos", is_flag=True, help="Every approved skill, whichever repository it is for.")
@click.option("--dry-run", is_flag=True, help="Show what would change and change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def export_command(agent: str, project: str | None, library: str | None, repo: str | None, all_repos: bool,
                   dry_run: bool, as_json: bool) -> None:
    """Write the approved skills into the agent's native skills folder.

    .claude/skills (Claude Code), .agents/skills (Codex), .gemini/skills (Gemini CLI),
    .opencode/skills, .cursor/skills, .github/skills (Copilot, VS Code), .qwen/skills,
    .goose/skills, .agents/skills (Amp) in --project; in your home folder, each agent's own
    (~/.config/opencode/skills, ~/.copilot/skills, ~/.kimi/skills, ~/.config/goose/skills ...). A project gets the skills for its own repository (from its
    git remote) and those for any repository, not other repositories' manuals. Exported folders
    carry a .skillmill-export marker: a later export updates or removes them, and never touches a
    skill folder without it. Each export is remembered, and every review decision re-runs it.
    """
    from pathlib import Path

    from pipeline import config, settings
    from pipeline.agents import export
    from pipeline.errors import UsageError

    if repo and all_repos:
        raise UsageError("give --repo or --all-repos, not both")
    folder = Path(project) if project else None
    wanted = None if all_repos else (repo or export.project_repo(folder))
    lib = config.load({"library": library}).library
    report = export.export(agent, folder, Path(lib) if lib else settings.library_dir(), dry_run=dry_run,
                           repo=wanted)
    if as_json:
        emit_json(report.contract())
        return
    click.echo(report.describe())


@click.command("setup")
@click.option("--project", type=click.Path(file_okay=False), help="Set up this project, not user-wide.")
@click.option("--yes", is_flag=True, help="Apply the plan without asking.")
@click.option("--dry-run", is_flag=True, help="Show the plan and change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON (per agent, as install --json).")
def setup_command(project: str | None, yes: bool, dry_run: bool, as_json: bool) -> None:
    """Connect every agent found on this machine: one plan, applied once you agree.

    Finds the agents in use here (their folders in your home folder, or their executables on
    PATH), shows every file and the change in each, then applies it after a y/N question (or
    at once with --yes). Without a terminal and without --yes it only shows the plan. Running
    it again changes nothing.
    """
    from pathlib import Path

    from pipeline.agents import setup

    plan = setup.plan(Path(project) if project else None)
    if as_json:  # a program reads this: never a question; applied only with --yes
        applied = yes and not dry_run
        contract = plan.contract(applied=applied)  # each file as planned, unchanged ones included (as install)
        if applied:
            plan.apply()
        emit_json(contract)
        return
    click.echo(plan.describe())
    if not plan.changed:
        return
    if dry_run:
        click.echo("Dry run: nothing was changed.")
        return
    ask = not yes and _interactive()
    if yes or (ask and click.confirm("Apply this plan?", default=False)):
        plan.apply()
        click.echo("Done.")
        return
    click.echo("Not applied." if ask else "Not applied: run `skillmill setup --yes` (or answer y in a terminal) "
               "to apply it.")


def _interactive() -> bool:
    """True when a person can answer the y/N question (stdin and stdout are terminals)."""
    import sys

    return sys.stdin.isatty() and sys.stdout.isatty()


@click.command("recall-server")
@click.option("--idle", type=click.FloatRange(min=1), metavar="SECONDS",
              help="Exit after this long without a question.  [default: never]")
def recall_server_command(idle: float | None) -> None:
    """Keep recall warm for the hooks: answer their questions on $SKILLMILL_HOME/recall.sock.

    The per-prompt hook cannot load an embedding model in the time a hook call may take; this
    process holds it (the MCP server does the same while a session is open, and the hook starts
    one with --idle when none answers). Exits at once when another process serves the socket.
    """
    from pipeline.recall import daemon

    server = daemon.Server(idle=idle)
    if not server.bind():
        click.echo(f"Another process already answers on {server.path}.", err=True)
        return
    click.echo(f"Answering recall questions on {server.path} (Ctrl-C to stop).", err=True)
    server.warm()
    try:
        server.serve()
    except KeyboardInterrupt:
        server.close()


hook_command = click_command("hook", hook_cli.parser, hook_cli.main)
COMMANDS = (mcp_command, hook_command, install_command, export_command, setup_command, recall_server_command)
