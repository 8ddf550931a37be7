"""The ``working-in-<repo>`` manual: what every session in one repository proved, consolidated.

What an engineer writes into a CLAUDE.md / AGENTS.md by hand, from the facts of every session and
agent (``facts.py``):

* **Commands** that worked there, the non-default ones first (``python tests/runtests.py <tests>``
  before a plain ``pytest <tests>``), each as a template with a scoped example;
* **Environment**: what does not work here and what to run instead, and errors met running a
  project command with the change that got the same command past them;
* **Failures that are not yours**, **the user's corrections** in their words, **instruction files**
  the sessions used, and **where things are** (files searched for, then edited, by folder).

Every item says how many sessions support it and when it was last seen, and carries its
provenance; the most supported and most recent come first, and the manual stays under
:data:`TOKEN_BUDGET` served tokens. A repository whose sessions proved nothing a capable agent
would not already know (only ``pytest <tests>``) gets no manual.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pipeline.distill.corrections import first_line
from pipeline.distill.facts import RepoFact, error_key
from pipeline.distill.naming import bounded, clamp_name, repo_label, repo_slug
from pipeline.ingest.verification import is_test_path
from pipeline.library.model import MAX_NAME, Evidence, Item, Pitfall, Skill, SourceRef

#: Served tokens a manual aims to stay under (rendered without provenance and sources).
TOKEN_BUDGET = 800
MAX_EVIDENCE = 3
MAX_SOURCES = 24
#: A plain ``pytest <tests>`` is worth a line once several sessions show it is how the repository tests.
MIN_DEFAULT_SESSIONS = 3
_LABEL = {"test": "Tests", "lint": "Lint / type-check", "build": "Build", "install": "Set up"}
_LIMIT = {"test": 3, "lint": 2, "build": 2, "install": 2}
#: A runner nobody needs to be told about: the ecosystem's default, with at most the usual flags.
_DEFAULT = re.compile(r"^(python -m pytest|pytest|py\.test|npm (run )?test|yarn test|pnpm test|cargo (test|build)|"
                      r"go (test|build)|make|make test|tox|npm run build|npm run lint|ruff check|mypy|"
                      r"npx tsc --noEmit|tsc --noEmit)( <tests>)?( -[qvxs]+| --tb=\w+| -[qvx]+ <tests>)*( <tests>)?$")
#: Set-up commands that hold for a repository (install what it declares), not a task's new dependency.
_PROJECT_SETUP = re.compile(r"^(pip3? install (-e|--editable) \S+|pip3? install -r \S+|python3? -m pip install "
                            r"(-e|-r) \S+|(npm|pnpm|yarn|bun) (install|i|ci)|yarn|poetry install|uv sync|"
                            r"bundle install|go mod (download|tidy)|cargo fetch)( --?[\w-]+(=\S+)?)*$")
_INSTRUCTIONS = re.compile(r"(^|/)(CLAUDE|AGENTS|GEMINI|CONVENTIONS|CONTRIBUTING)\.md$|(^|/)\.cursorrules$|"
                           r"(^|/)\.cursor/rules/|(^|/)\.github/copilot-instructions\.md$", re.I)
_DOC = re.compile(r"\.(md|rst|txt|adoc)$|(^|/)docs?/", re.I)
#: A correction that states a convention (which tool, library, helper or pattern to use) holds for the next
#: task too; "don't log if not self.mp" was about one change.
_CONVENTION = re.compile(r"\b(don'?t|do not|never)\s+(use|mock|import|call|produce|create)\b|"
                         r"\buse\s+\S+[^.;:!?]{0,50}?\b(instead|not|rather)\b|\b(instead of )?mock(ing)?\b|"
                         r"\bis not acceptable\b", re.I)
_REDIRECT = re.compile(r"^\W*(no\b|don'?t|do not|never|stop)\b", re.I)


def repo_skill_name(repo: str) -> str:
    slug = repo_slug(repo) or "repo"
    name = clamp_name(f"working-in-{slug}")
    if name == "working-in":  # a first word too long to fit was cut away whole: keep what fits of it
        name = clamp_name(f"working-in-{slug[:MAX_NAME - len('working-in-')]}")
    return name


@dataclass
class _Entry:
    """One line of the manual with what supports it."""

    facts: list[RepoFact]
    rank: tuple = ()
    section: str = ""
    build: Callable[[], Item | Pitfall | str] | None = None
    sessions: set[str] = field(default_factory=set)

    @property
    def last(self) -> str:
        return max((f.when or "" for f in self.facts), default="")


def consolidate(repo: str, facts: Iterable[RepoFact]) -> Skill | None:
    facts = sorted(facts, key=lambda f: (f.trajectory, f.steps[:1], f.kind, f.template))
    if not facts:
        return None
    by_kind: dict[str, list[RepoFact]] = defaultdict(list)
    for fact in facts:
        by_kind[fact.kind].append(fact)
    not_here = {f.text for f in by_kind["replaced"]}
    commands = _commands(by_kind, not_here, by_kind["replaced"])
    told = {id(f) for e in commands for f in e.facts if f.kind == "replaced"}  # said beside their command
    replaced = _replaced([f for f in by_kind["replaced"] if id(f) not in told])
    environment = _environment(by_kind["fix"])
    preexisting = _preexisting(by_kind["preexisting"])
    corrections = _corrections(by_kind["correction"])
    instructions = _instructions(by_kind["location"])
    locations = _locations(by_kind["location"])
    useful = ([c for c in commands if c.rank[1] == 0] + replaced + environment + corrections + instructions
              + [e for e in preexisting if len(e.facts) > 1 or _sessions(e.facts) > 1])
    if not useful:
        return None  # nothing a capable agent would not know: no manual
    sections = {"commands": commands, "replaced": replaced, "environment": environment,
                "preexisting": preexisting, "corrections": corrections, "instructions": instructions,
                "locations": locations}
    skill = _skill(repo, sections)
    while _served_tokens(skill) > TOKEN_BUDGET and _drop_one(sections):
        skill = _skill(repo, sections)
    return skill


# -- sections ----------------------------------------------------------------------------
def _sessions(facts: list[RepoFact]) -> int:
    return len({f.trajectory for f in facts})


def _support(facts: list[RepoFact], extra: str = "") -> str:
    n = _sessions(facts)
    last = max((f.when or "" for f in facts), default="")
    parts = [f"{n} session{'s' if n != 1 else ''}"] + ([extra] if extra else []) + ([f"last {last}"] if last else [])
    return "(" + ", ".join(parts) + ")"


def _evidence(facts: list[RepoFact]) -> list[Evidence]:
    merged: dict[str, set[int]] = defaultdict(set)
    latest = sorted(facts, key=lambda f: (f.when or "", f.trajectory), reverse=True)
    for fact in latest:
        if fact.trajectory in merged or len(merged) < MAX_EVIDENCE:
            merged[fact.trajectory].update(fact.steps)
    return [Evidence(trajectory=t, steps=sorted(steps)) for t, steps in sorted(merged.items())]


def _recency(facts: list[RepoFact]) -> str:
    return max((f.when or "" for f in facts), default="")


def _fold(template: str) -> str:
    """One runner, however it was spelled: ``python3 x.py`` / ``./x.py`` / ``python x.py``."""
    words = template.split()
    if words and re.fullmatch(r"python(3(\.\d+)?)?", words[0]):
        words[0] = "python"
        if len(words) > 1 and words[1].endswith(".py"):
            words.pop(0)
    return " ".join(w.removeprefix("./") for w in words)


def _commands(by_kind: dict[str, list[RepoFact]], not_here: set[str | None],
              replaced: list[RepoFact]) -> list[_Entry]:
    entries: list[_Entry] = []
    for kind in ("test", "lint", "build", "install"):
        groups: dict[str, list[RepoFact]] = defaultdict(list)
        for fact in by_kind[kind]:
            groups[_fold(fact.template)].append(fact)
        rows = []
        for shape, group in groups.items():
            passed = [f for f in group if f.ok]
            ran = [f for f in group if f.ran]  # failing tests still show the runner works here
            if not passed or shape in not_here:
                continue
            if kind == "install" and not _PROJECT_SETUP.match(shape) and _sessions(passed) < 2:
                continue  # a task's new dependency, not how the repository is set up
            others = [f for f in replaced if _fold(f.template) == shape]
            default = bool(_DEFAULT.match(shape)) and not others
            if default and _sessions(ran) < MIN_DEFAULT_SESSIONS:
                continue  # the ecosystem's default runner, seen once or twice: nothing to tell
            rows.append(_Entry(group + others, rank=(-_sessions(ran), 1 if default else 0,
                                                     _negate(_recency(ran)), shape), section="commands",
                               build=_command_item(kind, shape, group, others)))
        rows.sort(key=lambda e: e.rank)
        entries += rows[: _LIMIT[kind]]
    return entries


def _command_item(kind: str, shape: str, group: list[RepoFact], replaced: list[RepoFact]) -> Callable[[], Item]:
    def build() -> Item:
        passed = [f for f in group if f.ok]
        ran = [f for f in group if f.ran]
        example = _scoped_example(passed)
        display = _display_template(shape, example)
        text = f"{_LABEL[kind]}: `{display}` {_support(ran)}."
        by_runner: dict[str, list[RepoFact]] = defaultdict(list)  # what did not run here, said beside it
        for fact in replaced:
            by_runner[fact.text or ""].append(fact)
        for tried, facts in list(by_runner.items())[:2]:
            text += f" Not `{tried}`: `{_short(facts[0].symptom, 70)}` {_support(facts)}."
        return Item(text=text, command=example, evidence=_evidence(passed + replaced))
    return build


def _display_template(shape: str, example: str) -> str:
    """The template as the example spells its runner (``python3 tests/runtests.py <tests>``)."""
    words = example.split()
    if words and shape.split()[:1] and words[0] != shape.split()[0] and len(words) > 1 \
            and words[1] == shape.split()[0]:
        return f"{words[0]} {shape}"
    return shape


def _scoped_example(facts: list[RepoFact]) -> str:
    """The most telling concrete run: one file beats the whole suite, and a single test only when
    several sessions ran it (a test the agent wrote for its task may be gone); newest first."""
    seen: dict[str, set[str]] = defaultdict(set)
    for fact in facts:
        seen[fact.command].add(fact.trajectory)

    def scope(f: RepoFact) -> int:
        if "::" in f.command or " -k " in f.command or " -t " in f.command:
            return 2 if len(seen[f.command]) > 1 else 0
        return 1 if re.search(r"\S+\.\w+\b|\w+\.\w+", f.command.split(" ", 1)[-1]) else 0
    best = max(facts, key=lambda f: (scope(f), len(seen[f.command]), f.when or "", -len(f.command)))
    return best.command


def _negate(text: str) -> str:
    return "".join(chr(0x10FFFF - ord(c)) for c in text)


def _replaced(facts: list[RepoFact]) -> list[_Entry]:
    groups: dict[str, list[RepoFact]] = defaultdict(list)
    for fact in facts:
        groups[_fold(fact.template)].append(fact)
    entries = []
    for instead, group in groups.items():
        def build(instead: str = instead, group: list[RepoFact] = group) -> Pitfall:
            symptom = _short(group[0].symptom or "it did not run", 140)
            tried = list(dict.fromkeys(f.text or "" for f in group))
            failed = "` or `".join(tried[:2])
            return Pitfall(symptom=f"`{failed}` does not run here: `{symptom}`",
                           fix=f"run `{instead}` instead {_support(group)}", command=_scoped_example(group),
                           evidence=_evidence(group))
        entries.append(_Entry(group, rank=(-_sessions(group), _negate(_recency(group))), section="replaced",
                              build=build))
    return sorted(entries, key=lambda e: e.rank)


def _environment(facts: list[RepoFact]) -> list[_Entry]:
    groups: dict[tuple[str, str], list[RepoFact]] = defaultdict(list)
    for fact in facts:
        groups[(error_key(fact.symptom or ""), _fold(fact.template))].append(fact)
    entries = []
    for (_, remedy), group in groups.items():
        def build(remedy: str = remedy, group: list[RepoFact] = group) -> Pitfall:
            symptom = _short(group[-1].symptom or "the command failed", 160)
            before = group[-1].text
            fix = (f"run it as `{remedy}` instead of `{_short(before, 80)}`" if before
                   else f"`{remedy}` got the same command past it")
            return Pitfall(symptom=f"`{symptom}`", fix=f"{fix} {_support(group)}", command=group[-1].command,
                           evidence=_evidence(group))
        entries.append(_Entry(group, rank=(-_sessions(group), _negate(_recency(group))), section="environment",
                              build=build))
    return sorted(entries, key=lambda e: e.rank)[:4]


def _notes_entries(facts: list[RepoFact], line: Callable[[list[RepoFact]], str]) -> list[_Entry]:
    groups: dict[str, list[RepoFact]] = defaultdict(list)
    for fact in facts:
        groups[fact.template].append(fact)
    entries = [_Entry(group, rank=(-_sessions(group), _negate(_recency(group)), key), section=group[0].kind,
                      build=lambda group=group: line(group)) for key, group in groups.items()]
    return sorted(entries, key=lambda e: e.rank)[:5]


def _preexisting(facts: list[RepoFact]) -> list[_Entry]:
    """One line per test file: its tests that fail whatever you change."""
    by_file: dict[str, list[RepoFact]] = defaultdict(list)
    for fact in facts:
        by_file[fact.template.split("::", 1)[0]].append(fact)
    entries = [_Entry(group, rank=(-_sessions(group), -len(group), path), section="preexisting",
                      build=lambda path=path, group=group: _preexisting_line(path, group))
               for path, group in by_file.items()]
    return sorted(entries, key=lambda e: e.rank)[:5]


def _preexisting_line(path: str, group: list[RepoFact]) -> str:
    tests = list(dict.fromkeys(f.template.split("::", 1)[-1] for f in group))
    named = ", ".join(f"`{t}`" for t in tests[:3]) + (f" and {len(tests) - 3} more" if len(tests) > 3 else "")
    why = group[-1].text or "failed before the change and after it"
    return f"- `{path}`: {named} already fail{'s' if len(tests) == 1 else ''} in this environment ({why}, " \
           f"{_support(group)[1:]}.{_comment(group)}"


def _corrections(facts: list[RepoFact]) -> list[_Entry]:
    groups: dict[str, list[RepoFact]] = defaultdict(list)
    for fact in facts:
        groups[_quote_key(fact.text or "")].append(fact)
    entries = []
    for key, group in groups.items():
        quote = group[0].text or ""
        tier = 0 if _CONVENTION.search(quote) else 1 if _REDIRECT.match(quote) else 2
        entries.append(_Entry(group, rank=(tier, -_sessions(group), _negate(_recency(group)), key),
                              section="correction", build=lambda group=group: _correction_line(group)))
    return sorted(entries, key=lambda e: e.rank)[:10]


def _quote_key(quote: str) -> str:
    """Two messages saying the same thing ("don't use confirm(), just prompt()" and "... with default=y")."""
    words = re.findall(r"[\w.()-]+", quote.lower())
    return " ".join(words[:5])


def _correction_line(group: list[RepoFact]) -> str:
    latest = max(group, key=lambda f: (f.when or "", len(f.text or "")))
    context = f" ({latest.symptom})" if latest.symptom else ""
    quote = (latest.text or "").replace('"', "'")
    return f'- "{quote}"{context} {_support(group)}.{_comment(group)}'


def _instructions(facts: list[RepoFact]) -> list[_Entry]:
    groups: dict[str, list[RepoFact]] = defaultdict(list)
    for fact in facts:
        if _INSTRUCTIONS.search(fact.template):
            groups[fact.template].append(fact)
    return [_Entry(group, rank=(-_sessions(group), path), section="instructions",
                   build=lambda path=path, group=group: f"- `{path}` holds the repository's instructions for agents: "
                                                          f"read it first {_support(group)}.{_comment(group)}")
            for path, group in sorted(groups.items())]


def _locations(facts: list[RepoFact]) -> list[_Entry]:
    by_file: dict[str, list[RepoFact]] = defaultdict(list)
    for fact in facts:
        if not _INSTRUCTIONS.search(fact.template) and not _DOC.search(fact.template):
            by_file[fact.template].append(fact)
    by_folder: dict[str, list[str]] = defaultdict(list)
    for path in by_file:
        if "/" in path:  # a file at the root (a script, a config) says nothing about where code lives
            by_folder[path.rsplit("/", 1)[0] + "/"].append(path)
    entries = []
    for folder, paths in by_folder.items():
        group = [f for p in paths for f in by_file[p]]
        if _sessions(group) < 2:
            continue  # one task's file is that task's history; a folder several sessions worked in is a place
        paths.sort(key=lambda p: (-_sessions(by_file[p]), p))

        def build(folder: str = folder, paths: list[str] = paths, group: list[RepoFact] = group) -> str:
            files = []
            for path in paths[:3]:
                names = [n for f in by_file[path] for n in (f.text or "").split(", ") if n]
                # the functions most often touched say what a file is for; a test file's test names do not
                common = [] if is_test_path(path) else [n for n, _ in _most_common(names)[:2] if n != "__init__"]
                what = f" (`{'`, `'.join(common)}`)" if common else ""
                files.append(f"`{path.rsplit('/', 1)[-1]}`{what}")
            kind = "tests" if all(is_test_path(p) for p in paths) else "code"
            return f"- `{folder}` ({kind}): {', '.join(files)} {_support(group)}.{_comment(group)}"
        entries.append(_Entry(group, rank=(-_sessions(group), folder), section="location", build=build))
    return sorted(entries, key=lambda e: e.rank)[:5]


def _most_common(names: list[str]) -> list[tuple[str, int]]:
    counts: dict[str, int] = defaultdict(int)
    for name in names:
        counts[name] += 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def _comment(facts: list[RepoFact]) -> str:
    """Provenance for a free-text line, in the same form as an item's."""
    refs = " ".join(f"{e.trajectory}:{','.join(str(s) for s in e.steps)}" for e in _evidence(facts))
    return f" <!-- from {refs} -->"


def _short(text: str | None, limit: int) -> str:
    line = first_line(text or "").replace("`", "'")
    return line if len(line) <= limit else line[: limit - 3].rstrip() + "..."


# -- the skill ---------------------------------------------------------------------------
_NOTES = (("preexisting", "## Failures that are not yours"), ("corrections", "## The user's corrections"),
          ("instructions", "## Instruction files"), ("locations", "## Where things are"))
#: One line under a heading, said once instead of on every item.
_INTRO = {"preexisting": "Tests that failed with and without the sessions' changes: run them before your change "
                         "to compare, and do not chase them."}


def _skill(repo: str, sections: dict[str, list[_Entry]]) -> Skill:
    procedure = [e.build() for e in sections["commands"] if e.build]
    pitfalls = [e.build() for e in [*sections["replaced"], *sections["environment"]] if e.build]
    notes: list[str] = []
    for key, heading in _NOTES:
        lines = [e.build() for e in sections[key] if e.build]
        if lines:
            notes += [heading, *([_INTRO[key]] if key in _INTRO else []), *[str(line) for line in lines], ""]
    used = [f for entries in sections.values() for e in entries for f in e.facts]
    cited = {e.trajectory for i in [*procedure, *pitfalls] if isinstance(i, Item | Pitfall) for e in i.evidence}
    cited |= set(re.findall(r"(?<=[ ])([0-9a-f]{16})(?=:)", "\n".join(notes)))
    # What the items cite, then the other sessions their counts rest on (newest first, up to
    # MAX_SOURCES), so a reviewer can open what a count says.
    sources: dict[str, SourceRef] = {}
    for fact in sorted(used, key=lambda f: (f.trajectory not in cited, _negate(f.when or ""), f.trajectory)):
        if fact.trajectory in cited or len(sources) < MAX_SOURCES:
            sources.setdefault(fact.trajectory, SourceRef(trajectory=fact.trajectory, agent=fact.agent,
                                                          outcome=fact.outcome, task=fact.task))
    label = repo_label(repo)
    outcomes = {s.outcome for s in sources.values()}
    return Skill(
        name=repo_skill_name(repo),
        title=f"Working in {label}",
        description=_description(label, sections, procedure),
        kind="repo",
        confidence=min(0.9, 0.5 + 0.05 * len({f.trajectory for f in used})),
        outcome=outcomes.pop() if len(outcomes) == 1 else "mixed",
        repo=repo,
        sources=sorted(sources.values(), key=lambda s: s.trajectory),
        procedure=[p for p in procedure if isinstance(p, Item)],
        pitfalls=[p for p in pitfalls if isinstance(p, Pitfall)],
        notes="\n".join(notes).strip("\n"),
    )


def _description(label: str, sections: dict[str, list[_Entry]], procedure: list) -> str:
    what = []
    tests = [i for i in procedure if isinstance(i, Item) and i.text.startswith(_LABEL["test"])]
    if tests:
        instead = re.search(r"Not `([^`]+)`", tests[0].text)
        runner = f", not `{instead.group(1).split()[0].rsplit('/', 1)[-1]}`" if instead else ""
        what.append(f"how its tests run (`{tests[0].text.split('`')[1]}`{runner})")
    elif procedure:
        what.append("the commands that work there")
    if sections["replaced"]:
        what.append("what does not work here and what to run instead")
    if sections["environment"]:
        symptom = _short(sections["environment"][0].facts[-1].symptom, 200)
        message = symptom.split(": ", 1)[-1] if ": " in symptom else symptom
        message = message if len(message) <= 70 else message[:70].rsplit(" ", 1)[0] + " ..."
        what.append(f"environment errors and what fixed them ({message})")
    if sections["preexisting"]:
        files = [e.facts[0].template.split("::", 1)[0] for e in sections["preexisting"]]
        tests = sum(len({f.template for f in e.facts}) for e in sections["preexisting"])
        what.append(f"failures that are not yours ({tests} test{'s' if tests != 1 else ''} in "
                    f"{', '.join(f.rsplit('/', 1)[-1] for f in files[:3])})")
    if sections["corrections"]:
        what.append("what the user told agents to do differently")
    if sections["instructions"]:
        names = sorted({e.facts[0].template.rsplit("/", 1)[-1] for e in sections["instructions"]})
        what.append(f"the instruction files to read first ({', '.join(names)})")
    if sections["locations"]:
        what.append("where things are")
    listed = ", ".join(what[:-1]) + (f" and {what[-1]}" if len(what) > 1 else (what[0] if what else ""))
    return bounded(f"Use when working in the {label} repository (building, testing, fixing or changing code "
                   f"there): {listed}.")


def _served_tokens(skill: Skill) -> int:
    from pipeline.library.markdown import served

    return int(len(served(skill)) / 3.3)  # code-heavy text: ~3.3 characters a token (litellm counts so)


def _drop_one(sections: dict[str, list[_Entry]]) -> bool:
    """Remove the weakest line of the longest droppable section; False when nothing is left to drop."""
    order = ("locations", "instructions", "preexisting", "corrections", "environment", "commands", "replaced")
    candidates = [(len(sections[k]), k) for k in order if len(sections[k]) > 1]
    if not candidates:
        return False
    _, key = max(candidates, key=lambda c: (c[0], -order.index(c[1])))
    sections[key].pop()
    return True
