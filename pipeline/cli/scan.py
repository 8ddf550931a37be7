"""``skillmill scan [PATH]``: learn a repository from what it says about itself."""

from __future__ import annotations

import click

from pipeline import settings
from pipeline.cli._output import emit_json
from pipeline.terminal import visible


@click.command("scan")
@click.argument("path", required=False, default=".", type=click.Path(file_okay=True, dir_okay=True))
@click.option("--json", "as_json", is_flag=True,
              help='Print the findings as JSON: {"root", "repo", "commands": {purpose: [{"command", "file", '
                   '"line", "cite", "origin"}]}, "layout", "instructions", "manual", "result", "stale", ...}.')
@click.option("--dry-run", is_flag=True, help="Print what was found; write no manual and mark nothing stale.")
@click.option("--library", type=click.Path(file_okay=False), default=None,
              help="The skill library (default: $SKILLMILL_LIBRARY, else $SKILLMILL_HOME/skills).")
def command(path: str, as_json: bool, dry_run: bool, library: str | None) -> None:
    """Read a checkout's self-description and write its working-in-<repo> manual.

    \b
    Reads README/CONTRIBUTING, the Makefile, pyproject.toml, package.json, tox.ini, noxfile.py,
    justfile, Cargo.toml, go.mod, .pre-commit-config.yaml, CI workflows, the Dockerfile and the
    agent instruction files (CLAUDE.md, AGENTS.md, .cursor/rules, CONVENTIONS.md) of PATH (default:
    the current folder), offline, at most a few hundred files. The manual lists the commands by
    purpose as CI and the docs run them, each citing file:line; it is a candidate (or a proposed
    change to the approved manual) until a person approves it. Approved skills of the repository
    that name files or scripts the checkout no longer has are marked stale.
    """
    from pipeline.library.store import Library
    from pipeline.scan.service import scan_checkout

    lib = Library(library or settings.library_dir())
    seen = [0]

    def on_file(name: str) -> None:
        seen[0] += 1
        if seen[0] % 100 == 0 and not as_json:
            click.echo(f"  ... {seen[0]} files read", err=True)

    outcome = scan_checkout(path, lib, write=not dry_run, on_file=on_file)
    if as_json:
        emit_json(outcome.contract())
        return
    found = outcome.scan
    echo = click.echo
    echo(visible(f"Scanned {found.root} ({found.repo or 'repository unknown'}): {len(found.files_read)} files in "
                 f"{found.seconds:.2f} s" + (" (stopped at the file limit)" if found.truncated else "")))
    from pipeline.scan.manual import items

    for item in items(found):
        cites = " ".join(f"{e.trajectory}:{','.join(map(str, e.steps))}" for e in item.evidence)
        echo(visible(f"  {item.text}  [{cites}]"))
    if found.layout:
        echo(visible("  Layout: " + ", ".join(f"{p.path} ({p.kind})" for p in found.layout)))
    if found.instructions:
        echo(visible("  Instruction files: " + ", ".join(found.instructions)))
    if not items(found):
        echo("  No build, test or lint command found.")
    if dry_run:
        echo("Dry run: nothing written.")
    elif outcome.result:
        where = {"created": "new candidate", "updated": "candidate updated", "unchanged": "unchanged",
                 "proposed": "proposed change to the approved manual, waiting in review",
                 "held": "a person rejected this very change: not proposed again",
                 "left": "rejected or deprecated by a person: left alone"}.get(outcome.result)
        if where:
            echo(visible(f"Manual: {outcome.manual} ({where}) in {lib.root}"))
        else:  # "nothing"
            echo(visible(f"No manual written for {found.repo}: the checkout states no command and no instruction "
                         "file; configured tools and its folders are what an agent sees at a glance."))
    for name, reasons in outcome.stale.items():
        echo(visible(f"Stale: {name}: " + "; ".join(r["text"] for r in reasons)))
    if outcome.note:
        click.secho(visible(f"  note: {outcome.note}"), err=True, fg="yellow")
