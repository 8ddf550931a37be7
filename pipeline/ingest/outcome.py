"""Outcome from the trajectory itself, when no label came with it.

Evidence, strongest first: the last check (test, build, lint) after the last edit and its
exit code; a submitted patch; an error the session ended on.
"""

from __future__ import annotations

from pipeline.trajectory import Outcome, StepKind, Trajectory
from pipeline.trajectory.commands import CHECKS, Purpose, classify


def infer_outcome(trajectory: Trajectory) -> Outcome:
    if trajectory.outcome.source == "label":
        return trajectory.outcome
    calls = trajectory.tool_calls()
    if not calls:
        return Outcome(status="unknown", source="heuristic", evidence="no tool activity")
    actions = [(call, classify(call)) for call in calls]
    last_edit = max((c.index for c, a in actions if a.purpose is Purpose.EDIT), default=-1)
    checks = [(c, a) for c, a in actions if a.purpose in CHECKS and c.index > last_edit]
    for call, action in reversed(checks):
        result = trajectory.result_of(call)
        if result is None or result.exit_code is None and result.is_error is None:
            continue
        failed = bool(result.is_error) if result.exit_code is None else result.exit_code != 0
        verb = "failed" if failed else "passed"
        return Outcome(status="failed" if failed else "resolved", source="heuristic", step=call.index,
                       evidence=f"last {action.purpose.value} after the last edit {verb}: "
                                f"`{(call.command or call.text)[:120]}`")
    submitted = [c for c, a in actions if a.purpose is Purpose.SUBMIT]
    if submitted and last_edit >= 0:
        return Outcome(status="resolved", source="heuristic", step=submitted[-1].index,
                       evidence="a patch was submitted after edits (no check ran after the last edit)")
    last_result = next((s for s in reversed(trajectory.steps) if s.kind is StepKind.TOOL_RESULT), None)
    if last_result is not None and last_result.is_error:
        return Outcome(status="failed", source="heuristic", step=last_result.index,
                       evidence="the session ended on a failing tool call")
    return Outcome(status="unknown", source="heuristic", evidence="no check ran after the last edit")
