"""A trajectory as prompt text: what an LLM distiller may send about a session.

Prompts about a trajectory are built only from its fields, which are :class:`Sanitized`
(see ``pipeline.redact``): no secret the agent saw can reach a model provider. This module
renders them in one compact form, and passes the final text through the redactor once more
(a few KB, cheap) so that text joined from several fields is checked as a whole too.

    from pipeline.trajectory.transcript import transcript
    prompt = f"{instructions}\\n\\n{transcript(trajectory)}"

Tests of the LLM path can assert on request bodies with ``pipeline.redact.current().find(body)``.
"""

from __future__ import annotations

from pipeline.redact import Sanitized, sanitize
from pipeline.trajectory.model import Step, StepKind, Trajectory

#: Per-step cap: long outputs keep their head and tail, where errors and results are.
STEP_CHARS = 1500
#: Whole-transcript cap; the middle steps are elided first.
MAX_CHARS = 60_000


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return f"{text[:head]}\n[... {len(text) - limit} characters elided ...]\n{text[-(limit - head):]}"


def render_step(step: Step, *, limit: int = STEP_CHARS) -> str:
    """``[12] tool_call Bash: $ pytest -q`` / ``[13] tool_result (exit 1): ...``."""
    if step.kind is StepKind.TOOL_CALL:
        head = f"[{step.index}] tool_call {step.tool or 'tool'}"
        body = f"$ {step.command}" if step.command else step.text
        if step.diff:
            body = f"{body}\n{step.diff}"
    elif step.kind is StepKind.TOOL_RESULT:
        status = f"exit {step.exit_code}" if step.exit_code is not None else ("error" if step.is_error else "ok")
        head = f"[{step.index}] tool_result ({status})"
        body = step.text
    else:
        head = f"[{step.index}] {step.kind.value}{' (injected)' if step.meta else ''}"
        body = step.text
    return f"{head}: {_cut(body, limit)}"


def transcript(trajectory: Trajectory, *, max_chars: int = MAX_CHARS, step_chars: int = STEP_CHARS) -> Sanitized:
    """The text a prompt contains about ``trajectory``: header, then one block per step."""
    header = [f"Task: {trajectory.task or '(unknown)'}",
              f"Agent: {trajectory.agent} ({trajectory.model or 'model unknown'})",
              f"Repository: {trajectory.repo or '(unknown)'}",
              f"Outcome: {trajectory.outcome.status} ({trajectory.outcome.evidence or trajectory.outcome.source})"]
    blocks = [render_step(s, limit=step_chars) for s in trajectory.steps if not s.meta]
    budget = max_chars - sum(len(h) + 1 for h in header)
    if sum(len(b) + 1 for b in blocks) > budget:
        blocks = _ends(blocks, budget)
    return sanitize("\n".join([*header, "", *blocks]))


def _ends(blocks: list[str], budget: int) -> list[str]:
    """The first and last blocks that fit, alternately; the elided middle is marked."""
    head: list[str] = []
    tail: list[str] = []
    used = len(_ELIDED) + 1
    low, high = 0, len(blocks) - 1
    while low <= high:
        block = blocks[low] if len(head) <= len(tail) else blocks[high]
        if used + len(block) + 1 > budget:
            break
        used += len(block) + 1
        if len(head) <= len(tail):
            head.append(block)
            low += 1
        else:
            tail.append(block)
            high -= 1
    return [*head, _ELIDED, *reversed(tail)]


_ELIDED = "[... steps elided ...]"
