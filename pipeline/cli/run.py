"""``skillmill run``: the nightly flow over trajectory files or folders."""

from __future__ import annotations

import os
import sys

import click

from pipeline.cli._output import emit_json, progress_bar
from pipeline.errors import UsageError


@click.command("run")
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--library", type=click.Path(file_okay=False),
              help="Skill library folder (default: $SKILLMILL_LIBRARY, the config file, $SKILLMILL_HOME/skills).")
@click.option("--json", "as_json", is_flag=True, help="End with one JSON line summarizing the run.")
@click.option("-v", "--verbose", is_flag=True, help="Show Prefect's logs.")
def command(paths: tuple[str, ...], library: str | None, as_json: bool, verbose: bool) -> None:
    """Distill the trajectories in PATHS (files or folders) into candidate skills.

    Runs the Prefect flow discover -> parse -> distill -> write -> index, on a temporary
    local Prefect server unless PREFECT_API_URL is set. Exit 0 when every input was
    processed, 1 when some failed (the rest is kept), 2 for usage errors.

    \b
    Distills with a model when SKILLMILL_MODEL is set (a litellm model string, e.g.
    openai/gpt-4o-mini; SKILLMILL_API_BASE for a local OpenAI-compatible server; the key in
    the provider's usual variable), within SKILLMILL_BUDGET_USD / SKILLMILL_BUDGET_TOKENS.
    Without it, the zero-LLM distiller runs. Answers are cached: unchanged input is never
    sent twice. A model that stays down ends the run with exit 1; the next run continues.
    """
    if not paths:
        raise UsageError("no trajectory paths given",
                         hint="pass files or folders, e.g. `skillmill run ~/.claude/projects`")
    from pipeline.ingest import iter_files

    next(iter(iter_files(paths)), None)  # a missing path is a usage error before any work starts
    if not verbose:
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "CRITICAL")
        os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
    from flows.nightly import nightly
    from pipeline import config

    library = config.load({"library": library}).library
    with progress_bar():
        result = nightly(paths=list(paths), library=library)
    _print(result)
    if as_json:
        emit_json(result)
    sys.exit(result["exit_code"])


def _print(result: dict) -> None:
    echo = click.echo
    t, s, f = result["trajectories"], result["skills"], result["files"]
    echo(f"Files: {f['seen']} read ({f['ok']} ok, {f['partial']} partial, {f['failed']} failed, "
         f"{f['skipped']} not trajectories)")
    echo(f"Trajectories: {t['seen']} seen, {t['new']} new, {t['failed']} failed")
    echo(f"Skills: {s['proposed']} proposed, {s['updated']} updated, {s['unchanged']} unchanged "
         f"-> {result['library']}")
    for name in result["written"]:
        echo(f"  + {name}")
    for name in result["unchanged"]:
        echo(f"  = {name}")
    if result["nothing_reusable"]:
        echo(f"Nothing reusable in {len(result['nothing_reusable'])} trajectories:")
        for item in result["nothing_reusable"]:
            echo(f"  {item['trajectory']}  {item['reason']}")
    _print_llm(result)
    for error in result["errors"]:
        where = f"{error['path']}:{error['line']}" if error.get("line") else (error.get("path") or "")
        click.secho(f"  ! {where}  {error['reason']}", err=True, fg="yellow")
    if s["proposed"] or s["updated"]:
        echo("New skills are candidates: review them before any agent sees them.")


def _print_llm(result: dict) -> None:
    """What the model path did: usage, grounding, risk flags, proposals, and why it stopped."""
    info, usage = result.get("distillation") or {}, result.get("llm") or {}
    if info.get("distiller") != "llm":
        return
    echo = click.echo
    cached = f", {info['cached_requests']} answered from the cache" if info.get("cached_requests") else ""
    echo(f"LLM: {usage['requests']} requests{cached}, {usage['input_tokens']:,} tokens in, "
         f"{usage['output_tokens']:,} out, ${usage['cost_usd']:.4f} ({info['model']})")
    grounding = info.get("grounding") or {}
    if grounding.get("removed") or grounding.get("drafts_dropped"):
        echo(f"The grounding check removed {grounding['removed']} items and dropped {grounding['drafts_dropped']} "
             f"drafts that cite what the trajectories do not show ({grounding['checked']} citations checked).")
    if info.get("proposed_changes"):
        echo("Proposed changes to approved skills, waiting for review in _proposed/:")
        for name in info["proposed_changes"]:
            echo(f"  ~ {name}")
    for name, flags in sorted((info.get("flagged") or {}).items()):
        click.secho(f"  ! {name}: risky commands for review: {', '.join(flags)}", fg="yellow")
    for note in info.get("notes") or []:
        click.secho(f"  note: {note}", err=True)
    if info.get("stopped"):
        click.secho(f"Distillation stopped early: {info['stopped']}", fg="yellow", err=True)
