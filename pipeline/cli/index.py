"""``skillmill index``: (re)build the recall index from the library and indexed skill folders."""

from __future__ import annotations

import click

from pipeline.cli._output import emit_json
from pipeline.terminal import visible


@click.command("index")
@click.option("--skills", "add", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Index every */SKILL.md below this folder (repeatable); remembered for later runs.")
@click.option("--forget", multiple=True, type=click.Path(), help="Stop indexing this folder (repeatable).")
@click.option("--library", type=click.Path(file_okay=False),
              help="Skill library folder (default: $SKILLMILL_LIBRARY, the config file, $SKILLMILL_HOME/skills).")
@click.option("--list", "list_only", is_flag=True, help="Only list the indexed folders.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def command(add: tuple[str, ...], forget: tuple[str, ...], library: str | None, list_only: bool,
            as_json: bool) -> None:
    """Rebuild the recall index: our library plus every folder indexed with --skills.

    Skills found in indexed folders count as approved (a team already uses them); two
    folders may hold skills of the same name, which stay distinct, keyed by path.
    Re-indexing is incremental: unchanged files are not read again. Readers (recall, hooks,
    the MCP server) keep working meanwhile: the new index replaces the old one atomically.
    """
    from pathlib import Path

    from pipeline import config

    if list_only:
        _list(as_json)
        return
    from pipeline.recall.service import reindex

    if library is not None and not Path(library).expanduser().is_dir():  # a typo would take its skills out
        from pipeline.errors import UsageError

        raise UsageError(f"no skill library at {library}", hint="pass the folder `skillmill run --library` wrote, "
                                                                "or leave --library out for the configured one")
    lib = config.load({"library": library}).library
    report = reindex(Path(lib) if lib else None, add=list(add), forget=list(forget))
    if as_json:
        emit_json(report.contract())
        return
    click.echo(f"Indexed {report.skills} skills in {report.seconds:.1f} s -> {report.path}")
    click.echo(f"  folder skills: {report.added} added, {report.updated} updated, {report.unchanged} unchanged; "
               f"{report.removed} removed from the index")
    for folder, count in sorted(report.folders.items()):
        click.echo(visible(f"  {count:>6}  {folder}"))
    for path in report.removed_skills:  # each one that really left the index, folder or library skill
        click.echo(visible(f"  - {path}  (removed from the index)"))
    if report.embedder:
        click.echo(f"  semantic channel: {report.embedder}")
    for error in report.errors:
        click.secho(visible(f"  ! {error['path']}  {error['reason']}"), err=True, fg="yellow")


def _list(as_json: bool) -> None:
    from pipeline.recall import RecallIndex

    with RecallIndex() as index:
        rows = index.con.execute(
            "SELECT f.path, f.repo, count(s.id) FROM folders f LEFT JOIN skills s ON s.root = f.path "
            "GROUP BY ALL ORDER BY f.path").fetchall()
    if as_json:
        emit_json([{"path": p, "repo": r, "skills": n} for p, r, n in rows])
        return
    for path, repo, count in rows:
        click.echo(visible(f"{count:>6}  {path}" + (f"  (repo {repo})" if repo else "")))
