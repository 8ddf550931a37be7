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

import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from pipeline.distill.facts import RepoFact
from pipeline.distill.naming import bounded, repo_label
from pipeline.distill.repo import repo_skill_name
from pipeline.distill.scanned import LAYOUT, POINTERS, scanned, session_notes
from pipeline.distill.scanned import carry as carry
from pipeline.library.model import Evidence, Item, Skill
from pipeline.library.store import Library
from pipeline.scan.reader import PURPOSES, Finding, Scan, normal, runnable, side_workflow, tool_of, underneath

LABEL = {"install": "Set up", "build": "Build", "test": "Tests", "one-test": "One test", "lint": "Lint",
         "format": "Format", "type-check": "Type-check", "run": "Run", "docs": "Docs"}
MAX_CITES = 3
_ORIGIN = {"ci": "CI", "instructions": "the instruction files", "docs": "the docs", "make": "the Makefile",
           "just": "the justfile", "tox": "tox.ini", "nox": "noxfile.py", "npm": "package.json",
           "pyproject": "pyproject.toml", "config": "its configuration"}


def items(scan: Scan, facts: Iterable[RepoFact] = ()) -> list[Item]:
    """The scan's commands by purpose, one per purpose, each citing where it was found and what sessions
    showed of it; the test command with what it runs underneath and the form that runs one test; then the
    tools the repository configures where it states no command."""
    by_command = _facts_by_command(facts)
    out: list[Item] = []
    runner: Finding | None = None  # where the test runner shows
    via_tox: str | None = None  # `tox -e py --`: one test through tox, when its runner line takes the paths
    for purpose in PURPOSES:
        chosen = scan.commands(purpose)[:1]
        if purpose == "one-test" and not chosen:
            out += _one_test(scan, runner, via_tox)
        for finding in chosen:
            cites = scan.cites(finding)[:MAX_CITES]
            command = finding.command
            if purpose == "install":
                block = _block(scan, finding)
                command, cites = " && ".join(f.command for f in block), list(dict.fromkeys(block + cites))
            origins = list(dict.fromkeys(_ORIGIN[c.origin] for c in cites))
            said = " and ".join(origins[:2])
            if finding.written:  # CI wrote it with a matrix expression
                said += ", one env of its matrix" if re.search(r"\s(-e|-s)\s", command) else ", each env of its matrix"
            verdict, sessions = _verdict(finding, by_command)
            text = f"{LABEL[purpose]}: `{command}` (from {said}{verdict})"
            if purpose == "test":
                ci = _ci_beside(scan, finding)
                if ci is not None and normal(ci.command) != normal(command):
                    text += f"; CI runs `{ci.command}`"
                    cites.append(ci)
                runner = finding if normal(command).split()[0] in ("pytest", "py.test") else None
                below = underneath(scan, command)
                if below is not None:
                    under = Finding("test", below[0], below[2], below[1], "tox")
                    text += f"; it runs `{below[0]}` ({below[2]})"
                    cites.append(under)
                    runner = under if re.search(r"\b(pytest|py\.test)\b", below[0]) else runner
                    if below[2] == "tox.ini" and runner is under:
                        via_tox = _through_tox(scan, command, below[1])
                    if below[2] == "package.json":
                        runner = finding if re.match(r"^(jest|vitest|mocha)\b", below[0]) else None
            out.append(Item(text=text + ".", evidence=_evidence(cites) + sessions))
    configured = [f for f in scan.configured() if not scan.commands(f.purpose)
                  and not (f.purpose == "test" and (runner is not None or scan.commands("test")))]
    if configured:
        tools = list(dict.fromkeys(f"{f.command} ({LABEL[f.purpose].lower()})" for f in configured))
        files = list(dict.fromkeys(f.file for f in configured))
        out.append(Item(text=f"Configured, no command stated: {', '.join(tools)} "
                             f"(in {' and '.join(files)}).", evidence=_evidence(configured)))
    return out


def _block(scan: Scan, first: Finding) -> list[Finding]:
    """The set-up commands written together with ``first`` (the same line or the lines right after it)."""
    same = sorted((f for f in scan.findings if f.purpose == "install" and f.file == first.file
                   and f.origin == first.origin and abs(f.line - first.line) <= 4), key=lambda f: f.line)
    start = same.index(first)
    while start > 0 and same[start].line - same[start - 1].line <= 1:
        start -= 1
    block: list[Finding] = []
    for f in same[start:]:
        if block and (f.line - block[-1].line > 1 or f.line != block[-1].line
                      and tool_of(f.command) != tool_of(block[-1].command)):
            break  # a gap, or another tool on the next line: an alternative ("either of these"), not a step
        if normal(f.command) not in {normal(b.command) for b in block}:
            block.append(f)
    return block if first in block else [first]


def _ci_beside(scan: Scan, finding: Finding) -> Finding | None:
    """What the main CI runs with the same tool, when the chosen command is not CI's own."""
    if finding.origin == "ci":
        return None
    same = [f for f in scan.commands("test") if f.origin == "ci" and tool_of(f.command) == tool_of(finding.command)
            and not side_workflow(f.file) and runnable(f.command)]
    same.sort(key=lambda f: ("pypy" in f.command, f.file, f.line))  # the CPython matrix before PyPy's
    if not same:
        return None
    shown = same[0].command.split(" -- ")[0]
    return Finding(same[0].purpose, shown, same[0].file, same[0].line, "ci", same[0].written)


def _through_tox(scan: Scan, command: str, line: int) -> str | None:
    """``tox -e py --`` when tox's runner line passes ``{posargs}`` and names no test path outside them: then
    ``tox -e py -- tests/x.py::t`` runs that one test with the env's dependencies (bare pytest often lacks
    them: plugins named in addopts, the package itself in a src layout)."""
    raw = next((text for key, rows in scan.runs.items() if key.startswith("tox:") for n, text in rows if n == line),
               None)
    if raw is None or "{posargs" not in raw:
        return None
    outside = re.sub(r"\{env:\w+:([^{}]*)\}", r"\1", raw)  # {env:X:pytest} -> pytest
    outside = re.sub(r"\{posargs(:[^{}]*(\{[^{}]*\}[^{}]*)*)?\}", "", outside)
    outside = re.sub(r"\{[^{}]*\}", "", outside)
    words = outside.split()
    at = next((i for i, w in enumerate(words) if w in ("pytest", "py.test")), None)
    valued = {"-k", "-m", "-W", "-p", "-o", "-c", "-n", "--rootdir", "--junitxml", "--cov", "--cov-report",
              "--basetemp", "--ignore", "--deselect", "--run-optional"}
    if at is None or any(not w.startswith("-") and "=" not in w and prev not in valued
                         for prev, w in zip(words[at:], words[at + 1:], strict=False)):
        return None  # `pytest tests {posargs}`: a path given would run beside the whole suite
    words = normal(command).split()
    tox = " ".join(command.split()[: len(command.split()) - len(words) + words.index("tox") + 1]) \
        if "tox" in words else "tox"
    env = re.search(r"\s-e\s*(\S+)", " " + command)
    name = env.group(1) if env and runnable(env.group(1)) else "py"
    return f"{tox} -e {name} --"


def _one_test(scan: Scan, runner: Finding | None, via_tox: str | None = None) -> list[Item]:
    """A template for running one test, only when the runner is known (pytest, or npm's jest/vitest/mocha)."""
    if runner is None:
        configured = [f for f in scan.configured() if f.purpose == "test" and f.command == "pytest"]
        runner = configured[0] if configured and not scan.commands("test") else None
    if runner is None:
        return []
    if runner.file == "package.json" or normal(runner.command).split()[0] in ("npm", "yarn", "pnpm"):
        tool = normal(runner.command).split()[0]
        form = f"{tool} test -- <file>"
    elif scan.tests_dir is None:
        return []
    else:
        words = runner.command.split()
        at = next((i for i, w in enumerate(words) if w in ("pytest", "py.test")), None)
        prefix = " ".join(words[: at + 1]) if at is not None and runner.origin != "tox" else "pytest"
        if via_tox:
            return [Item(text=f"One test (template): `{via_tox} {_test_file(scan)}::<test_name>` (through tox, "
                              "with the env's test dependencies; its pytest line takes the path).",
                         evidence=_evidence([runner]))]
        form = f"{prefix} {_test_file(scan)}::<test_name>"
    return [Item(text=f"One test (template): `{form}` (the runner per {_ORIGIN[runner.origin]}).",
                 evidence=_evidence([runner]))]


def _test_file(scan: Scan) -> str:
    """A real test file to show in the template: in the tests folder, else one level down (``tests/unit/x/``)."""
    folder = Path(scan.root) / (scan.tests_dir or "tests/")
    test = re.compile(r"^(test_\w+|\w+_test|tests_\w+)\.py$")
    for depth in ("", "*/", "*/*/"):
        names = sorted((str(p.relative_to(folder)) for p in folder.glob(depth + "*.py") if test.match(p.name)),
                       key=lambda n: (bool(re.search(r"integration|e2e|functional|slow", n)), n))[:1]  # unit first
        if names:
            return f"{scan.tests_dir}{names[0]}"
    return f"{scan.tests_dir}<file>.py"


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
        for kind, said in (("package", "code"), ("entry", "entry points"), ("tests", "tests")):
            paths = [f"`{p.path}`" for p in scan.layout if p.kind == kind]
            if paths:
                lines.append(f"- {said}: {', '.join(paths)}")
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


def worth_writing(skill: Skill, scan: Scan) -> bool:
    """A new manual says something the repository states: a command, or an instruction file to read.

    Tools merely configured (``[tool.ruff]``) and the top-level folders are what an agent sees in a
    glance at the checkout; a manual of only those costs a reviewer's minute and an agent's context.
    """
    stated = [i for i in skill.procedure if not i.text.startswith("Configured")]
    return bool(stated or scan.instructions)


def _description(label: str, found: list[Item], scan: Scan) -> str:
    purposes = list(dict.fromkeys(i.text.split(":", 1)[0].removesuffix(" (template)").lower() for i in found
                                  if not i.text.startswith("Configured")))
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
