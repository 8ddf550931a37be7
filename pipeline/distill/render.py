"""A trajectory as compact text for a model: what happened, without the dumps.

Kept: the task, every command with its exit code, every error line, edits as diffs, the
output of the final test run. Elided (with a marker saying how much): file dumps, long
outputs, outputs repeated verbatim, injected context. Instance values are abstracted the
way skills write them (paths relative to the working directory, ``~``, ``<uuid>``), so the
model cites them in the form a skill keeps, and personal paths do not leave the machine.

Long renderings are split into chunks at step boundaries, never cut: concatenating the
chunk bodies gives the whole rendering back (``tests/test_render.py`` holds that).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from pipeline.distill.abstraction import Abstractor
from pipeline.trajectory import Step, Trajectory
from pipeline.trajectory.commands import CHECKS, ERROR_LINE, Purpose, classify, error_signature
from pipeline.trajectory.model import StepKind

#: Bump when the rendering of the same trajectory changes (it is part of every prompt's cache key).
RENDER_VERSION = "1"
#: Transcript characters per chunk (~10k tokens): long sessions become several requests.
CHUNK_CHARS = 40_000

TASK_CHARS = 4000
USER_CHARS = 1200
ASSISTANT_CHARS = 450
COMMAND_LINES = 14
LINE_CHARS = 400
DIFF_LINES = 40
PATCH_LINES = 80
_TEST_SUMMARY = re.compile(r"\b(passed|failed|errors?|skipped|xfail|OK|FAILED|FAIL|PASS|Ran \d+ tests?|"
                           r"tests? (passed|failed)|\d+ (passing|failing))\b")


@dataclass
class Block:
    """The rendering of one step (a tool call is rendered with its result)."""

    steps: list[int]
    text: str


@dataclass
class Chunk:
    """One request's worth of transcript."""

    number: int
    total: int
    first_step: int
    last_step: int
    body: str
    context: str = ""  # errors seen in earlier parts, so a later part is understood


@dataclass
class Rendering:
    header: str
    blocks: list[Block] = field(default_factory=list)

    @property
    def body(self) -> str:
        return "\n".join(b.text for b in self.blocks)

    def text(self) -> str:
        return f"{self.header}\n\n{self.body}"

    def block_of(self, step: int) -> Block | None:
        return next((b for b in self.blocks if step in b.steps), None)

    def chunks(self, limit: int = CHUNK_CHARS) -> list[Chunk]:
        """Split the body into pieces of at most ``limit`` characters, at block boundaries.

        A block longer than ``limit`` is split at line ends (a line longer than that, anywhere),
        so nothing is ever dropped: ``"".join(c.body for c in chunks) == body``.
        """
        segments: list[tuple[list[int], str]] = []
        for position, block in enumerate(self.blocks):
            text = block.text + ("\n" if position < len(self.blocks) - 1 else "")
            segments.extend((block.steps, part) for part in _split(text, limit))
        groups: list[list[tuple[list[int], str]]] = [[]]
        size = 0
        for steps, text in segments:
            if groups[-1] and size + len(text) > limit:
                groups.append([])
                size = 0
            groups[-1].append((steps, text))
            size += len(text)
        groups = [g for g in groups if g] or [[([], "")]]
        chunks: list[Chunk] = []
        seen_errors: list[str] = []
        for number, group in enumerate(groups, 1):
            steps = [s for part_steps, _ in group for s in part_steps] or [0]
            body = "".join(text for _, text in group)
            context = ""
            if number > 1 and seen_errors:
                recent = list(dict.fromkeys(seen_errors))[-15:]
                context = "Errors seen in earlier parts:\n" + "\n".join(f"- {e}" for e in recent)
            chunks.append(Chunk(number, len(groups), min(steps), max(steps), body, context))
            seen_errors.extend(_error_lines(body))
        return chunks


def render(trajectory: Trajectory) -> Rendering:
    abstract = Abstractor(trajectory.cwd)
    rendering = Rendering(header=_header(trajectory, abstract))
    seen_outputs: dict[str, int] = {}
    done: set[int] = set()
    last_test = _last_test_result(trajectory)
    task = (trajectory.task or "").strip()
    task_shown = False
    for step in trajectory.steps:
        if step.index in done:
            continue
        if step.kind is StepKind.USER:
            if step.meta or not step.text.strip():
                continue
            text = step.text.strip()
            if task and not task_shown and task[:200] in text:
                task_shown = True
                rest = len(text) - len(task)
                extra = f" [+{rest} characters of agent instructions elided]" if rest > 40 else ""
                rendering.blocks.append(Block([step.index], f"[{step.index}] USER: (the task above){extra}"))
            else:
                rendering.blocks.append(Block([step.index], f"[{step.index}] USER: {_clip(abstract(text), USER_CHARS)}"))
        elif step.kind is StepKind.ASSISTANT:
            if step.text.strip():
                text = _clip(abstract(step.text.strip()), ASSISTANT_CHARS)
                rendering.blocks.append(Block([step.index], f"[{step.index}] AGENT: {text}"))
        elif step.kind is StepKind.TOOL_CALL:
            result = trajectory.result_of(step)
            lines = [_call_line(step, abstract)]
            steps = [step.index]
            if result is not None:
                done.add(result.index)
                steps.append(result.index)
                lines.extend(_result_lines(step, result, abstract, seen_outputs, result.index == last_test))
            rendering.blocks.append(Block(steps, "\n".join(lines)))
        elif step.kind is StepKind.TOOL_RESULT:  # a result whose call was not recorded
            lines = [f"[{step.index}] (result of an unrecorded call)"]
            lines.extend(_result_lines(step, step, abstract, seen_outputs, False))
            rendering.blocks.append(Block([step.index], "\n".join(lines)))
    return rendering


# -- header -------------------------------------------------------------------------------
def _header(t: Trajectory, abstract: Abstractor) -> str:
    lines = [f"Session: {t.agent} ({t.source_format}){f', model {t.model}' if t.model else ''}, "
             f"{len(t.steps)} steps, {len(t.tool_calls())} tool calls"]
    if t.repo:
        lines.append(f"Repository: {t.repo}")
    outcome = t.outcome.status + (f" ({abstract(t.outcome.evidence)})" if t.outcome.evidence else "")
    lines.append(f"Outcome: {outcome}")
    meta = sum(1 for s in t.steps if s.kind is StepKind.USER and s.meta)
    if meta:
        lines.append(f"Injected context messages left out: {meta}")
    lines.append("Task:")
    lines.append(_clip(abstract((t.task or "(no task recorded)").strip()), TASK_CHARS))
    return "\n".join(lines)


# -- tool calls ---------------------------------------------------------------------------
def _call_line(call: Step, abstract: Abstractor) -> str:
    prefix = f"[{call.index}]"
    if call.command:
        return f"{prefix} $ {_command(abstract(call.command))}"
    paths = ", ".join(abstract.path(p) for p in call.paths)
    if call.diff:
        return f"{prefix} EDIT {paths or call.tool}\n{_diff(abstract(call.diff), DIFF_LINES)}"
    action = classify(call)
    text = abstract(call.text.strip())
    if action.purpose is Purpose.EDIT:
        body = text.split("\n", 1)[1] if "\n" in text else ""
        head = f"{prefix} {call.tool} {paths}".rstrip()
        return head + (f"\n{_lines(body, 10)}" if body.strip() else "")
    if action.purpose is Purpose.EXPLORE:
        return f"{prefix} {_clip(text, 300) if text else call.tool}"
    return f"{prefix} {call.tool}: {_clip(text, 600)}"


def _command(command: str) -> str:
    first, _, rest = command.strip().partition("\n")
    first = _clip(first, 2000)
    if not rest:
        return first
    return f"{first}\n{_lines(rest, COMMAND_LINES)}"


def _diff(diff: str, limit: int) -> str:
    """The changed lines and hunk headers of a diff; context lines go first when it is long."""
    lines = diff.strip("\n").split("\n")
    if len(lines) <= limit:
        return "\n".join(_clip(line, LINE_CHARS) for line in lines)
    changed = [line for line in lines if line.startswith(("+", "-", "@@", "diff --git"))]
    kept = changed[:limit]
    left = len(lines) - len(kept)
    return "\n".join(_clip(line, LINE_CHARS) for line in kept) + f"\n[... {left} diff lines elided]"


# -- tool results -------------------------------------------------------------------------
def _result_lines(call: Step, result: Step, abstract: Abstractor, seen: dict[str, int],
                  final_test: bool) -> list[str]:
    lines: list[str] = []
    status = _status(result)
    text = abstract(result.text or "").strip("\n")
    purpose = classify(call).purpose if call.kind is StepKind.TOOL_CALL else Purpose.OTHER
    failed = result.exit_code not in (None, 0) or result.is_error is True
    if not text.strip():
        lines.append(f"  → {status}" if status else "  → (no output)")
        return lines
    key = hashlib.sha1(" ".join(text.split()).encode()).hexdigest()
    if key in seen and len(text) > 80:
        lines.append(f"  → {status + ', ' if status else ''}same output as [{seen[key]}]")
        return lines
    seen.setdefault(key, result.index)
    lines.append(f"  → {status}" if status else "  →")
    if purpose is Purpose.SUBMIT and "diff --git" in text:
        lines.append(_indent(_diff(text, PATCH_LINES)))
    elif final_test:
        lines.append(_indent(_excerpt(text, head=3, tail=15, errors=True)))
    elif failed:
        lines.append(_indent(_excerpt(text, head=3, tail=8, errors=True)))
    elif purpose is Purpose.EXPLORE:
        lines.append(_indent(_excerpt(text, head=3, tail=0, errors=False, whole=6)))
    elif purpose is Purpose.EDIT:
        lines.append(_indent(_excerpt(text, head=2, tail=0, errors=True, whole=4)))
    elif purpose in CHECKS:
        lines.append(_indent(_excerpt(text, head=2, tail=10, errors=True, summary=True)))
    else:
        lines.append(_indent(_excerpt(text, head=4, tail=6, errors=True, whole=12)))
    return lines


def _status(result: Step) -> str:
    if result.exit_code is not None:
        return f"exit {result.exit_code}"
    if result.is_error:
        return "error"
    if result.is_error is False:
        return "ok"
    return ""


def _excerpt(text: str, *, head: int, tail: int, errors: bool, whole: int = 20, summary: bool = False) -> str:
    """The first and last lines, every error line in between, and how much was left out."""
    lines = text.split("\n")
    if len(lines) <= max(whole, head + tail):
        return "\n".join(_clip(line, LINE_CHARS) for line in lines)
    keep: list[int] = list(range(head)) + list(range(len(lines) - tail, len(lines)))
    for number, line in enumerate(lines):
        if (errors and _is_error(line)) or (summary and _TEST_SUMMARY.search(line)):
            keep.append(number)
    out: list[str] = []
    previous = -1
    for number in sorted(set(keep)):
        if number - previous > 1:
            out.append(f"[... {number - previous - 1} lines elided]")
        out.append(_clip(lines[number], LINE_CHARS))
        previous = number
    if previous < len(lines) - 1:
        out.append(f"[... {len(lines) - 1 - previous} lines elided]")
    return "\n".join(_dedupe(out))


def _dedupe(lines: list[str]) -> list[str]:
    """Collapse a line repeated many times in a row (progress bars, retry loops)."""
    out: list[str] = []
    count = 0
    for line in lines:
        if out and line == out[-1] and not line.startswith("[..."):
            count += 1
            continue
        if count:
            out.append(f"[... previous line repeated {count} more times]")
            count = 0
        out.append(line)
    if count:
        out.append(f"[... previous line repeated {count} more times]")
    return out


def _is_error(line: str) -> bool:
    return bool(ERROR_LINE.match(line))


def _error_lines(text: str) -> list[str]:
    found = [m.group(0).strip() for m in ERROR_LINE.finditer(text)]
    return [_clip(e, 200) for e in found if len(e) > 3 and not e.startswith("[...")]


def _last_test_result(t: Trajectory) -> int | None:
    for call in reversed(t.tool_calls()):
        if call.result_index is not None and classify(call).purpose is Purpose.TEST:
            return call.result_index
    return None


# -- text helpers -------------------------------------------------------------------------
def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = int(limit * 0.7)
    tail = limit - head
    return f"{text[:head]}[... {len(text) - limit} characters elided ...]{text[-tail:]}"


def _lines(text: str, limit: int) -> str:
    lines = text.split("\n")
    if len(lines) <= limit:
        return "\n".join(_clip(line, LINE_CHARS) for line in lines)
    head, tail = limit - 3, 2
    kept = [*lines[:head], f"[... {len(lines) - head - tail} lines elided]", *lines[-tail:]]
    return "\n".join(_clip(line, LINE_CHARS) for line in kept)


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" if line else "" for line in text.split("\n"))


def _split(text: str, limit: int) -> list[str]:
    """Cut ``text`` into pieces of at most ``limit`` characters, after a newline where one is near."""
    parts: list[str] = []
    while len(text) > limit:
        cut = text.rfind("\n", 0, limit) + 1
        if cut <= 0:
            cut = limit
        parts.append(text[:cut])
        text = text[cut:]
    if text:
        parts.append(text)
    return parts


__all__ = ["CHUNK_CHARS", "RENDER_VERSION", "Block", "Chunk", "Rendering", "error_signature", "render"]
