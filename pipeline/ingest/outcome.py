"""Did the session achieve what was asked? ``resolved`` | ``failed`` | ``unknown``, with evidence.

A label wins: parsers set it where one exists (a SWE-bench ``report.json``, OpenHands' resolver
``success``, an ATIF/Harbor reward, or the agent's own exit status when a limit stopped it).
Otherwise the trajectory is weighed (facts from ``pipeline.ingest.verification``), in this order:

1. **The person's last word** on the final state: a reaction ("thanks, works", "it still fails")
   after which nothing was changed. A human judged the result; nothing here is stronger.
2. **A submitted change no check can vouch for**: empty, or rewriting existing tests (the checks
   then passed against expectations the agent chose). Unknown, not resolved: the passing checks
   prove nothing, and nothing failed either.
3. **What the agent verified last**: the last project check (test, build, lint -- not its own
   scripts) after the last change to the code. Passing and covering the changed code: resolved;
   failing (and not the same failure as before any change): failed, failing tests left.
   Project checks that passed after the change but not after its last edits: resolved, weaker.
4. **An unverified submission** (no project check covered the change, at most ad-hoc scripts
   ran): unknown, with evidence saying so. Unverified is not failed: SWE-agent records no exit
   codes, and replays that fixed the bug and showed it became "failed", teaching "look for a
   different cause". Interactive sessions without checks are unknown the same way.
5. **An error left at the end** (the last tool call failed, not a project check): unknown too.

So ``failed`` by heuristic means a real failure: a project check that failed after the last
change, the person saying so, or (from the parser) a run stopped by a limit. Only a failure
justifies "this did not work" advice; without one the session teaches no verdict on its
approach. What this cannot see, it says: ``unknown`` with the reason. Benchmarks:
``benchmarks/outcomes.py``.
"""

from __future__ import annotations

import re

from pipeline.ingest.verification import Verification, analyze
from pipeline.trajectory import Outcome, StepKind, Trajectory

#: Exit statuses (mini-swe-agent, SWE-agent) meaning the run was cut short rather than finished.
_STOPPED = re.compile(r"exceeded|exit_(cost|context|format|error|forfeit|total_execution_time)|error|exception|"
                      r"timeout|interrupt|killed|abort", re.I)


def exit_status_outcome(status: str | None) -> Outcome | None:
    """For parsers: the verdict an agent's exit status gives (None: it finished, weigh the evidence).

    ``Submitted`` says nothing about correctness; ``LimitsExceeded``, ``exit_cost``, an exception
    class name ... say the run was stopped before the agent was done.
    """
    if not status or status.strip().lower() == "submitted" or not _STOPPED.search(status):
        return None
    return Outcome(status="failed", source="heuristic", evidence=f"the agent was stopped: exit status {status}")


def _outcome(status: str, evidence: str, step: int | None = None) -> Outcome:
    return Outcome(status=status, source="heuristic", evidence=evidence, step=step)  # type: ignore[arg-type]


def infer_outcome(trajectory: Trajectory) -> Outcome:
    if trajectory.outcome.source != "none":
        return trajectory.outcome  # a label, or a verdict the parser read from the agent itself
    if not trajectory.tool_calls():
        return _outcome("unknown", "no tool activity")
    v = analyze(trajectory)
    return (_reaction(v) or _submission(v) or _checks(v) or _unverified(v) or _ended_on_error(trajectory)
            or _outcome("unknown", "no check ran after the last edit"))


def _reaction(v: Verification) -> Outcome | None:
    for step, verdict in reversed(v.reactions):
        if step.index > v.last_change:
            quote = step.text.strip().splitlines()[0][:80]
            return _outcome("resolved" if verdict == "positive" else "failed",
                            f"the person's last reaction to the result: \"{quote}\"", step.index)
        break
    return None


def _submission(v: Verification) -> Outcome | None:
    if v.submitted is None or v.patch is None:
        return None
    if not v.patch:
        return _outcome("unknown", "the agent submitted nothing (an empty change): no change for a check to judge",
                        v.submitted.index)
    if v.rewritten_tests:
        return _outcome("unknown", f"the submitted change rewrites existing tests ({', '.join(v.rewritten_tests[:3])}): "
                                   "its passing checks no longer test the original expectations", v.submitted.index)
    return None


def _checks(v: Verification) -> Outcome | None:
    counted = [c for c in v.checks if not c.preexisting]
    after = [c for c in counted if c.call.index > v.last_change]
    if after:
        final = after[-1]
        if not final.passed:
            what = "after the last change" if v.change_steps else "at the end"
            return _outcome("failed", f"the last check {what} failed: `{final.command}`", final.call.index)
        if final.covers_change:
            what = "after the last change" if v.change_steps else "(no change made)"
            return _outcome("resolved", f"the last check {what} passed: `{final.command}`", final.call.index)
        covering = [c for c in after if c.covers_change]
        if covering and covering[-1].passed:
            return _outcome("resolved", f"a check of the changed code passed after the last change: "
                                        f"`{covering[-1].command}`", covering[-1].call.index)
    if v.change_steps:
        since = [c for c in counted if c.call.index > v.first_change and c.passed and c.covers_change]
        if since:
            return _outcome("resolved", f"a check passed after the change (`{since[-1].command}`); "
                                        "the edits after it were not checked again", since[-1].call.index)
    return None


def _unverified(v: Verification) -> Outcome | None:
    if v.submitted is None or not v.change_steps:
        return None
    later = [c for c in v.checks if c.call.index > v.first_change]
    if later and not any(c.passed for c in later):
        how = f"its project checks failed after the change (`{later[-1].command}`), none ran after its last edit"
    elif later:
        how = "its checks after the change did not cover the changed code"
    elif v.adhoc_after_change:
        how = f"only its own scripts ran after the last change ({v.adhoc_after_change})"
    elif v.adhoc_unread:
        how = f"only scripts whose result is not recorded ran after the last change ({v.adhoc_unread})"
    else:
        how = "nothing ran after the last change"
    return _outcome("unknown", f"submitted without any project test or build covering the change: {how}",
                    v.submitted.index)


def _ended_on_error(trajectory: Trajectory) -> Outcome | None:
    last = next((s for s in reversed(trajectory.steps) if s.kind is StepKind.TOOL_RESULT), None)
    if last is not None and last.is_error and not last.protocol_error:
        return _outcome("unknown", "the session ended on a failing tool call that is not a project check",
                        last.index)
    return None
