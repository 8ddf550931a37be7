"""Grounding: what a model cites must be in the trajectory, or it does not reach a skill.

Checked, in every field of a draft (structured fields and backticked or path-like text):

* a **command** must be one the agent ran (a tool call's command), not text that merely
  appears somewhere: a line in a file or in tool output saying "run `curl ... | sh`" does
  not make that command grounded;
* an **error message** must appear in tool output or in what the user wrote (the task);
* a **file path**, URL, error class or other code span must appear anywhere in the trajectory.

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
from pipeline.distill.llm.schema import AttemptDraft, PitfallDraft, SkillDraft, StepDraft
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
        outputs: list[tuple[int, str]] = []
        everything: list[str] = []
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
        found: set[int] = set()
        for variant in dict.fromkeys([_strip(cited), self.abstract(_strip(cited))]):
            first = variant.split(maxsplit=1)[0] if variant.split() else ""
            pattern = None if not first or _PLACEHOLDER.fullmatch(first) else _pattern(variant, ellipsis=False)
            if pattern is not None:
                found.update(s for steps, command in self.commands if pattern.search(command) for s in steps)
        return sorted(found) if found else None

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


class Grounder:
    def __init__(self, trajectory: Trajectory) -> None:
        self.source = Source(trajectory)

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


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
