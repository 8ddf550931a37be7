"""A scan as the repository's ``working-in-<repo>`` manual: the same items as the sessions', cited by file:line.

A scanned command is an :class:`~pipeline.library.model.Item` whose evidence names the files and
lines it came from (``Evidence("Makefile", [12])``) where a session item names trajectory steps.
Sessions that ran the same command confirm it (their steps are cited beside the file); sessions
where it could not run contradict it. The manual's session items and notes are kept as they
are; only the scanned items and the scan's notes (layout, instruction files) are replaced by a
new scan, and a new session-built manual carries the scanned items over (:func:`carry`, which lives
in ``pipeline.distill.scanned``: the write stage, a floor below, applies it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from pipeline.distill.facts import RepoFact
from pipeline.distill.naming import bounded, repo_label
from pipeline.distill.repo import repo_skill_name
from pipeline.distill.scanned import LAYOUT, POINTERS, scanned, session_notes
from pipeline.distill.scanned import carry as carry
from pipeline.library.model import Evidence, Item, Skill
from pipeline.library.store import Library
from pipeline.scan.reader import PURPOSES, Finding, Scan, normal

LABEL = {"install": "Set up", "build": "Build", "test": "Tests", "one-test": "One test", "lint": "Lint",
         "format": "Format", "type-check": "Type-check", "run": "Run", "docs": "Docs"}
#: Commands listed per purpose: the most authoritative first (what CI runs, then the docs, then task runners).
PER_PURPOSE = {"install": 2, "build": 2}
MAX_CITES = 3
_ORIGIN = {"ci": "CI", "instructions": "the instruction files", "docs": "the docs", "make": "the Makefile",
           "just": "the justfile", "tox": "tox.ini", "nox": "noxfile.py", "npm": "package.json",
           "pyproject": "pyproject.toml", "pre-commit": "pre-commit", "cargo": "Cargo.toml", "go": "go.mod",
           "docker": "the Dockerfile"}


def items(scan: Scan, facts: Iterable[RepoFact] = ()) -> list[Item]:
    """The scan's commands by purpose, each citing where it was found and what sessions showed of it."""
    by_command = _facts_by_command(facts)
    out: list[Item] = []
    for purpose in PURPOSES:
        for finding in scan.commands(purpose)[: PER_PURPOSE.get(purpose, 1)]:
            cites = scan.cites(finding)[:MAX_CITES]
            origins = list(dict.fromkeys(_ORIGIN[c.origin] for c in cites))
            verdict, sessions = _verdict(finding, by_command)
            text = f"{LABEL[purpose]}: `{finding.command}` (from {' and '.join(origins[:2])}{verdict})."
            out.append(Item(text=text, evidence=_evidence(cites) + sessions))
    return out


def _evidence(cites: list[Finding]) -> list[Evidence]:
    lines: dict[str, list[int]] = defaultdict(list)
    for c in cites:
        lines[c.file].append(c.line)
    return [Evidence(trajectory=f, steps=sorted(set(n))) for f, n in lines.items()]


def _facts_by_command(facts: Iterable[RepoFact]) -> dict[str, list[RepoFact]]:
    out: dict[str, list[RepoFact]] = defaultdict(list)
    for fact in facts:
        if fact.kind in ("test", "lint", "build", "install") and fact.command:
            out[normal(fact.command)].append(fact)
        elif fact.kind == "replaced" and fact.text:
            out[normal(fact.text.replace(" <tests>", ""))].append(fact)
    return out


def _verdict(finding: Finding, by_command: dict[str, list[RepoFact]]) -> tuple[str, list[Evidence]]:
    """``; confirmed by 2 sessions`` / ``; contradicted: it could not run in 1 session ...``, with their steps."""
    wanted = normal(finding.command)
    facts = [f for key, group in by_command.items() if key == wanted or key.startswith(wanted + " ") for f in group]
    if not facts:
        return "", []
    failed = [f for f in facts if f.kind == "replaced" or (not f.ok and not f.ran)]
    passed = [f for f in facts if f.kind != "replaced" and f.ok]
    chosen = failed if failed and len({f.trajectory for f in failed}) >= len({f.trajectory for f in passed}) else passed
    n = len({f.trajectory for f in chosen})
    sessions = f"{n} session{'s' if n != 1 else ''}"
    if chosen is failed:
        instead = next((f.command for f in failed if f.kind == "replaced"), None)
        symptom = next((f.symptom for f in failed if f.symptom), "")
        said = f"; contradicted: it could not run in {sessions}" + (f" (`{_short(symptom)}`)" if symptom else "")
        said += f", `{instead}` ran instead" if instead else ""
    else:
        said = f"; confirmed by {sessions}"
    steps: dict[str, set[int]] = defaultdict(set)
    for fact in sorted(chosen, key=lambda f: f.when or "", reverse=True)[:MAX_CITES]:
        steps[fact.trajectory].update(fact.steps)
    return said, [Evidence(trajectory=t, steps=sorted(s)) for t, s in sorted(steps.items())]


def _short(text: str | None, limit: int = 60) -> str:
    line = (text or "").strip().split("\n", 1)[0].replace("`", "'")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def notes(scan: Scan) -> str:
    lines: list[str] = []
    if scan.layout:
        lines.append(LAYOUT)
        for place in scan.layout:
            lines.append(f"- `{place.path}` ({place.kind})")
        lines.append("")
    if scan.instructions:
        lines.append(POINTERS)
        lines += [f"- `{path}` holds the repository's instructions for agents: read it first. <!-- from {path}:1 -->"
                  for path in scan.instructions]
    return "\n".join(lines).strip("\n")


def manual(scan: Scan, existing: Skill | None = None, facts: Iterable[RepoFact] = ()) -> Skill:
    """The manual with this scan's items: ``existing``'s session items and notes kept, its old scan replaced."""
    repo = scan.repo or "repo"
    found = items(scan, facts)
    if existing is None:
        label = repo_label(repo)
        base = Skill(name=repo_skill_name(repo), title=f"Working in {label}", kind="repo", repo=repo,
                     confidence=0.5, description=_description(label, found, scan))
    else:
        base = existing
    session = [i for i in base.procedure if not scanned(i)]
    merged_notes = "\n\n".join(p for p in (session_notes(base.notes), notes(scan)) if p)
    update: dict = {"procedure": session + found, "notes": merged_notes}
    if existing is not None and not existing.sources:  # a manual only scans wrote: its description follows them
        update["description"] = _description(repo_label(existing.repo or repo), found, scan)
    return base.model_copy(update=update)


def _description(label: str, found: list[Item], scan: Scan) -> str:
    purposes = list(dict.fromkeys(i.text.split(":", 1)[0].lower() for i in found))
    what = (", ".join(purposes[:-1]) + f" and {purposes[-1]}") if len(purposes) > 1 else "".join(purposes)
    tests = next((i.text.split("`")[1] for i in found if i.text.startswith("Tests:")), None)
    runs = f" (tests: `{tests}`)" if tests else ""
    pointers = f"; read {', '.join(scan.instructions[:2])} first" if scan.instructions else ""
    how = f"the commands its CI and docs use ({what}){runs}" if what else "its layout"
    return bounded(f"Use when working in the {label} repository (building, testing, fixing or changing code "
                   f"there): {how}{pointers}.")


def write(library: Library, skill: Skill) -> str:
    """Save the manual as a candidate, or propose it as a change to the approved one; never touch a decision.

    Returns ``created``, ``updated``, ``unchanged``, ``proposed`` (a change to an approved manual waits
    in review), ``held`` (a person rejected that very change) or ``left`` (rejected or deprecated: a
    person decided, a scan does not bring it back).
    """
    with library.lock():
        existing = library.get(skill.name)
        if existing is None:
            return library.save(skill.model_copy(update={"status": "candidate"}))
        old = existing.skill
        if old.model_copy(update={"version": skill.version, "status": skill.status}) == skill:
            return "unchanged"
        if old.status == "candidate":
            return library.save(skill.model_copy(update={"version": old.version + 1, "status": "candidate"}))
        if old.status == "approved":
            pending = library.proposal(skill.name)
            if pending is not None and pending.skill.model_copy(
                    update={"version": skill.version, "status": skill.status}) == skill:
                return "unchanged"
            return "proposed" if library.propose(skill) is not None else "held"
        return "left"
