"""``skillmill recall``: the skills that fit a task, as a brief or as JSON.

An agent's hook runs this at every prompt, so its start-up time is the user's waiting time.
The executable's fast path (``pipeline.entry``) calls :func:`main` without building the
command group; the flags are parsed with ``argparse`` (importing click alone costs ~20 ms,
as much as starting Python), and nothing here imports duckdb, click or orjson. Help and usage
errors are click's (``pipeline.fastargs``). The command group registers this same parser
(``pipeline.cli.fast.click_command``), so both paths take the same flags and print the same help.
"""

from __future__ import annotations

import sys

from pipeline.errors import UsageError
from pipeline.fastargs import NumberRange, Parser

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing at every prompt
if TYPE_CHECKING:
    from collections.abc import Callable

DESCRIPTION = """Print the approved skills that best fit TASK.

TASK is what you are about to do, in your own words. Nothing is printed as a result when no
skill fits: an empty list beats a wrong skill."""


def parser() -> Parser:
    p = Parser("skillmill recall", DESCRIPTION)
    p.add_argument("task", nargs="?")
    p.add_argument("--json", dest="as_json", action="store_true",
                   help='Print {"query", "results": [...], "truncated"}.')
    p.add_argument("--limit", "-k", type=NumberRange(int, 1, 100), default=5, metavar="K",
                   help="At most this many skills.")
    p.add_argument("--budget", type=NumberRange(int, 1), default=2000, metavar="N",
                   help="Token budget of the brief: listed skills first, then the best bodies that fit.")
    p.add_argument("--min-score", type=NumberRange(float, 0, 1), default=None, metavar="S",
                   help="Leave out skills whose fit score (0-1) is below S.  [default: $SKILLMILL_MIN_SCORE or 0.15]")
    p.add_argument("--include-candidates", action="store_true", help="Also return skills not yet approved.")
    p.add_argument("--queries", dest="queries_file", metavar="FILE",
                   help='JSON lines {"id", "query"}: print one line {"id", "results"} per query (needs --json).')
    p.add_argument("--repo", help="Leave out skills bound to another repository (owner/name or name).")
    p.add_argument("--language",
                   help="Leave out skills bound to another language (python, go, typescript ...).")
    p.add_argument("--agent", help="Leave out skills bound to another agent (claude-code, codex, gemini).")
    return p


def main(argv: list[str], repair: Callable[[], None] | None = None) -> None:
    """Parse ``argv`` and answer; errors are raised as ``SkillmillError`` for the caller to print.

    ``repair`` runs before the answer: the callers (``pipeline.entry``, ``pipeline.cli.recall``) hand
    ``pipeline.agents.repair.repair_or_warn``, which finishes a review decision killed before its
    publish -- the index and agents' exported folders, a floor above recall.
    """
    args = parser().parse_args(argv)
    run(args.task, as_json=args.as_json, limit=args.limit, budget=args.budget,
        include_candidates=args.include_candidates, queries_file=args.queries_file, min_score=args.min_score,
        filters={"repo": args.repo, "language": args.language, "agent": args.agent}, repair=repair)


def run(task: str | None, *, as_json: bool, limit: int, budget: int, include_candidates: bool,
        queries_file: str | None, filters: dict[str, str | None], min_score: float | None = None,
        repair: Callable[[], None] | None = None) -> None:
    from pipeline.recall import RecallIndex, pack

    if repair is not None:
        repair()  # a decision killed before its republish: one stat when there is none
    if queries_file is not None:
        if task is not None:
            raise UsageError("give either TASK or --queries, not both")
        if not as_json:
            raise UsageError("--queries prints JSON lines", hint="add --json")
        lines = _open(queries_file)
        try:
            with RecallIndex() as index:
                _batch(index, lines, limit=limit, budget=budget, include_candidates=include_candidates,
                       filters=filters, min_score=min_score)
        finally:
            if lines is not sys.stdin:
                lines.close()
        return
    if not task or not task.strip():
        raise UsageError("no task given", hint='skillmill recall "what you are about to do"')
    from pipeline.recall import daemon
    from pipeline.recall.search import clip_task, threshold

    # A warm process (the MCP server, recall-server) has the embedding model loaded: ask it first,
    # with this process's threshold (its own environment may differ).
    min_score = threshold() if min_score is None else min_score
    hits = daemon.hits({"query": clip_task(task), "limit": limit, "include_candidates": include_candidates,
                        "min_score": min_score, **filters})
    if hits is None:  # none answers: rank here, loading the index's embedder if it has one
        with RecallIndex() as index:
            hits = index.search(task, limit=limit, include_candidates=include_candidates, min_score=min_score,
                                **filters)
    packed = pack(task, hits, budget)
    from pipeline.recall import usage

    usage.record([(h.name, h.path) for h in packed.hits if h.status == "approved"], "cli")
    if as_json:
        _emit(packed.contract())
    else:
        from pipeline.terminal import visible

        sys.stdout.write(visible(packed.markdown(), newlines=True))  # skill text: no escape sequences
        sys.stdout.flush()


def _open(name: str) -> object:
    if name == "-":
        return sys.stdin
    try:
        return open(name, encoding="utf-8")  # noqa: SIM115 (closed by the caller)
    except OSError as exc:
        raise UsageError(f"--queries: cannot open {name}: {exc.strerror or exc}") from exc


def _batch(index: object, lines: object, *, limit: int, budget: int, include_candidates: bool,
           filters: dict[str, str | None], min_score: float | None = None) -> None:
    import json

    from pipeline.recall import pack

    for number, line in enumerate(lines, 1):  # type: ignore[call-overload]
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            qid, query = data["id"], str(data["query"])
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"--queries line {number}: expected {{\"id\", \"query\"}} ({exc})") from exc
        hits = index.search(query, limit=limit, include_candidates=include_candidates,  # type: ignore[attr-defined]
                            min_score=min_score, **filters)
        _emit({"id": qid, "results": [h.contract() for h in pack(query, hits, budget).hits]})
        sys.stdout.flush()


def _emit(data: object) -> None:
    """One compact JSON line: the same bytes ``orjson.dumps`` gives for these values (which holds
    for scores >= 1e-4: recall's are >= ~1), without paying for its import."""
    import json

    sys.stdout.write(json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n")

