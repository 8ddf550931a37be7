"""Phase 2, serially: each grounded draft goes into the library as new, update or duplicate.

A draft that resembles no existing skill (``match.py``) is new without asking the model.
Otherwise the model sees the draft and the closest skills and decides; its answer only
selects draft items to add, so an update is always an incremental edit (items appended,
the source added, the version bumped), never a rewrite. Candidates are edited in place;
an approved skill is never touched: the change goes to ``_proposed/<name>/`` through
``Library.propose`` with ``CHANGES.diff`` beside it, for review.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from pipeline.distill.llm.match import Pool
from pipeline.distill.llm.prompts import PROMPT_VERSION, cache_key, consolidate_messages
from pipeline.distill.llm.schema import Decision
from pipeline.distill.llm.tables import LLMState
from pipeline.distill.risk import flag
from pipeline.distill.write import save_skill
from pipeline.library import markdown
from pipeline.library.model import Skill
from pipeline.library.store import PROPOSED_DIR, Library, atomic_write
from pipeline.llm.backend import Request
from pipeline.llm.client import LLMClient

DIFF_FILE = "CHANGES.diff"


@dataclass
class Placement:
    action: str  # new | update | duplicate
    name: str  # the skill written, or merged into
    result: str  # created | updated | unchanged | proposed
    reason: str = ""


class Consolidator:
    def __init__(self, library: Library, client: LLMClient, llm_state: LLMState) -> None:
        self.library = library
        self.client = client
        self.llm_state = llm_state
        self.cached_requests = 0
        skills: list[Skill] = []
        for entry in library.entries(on_error=lambda *_: None):
            skill = entry.skill
            if not skill.generated or skill.kind in ("repo", "reference") or skill.status not in (
                    "candidate", "approved"):
                continue
            if skill.status == "approved":
                proposal = library.proposal(skill.name)
                skill = proposal.skill if proposal else skill
            skills.append(skill)
        self.pool = Pool(skills)

    def place(self, draft: Skill) -> Placement:
        matches = self.pool.matches(draft)
        if not matches:
            name, result = save_skill(self.library, draft)
            self._remember(name)
            return Placement("new", name, result, "no similar skill in the library")
        decision = self._decide(draft, [self.pool.skills[m.name] for m in matches])
        if decision.action == "new" or decision.target is None:
            name, result = save_skill(self.library, draft)
            self._remember(name)
            return Placement("new", name, result, decision.reason)
        existing = self.pool.skills[decision.target]
        updated = merge(existing, draft, decision)
        if updated == existing:
            return Placement(decision.action, existing.name, "unchanged", decision.reason)
        return Placement(decision.action, existing.name, self._write(existing, updated), decision.reason)

    # -- the model's decision -------------------------------------------------------------
    def _decide(self, draft: Skill, candidates: list[Skill]) -> Decision:
        messages = consolidate_messages(describe(draft, numbered=True),
                                        "\n\n".join(describe(c) for c in candidates))
        key = cache_key("consolidate", self.client.model, messages)
        context = {"candidates": [c.name for c in candidates],
                   "sizes": {"add_procedure": len(draft.procedure), "add_pitfalls": len(draft.pitfalls),
                             "add_verification": len(draft.verification)}}
        cached = self.llm_state.cached([key]).get(key)
        if cached is not None:
            try:
                decision = Decision.model_validate_json(cached, context=context)
                self.cached_requests += 1
                return decision
            except ValueError:
                pass  # stored under an older schema: ask again
        trajectory = draft.sources[0].trajectory if draft.sources else None
        answer = self.client.ask(Request(purpose="consolidate", trajectory=trajectory, messages=messages,
                                         response_model=Decision, context=context))
        assert isinstance(answer, Decision)
        self.llm_state.store_answer(key, purpose="consolidate", model=self.client.model,
                                    prompt_version=PROMPT_VERSION, trajectory=trajectory,
                                    answer=answer.model_dump_json())
        return answer

    # -- writing --------------------------------------------------------------------------
    def _write(self, existing: Skill, updated: Skill) -> str:
        if existing.status == "approved":
            approved = self.library.get(existing.name)
            before = markdown.render(approved.skill) if approved else ""
            after = markdown.render(updated)
            folder = self.library.propose(updated)
            if folder is None:  # a person rejected this very change: not proposed again
                return "held"
            diff = "".join(difflib.unified_diff(
                before.splitlines(keepends=True), after.splitlines(keepends=True),
                fromfile=f"{existing.name}/SKILL.md (approved)",
                tofile=f"{PROPOSED_DIR}/{existing.name}/SKILL.md (proposed, version {updated.version})"))
            atomic_write(folder / DIFF_FILE, diff)
            self.pool.put(updated)
            return "proposed"
        result = self.library.save(updated)
        self.pool.put(updated)
        return result

    def _remember(self, name: str) -> None:
        stored = self.library.get(name)
        if stored is not None and stored.skill.status in ("candidate", "approved"):
            self.pool.put(stored.skill)


def merge(existing: Skill, draft: Skill, decision: Decision) -> Skill:
    """``existing`` plus the draft items the decision selects and the draft's sources; version + 1."""
    additions: dict[str, list] = {"procedure": [], "pitfalls": [], "verification": []}
    if decision.action == "update":
        for field_name, indexes in (("procedure", decision.add_procedure), ("pitfalls", decision.add_pitfalls),
                                    ("verification", decision.add_verification)):
            current = getattr(existing, field_name)
            known = {_item_key(i) for i in current}
            for index in dict.fromkeys(indexes):
                item = getattr(draft, field_name)[index]
                if _item_key(item) not in known:
                    additions[field_name].append(item)
                    known.add(_item_key(item))
    known_sources = set(existing.trajectory_ids())
    sources = [s for s in draft.sources if s.trajectory not in known_sources]
    if not sources and not any(additions.values()):
        return existing
    outcomes = {existing.outcome, *(s.outcome for s in sources)}
    updated = existing.model_copy(update={
        "procedure": existing.procedure + additions["procedure"],
        "pitfalls": existing.pitfalls + additions["pitfalls"],
        "verification": existing.verification + additions["verification"],
        "sources": existing.sources + sources,
        "outcome": existing.outcome if len(outcomes) == 1 else "mixed",
        "confidence": max(existing.confidence, min(0.95, existing.confidence + 0.05 * len(sources))),
        "version": existing.version + 1,
    })
    return flag(updated)


def _item_key(item: object) -> str:
    command = getattr(item, "command", None)
    if command:
        return " ".join(command.split())
    text = getattr(item, "text", None) or getattr(item, "symptom", "")
    return " ".join(str(text).lower().split())


def describe(skill: Skill, *, numbered: bool = False) -> str:
    """A compact view of a skill for the consolidation prompt (items numbered for the draft)."""
    lines = [f"name: {skill.name}", f"title: {skill.title}", f"description: {skill.description}"]
    for label, items in (("procedure", skill.procedure), ("verification", skill.verification)):
        if items:
            lines.append(f"{label}:")
            for number, item in enumerate(items):
                mark = f"{number}. " if numbered else "- "
                lines.append(f"  {mark}{item.text}" + (f"  `{_one(item.command)}`" if item.command else ""))
    if skill.pitfalls:
        lines.append("pitfalls:")
        for number, pitfall in enumerate(skill.pitfalls):
            mark = f"{number}. " if numbered else "- "
            lines.append(f"  {mark}{pitfall.symptom} -> {pitfall.fix}"
                         + (f"  `{_one(pitfall.command)}`" if pitfall.command else ""))
    return "\n".join(lines)


def _one(command: str) -> str:
    line = " ".join(command.split())
    return line if len(line) <= 200 else line[:197] + "..."
