"""``skillmill recall``: the skills that fit a task, as a brief or as JSON.

Defined here rather than in ``pipeline/cli/`` (which registers it) because importing anything
under ``pipeline.cli`` builds the whole command group; the executable's fast path
(``pipeline.entry``) imports only this module: click, orjson and duckdb.
"""

from __future__ import annotations

import sys

import click

from pipeline.errors import UsageError


@click.command("recall")
@click.argument("task", required=False)
@click.option("--json", "as_json", is_flag=True, help='Print {"query", "results": [...], "truncated"}.')
@click.option("--limit", "-k", default=5, show_default=True, type=click.IntRange(1, 100),
              help="At most this many skills.")
@click.option("--budget", default=2000, show_default=True, type=click.IntRange(1, None),
              help="Token budget of the brief: listed skills first, then the best bodies that fit.")
@click.option("--include-candidates", is_flag=True, help="Also return skills not yet approved.")
@click.option("--queries", "queries_file", type=click.File("r", encoding="utf-8"),
              help='JSON lines {"id", "query"}: print one line {"id", "results"} per query (needs --json).')
@click.option("--repo", help="Leave out skills bound to another repository (owner/name or name).")
@click.option("--language", help="Leave out skills bound to another language (python, go, typescript ...).")
@click.option("--agent", help="Leave out skills bound to another agent (claude-code, codex, gemini).")
def command(task: str | None, as_json: bool, limit: int, budget: int, include_candidates: bool,
            queries_file: click.utils.LazyFile | None, repo: str | None, language: str | None,
            agent: str | None) -> None:
    """Print the approved skills that best fit TASK.

    Nothing is printed as a result when no skill fits: an empty list beats a wrong skill.
    """
    from pipeline.recall import RecallIndex, pack

    filters = {"repo": repo, "language": language, "agent": agent}
    if queries_file is not None:
        if task is not None:
            raise UsageError("give either TASK or --queries, not both")
        if not as_json:
            raise UsageError("--queries prints JSON lines", hint="add --json")
        with RecallIndex() as index:
            _batch(index, queries_file, limit=limit, budget=budget, include_candidates=include_candidates,
                   filters=filters)
        return
    if not task or not task.strip():
        raise UsageError("no task given", hint='skillmill recall "what you are about to do"')
    with RecallIndex() as index:
        hits = index.search(task, limit=limit, include_candidates=include_candidates, **filters)
        packed = pack(task, hits, budget)
    if as_json:
        _emit(packed.contract())
    else:
        click.echo(packed.markdown(), nl=False)


def _batch(index: object, lines: object, *, limit: int, budget: int, include_candidates: bool,
           filters: dict[str, str | None]) -> None:
    import orjson

    from pipeline.recall import pack

    for number, line in enumerate(lines, 1):  # type: ignore[call-overload]
        if not line.strip():
            continue
        try:
            data = orjson.loads(line)
            qid, query = data["id"], str(data["query"])
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            raise UsageError(f"--queries line {number}: expected {{\"id\", \"query\"}} ({exc})") from exc
        hits = index.search(query, limit=limit, include_candidates=include_candidates, **filters)  # type: ignore[attr-defined]
        _emit({"id": qid, "results": [h.contract() for h in pack(query, hits, budget).hits]})
        sys.stdout.flush()


def _emit(data: object) -> None:
    import orjson

    click.echo(orjson.dumps(data).decode())
