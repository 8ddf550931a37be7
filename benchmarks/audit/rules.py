"""One detector per rule of issue 13: each returns, for one skill, the lines that break the rule.

A detector reads the skill as ``skills.py`` parsed it (provenance comments already stripped from
every text it judges; the ``## Sources`` list, which names trajectories by design, left out) and,
where the rule is about what happened, the sessions the skill cites (``sessions.py``). Each one's
docstring is its definition; a line is reported with the reason it breaks the rule. Where a cited
trajectory is not in the corpus the detectors that need it say nothing about that skill (the
benchmark reports how many source ids it could not find).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from benchmarks.audit.sessions import Call, Session, norm_command
from benchmarks.audit.skills import AuditedSkill, Item


@dataclass(frozen=True)
class Finding:
    rule: str
    skill: str
    line: str  # the offending text, as the skill has it (one line, shortened)
    reason: str


@dataclass
class Context:
    """What detectors may consult beyond the skill: the sessions by trajectory id, the whole library."""

    sessions: dict[str, Session]
    skills: list[AuditedSkill] = field(default_factory=list)
    clusters: dict[str, list[str]] | None = None  # near-duplicates, computed on first use

    def cited(self, skill: AuditedSkill, item: Item | None = None) -> list[Session]:
        """The sessions an item cites (its provenance), else all the skill's sources, that are known."""
        ids = list(item.cites) if item is not None and item.cites else skill.sources
        return [self.sessions[i] for i in ids if i in self.sessions]


Detector = Callable[[AuditedSkill, Context], list[Finding]]


@dataclass(frozen=True)
class Rule:
    key: str
    label: str  # the row of the benchmark's table
    detect: Detector


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _texts(skill: AuditedSkill) -> Iterable[tuple[str, Item | None]]:
    """Every judged text of a skill with the item it belongs to: name, description, title, items."""
    yield skill.description, None
    yield skill.title, None
    for item in skill.judged_items():
        yield item.full(), item


_SPAN = re.compile(r"`([^`\n]+)`")


def spans(text: str) -> list[str]:
    return _SPAN.findall(text)


def commands_in(item: Item) -> list[str]:
    """Commands an item shows: every line of its code blocks, and inline spans that hold a space."""
    found = [line for block in item.code for line in block.split("\n") if line.strip()]
    return found + [s for s in spans(item.text) if " " in s.strip()]


# -- rule 1 ---------------------------------------------------------------------------------
#: Messages a coding agent's own tools give when a call is malformed or an edit does not apply.
PROTOCOL_ERRORS: list[tuple[str, re.Pattern[str]]] = [(agent, re.compile(pattern)) for agent, pattern in [
    ("aider", r"SEARCH block failed to exactly match"),
    ("aider", r"\bEdit to \S+(?: \S+)? skipped\b"),
    ("aider", r"did not conform to the edit format"),
    ("OpenHands", r"No replacement was performed"),
    ("OpenHands", r"Parameter `old_str` is required"),
    ("OpenHands", r"No exact match found in"),
    ("OpenHands", r"did not appear verbatim in"),
    ("OpenHands", r"Invalid `(?:path|view_range)` parameter"),
    ("SWE-agent/OpenHands", r"Your proposed edit has introduced new syntax error"),
    ("Claude Code", r"File has not been read yet"),
    ("Claude Code", r"InputValidationError"),
    ("Claude Code", r"<tool_use_error>"),
    ("Claude Code", r"String to replace not found"),
    ("Claude Code", r"File has been (?:unexpectedly )?modified since (?:it was )?read"),
    ("Claude Code", r"Found \d+ matches of the string to replace"),
    ("Codex", r"apply_patch verification failed"),
    ("Codex", r"Failed to find (?:expected lines|context)"),
    ("Codex", r"write_stdin failed"),
    ("Gemini CLI", r"Failed to edit, could not find the string to replace"),
    ("Gemini CLI", r"\b0 occurrences found for old_string"),
    ("Gemini CLI", r"Expected \d+ occurrences? but found \d+"),
    ("OpenCode", r"oldString not found in content"),
    ("OpenCode", r"oldString found multiple times"),
    ("mini-swe-agent", r"Please always provide EXACTLY ONE action"),
]]


def protocol_errors(skill: AuditedSkill, ctx: Context) -> list[Finding]:
    """A line (description, title, any item) quoting a coding agent's own tool-protocol error.

    The messages a harness gives when the agent's call is malformed or its edit does not apply
    (``PROTOCOL_ERRORS``: aider's SEARCH block mismatch, OpenHands' "No replacement was
    performed", Claude Code's ``File has not been read yet``/``<tool_use_error>``, SWE-agent's
    edit linter, Codex apply_patch, Gemini CLI and OpenCode edit failures ...). Never a lesson,
    never in a description.
    """
    found = []
    for text, _ in _texts(skill):
        for agent, pattern in PROTOCOL_ERRORS:
            if pattern.search(text):
                found.append(Finding("protocol", skill.name, _short(text),
                                     f"{agent} tool-protocol error: {pattern.pattern}"))
                break
    return found


# -- rule 2 ---------------------------------------------------------------------------------
ADVICE = re.compile(r"\b(?:did not|didn't) (?:work|resolve|fix|help)\b|"
                    r"\b(?:look|search) for (?:a|another) (?:different )?cause\b|\bdifferent cause\b|"
                    r"\bapproach that failed\b|\bfailed approach\b|\bdead end\b", re.I)


def unverified_advice(skill: AuditedSkill, ctx: Context) -> list[Finding]:
    """"Did not work / did not resolve / look for a different cause" advice without a real failure.

    Such a line is allowed only when one of the sessions it rests on (its provenance, else the
    skill's sources) has a failure label (``outcome.source == "label"``, status failed) or ran a
    project check after its last change whose last run failed. A heuristic "failed", an edit
    tool's error, or a session that simply ended (SWE-agent records no exit codes) is not a
    failure.
    """
    found = []
    for text, item in _texts(skill):
        if not ADVICE.search(text):
            continue
        sessions = ctx.cited(skill, item)
        if not sessions or any(s.labelled_failure or s.failed_check_after_last_change for s in sessions):
            continue
        why = "; ".join(f"{s.t.id}: outcome {s.t.outcome.status} ({s.t.outcome.source}), "
                        f"{len(s.checks)} project check(s), none failed after the last change" for s in sessions)
        found.append(Finding("unverified", skill.name, _short(text), why))
    return found


# -- rule 3 ---------------------------------------------------------------------------------
_FIX = re.compile(r"\*\*Fix:?\*\*:?|\bFix(?:ed)?:|\bfixed by\b|\bresolved by\b|\bSolution:", re.I)
_PITFALL_SECTIONS = {"pitfalls", "troubleshooting", "gotchas", "errors", "known errors", "known issues"}
_TEST_PATH = re.compile(r"(?:^|/)(?:tests?|__tests__|spec|testing)/|(?:^|/)test_[^/]*$|_test\.\w+$|"
                        r"\.(?:test|spec)\.\w+$")
_TEST_LINE = re.compile(r"\b(?:assert\w*|expect|act|it|test|describe|self\.assert\w+|pytest\.raises|"
                        r"renderHook|render)\s*\(|^\s*assert\b|\bdef test_|"
                        r"\bimport\b.*(?:testing-library|pytest|unittest|vitest|jest)")
_SKIP = re.compile(r"pytest\.mark\.skip|unittest\.skip|\b(?:it|test|describe)\.skip\(|\bx(?:it|describe)\(|"
                   r"@skip\b|\.todo\(")
_COMMENT = re.compile(r"^\s*(?://|#|/\*|\*|<!--)")


@dataclass
class FixClaim:
    item: Item
    session: Session
    failure: Call  # the last failing run of the check that showed the symptom
    after: Call | None  # the next run of the same check without the symptom
    commands: list[str]  # what the item says fixed it
    files: list[str]

    def window(self) -> list[Call]:
        end = self.after.index if self.after is not None else 1 << 30
        return [c for c in self.session.calls if self.failure.index < c.index < end]

    def done_in(self, calls: list[Call]) -> list[Call]:
        """The calls among ``calls`` that carry out the claimed fix."""
        def runs(call: Call) -> bool:  # the claimed command, or one step of a claimed chain
            command = norm_command(call.command) if call.command else ""
            return bool(command) and any(c in command or (len(command) >= 15 and command in c)
                                         for c in self.commands)

        return [c for c in calls if runs(c) or any(_same(f, p) for f in self.files for p in c.changed)]

    def describe(self) -> str:
        return ", ".join([f"`{c}`" for c in self.commands] + [f"`{f}`" for f in self.files])


def _same(a: str, b: str) -> bool:
    a, b = a.strip("`'\" ").removeprefix("./"), b.removeprefix("./")
    return bool(a) and (a == b or a.endswith("/" + b) or b.endswith("/" + a))


def _needles(text: str, exclude: set[str]) -> list[str]:
    """Pieces of an item's symptom text long enough to find its error in a session's output."""
    needles = []
    for piece in text.split("`"):
        piece = " ".join(piece.split())
        piece = re.split(r"\.\.\.|…", piece)[0].strip(" :")
        if len(piece) >= 12 and " " in piece and piece not in exclude and not piece.startswith("**"):
            needles.append(piece[:80])
    return needles


def fix_claims(skill: AuditedSkill, ctx: Context) -> list[FixClaim]:
    """Items that pair an error with a fix, located in the session they cite.

    An item claims a fix when it has a Fix marker (``**Fix:**``, ``fixed by`` ...) or sits in a
    pitfalls-like section with a command. Its symptom is found in the output of a failed shell
    command of the cited session (the check); the claim is then the commands (code blocks) and
    files (paths after the marker) it names, other than a plain rerun of the check.
    """
    claims = []
    for item in skill.judged_items():
        text = item.text
        marker = _FIX.search(text)
        if marker is None and not (item.section in _PITFALL_SECTIONS and item.code):
            continue
        symptom, remedy = (text[:marker.start()], text[marker.end():]) if marker else (text, "")
        for session in ctx.cited(skill, item):
            shell = [c for c in session.calls if c.command]
            own = {norm_command(c.command) for c in shell}
            needles = _needles(symptom, own)
            failures = [c for c in shell if c.failed and any(n in " ".join(c.output.split()) for n in needles)]
            if not failures:
                continue
            last = failures[-1]
            check = norm_command(last.command)
            after = next((c for c in shell if c.index > last.index and norm_command(c.command) == check
                          and c.result is not None
                          and not any(n in " ".join(c.output.split()) for n in needles)), None)
            commands = [c for c in (norm_command(block) for block in item.code) if c and c != check]
            files = [s for s in spans(remedy) if " " not in s and re.search(r"/|\.\w{1,6}$", s)]
            if commands or files:
                claims.append(FixClaim(item, session, last, after, commands, files))
    return claims


def gutted_fixes(skill: AuditedSkill, ctx: Context) -> list[Finding]:
    """A fix that deletes or guts the failing test.

    For each fix claim (``fix_claims``), the changes the claim names between the failure and the
    next run of the same check are read: a change to a test file whose diff removes more
    test-bearing lines (assertions, ``expect(``/``act(``/``it(`` calls, ``def test_``, the test
    library's import) than it adds, or adds a skip marker, or deletes or empties the file, guts
    the test. Changes without a diff (a ``sed`` on the file) are not judged.
    """
    found = []
    for claim in fix_claims(skill, ctx):
        for call in claim.done_in(claim.window()):
            tests = [p for p in call.changed if _TEST_PATH.search(p)]
            if not tests:
                continue
            why = _gutting(call, tests)
            if why:
                found.append(Finding("gutted", skill.name, _short(claim.item.full()),
                                     f"{claim.session.t.id} step {call.index}: {why} (the failure: "
                                     f"`{_short(claim.failure.command, 60)}` at step {claim.failure.index})"))
                break
    return found


def _gutting(call: Call, tests: list[str]) -> str:
    if any(_same(t, d) for t in tests for d in call.deleted):
        return f"deletes the test file {tests[0]}"
    diff = call.step.diff or ""
    if not diff:
        return ""
    removed = [line[1:] for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]

    def bearing(lines: list[str]) -> int:
        return sum(1 for line in lines if _TEST_LINE.search(line) and not _COMMENT.match(line))

    if any(_SKIP.search(line) for line in added):
        return f"adds a skip marker to {tests[0]}"
    if removed and not any(line.strip() for line in added) and len(removed) > 3:
        return f"empties {tests[0]}"
    if bearing(removed) > bearing(added):
        return (f"removes {bearing(removed)} test line(s) from {tests[0]} and adds {bearing(added)} "
                f"(its other added lines are {sum(1 for x in added if _COMMENT.match(x))} comment(s))")
    return ""


def mispaired_fixes(skill: AuditedSkill, ctx: Context) -> list[Finding]:
    """A fix paired with an error it did not fix.

    A fix is what changed between the last failure that showed the error and the next run of
    the same check (same command) that no longer shows it. The claim breaks the rule when that
    run exists and none of the commands or files the item names was run or changed in between
    (pandas' ``ValueError`` "fixed" by the ``apt-get install dvipng`` that came after it was
    gone), or when the same check never ran again without the error (nothing shows a fix).
    """
    found = []
    for claim in fix_claims(skill, ctx):
        check = _short(claim.failure.command, 70)
        where = claim.done_in(claim.session.calls)
        at = f" (done at step {', '.join(str(c.index) for c in where)})" if where else ""
        if claim.after is None:
            why = (f"`{check}` never ran again without this error after step {claim.failure.index}: "
                   f"nothing shows {claim.describe()} fixed it{at}")
        elif not claim.done_in(claim.window()):
            why = (f"between the failure (step {claim.failure.index}) and the next run of `{check}` without "
                   f"it (step {claim.after.index}) nothing ran or changed {claim.describe()}{at}")
        else:
            continue
        found.append(Finding("mispaired", skill.name, _short(claim.item.full()), f"{claim.session.t.id}: {why}"))
    return found


# -- rule 4 ---------------------------------------------------------------------------------
_EDIT_LINE = re.compile(r"^(?:\*\*)?(?:Edit|Edited|Change|Changed|Modify|Modified|Update|Updated|Patch)\b", re.I)
_REPLACE = re.compile(r"\breplace\s+`([^`]*)`\s+with\s+`([^`]*)`", re.I)
_ADD = re.compile(r"\b(?:add|adds|added|insert|append)\s+`([^`]*)`", re.I)
_TAG = re.compile(r"</[A-Za-z][\w.-]*\s*>|<[A-Za-z][\w.-]*|/?>")  # tag names; attributes stay
_MARKS = re.compile(r"/\*\*?|\*/|//|<!--|-->|#")


def _path_like(span: str) -> bool:
    return " " not in span.strip() and bool(re.search(r"/|\.\w{1,6}$", span))


def content_free(fragment: str) -> bool:
    """Nothing a reader learns from: no word of two letters once tag names and comment marks are gone."""
    rest = _MARKS.sub(" ", _TAG.sub(" ", fragment))
    return not re.search(r"[A-Za-z0-9_]{2,}", rest)


def content_free_edits(skill: AuditedSkill, ctx: Context) -> list[Finding]:
    """An edit line that does not say what changed.

    An item that starts with Edit/Change/Modify/Update (and shows no code block) breaks the
    rule when it names only the file ("Edit `x`.", "Edit `x` (3 edits)."), when the text it
    adds is content-free (``/**``, ``)``, ``</div>``, a dash: no word once tags and comment marks
    are gone), or when it replaces a text with the same text ("replace X with X", an ellipsis
    ignored), or with a content-free one.
    """
    found = []
    for item in skill.judged_items():
        line = item.first_line
        if item.code or not _EDIT_LINE.match(line):
            continue
        reason = ""
        replaced = _REPLACE.search(line)
        added = _ADD.search(line)
        shown = [s for s in spans(line) if not _path_like(s)]
        if replaced:
            old, new = (re.sub(r"(?:\.\.\.|…)$", "", x).strip() for x in replaced.groups())
            if old == new:
                reason = "replaces a text with the same text"
            elif content_free(new):
                reason = f"the new text `{new}` says nothing"
        elif added and content_free(added.group(1)):
            reason = f"the added text `{added.group(1)}` says nothing"
        elif not shown and not re.sub(r"`[^`]*`|\(\d+ edits?\)|[\W_]|\b(?:edit|change|modify|update|patch|"
                                      r"edited|changed|modified|updated|file|files|in|and)\b", "",
                                      line, flags=re.I):
            reason = "names the file, not the change"
        if reason:
            found.append(Finding("content-free", skill.name, _short(line), reason))
    return found


# -- rule 5 ---------------------------------------------------------------------------------
def _mentions(text: str, path: str) -> bool:
    return re.search(r"(?<![\w.-])" + re.escape(path) + r"(?![\w/-])", text) is not None


def harness_edits(skill: AuditedSkill, ctx: Context) -> list[Finding]:
    """A line naming a file that only the SWE-bench harness changed.

    The file is in the session's final diff but none of the agent's own changes touched it
    (``Session.harness_files``: the ``setup.py`` pins and ``tox.ini -rA`` the harness adds);
    any description or item naming it (as an edit, a file touched, a file read) breaks the rule.
    """
    found = []
    for text, item in _texts(skill):
        for session in ctx.cited(skill, item):
            hits = sorted(f for f in session.harness_files if _mentions(text, f))
            if hits:
                found.append(Finding("harness", skill.name, _short(text),
                                     f"{', '.join(hits)}: changed only in the final diff of {session.t.id}, "
                                     "by the harness, never by the agent"))
                break
    return found


def scratch_scripts(skill: AuditedSkill, ctx: Context) -> list[Finding]:
    """A command running a scratch script the agent wrote and then deleted (or left out of its diff).

    Commands are code-block lines and inline spans holding a space (``python3 verify_fix.py``);
    the script is matched by file name against ``Session.scratch_scripts`` of the sessions the
    line cites. A reader cannot run a file that no longer exists.
    """
    found = []
    items: list[tuple[list[str], Item | None]] = [([s for s in spans(skill.description) if " " in s], None)]
    items += [(commands_in(i), i) for i in skill.judged_items()]
    for commands, item in items:
        for session in ctx.cited(skill, item):
            names = {PurePosixPath(p).name for p in session.scratch_scripts}
            hit = next((c for c in commands
                        if any(PurePosixPath(t).name in names for t in re.split(r"[\s;&|'\"()=]+", c))), None)
            if hit:
                script = next(PurePosixPath(t).name for t in re.split(r"[\s;&|'\"()=]+", hit)
                              if PurePosixPath(t).name in names)
                found.append(Finding("scratch", skill.name, _short(hit),
                                     f"{script}: written by the agent in {session.t.id} and not kept"))
                break
    return found


_SED_SCRIPT = re.compile(r"^\s*\d+\s*(?:,\s*(?:\d+|\$))?\s*!?\s*[sacidyp=]")


def pinned_sed(command: str) -> bool:
    """``sed -i`` whose script is addressed by a line number (``171s/...``, ``389a\\``, ``10,20d``)."""
    for segment in re.split(r"&&|\|\||[;|\n]", command):
        tokens = segment.split()
        if not tokens or PurePosixPath(tokens[0]).name != "sed":
            continue
        inplace = any(t.startswith("-i") or t == "--in-place" or re.fullmatch(r"-[a-zA-Z]*i[a-zA-Z]*", t)
                      for t in tokens[1:])
        scripts = [t.strip("'\"") for t in tokens[1:] if not t.startswith("-")]
        if inplace and scripts and _SED_SCRIPT.match(scripts[0]):
            return True
    return False


def line_pinned_sed(skill: AuditedSkill, ctx: Context) -> list[Finding]:
    """A ``sed -i`` command pinned to a line number (see ``pinned_sed``), in a code block or span.

    A line number is true of one checkout at one moment; the same command run elsewhere edits
    the wrong line.
    """
    found = []
    for item in skill.judged_items():
        for command in [*item.code, *spans(item.text)]:
            if pinned_sed(command):
                found.append(Finding("sed", skill.name, _short(command), "sed -i addressed by line number"))
                break
    return found


_SANDBOX = re.compile(r"/workspace/|(?<![\w.-])/testbed\b|/path/to/")
_HEX = re.compile(r"(?<![0-9a-fA-F])[0-9a-f]{6,}(?![0-9a-fA-F])")


def sandbox_paths(skill: AuditedSkill, ctx: Context) -> list[Finding]:
    """A sandbox path or a session id in a skill.

    Sandbox paths: ``/workspace/...``, ``/testbed``, ``/path/to/...``, and the absolute working
    directory of a cited session. Session ids: a hex token of 6+ characters that starts the id of
    a cited trajectory or its session (name, description, title, items; the Sources list and
    provenance comments are where ids belong and are not judged).
    """
    found = []
    texts = [(skill.name, None), *_texts(skill)]
    for text, item in texts:
        sessions = ctx.cited(skill, item)
        reason = ""
        match = _SANDBOX.search(text)
        if match:
            reason = f"sandbox path {match.group(0)}"
        for session in sessions:
            cwd = session.cwd.rstrip("/")
            if not reason and len(cwd) >= 4 and re.search(r"(?<![\w./-])" + re.escape(cwd) + r"(?![\w-])", text):
                reason = f"the session's working directory {cwd}"
            ids = [session.t.id, (session.t.session_id or "").replace("-", "").lower()]
            token = next((h for h in _HEX.findall(text) if any(i and i.startswith(h) for i in ids)), None)
            if not reason and token:
                reason = f"session id {token} (from {session.t.id})"
        if reason:
            found.append(Finding("sandbox", skill.name, _short(text), reason))
    return found


# -- rule 6 ---------------------------------------------------------------------------------
def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _first_line(task: str) -> str:
    for line in task.splitlines():
        if line.strip():
            return " ".join(line.split())
    return ""


#: Words a name made from a prompt leaves out: articles, prepositions, pronouns, auxiliaries ...
FUNCTION_WORDS = frozenset({
    "a", "an", "the", "and", "or", "but", "if", "so", "of", "to", "in", "on", "at", "by", "for", "with",
    "from", "into", "onto", "as", "is", "are", "was", "were", "be", "been", "being", "it", "its", "this",
    "that", "these", "those", "there", "then", "than", "when", "what", "which", "who", "how", "why",
    "should", "would", "could", "can", "will", "shall", "may", "might", "must", "do", "does", "did", "not",
    "no", "use", "using", "i", "we", "you", "my", "our", "your", "let", "also", "just"
})


def _prompt_start(name: list[str], prompt: list[str], skippable: set[str]) -> bool:
    """Are these name words the prompt's first words, once function words, short words and numbers are skipped?"""
    matched = 0
    for word in prompt:
        if matched == len(name):
            break
        if word == name[matched]:
            matched += 1
        elif not (word in FUNCTION_WORDS or len(word) <= 3 or word.isdigit() or word in skippable):
            return False
    return matched == len(name)


def _non_latin_share(text: str) -> float:
    letters = [c for c in text if unicodedata.category(c).startswith("L")]
    return sum(1 for c in letters if ord(c) > 0x24F) / len(letters) if letters else 0.0


def raw_prompt_names(skill: AuditedSkill, ctx: Context) -> list[Finding]:
    """A name, title or description made from the session's first prompt instead of the lesson.

    Any of:

    * the name is a session id (``session-28a4ff54``);
    * the description or title repeats the prompt's first line verbatim (its first eight words, or
      all of them when fewer, at least two: "Use when you need to: do that"), typos included;
    * the title or description is the prompt's first paragraph cut mid-word ("... into anothe...");
    * the name is the prompt's first words with the small words dropped (``_prompt_start``: after
      the repo's words, a ``pitfalls-`` prefix and a hex suffix are removed, two words or more that
      match the prompt from its start, skipping only ``FUNCTION_WORDS``, words of three letters or
      less, numbers and the repo's words);
    * a non-English prompt reduced to its Latin words (``demo-orchestrator-claude-md``).

    Manuals (kind ``repo``) are named for their repository and are not judged.
    """
    if skill.kind == "repo":
        return []
    found = []
    if re.fullmatch(r"session-[0-9a-f]{6,}", skill.name):
        found.append(Finding("prompt-name", skill.name, skill.name, "the name is a session id"))
    for session in ctx.cited(skill):
        task = session.t.task or ""
        first = _first_line(task)
        if not first:
            continue
        words = first.split()
        probe = " ".join(words[:8]).lower()
        for label, text in (("description", skill.description), ("title", skill.title)):
            if len(words) >= 2 and probe and probe in " ".join(text.split()).lower():
                found.append(Finding("prompt-name", skill.name, _short(text),
                                     f"the {label} repeats the first prompt verbatim: \"{_short(first, 70)}\""))
                break
        flat_task = " ".join(re.split(r"\n\s*\n", task.strip(), maxsplit=1)[0].split())  # first paragraph
        for label, text in (("title", skill.title), ("description", skill.description)):
            for cut in re.finditer(r"(\S.{11,}?)(?:\.\.\.|…)", text):
                head = cut.group(1)[-40:]
                at = flat_task.find(head)
                if at >= 0 and at + len(head) < len(flat_task) and flat_task[at + len(head)].isalnum() \
                        and head[-1].isalnum():
                    found.append(Finding("prompt-name", skill.name, _short(text),
                                         f"the {label} is the prompt cut mid-word: \"…{head[-20:]}|"
                                         f"{flat_task[at + len(head):at + len(head) + 10]}\""))
                    break
        name_words = skill.name.split("-")
        repo_words = set(_words(skill.repo or session.t.repo or ""))
        if name_words and re.fullmatch(r"[0-9a-f]{6,}", name_words[-1]):
            name_words = name_words[:-1]
        if name_words[:1] == ["pitfalls"]:
            name_words = name_words[1:]
        content = [w for w in name_words if w not in repo_words]
        task_words = _words(flat_task)
        if _non_latin_share(first) > 0.2 and name_words and all(w in set(_words(first)) | repo_words
                                                               for w in name_words):
            found.append(Finding("prompt-name", skill.name, skill.name,
                                 f"a non-English prompt reduced to its Latin words: \"{_short(first, 60)}\""))
        elif len(content) >= 2 and _prompt_start(content, task_words, repo_words):
            found.append(Finding("prompt-name", skill.name, skill.name,
                                 f"the name is the first prompt's words: \"{_short(first, 70)}\""))
    return _unique(found)


def _unique(findings: list[Finding]) -> list[Finding]:
    return list(dict.fromkeys(findings))


# -- rule 7 ---------------------------------------------------------------------------------
DUPLICATE_SIMILARITY = 0.8


def _shingles(skill: AuditedSkill) -> set[tuple[str, ...]]:
    parts = [skill.description, skill.title, *(i.full() for i in skill.judged_items())]
    text = re.sub(r"\b[0-9a-f]{6,}\b", " ", "\n".join(parts).lower())
    words = re.findall(r"[a-z0-9_]+|[^\sa-z0-9_]", text)
    return {tuple(words[i:i + 3]) for i in range(max(1, len(words) - 2))}


def similarity(a: AuditedSkill, b: AuditedSkill) -> float:
    x, y = _shingles(a), _shingles(b)
    return len(x & y) / len(x | y) if x | y else 0.0


def clusters(skills: list[AuditedSkill]) -> dict[str, list[str]]:
    """Skill name -> the names of its cluster (sorted), linking pairs at ``DUPLICATE_SIMILARITY`` or more."""
    judged = sorted((s for s in skills if s.kind != "repo"), key=lambda s: s.name)
    parent = {s.name: s.name for s in judged}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    shingles = {s.name: _shingles(s) for s in judged}
    for i, a in enumerate(judged):
        for b in judged[i + 1:]:
            if a.repo.lower() != b.repo.lower():
                continue
            x, y = shingles[a.name], shingles[b.name]
            if x | y and len(x & y) / len(x | y) >= DUPLICATE_SIMILARITY:
                parent[root(b.name)] = root(a.name)
    groups: dict[str, list[str]] = {}
    for s in judged:
        groups.setdefault(root(s.name), []).append(s.name)
    return {name: group for group in groups.values() for name in group}


def duplicates(skill: AuditedSkill, ctx: Context) -> list[Finding]:
    """A near-copy of another skill of the same repository: one lesson, one skill.

    Skills are compared by the Jaccard similarity of their word 3-grams (description, title and
    items; the name, the Sources list and hex ids left out); pairs at ``DUPLICATE_SIMILARITY`` or
    more link skills into clusters, and every member but the first by name is a copy (nine
    marshmallow copies count eight). Only skills of the same ``metadata.repo`` are compared;
    manuals (kind ``repo``, one per repository by construction) are not.
    """
    if skill.kind == "repo":
        return []
    if ctx.clusters is None:
        ctx.clusters = clusters(ctx.skills)
    group = ctx.clusters.get(skill.name, [skill.name])
    if group[0] == skill.name:
        return []
    first = next(s for s in ctx.skills if s.name == group[0])
    return [Finding("duplicate", skill.name, _short(skill.description),
                    f"near-copy of {group[0]} (similarity {similarity(skill, first):.2f}, "
                    f"one of {len(group)} alike)")]


# -- rule 8 ---------------------------------------------------------------------------------
NOT_CODE_TASK = re.compile(r"transcript|trascript|meeting|\bminutes\b|action items|\.vtt\b|\.srt\b|"
                           r"call notes|stand-?up notes", re.I)


def non_coding(skill: AuditedSkill, ctx: Context) -> list[Finding]:
    """A skill from a session that was not software work (a meeting-notes summary).

    Every cited session changed no file that is not prose (``.md``, ``.txt``, a transcript ...)
    and ran no project check, and its first prompt asks about non-code material (a transcript,
    a meeting, minutes, action items, ``.vtt``/``.srt``). A session that only read code to
    establish a fact is coding work and is not judged here.
    """
    sessions = ctx.cited(skill)
    if not sessions or any(s.is_coding for s in sessions):
        return []
    tasks = [s.t.task or "" for s in sessions]
    hits = [NOT_CODE_TASK.search(t) for t in tasks]
    if not all(hits):
        return []
    return [Finding("not-coding", skill.name, _short(skill.description),
                    f"no change to code, no check; the task is about \"{hits[0].group(0)}\"")]


RULES: list[Rule] = [
    Rule("protocol", "tool-protocol errors (1)", protocol_errors),
    Rule("unverified", "advice from unverified runs (2)", unverified_advice),
    Rule("gutted", "test-gutting fixes (3)", gutted_fixes),
    Rule("mispaired", "fixes paired with the wrong error (3)", mispaired_fixes),
    Rule("content-free", "content-free edit lines (4)", content_free_edits),
    Rule("harness", "harness edits (5)", harness_edits),
    Rule("scratch", "scratch scripts as commands (5)", scratch_scripts),
    Rule("sed", "line-pinned sed (5)", line_pinned_sed),
    Rule("sandbox", "sandbox paths / session ids (5)", sandbox_paths),
    Rule("prompt-name", "names from raw prompts (6)", raw_prompt_names),
    Rule("duplicate", "duplicate lessons (7)", duplicates),
    Rule("not-coding", "not coding work (8)", non_coding),
]
