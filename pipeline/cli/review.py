"""``skillmill review``: the queue, decisions, the audit log, and the review page (``--web``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from pipeline.cli._help import Group
from pipeline.cli._output import emit_json
from pipeline.errors import SkillFileError, UsageError
from pipeline.terminal import visible

_KINDS = ("procedure", "pitfall", "repo", "reference")
_STATUSES = ("pending", "conflict", "proposed", "candidate", "approved", "rejected", "deprecated", "all")


def _library_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--library", type=click.Path(file_okay=False),
                        help="Skill library folder (default: $SKILLMILL_LIBRARY, the config file, "
                             "$SKILLMILL_HOME/skills).")(f)


def _by_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--by", "who", metavar="WHO",
                        help="Who decides, for the audit log (default: $SKILLMILL_REVIEWER, else your login).")(f)


def _filter_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("--min-confidence", type=click.FloatRange(0, 1), help="Only skills at least this confident.")(f)
    f = click.option("--kind", "kinds", multiple=True, type=click.Choice(_KINDS), help="Only this kind (repeatable).")(f)
    return click.option("--repo", help="Only this repository: owner/name, name, or a glob (pallets/*).")(f)


def _open_library(library: str | None, *, reading: bool = False):
    """The library to review. One that does not exist yet is an error, except for a command that only
    reads (``reading``) the configured one: a fresh home has no library, and nothing in it."""
    from pipeline import config, settings
    from pipeline.library import Library

    chosen = config.load({"library": library}).library
    root = Path(chosen).expanduser() if chosen else settings.library_dir()
    if not root.is_dir() and not (reading and library is None and not root.exists()):
        raise UsageError(f"no skill library at {root}",
                         hint="run `skillmill run PATH...` first, or pass --library DIR")
    return Library(root)


_NO_LIBRARY_YET = "no library there yet: `skillmill run PATH...` writes one"


class _StatusList(click.ParamType):
    """One status, or several separated by commas (``--status approved,rejected``)."""

    name = "status"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return f"[{'|'.join(_STATUSES)}][,...]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, ...]:
        if isinstance(value, tuple):
            return value
        chosen = tuple(part.strip() for part in str(value).split(",") if part.strip())
        unknown = [part for part in chosen if part not in _STATUSES]
        if unknown or not chosen:
            self.fail(f"{', '.join(map(repr, unknown)) or repr(value)} is not a status: use {', '.join(_STATUSES)}, "
                      "or several separated by commas", param, ctx)
        return chosen


def _statuses(values: tuple[tuple[str, ...], ...]) -> tuple[str, ...]:
    from pipeline.review.queue import PENDING, STATUSES

    chosen: list[str] = []
    for value in [v for group in values for v in group] or ["pending"]:
        chosen += {"pending": list(PENDING), "all": list(STATUSES)}.get(value, [value])
    return tuple(dict.fromkeys(chosen))


# -- the group ----------------------------------------------------------------------------
@click.group("review", cls=Group, invoke_without_command=True)
@click.option("--web", is_flag=True, help="Serve the review page on 127.0.0.1; the URL with its token is printed.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port for --web (0: any free port).")
@_by_option
@_library_option
@click.pass_context
def command(ctx: click.Context, web: bool, port: int, who: str | None, library: str | None) -> None:
    """Approve, reject and edit what runs proposed, before any agent sees it.

    \b
    skillmill review list                       what waits: candidates and proposed changes
    skillmill review show NAME                  the skill, the trajectory steps behind it, the diff
    skillmill review approve NAME... --by WHO   (or a filter: --repo/--kind/--min-confidence/--all)
    skillmill review reject NAME --reason TEXT --by WHO
    skillmill review edit NAME                  in $EDITOR, validated before it is saved
    skillmill review restore NAME --version N   any kept version becomes the newest
    skillmill review log                        the audit log: who decided what, when and why
    skillmill review --web                      the same in a browser (127.0.0.1, token required)
    """
    from pipeline.agents import repair

    repair.repair_or_warn()  # a decision killed before its republish left the index behind: publish it now
    if ctx.invoked_subcommand is not None:
        if web:
            raise UsageError("--web serves the page; it does not combine with a subcommand",
                             hint="run `skillmill review --web` on its own")
        return
    if not web:
        ctx.invoke(list_command, library=library)
        return
    from pipeline.review import decisions
    from pipeline.review.web import serve

    lib = _open_library(library)
    serve(lib, port=port, who=decisions.reviewer(who))


# -- list ---------------------------------------------------------------------------------
@command.command("list")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON list of objects with name, status, kind, confidence, flags (and more).")
@_filter_options
@click.option("--flagged", is_flag=True, help="Only skills with risk flags.")
@click.option("--status", "status", multiple=True, type=_StatusList(),
              help="Which skills: pending (candidates and proposed changes, the default), a status, several "
                   "(approved,rejected; or the option repeated), or all.")
@_library_option
def list_command(as_json: bool, repo: str | None, kinds: tuple[str, ...], min_confidence: float | None,
                 flagged: bool, status: tuple[tuple[str, ...], ...], library: str | None) -> None:
    """Candidates and proposed changes waiting for review, with their risk flags."""
    from pipeline.review.queue import Filters, items

    lib = _open_library(library, reading=True)
    if not lib.root.exists():  # a fresh home: nothing to review is not an error
        if as_json:
            emit_json([])
        else:
            click.echo(visible(f"0 skills in {lib.root} ({_NO_LIBRARY_YET})"))
        return
    errors: list[str] = []
    filters = Filters(repo, kinds, min_confidence, flagged, _statuses(status))
    found = items(lib, filters, on_error=lambda path, exc: errors.append(f"{path}: {exc.message}"))
    for error in errors:
        click.secho(f"  ! unreadable skill skipped: {visible(error)}", err=True, fg="yellow")
    stale = _stale(lib, filters)
    unused = _unused(lib, filters)
    if as_json:
        emit_json([s.contract() for s in stale] + [u.contract() for u in unused] + [i.contract() for i in found])
        return
    _print_stale(stale)
    _print_unused(unused)
    _print_list(lib, found, filters)


def _stale(lib: Any, filters: Any) -> list[Any]:
    """Approved skills that fell behind their checkout: listed first, whatever else waits."""
    if not {"approved", "candidate", "proposed"} & set(filters.statuses) or filters.kinds or filters.flagged:
        return []
    from pipeline.review.staleness import stale

    return stale(lib, filters.repo)


def _unused(lib: Any, filters: Any) -> list[Any]:
    """Approved skills unserved or mostly unhelpful for ``[review] deprecate_after_days``: after the stale ones."""
    if not {"approved", "candidate", "proposed"} & set(filters.statuses) or filters.kinds or filters.flagged:
        return []
    from pipeline import config
    from pipeline.review.unused import proposals

    return proposals(lib, config.load({}).review.deprecate_after_days, repo=filters.repo)


def _print_unused(unused: list[Any]) -> None:
    if not unused:
        return
    from pipeline.review.unused import span

    click.secho(f"{len(unused)} approved skill{'s' if len(unused) != 1 else ''} proposed for DEPRECATION (not "
                f"served, or mostly unhelpful, in the last {span(unused[0].days)}; nothing was changed):",
                fg="yellow", bold=True)
    for u in unused:
        last = f"last {u.last_served:%Y-%m-%d}" if u.last_served else "never"
        click.echo(visible(f"  {u.name}  (approved since {u.approved_since:%Y-%m-%d}; served {u.served} "
                           f"time{'s' if u.served != 1 else ''}, {last}; feedback {u.helpful} helpful, "
                           f"{u.unhelpful} unhelpful)"))
        for reason in u.reasons:
            click.echo(visible(f"    - {reason}"))
        click.echo(visible(f"    to retire it: {u.command}"))
    click.echo()


def _print_stale(stale: list[Any]) -> None:
    if not stale:
        return
    click.secho(f"{len(stale)} approved skill{'s' if len(stale) != 1 else ''} STALE (no longer fit the checkout; "
                "nothing was changed: edit, deprecate or approve the proposed change):", fg="red", bold=True)
    for s in stale:
        offer = "  -> a proposed change waits: skillmill review show " + s.name if s.proposal else ""
        click.echo(visible(f"  {s.name}  (checked {s.checked} in {s.checkout}){offer}"))
        for reason in s.reasons:
            click.echo(visible(f"    - {reason.get('text', '')}"))
    click.echo()


def _print_list(lib: Any, found: list[Any], filters: Any) -> None:
    """The queue as a table. Every cell can come from a session, so each is printed ``visible``."""
    from pipeline.review.queue import PENDING

    echo = click.echo
    root = visible(lib.root)
    if not found:
        echo(f"Nothing to review in {root} for these filters." if filters.narrows or filters.statuses != PENDING
             else f"Nothing waits for review in {root}.")
        return
    flagged = sum(1 for i in found if i.flags)
    counts = {}
    for i in found:
        counts[i.status] = counts.get(i.status, 0) + 1
    parts = ", ".join(f"{n} {s}" for s, n in counts.items())
    echo(f"{len(found)} skill{'' if len(found) == 1 else 's'} in {root} ({parts})" + (click.style(f" — {flagged} FLAGGED", fg="red", bold=True)
                                                         if flagged else ""))
    echo()
    rows = [("STATUS", "KIND", "CONF", "OUTCOME", "AGENT", "REPO", "NAME")]
    for i in found:
        s = i.skill
        name = s.name + (f"  (v{i.base.skill.version} -> v{s.version})" if i.base else "")
        rows.append(tuple(visible(cell) for cell in (i.status, s.kind, f"{s.confidence:.2f}", s.outcome,
                                                     ",".join(i.agents()) or "-", s.repo or "-", name)))
    widths = [max(len(r[c]) for r in rows) for c in range(6)]
    for n, row in enumerate(rows):
        line = "  ".join(cell.ljust(widths[c]) for c, cell in enumerate(row[:6])) + "  " + row[6]
        echo(click.style(line, bold=True) if n == 0 else line)
        if n == 0:
            continue
        item = found[n - 1]
        for flag in item.flags:
            echo(click.style(visible(f"    ⚠ {flag.code}: {flag.message} ({flag.where})"), fg="red", bold=True))
        if item.conflict is not None:
            c = item.conflict
            echo(click.style(visible(f"    ⇄ other version {c.take}: {c.other}; {c.kept} here (`skillmill review "
                                     f"resolve {c.name}` keeps that, `--take {c.take}` takes this one)"), fg="yellow"))
        if item.skill.extra_metadata.get("reopened"):
            echo(click.style(visible(f"    ↺ reopened: {item.skill.extra_metadata['reopened']}"), fg="yellow"))
    held = sum(1 for i in found if not i.batchable and i.status in ("candidate", "proposed"))
    if flagged or held:
        echo()
        echo(f"{held} pending skill{'s' if held != 1 else ''} wait{'s' if held == 1 else ''} for a decision by name: "
             "a risk flag, or a command that is not an ordinary project command")
        echo("(`skillmill review show NAME` lists the lines; a batch such as `--all` never approves them).")


# -- show ---------------------------------------------------------------------------------
@command.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the skill, its flags, excerpts and diff as JSON.")
@click.option("--lines", type=click.IntRange(1, 200), default=6, show_default=True,
              help="Lines of each trajectory step to show.")
@_library_option
def show_command(name: str, as_json: bool, lines: int, library: str | None) -> None:
    """The skill, each step with the trajectory excerpt it came from, and for an update the diff."""
    from pipeline.review import evidence
    from pipeline.review.queue import diff_for, find

    lib = _open_library(library)
    item = find(lib, name)
    excerpts = evidence.load([item.skill])
    diff = diff_for(lib, item)
    if as_json:
        emit_json(_show_json(item, excerpts, diff, lines))
        return
    _print_show(item, excerpts, diff, lines)


def _show_json(item: Any, excerpts: Any, diff: Any, lines: int) -> dict[str, Any]:
    from pipeline.library import markdown
    from pipeline.review import evidence

    def steps(ev: list[Any]) -> list[dict[str, Any]]:
        return [{"trajectory": s.trajectory, "step": s.idx, "label": s.label, "lines": s.body(lines)}
                for s in excerpts.for_evidence(ev)]

    s = item.skill
    return {
        **item.contract(),
        "markdown": markdown.render(s),
        "procedure": [{"text": i.text, "command": i.command, "evidence": steps(i.evidence)} for i in s.procedure],
        "pitfalls": [{"symptom": p.symptom, "cause": p.cause, "fix": p.fix, "command": p.command,
                      "evidence": steps(p.evidence)} for p in s.pitfalls],
        "verification": [{"text": i.text, "command": i.command, "evidence": steps(i.evidence)}
                         for i in s.verification],
        "trajectories": [vars(t) for t in excerpts.sources.values()],
        "missing_steps": excerpts.missing(evidence.cited(s)),
        "excerpts_note": excerpts.note,
        "diff": {"title": diff.title, "text": diff.text} if diff else None,
    }


def _print_show(item: Any, excerpts: Any, diff: Any, lines: int) -> None:
    """The skill for a person to read. Everything in it can come from a session (tasks, commands, tool
    output, a hand-edited file), so every line goes through ``say``: written ``visible``, then styled."""
    style = click.style

    def say(text: object = "", *, newlines: bool = False, **how: Any) -> None:
        shown = visible(text, newlines=newlines)
        click.echo(style(shown, **how) if how else shown)

    s = item.skill
    state = {"proposed": f"proposed change to {item.base.skill.status} v{item.base.skill.version}" if item.base
             else "proposed change"}.get(item.status, item.status)
    click.echo(style(visible(s.name), bold=True) + visible(f"  [{state}, v{s.version}]"))
    say(f"kind {s.kind} · confidence {s.confidence:.2f} · outcome {s.outcome} · repo {s.repo or '-'} · "
        f"{len(s.sources)} source{'s' if len(s.sources) != 1 else ''}")
    say(f"file {item.stored.file}")
    if s.extra_metadata.get("reviewed"):
        say(f"last decision: {s.extra_metadata['reviewed']}")
    if item.flags:
        say()
        say(f"⚠ RISK FLAGS ({len(item.flags)}): read these before approving", fg="red", bold=True)
        for flag in item.flags:
            click.echo(style(visible(f"  {flag.code}"), fg="red", bold=True) + visible(f"  {flag.where}: {flag.message}"))
            if flag.excerpt:
                say(f"      {flag.excerpt}")
    from pipeline.review.batch import held

    unflagged = held(s)
    if unflagged:
        say()
        say(f"✋ NOT APPROVED IN A BATCH ({len(unflagged)}): read these lines, then approve by name",
            fg="yellow", bold=True)
        for reason in unflagged:
            say(f"  {reason}")
    if s.extra_metadata.get("reopened"):
        say()
        say(f"↺ Reopened: {s.extra_metadata['reopened']}", fg="yellow")
    if diff:
        say()
        say(f"## {diff.title}", bold=True)
        for line in diff.lines:
            color = "green" if line.startswith("+") and not line.startswith("+++") else (
                "red" if line.startswith("-") and not line.startswith("---") else None)
            say(line.rstrip("\n"), fg=color)
    say()
    say(s.description)
    if s.title:
        say()
        say(f"# {s.title}", bold=True)

    def command_lines(command: str) -> None:
        for line in command.split("\n"):
            say(f"   $ {line}", fg="green")

    def evidence_lines(ev: list[Any]) -> None:
        for step in excerpts.for_evidence(ev):
            say(f"     ┊ {step.trajectory[:12]} {step.label}", fg="cyan")
            for line in step.body(lines):
                say(f"     ┊   {line}", dim=True)
        from pipeline.library.model import is_file_ref

        files = [f"{e.trajectory}:{','.join(map(str, e.steps))}" for e in ev if is_file_ref(e.trajectory)]
        if files:  # what a scan read it from: the checkout's file and line
            say(f"     ┊ from the checkout: {', '.join(files)}", fg="cyan")
        ev = [e for e in ev if not is_file_ref(e.trajectory)]
        missing = [m for m in (f"{e.trajectory}:{i}" for e in ev for i in e.steps)
                   if tuple((m.split(":")[0], int(m.split(":")[1]))) not in excerpts.steps]
        if missing and not excerpts.note:
            say(f"     ┊ steps not in the state database: {', '.join(missing)}", fg="yellow")

    for title, entries in (("Procedure", s.procedure), ("Verification", s.verification)):
        if not entries:
            continue
        say()
        say(f"## {title}", bold=True)
        for number, entry in enumerate(entries, 1):
            say(f"{number}. {entry.text}" if title == "Procedure" else f"- {entry.text}")
            if entry.command:
                command_lines(entry.command)
            evidence_lines(entry.evidence)
        if title == "Procedure" and s.pitfalls:
            say()
            say("## Pitfalls", bold=True)
            for pitfall in s.pitfalls:
                say(f"- Symptom: {pitfall.symptom}")
                if pitfall.cause:
                    say(f"  Cause: {pitfall.cause}")
                say(f"  Fix: {pitfall.fix}")
                if pitfall.command:
                    command_lines(pitfall.command)
                evidence_lines(pitfall.evidence)
    if not s.procedure and s.pitfalls and not s.verification:
        say()
        say("## Pitfalls", bold=True)
        for pitfall in s.pitfalls:
            say(f"- Symptom: {pitfall.symptom}")
            say(f"  Fix: {pitfall.fix}")
            evidence_lines(pitfall.evidence)
    if s.notes.strip():
        say()
        say("## Notes", bold=True)
        say(s.notes.strip(), newlines=True)
    if s.sources:
        say()
        say("## Sources", bold=True)
        for ref in s.sources:
            info = excerpts.sources.get(ref.trajectory)
            where = f" — {info.source_path}" if info and info.source_path else ""
            say(f"- {ref.trajectory} {ref.agent or '?'}, {ref.outcome}{where}")
            if ref.task:
                say(f"  task: {ref.task}")
    if excerpts.note:
        say()
        say(f"note: {excerpts.note}", fg="yellow")


# -- decisions ----------------------------------------------------------------------------
@command.command("approve")
@click.argument("names", nargs=-1)
@_by_option
@_filter_options
@click.option("--all", "everything", is_flag=True,
              help="Every pending skill without risk flags whose commands are all ordinary project commands.")
@click.option("--json", "as_json", is_flag=True, help="Print {\"approved\": [...], \"refused\": [...]}.")
@_library_option
def approve_command(names: tuple[str, ...], who: str | None, repo: str | None, kinds: tuple[str, ...],
                    min_confidence: float | None, everything: bool, as_json: bool, library: str | None) -> None:
    """Approve NAMEs, or every pending skill a filter selects (default-deny: flagged skills, and skills with
    any command that is not an ordinary project command, are refused and listed with the reasons).

    Approved skills move to <library>/NAME/ where agents load them, and become recallable.
    """
    from pipeline.review import Filters, Review

    batch_filter = bool(repo or kinds or min_confidence is not None or everything)
    if names and batch_filter:
        raise UsageError("give skill names or a filter, not both",
                         hint="`review approve NAME...` or `review approve --repo R --kind K --min-confidence C`")
    if not names and not batch_filter:
        raise UsageError("nothing to approve: name skills or give a filter",
                         hint="e.g. `skillmill review approve NAME --by you`, or `--all` for every ordinary, unflagged one")
    lib = _open_library(library)
    review = Review(lib, who)
    if names:
        decisions, refused = review.approve(*names), []
    else:
        batch = review.approve_matching(Filters(repo, kinds, min_confidence))
        decisions, refused = batch.approved, batch.refused
    if as_json:
        emit_json({"approved": [d.contract() for d in decisions],
                   "refused": [{"name": i.name, "flags": [f.code for f in i.flags], "reasons": i.batch_reasons}
                               for i in refused]})
        return
    for d in decisions:
        click.echo(f"approved {d.name} v{d.version} (by {review.who}): agents can now recall it")
        if d.flags:
            click.secho(f"  ⚠ approved with risk flags: {', '.join(d.flags)}", fg="red", bold=True)
    if not names and not decisions and not refused:
        click.echo("nothing pending matches these filters")
    if refused:
        flagged = sum(1 for i in refused if i.flags)
        click.secho(f"refused {len(refused)} skill{'s' if len(refused) != 1 else ''} ({flagged} flagged): a batch "
                    "approves only skills without risk flags whose every command is an ordinary project command\n"
                    "(tests, build, lint, installs of named packages). Read these lines, then approve by name "
                    "(`skillmill review approve NAME`):", fg="red", bold=True)
        for item in refused:
            codes = ", ".join(sorted({f.code for f in item.flags}))
            click.echo(f"  {item.name}" + (f": {codes}" if codes else ""))
            for reason in item.batch_reasons:
                click.echo(f"      {reason}")


@command.command("reject")
@click.argument("name")
@click.option("--reason", required=True, help="Why: goes into the audit log and the skill file.")
@_by_option
@_library_option
def reject_command(name: str, reason: str, who: str | None, library: str | None) -> None:
    """Reject a candidate or a proposed change; later runs will not propose it again.

    It comes back only when its evidence changes materially, and then says so.
    """
    from pipeline.review import Review

    review = Review(_open_library(library), who)
    decision = review.reject(name, reason)
    target = "proposed change to " if decision.entry.target == "proposal" else ""
    click.echo(visible(f"rejected {target}{name} v{decision.version} (by {review.who}): {decision.entry.reason}"))


@command.command("deprecate")
@click.argument("name")
@click.option("--reason", required=True, help="Why it is retired.")
@_by_option
@_library_option
def deprecate_command(name: str, reason: str, who: str | None, library: str | None) -> None:
    """Retire an approved skill: agents no longer get it (restore brings it back for review)."""
    from pipeline.review import Review

    review = Review(_open_library(library), who)
    decision = review.deprecate(name, reason)
    click.echo(visible(f"deprecated {name} v{decision.version} (by {review.who}): {decision.entry.reason}"))


@command.command("edit")
@click.argument("name")
@_by_option
@_library_option
def edit_command(name: str, who: str | None, library: str | None) -> None:
    """Edit a skill (or its pending proposed change) in $EDITOR; it is validated before it is saved.

    The status stays as it is: an edit never approves. A new version is kept in _history/.
    """
    from pipeline.library import markdown
    from pipeline.review import Review, find, risk_flags
    from pipeline.review.decisions import validate_edit

    lib = _open_library(library)
    review = Review(lib, who)
    item = find(lib, name)
    text = item.stored.file.read_text(encoding="utf-8")
    while True:
        edited = click.edit(text, extension=".md", require_save=True)
        if edited is None or edited == item.stored.file.read_text(encoding="utf-8"):
            click.echo(f"{name}: no change")
            return
        try:
            validate_edit(item, edited)
            break
        except SkillFileError as exc:
            click.secho(f"Error: {exc.message}", fg="red", err=True)
            if exc.hint:
                click.echo(f"  hint: {exc.hint}", err=True)
            if sys.stdin.isatty() and click.confirm("Edit again?", default=True, err=True):
                text = edited
                continue
            from pipeline import private, settings

            keep = settings.home() / "tmp" / f"edit-{name}.md"
            private.write_text(keep, edited)
            raise SkillFileError(f"{name} was not changed: the edited text is not a valid skill",
                                 hint=f"your text is kept in {keep}") from exc
    decision = review.edit(name, edited)
    if decision is None:
        click.echo(f"{name}: no change in content")
        return
    click.echo(f"saved {name} v{decision.version} ({decision.status}, by {review.who})")
    stored = lib.proposal(name) if decision.entry.target == "proposal" else lib.get(name)
    flags = risk_flags(stored.skill if stored else markdown.parse(edited))
    for flag in flags:
        click.secho(visible(f"  ⚠ {flag.code}: {flag.message} ({flag.where})"), fg="red", bold=True)


@command.command("restore")
@click.argument("name")
@click.option("--version", "version", required=True, type=click.IntRange(1), help="The kept version to restore.")
@_by_option
@_library_option
def restore_command(name: str, version: int, who: str | None, library: str | None) -> None:
    """Make a kept version the newest one. An approved skill stays approved; a rejected,
    deprecated or deleted one goes back to the queue as a candidate."""
    from pipeline.review import Review

    review = Review(_open_library(library), who)
    decision = review.restore(name, version)
    click.echo(f"restored {name} v{version} as v{decision.version} ({decision.status}, by {review.who})")


@command.command("resolve")
@click.argument("name")
@click.option("--take", type=click.IntRange(1), metavar="N",
              help="Put the other version N (`review list` numbers them) in place; without it, keep the version "
                   "in place.")
@_by_option
@_library_option
def resolve_command(name: str, take: int | None, who: str | None, library: str | None) -> None:
    """Settle a conflict `skillmill sync` kept: the same skill changed or decided differently on two machines.
    Neither version was lost: the stricter decision was left in place, the other under _conflicts/NAME/."""
    from pipeline.review import Review

    review = Review(_open_library(library), who)
    decision = review.resolve(name, take)
    click.echo(visible(f"resolved {name}: {decision.entry.reason}; now {decision.status} v{decision.version} "
                       f"(by {review.who})"))


@command.command("history")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of {version, path, sha256, decisions}.")
@_library_option
def history_command(name: str, as_json: bool, library: str | None) -> None:
    """Every kept version of a skill, and the decisions taken on each."""
    from pipeline.library.audit import sha256_file
    from pipeline.review.queue import NotFound, check_name

    lib = _open_library(library)
    versions = lib.history.versions(check_name(name))
    if not versions:
        raise NotFound(f"no kept versions of {name!r} in {lib.history.folder(name)}")
    entries = lib.audit.entries(name)
    rows = []
    for v in versions:
        file = lib.history.file(name, v)
        rows.append({"version": v, "path": str(file), "sha256": sha256_file(file),
                     "decisions": [e.contract() for e in entries if e.version == v]})
    if as_json:
        emit_json(rows)
        return
    for row in rows:
        done = "; ".join(f"{d['action']} by {d['who']}" for d in row["decisions"]) or "-"
        click.echo(f"v{row['version']}  {row['sha256'][:12]}  {done}")


@command.command("log")
@click.option("--json", "as_json", is_flag=True, help="Print the entries as a JSON list.")
@click.option("--skill", help="Only decisions about this skill.")
@click.option("--limit", type=click.IntRange(1), help="Only the last N entries.")
@click.option("--verify", is_flag=True, help="Check the hash chain and end with a verdict line; exit 1 when a line "
                                            "was changed, removed or reordered.")
@_library_option
def log_command(as_json: bool, skill: str | None, limit: int | None, verify: bool, library: str | None) -> None:
    """The audit log: every decision with who, when, action, skill, version, hashes and reason."""
    from pipeline.library import sync

    lib = _open_library(library, reading=True)
    problems = lib.audit.verify(merged=sync.is_shared(lib))
    for problem in problems:
        click.secho(visible(f"  ! audit log {lib.audit.path}: {problem}"), err=True, fg="red")
    entries = lib.audit.entries(skill, readable_only=True)  # a line that is not an entry is a problem above
    total = len(lib.audit.entries(readable_only=True))
    if limit:
        entries = entries[-limit:]
    if as_json:
        emit_json([e.contract() for e in entries])
    elif not entries:
        where = lib.audit.path if lib.root.exists() else f"{lib.root} ({_NO_LIBRARY_YET})"
        click.echo(visible(f"no decisions yet in {where}"))
    for e in entries if not as_json else []:
        hashes = f"{(e.before or '-')[:12]} -> {(e.after or '-')[:12]}"
        what = f"{e.action} {'proposal ' if e.target == 'proposal' else ''}{e.skill} v{e.version}"
        reason = f"  {e.reason}" if e.reason else ""
        flags = click.style(visible(f"  [flags: {', '.join(e.flags)}]"), fg="red") if e.flags else ""
        line = visible(f"{e.seq:>4}  {e.when:%Y-%m-%d %H:%M:%S}Z  {e.who:<12} {what:<60} {hashes}{reason}")
        click.echo(line + flags)
    if verify:  # the last line says it all; on stderr with --json, so that stdout stays one JSON document
        if problems:
            click.secho(visible(f"FAILED: {len(problems)} problem{'s' if len(problems) != 1 else ''} in "
                                f"{lib.audit.path}: {problems[0]}" + (" (and more above)" if len(problems) > 1 else "")),
                        fg="red", bold=True, err=as_json)
            sys.exit(1)
        click.echo(f"verified: {total} entr{'y' if total == 1 else 'ies'}, chain intact", err=as_json)
