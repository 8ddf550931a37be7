"""``skillmill show ID``: what is known about the trajectory an id names."""

from __future__ import annotations

from typing import Any

import click

from pipeline.cli._output import emit_json
from pipeline.terminal import visible


@click.command("show")
@click.argument("trajectory_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print everything known as one JSON object.")
def command(trajectory_id: str, as_json: bool) -> None:
    """Everything known about trajectory ID: its session, outcome, distillation and citing skills.

    ID is one of the 16-hex-digit ids `skillmill run`, `skillmill review show` and the skills'
    provenance comments print, or a unique prefix of 6 digits or more. Reads the state database
    of $SKILLMILL_HOME; nothing is changed. For a skill, use `skillmill review show NAME`.
    """
    from pipeline.index.lookup import trajectory

    info = trajectory(trajectory_id)
    why = _no_repo(info)
    if as_json:
        emit_json({**info.contract(), "repo_unknown": why and {"reason": why[0], "fix": why[1]}})
        return
    _print(info, why)


def _no_repo(info: Any) -> tuple[str, str] | None:
    """Why the trajectory has no repository and what would give it one (None: it has one)."""
    if info.repo:
        return None
    from pipeline.ingest.identity import why_unknown

    return why_unknown(info.cwd, info.source_path)


def _print(info: Any, why: tuple[str, str] | None = None) -> None:
    """Session text (task, paths, commands, evidence) goes through ``visible``: no escape sequences."""

    def say(label: str, text: object) -> None:
        click.echo(f"  {label:<9}" + visible(text))

    click.echo(click.style(f"trajectory {info.id}", bold=True))
    say("source", f"{info.source_path or '?'} ({info.source_format or '?'} format)")
    agent = " ".join(x for x in (info.agent, info.agent_version) if x) or "?"
    say("agent", agent + (f", model {info.model}" if info.model else ""))
    where = info.repo or "not known"
    extra = ", ".join(x for x in (f"branch {info.git_branch}" if info.git_branch else "",
                                  f"in {info.cwd}" if info.cwd else "") if x)
    say("repo", where + (f" ({extra})" if extra else ""))
    if why:
        say("", f"why: {why[0]}")
        say("", f"fix: {why[1]}")
    lines = (info.task or "").strip().splitlines() or ["(none recorded)"]
    say("task", lines[0] + (f"  [+{len(lines) - 1} more lines: --json has all]" if len(lines) > 1 else ""))
    evidence = f": {info.outcome_evidence}" if info.outcome_evidence else ""
    say("outcome", f"{info.outcome or '?'} (by {info.outcome_source or '?'}){evidence}")
    say("steps", f"{_count(info.steps, 'step')}, {_count(info.tool_calls, 'tool call')}")
    if info.started_at or info.ended_at:
        say("when", f"{_time(info.started_at)} to {_time(info.ended_at)}")
    if info.redactions:
        say("redacted", ", ".join(f"{n} {kind}" for kind, n in info.redactions.items()))
    if info.superseded_by:
        say("replaced", f"by {info.superseded_by}: the session grew and was read again")
    if info.supersedes:
        say("replaces", ", ".join(info.supersedes))

    click.echo()
    if not info.distillations:
        click.echo("Not distilled yet: the next `skillmill run` distills it.")
    for d in info.distillations:
        made = f"{len(info.facts)} fact{'s' if len(info.facts) != 1 else ''}"
        if d.skills:
            made += f", skill{'s' if len(d.skills) != 1 else ''} {', '.join(d.skills)}"
        click.echo(f"Distilled by {d.distiller} v{d.version}" + (f" on {_time(d.distilled_at)}" if d.distilled_at else "")
                   + visible(f": {made}" if not d.reason else f": nothing ({d.reason})"))
    if info.facts:
        width = max(len(f["kind"]) for f in info.facts)
        for fact in info.facts:
            result = "" if fact.get("kind") == "location" else (" ok" if fact.get("ok") else " failed")
            steps = f"  steps {','.join(map(str, fact['steps']))}" if fact.get("steps") else ""
            click.echo(f"  {fact['kind']:<{width}}  " + visible(f"{fact['template']}{result}{steps}"))
            if fact.get("symptom"):
                click.echo(f"  {'':<{width}}    " + visible(f"symptom: {fact['symptom']}"))

    click.echo()
    if not info.cited_by:
        click.echo("No skill cites it.")
        return
    click.echo(f"Cited by {len(info.cited_by)} skill{'s' if len(info.cited_by) != 1 else ''}:")
    for cite in info.cited_by:
        steps = f", steps {','.join(map(str, cite['steps']))}" if cite["steps"] else ""
        click.echo(visible(f"  {cite['skill']} ({cite['status'] or 'no longer in the library'}{steps})"))
    click.echo("  (`skillmill review show NAME` shows a skill with the steps it cites)")


def _count(n: int | None, what: str) -> str:
    return f"{'?' if n is None else n} {what}{'' if n == 1 else 's'}"


def _time(moment: Any) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M") if moment else "?"
