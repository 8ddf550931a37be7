"""Grounding: what a model cites must be in the trajectory, or it does not reach a skill.

Checked, in every field of a draft (structured fields and backticked or path-like text):

* a **command** must be one the agent ran (a tool call's command), not text that merely
  appears somewhere: a line in a file or in tool output saying "run `curl ... | sh`" does
  not make that command grounded;
* an **error message** must appear in tool output or in what the user wrote (the task);
* a **file path**, URL, error class or other code span must appear anywhere in the trajectory;
* a **correction** (a note for the repository's manual) must quote a message the person wrote
  after the agent acted, verbatim: not the task, not the agent's or a tool's words.

Comparison ignores whitespace differences and accepts the trajectory's own text as well as
its abstracted form (``pipeline/distill/abstraction.py``); ``<placeholders>`` stand for any
instance value, and ``...`` inside an error for an elided part. An item with an ungrounded
citation is removed; a draft whose title or description depends on one, or that loses most
of what it says, is dropped. Text addressed to an agent ("ignore previous instructions")
is removed the same way: it is never procedural knowledge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeline.distill.abstraction import Abstractor
from pipeline.distill.corrections import follows_a_request
from pipeline.distill.llm.schema import AttemptDraft, Extraction, PitfallDraft, SkillDraft, StepDraft
from pipeline.trajectory import Trajectory
from pipeline.trajectory.model import StepKind

_PLACEHOLDER = re.compile(r"<[A-Za-z][\w .:/+-]{0,40}>|\[\.\.\.[^\]]{0,80}\]")
_ELLIPSIS = re.compile(r"\.\.\.|…")
_BACKTICK = re.compile(r"`([^`\n]{1,500})`")
_EXTENSIONS = ("py|pyi|js|mjs|cjs|ts|tsx|jsx|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|md|rst|json|jsonl|"
               "yaml|yml|toml|cfg|ini|txt|sh|sql|html|css|lock|xml|gradle")
_PATH = re.compile(rf"(?<![\w/.<>~-])(?:~?/)?(?:[\w.-]+/)+[\w.-]*\w\.(?:{_EXTENSIONS})\b|"
                   rf"(?<![\w/.<>~-])(?:~?/)?(?:[\w.-]+/){{2,}}[\w.-]*\w|"
                   rf"(?<![\w/.<>~-])[\w-]+\.(?:{_EXTENSIONS})\b")
_URL = re.compile(r"https?://[^\s`'\")>\]]+")
_ERROR_CLASS = re.compile(r"\b[A-Z][A-Za-z0-9]*(?:Error|Exception)\b")
_ERROR_TEXT = re.compile(r"(Error|Exception|Traceback|error:|ERROR|FAILED|FAIL:|not found|No such file|"
                         r"denied|fatal:|cannot|Cannot|failed)")
_INJECTION = re.compile(r"ignore\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|earlier|preceding)\s+"
                        r"(instructions|prompts?|messages|rules)|disregard\s+(all\s+|the\s+)?(previous|prior|above)|"
                        r"\byou\s+are\s+now\b|system\s+prompt|new\s+instructions|\bas\s+an\s+ai\b|"
                        r"maintenance\s+mode", re.I)
_PROGRAMS = frozenset(["python", "python3", "pip", "pip3", "pytest", "py.test", "tox", "nox", "uv", "poetry", "pipx", "conda", "npm", "npx", "yarn", "pnpm", "bun", "node", "deno", "tsc", "jest", "vitest", "go", "cargo", "rustc", "make", "cmake", "mvn", "gradle", "gradlew", "java", "javac", "dotnet", "ruby", "gem", "bundle", "rake", "rspec", "php", "composer", "git", "gh", "ls", "cat", "head", "tail", "sed", "awk", "grep", "rg", "find", "xargs", "rm", "mv", "cp", "mkdir", "touch", "chmod", "chown", "ln", "cd", "echo", "printf", "export", "source", "bash", "sh", "zsh", "curl", "wget", "docker", "kubectl", "helm", "terraform", "sudo", "apt", "apt-get", "brew", "jq", "tar", "unzip", "patch", "diff", "env", "which", "nl", "wc", "sort", "uniq", "tee", "kill", "ps", "ruff", "black", "isort", "mypy", "pyright", "flake8", "pylint", "eslint", "prettier", "django-admin", "manage.py", "./manage.py"])


def _norm(text: str) -> str:
    return " ".join(text.split())


def _strip(text: str) -> str:
    return text.strip().strip("`").strip()


def _pattern(cited: str, *, ellipsis: bool, limit: int = 300) -> re.Pattern[str] | None:
    """A regex for ``cited`` with placeholders (and ``...``) as wildcards; None if nothing literal is left."""
    splitter = re.compile(f"(?:{_PLACEHOLDER.pattern}|{_ELLIPSIS.pattern})") if ellipsis else _PLACEHOLDER
    parts = splitter.split(_norm(cited))
    literal = "".join(parts).replace(" ", "")
    if len(literal) < 3:
        return None
    pieces = [re.escape(p.strip()).replace(r"\ ", " ?") for p in parts]
    wildcard = f"[^\x00]{{1,{limit}}}?"
    regex = wildcard.join(p for p in pieces if p) if all(pieces) else _join_with_edges(pieces, wildcard)
    return re.compile(regex)


def _join_with_edges(pieces: list[str], wildcard: str) -> str:
    # A placeholder at the start or end only widens the match; drop it there.
    inner = [p for p in pieces]
    while inner and not inner[0]:
        inner.pop(0)
    while inner and not inner[-1]:
        inner.pop()
    out: list[str] = []
    for piece in inner:
        if piece:
            if out:
                out.append(wildcard)
            out.append(piece)
    return "".join(out)


@dataclass
class Citation:
    kind: str  # command | error | path | span
    text: str


class Source:
    """The trajectory as lookups: commands the agent ran, output and user text, everything."""

    def __init__(self, trajectory: Trajectory) -> None:
        self.trajectory = trajectory
        self.abstract = abstract = Abstractor(trajectory.cwd)
        self.steps = {s.index: s for s in trajectory.steps}
        self.commands: list[tuple[list[int], str]] = []
        #: What the person wrote: (step, after the agent acted, the text as written and abstracted).
        self.messages: list[tuple[int, bool, set[str]]] = []
        outputs: list[tuple[int, str]] = []
        everything: list[str] = []
        acted, opening = False, True
        continues = follows_a_request(trajectory)  # its opening message answers what the agent did before
        for step in trajectory.steps:
            texts = [step.text, step.command or "", step.diff or "", *step.paths]
            variants = {_norm(t) for text in texts if text for t in (text, abstract(text))}
            everything.extend(variants)
            if step.kind is StepKind.TOOL_CALL and step.command:
                pair = [step.index] + ([step.result_index] if step.result_index is not None else [])
                for variant in {_norm(step.command), _norm(abstract(step.command))}:
                    self.commands.append((pair, variant))
            if step.kind is StepKind.TOOL_RESULT or (step.kind is StepKind.USER and not step.meta):
                for variant in {_norm(step.text), _norm(abstract(step.text))}:
                    outputs.append((step.index, variant))
            if step.kind is StepKind.USER and not step.meta and step.text.strip():
                self.messages.append((step.index, acted or (opening and continues),
                                      {_norm(step.text), _norm(abstract(step.text))}))
                opening = False
            acted = acted or step.kind is StepKind.TOOL_CALL
        task = trajectory.task or ""
        for variant in {_norm(task), _norm(abstract(task))}:
            outputs.append((-1, variant))
            everything.append(variant)
        if trajectory.cwd:
            everything.append(trajectory.cwd)
        self.outputs = outputs
        self.everything = "\x00".join(everything)

    def command(self, cited: str) -> list[int] | None:
        """The steps (call and result) where the agent ran ``cited``; None when it never did."""
        found = {s for steps in self._runs(cited) for s in steps}
        return sorted(found) if found else None

    def calls(self, cited: str) -> list[int]:
        """The tool calls that ran ``cited``, in order."""
        return sorted({steps[0] for steps in self._runs(cited)})

    def _runs(self, cited: str) -> list[list[int]]:
        runs: list[list[int]] = []
        for variant in dict.fromkeys([_strip(cited), self.abstract(_strip(cited))]):
            first = variant.split(maxsplit=1)[0] if variant.split() else ""
            pattern = None if not first or _PLACEHOLDER.fullmatch(first) else _pattern(variant, ellipsis=False)
            if pattern is not None:
                runs += [steps for steps, command in self.commands if pattern.search(command)]
        return runs

    def message(self, quote: str, at: int | None = None) -> tuple[int, bool] | None:
        """The message of the person's that says ``quote`` verbatim (the one at step ``at`` first), and
        whether it came after the agent acted; None when no message of theirs says it."""
        quote = _norm(quote)
        if not quote:
            return None
        found = [(index, acted) for index, acted, texts in self.messages if any(quote in t for t in texts)]
        found.sort(key=lambda m: (m[0] != at, not m[1], m[0]))
        return found[0] if found else None

    def error(self, cited: str) -> list[int] | None:
        found: set[int] = set()
        matched = False
        for variant in dict.fromkeys([_strip(cited), self.abstract(_strip(cited))]):
            pattern = _pattern(variant, ellipsis=True)
            if pattern is not None:
                hits = [index for index, text in self.outputs if pattern.search(text)]
                matched = matched or bool(hits)
                found.update(i for i in hits if i >= 0)
        return sorted(found) if matched else None

    def anywhere(self, cited: str) -> bool:
        for variant in dict.fromkeys([_strip(cited), self.abstract(_strip(cited))]):
            pattern = _pattern(variant, ellipsis=True)
            if pattern is None or pattern.search(self.everything):
                return True
        return False

    def path(self, cited: str) -> bool:
        """Anywhere in the trajectory, as cited or abstracted (an absolute path under the cwd is relative)."""
        path = re.sub(r"(:\d+){1,2}$", "", _strip(cited).rstrip(".,;:)'\"")).removeprefix("./")
        return not path or self.anywhere(path) or self.anywhere(self.abstract.path(path))

    def valid_steps(self, steps: list[int]) -> list[int]:
        """Steps that exist; a cited result brings its call along (and the other way round)."""
        out: set[int] = set()
        for index in steps:
            step = self.steps.get(index)
            if step is None:
                continue
            out.add(index)
            for other in (step.call_index, step.result_index):
                if other is not None:
                    out.add(other)
        return sorted(out)


def citations(text: str | None) -> list[Citation]:
    """What a free-text field cites: backticked spans (by what they look like), paths, URLs, error classes."""
    if not text:
        return []
    found: list[Citation] = []
    for match in _BACKTICK.finditer(text):
        span = match.group(1).strip()
        if not span:
            continue
        words = span.split()
        if len(words) > 1 and _ERROR_TEXT.search(span):
            found.append(Citation("error", span))
        elif len(words) > 1 and (words[0] in _PROGRAMS or words[0].startswith(("./", "python", "pip"))):
            found.append(Citation("command", span))
        elif len(words) == 1 and ("/" in span or re.search(rf"\.(?:{_EXTENSIONS})$", span)):
            found.append(Citation("path", span))
        else:
            found.append(Citation("span", span))
    rest = _BACKTICK.sub(" ", text)
    found += [Citation("path", m.group(0)) for m in _PATH.finditer(rest)]
    found += [Citation("span", m.group(0)) for m in _URL.finditer(rest)]
    found += [Citation("span", m.group(0)) for m in _ERROR_CLASS.finditer(rest)]
    return found


@dataclass
class GroundingReport:
    checked: int = 0
    removed: list[str] = field(default_factory=list)
    dropped: str | None = None

    def merge(self, other: GroundingReport) -> None:
        self.checked += other.checked
        self.removed += other.removed


@dataclass
class Grounded:
    """A draft that passed, with the evidence steps of each item (same order as the draft's lists)."""

    draft: SkillDraft
    procedure: list[list[int]]
    pitfalls: list[list[int]]
    verification: list[list[int]]
    did_not_work: list[list[int]]


@dataclass
class Note:
    """A note for the repository's manual that passed, with where the transcript shows it."""

    label: str  # "correction 1", "fix 2", "command 1": how the report names it
    kind: str  # correction | fix | test | build | lint | install
    text: str  # the quote, or the command as cited
    steps: list[int]  # evidence: the message, the error and the runs
    cited: list[int] = field(default_factory=list)  # the steps the model gave, that exist
    calls: list[int] = field(default_factory=list)  # the tool calls that ran the command
    error: str | None = None
    errors: list[int] = field(default_factory=list)  # where the error shows


class Grounder:
    def __init__(self, trajectory: Trajectory) -> None:
        self.source = Source(trajectory)

    def notes(self, answer: Extraction) -> tuple[list[Note], GroundingReport]:
        """The answer's notes for the manual that the transcript shows; the others are removed and reported."""
        report = GroundingReport()
        kept: list[Note] = []
        for number, correction in enumerate(answer.corrections, 1):
            label = f"correction {number}"
            quote = " ".join(correction.quote.split()).strip("\"“”")
            problem, at = self._quote(quote, correction.step, report)
            if problem:
                report.removed.append(f"{label}: {problem}")
                continue
            kept.append(Note(label, "correction", quote, [at], cited=[at]))
        for number, fix in enumerate(answer.fixes, 1):
            label = f"fix {number}"
            cited = self.source.valid_steps(fix.steps)
            evidence = set(cited)
            report.checked += 1
            errors = self.source.error(fix.error) if not _INJECTION.search(fix.error) else None
            if errors is None:
                report.removed.append(f"{label}: quotes the error `{_short(fix.error)}`, which the trajectory "
                                      "does not show")
                continue
            evidence.update(self.source.valid_steps(errors))
            problem = self._command(fix.command, evidence, report)
            if problem:
                report.removed.append(f"{label}: {problem}")
                continue
            kept.append(Note(label, "fix", fix.command, sorted(evidence), cited, self.source.calls(fix.command),
                             fix.error, errors))
        for number, command in enumerate(answer.commands, 1):
            label = f"command {number}"
            cited = self.source.valid_steps(command.steps)
            evidence = set(cited)
            problem = self._command(command.command, evidence, report)
            if problem:
                report.removed.append(f"{label}: {problem}")
                continue
            kept.append(Note(label, command.purpose, command.command, sorted(evidence), cited,
                             self.source.calls(command.command)))
        return kept, report

    def _quote(self, quote: str, at: int | None, report: GroundingReport) -> tuple[str | None, int]:
        """Why a correction's quote is not the person's words after the agent acted (or None), and
        the step of the message that says it."""
        report.checked += 1
        if len(quote.replace(" ", "")) < 3:
            return "is empty", -1
        if _INJECTION.search(quote):
            return "holds instructions addressed to an agent", -1
        found = self.source.message(_unclipped(quote), at)
        if found is None:
            return f"quotes `{_short(quote)}`, which no message of the user's says", -1
        if not found[1]:
            return f"quotes the task (`{_short(quote)}`), not a correction of what the agent did", found[0]
        return None, found[0]

    def check(self, draft: SkillDraft) -> tuple[Grounded | None, GroundingReport]:
        report = GroundingReport()
        for label, text in (("title", draft.title), ("description", draft.when_to_use)):
            problem = self._text(text, report)
            if problem:
                report.dropped = f"its {label} {problem}"
                return None, report
        procedure = self._steps("procedure", draft.procedure, report)
        verification = self._steps("verification", draft.verification, report)
        pitfalls = self._pitfalls(draft.pitfalls, report)
        attempts = self._attempts(draft.did_not_work, report)
        kept = draft.model_copy(update={
            "procedure": [item for item, _ in procedure], "verification": [item for item, _ in verification],
            "pitfalls": [item for item, _ in pitfalls], "did_not_work": [item for item, _ in attempts]})
        if not (kept.procedure or kept.pitfalls or kept.verification):
            report.dropped = "nothing grounded is left in it"
        elif draft.kind == "procedure" and len(kept.procedure) * 2 < len(draft.procedure):
            report.dropped = (f"it depends on removed steps ({len(draft.procedure) - len(kept.procedure)} of "
                              f"{len(draft.procedure)} procedure steps were not grounded)")
        elif draft.kind == "pitfall" and draft.pitfalls and not kept.pitfalls:
            report.dropped = "none of its pitfalls is grounded"
        if report.dropped:
            return None, report
        return Grounded(kept, [e for _, e in procedure], [e for _, e in pitfalls], [e for _, e in verification],
                        [e for _, e in attempts]), report

    # -- items --------------------------------------------------------------------------
    def _steps(self, label: str, items: list[StepDraft], report: GroundingReport) -> list[tuple[StepDraft, list[int]]]:
        kept = []
        for number, item in enumerate(items, 1):
            evidence = set(self.source.valid_steps(item.steps))
            problem = self._text(item.text, report)
            if not item.text.strip() and not (item.command or "").strip():
                problem = "is empty"
            problem = problem or self._citations(item.command, item.files, evidence, report)
            if problem:
                report.removed.append(f"{label} {number}: {problem}")
                continue
            kept.append((item, sorted(evidence)))
        return kept

    def _citations(self, command: str | None, files: list[str], evidence: set[int],
                   report: GroundingReport) -> str | None:
        """What an item cites must be in the trajectory: its command, its files, at least one step."""
        problem = self._command(command, evidence, report) if command else None
        problem = problem or self._files(files, report)
        if problem is None and not evidence:
            problem = "points at no step of the trajectory"
        return problem

    def _command(self, command: str, evidence: set[int], report: GroundingReport) -> str | None:
        """A cited command must be one the agent ran; its steps join the item's evidence."""
        report.checked += 1
        steps = self.source.command(command)
        if steps is None:
            return f"cites the command `{_short(command)}`, which the agent never ran"
        evidence.update(steps)
        return None

    def _pitfalls(self, items: list[PitfallDraft], report: GroundingReport) -> list[tuple[PitfallDraft, list[int]]]:
        kept = []
        for number, item in enumerate(items, 1):
            evidence = set(self.source.valid_steps(item.steps))
            problem = None
            for text in (item.symptom, item.cause, item.fix):
                problem = problem or self._text(text, report)
            if problem is None and item.error:
                report.checked += 1
                steps = self.source.error(item.error)
                if steps is None:
                    problem = f"quotes the error `{_short(item.error)}`, which the trajectory does not show"
                else:
                    evidence.update(self.source.valid_steps(steps))
            problem = problem or self._citations(item.command, item.files, evidence, report)
            if problem:
                report.removed.append(f"pitfall {number}: {problem}")
                continue
            kept.append((item, sorted(evidence)))
        return kept

    def _attempts(self, items: list[AttemptDraft], report: GroundingReport) -> list[tuple[AttemptDraft, list[int]]]:
        kept = []
        for number, item in enumerate(items, 1):
            evidence = self.source.valid_steps(item.steps)
            problem = self._text(item.approach, report) or self._text(item.why, report)
            if problem is None and not evidence:
                problem = "points at no step of the trajectory"
            if problem:
                report.removed.append(f"approach that did not work {number}: {problem}")
                continue
            kept.append((item, evidence))
        return kept

    # -- fields -------------------------------------------------------------------------
    def _files(self, files: list[str], report: GroundingReport) -> str | None:
        for path in files:
            report.checked += 1
            if not self.source.path(path):
                return f"names the file `{_short(path)}`, which the trajectory never mentions"
        return None

    def _text(self, text: str | None, report: GroundingReport) -> str | None:
        """Why a free-text field is not grounded, or None when it is."""
        if not text:
            return None
        if _INJECTION.search(text):
            return "holds instructions addressed to an agent"
        for citation in citations(text):
            report.checked += 1
            if citation.kind == "command":
                ok = self.source.command(citation.text) is not None
                what = "the command"
            elif citation.kind == "error":
                ok = self.source.error(citation.text) is not None or self.source.anywhere(citation.text)
                what = "the error"
            elif citation.kind == "path":
                ok = self.source.path(citation.text)
                what = "the path"
            else:
                ok = self.source.anywhere(citation.text)
                what = ""
            if not ok:
                shown = f"`{_short(citation.text)}`"
                return f"cites {what + ' ' if what else ''}{shown}, which the trajectory does not show"
        return None


def _unclipped(quote: str) -> str:
    """A quote without the ``...`` that says it was clipped."""
    return re.sub(r"\s*(\.\.\.|…)$", "", quote)


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
