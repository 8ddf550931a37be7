"""``skillmill recall``: the skills that fit a task, as a brief or as JSON."""

from __future__ import annotations

import click

from pipeline.cli._output import emit_json


@click.command("recall")
@click.argument("task")
@click.option("--json", "as_json", is_flag=True, help='Print {"query", "results": [...], "truncated"}.')
@click.option("--limit", "-k", default=5, show_default=True, type=click.IntRange(1, 100),
              help="At most this many skills.")
@click.option("--include-candidates", is_flag=True, help="Also return skills not yet approved.")
def command(task: str, as_json: bool, limit: int, include_candidates: bool) -> None:
    """Print the approved skills that best fit TASK."""
    from pipeline.recall import brief, recall

    hits = recall(task, limit=limit, include_candidates=include_candidates)
    if as_json:
        emit_json({"query": task, "results": [h.contract() for h in hits], "truncated": False})
    else:
        click.echo(brief(task, hits), nl=False)
