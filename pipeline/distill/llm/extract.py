"""Phase 1, per trajectory: compact rendering -> model -> drafts -> grounding -> skills.

``jobs`` renders a trajectory and cuts it into one request per chunk; ``ask`` is what a
worker runs (it only talks to the model); ``assemble`` joins the answers of all chunks,
grounds each draft against the trajectory and builds ``Skill`` objects. A long session's
parts are asked separately and their drafts joined by name, so nothing is cut away.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from pipeline.distill.analysis import analyze
from pipeline.distill.facts import RepoFact, repo_facts
from pipeline.distill.llm.build import to_skill
from pipeline.distill.llm.grounding import Grounder, GroundingReport
from pipeline.distill.llm.notes import merge, note_facts
from pipeline.distill.llm.prompts import cache_key, extract_messages
from pipeline.distill.llm.schema import Extraction, SkillDraft
from pipeline.distill.render import CHUNK_CHARS, render
from pipeline.distill.risk import flag
from pipeline.library.model import Skill
from pipeline.llm.backend import Request
from pipeline.llm.client import LLMClient
from pipeline.trajectory import Trajectory


@dataclass(frozen=True)
class ExtractJob:
    """One request: one chunk of one trajectory."""

    trajectory: str
    part: int
    parts: int
    key: str
    messages: list[dict[str, str]]

    @property
    def prompt_bytes(self) -> int:
        """Bytes of prompt text sent: the messages plus the response schema instructor adds to them."""
        text = sum(len(m["content"].encode("utf-8", "surrogatepass")) for m in self.messages)
        return text + SCHEMA_BYTES


#: The indented JSON schema of ``Extraction`` that instructor puts into the system message.
SCHEMA_BYTES = len(json.dumps(Extraction.model_json_schema(), indent=2).encode())


def skip_reason(trajectory: Trajectory) -> str | None:
    """Why a trajectory is not worth a request (no tool activity, a smoke test, too short), or None.

    Never paying for noise matters more than anything a model could find in a two-call session;
    the same cheap checks gate the zero-LLM distiller, which alone still reads a short piece of a
    larger session (an aider request, a subagent) for its facts -- they are kept here too.
    """
    from pipeline.distill.analysis import analyze
    from pipeline.distill.heuristic import trivial_reason

    return trivial_reason(analyze(trajectory), request=True)


def jobs(trajectory: Trajectory, model: str, chunk_chars: int = CHUNK_CHARS) -> list[ExtractJob]:
    """The requests that distill ``trajectory``: one per chunk, none when it is not worth asking."""
    if skip_reason(trajectory):
        return []
    rendering = render(trajectory)
    chunks = rendering.chunks(chunk_chars)
    out = []
    for chunk in chunks:
        messages = extract_messages(rendering, chunk)
        out.append(ExtractJob(trajectory.id, chunk.number, chunk.total, cache_key("extract", model, messages),
                              messages))
    return out


def ask(client: LLMClient, job: ExtractJob) -> Extraction:
    answer = client.ask(Request(purpose="extract", trajectory=job.trajectory, messages=job.messages,
                                response_model=Extraction))
    assert isinstance(answer, Extraction)
    return answer


@dataclass
class Candidate:
    """A grounded draft, built into a skill, waiting for consolidation."""

    key: str
    skill: Skill
    report: GroundingReport


@dataclass
class Assembled:
    trajectory: Trajectory
    candidates: list[Candidate] = field(default_factory=list)
    reason: str | None = None  # nothing reusable (the model's reason, or: every draft was dropped)
    report: GroundingReport = field(default_factory=GroundingReport)
    dropped: list[str] = field(default_factory=list)
    drafts: int = 0
    facts: list[RepoFact] = field(default_factory=list)


def join(answers: list[Extraction]) -> Extraction:
    """The answers for all parts of one trajectory as one: drafts with the same name are merged, notes
    for the manual that several parts give are kept once."""
    notes = {name: list({n.model_dump_json(): n for a in answers for n in getattr(a, name)}.values())
             for name in ("corrections", "fixes", "commands")}
    merged: dict[str, SkillDraft] = {}
    for answer in answers:
        for draft in answer.drafts:
            key = draft.name.strip().lower()
            if key not in merged:
                merged[key] = draft
                continue
            old = merged[key]
            merged[key] = old.model_copy(update={
                "procedure": old.procedure + draft.procedure, "pitfalls": old.pitfalls + draft.pitfalls,
                "verification": old.verification + draft.verification,
                "did_not_work": old.did_not_work + draft.did_not_work})
    if merged:
        return Extraction(drafts=list(merged.values()), **notes)
    reasons = list(dict.fromkeys(a.nothing_reusable.strip() for a in answers if a.nothing_reusable))
    fallback = "no skill draft, only notes for the manual" if any(notes.values()) else "nothing reusable"
    return Extraction(nothing_reusable="; ".join(reasons) or fallback, **notes)


def assemble(trajectory: Trajectory, answers: list[Extraction], model: str) -> Assembled:
    """Skills from the grounded drafts; the repository's facts from the heuristics and the grounded notes."""
    analysis = analyze(trajectory)
    out = Assembled(trajectory, facts=repo_facts(analysis))
    if not answers:  # never sent (``jobs``): say why
        out.reason = f"not sent to the model: {skip_reason(trajectory) or 'nothing to send'}"
        return out
    extraction = join(answers)
    out.drafts = len(extraction.drafts)
    grounder = Grounder(trajectory) if extraction.drafts or extraction.notes else None
    if grounder is not None and trajectory.repo and extraction.notes:  # no repository: no manual to feed
        notes, report = grounder.notes(extraction)
        facts, left_out = note_facts(analysis, notes)
        report.removed += left_out
        out.report.merge(report)
        out.facts = merge(out.facts, facts)
    if grounder is None or not extraction.drafts:
        out.reason = f"model: {extraction.nothing_reusable}"
        return out
    for draft in extraction.drafts:
        grounded, report = grounder.check(draft)
        out.report.merge(report)
        if grounded is None:
            out.dropped.append(f"{draft.name}: {report.dropped}")
            continue
        skill = flag(to_skill(grounded, trajectory, model, removed=len(report.removed)))
        key = hashlib.sha256(f"{trajectory.id}\n{model}\n{skill.model_dump_json()}".encode()).hexdigest()
        out.candidates.append(Candidate(key, skill, report))
    if not out.candidates:
        out.reason = "no draft survived the grounding check: " + "; ".join(out.dropped)
    return out
