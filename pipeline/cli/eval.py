"""``skillmill eval``: measure retrieval quality against labelled queries."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli._help import Group
from pipeline.cli._output import emit_json


@click.group("eval", cls=Group)
def command() -> None:
    """Measure how well skillmill does, beside a baseline measured in the same run."""


@command.command("retrieval")
@click.option("--skills", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder whose */SKILL.md files are indexed (in a temporary home).")
@click.option("--queries", "query_files", required=True, multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help='JSON lines {"id", "query", "relevant": ["<dir>/<skill>", ...]} (repeatable).')
@click.option("--embedder", help="The semantic channel's model (<kind>:<arg>; `none` for the lexical channel "
                                 "alone).  [default: the configured one]")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per system and query file.")
def retrieval(skills: Path, query_files: tuple[Path, ...], embedder: str | None, as_json: bool) -> None:
    """hit@1, hit@3, recall@5 and MRR@10 on answerable queries, and the share of no-match
    queries answered with nothing, for skillmill recall (both channels, and the lexical one
    alone, when there is an embedder) and plain BM25 (bm25s)."""
    from pipeline.recall import evaluate

    results = evaluate.retrieval(skills, list(query_files), embedder=embedder)
    if as_json:
        for result in results:
            emit_json(result.contract())
        return
    click.echo(evaluate.table(results))
