"""One run of the LLM distiller, between the flow and the library.

The flow calls, in order: ``plan`` (render, look answers up in the cache, return the requests
still to send), ``answered`` / ``failed`` for each request a worker ran, ``consolidate``
(serial: ground, build, place each draft, record the trajectory as distilled) and
``finish`` (usage into the database and the run summary).

A trajectory is recorded as distilled only when all its drafts are placed. One that the
budget or a dead model left undone is simply not recorded: the next run finds it pending,
takes the answers already paid for from the cache and continues.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline import progress
from pipeline.distill import tables as distill_tables
from pipeline.distill.llm import NAME, PROMPT_VERSION, version
from pipeline.distill.llm.extract import Assembled, ExtractJob, assemble, jobs
from pipeline.distill.llm.merge import Consolidator
from pipeline.distill.llm.schema import Extraction
from pipeline.distill.llm.tables import LLMState
from pipeline.distill.render import CHUNK_CHARS
from pipeline.distill.write import WriteOutcome, consolidate_repos, withdraw_superseded
from pipeline.index.state import StateDB
from pipeline.ingest import tables as ingest_tables
from pipeline.library.store import Library
from pipeline.llm.backend import BudgetReached, LLMError, ModelUnavailable
from pipeline.llm.client import LLMClient, LLMSettings
from pipeline.summary import NothingReusable, RunError, RunSummary
from pipeline.trajectory import Trajectory


@dataclass
class _Work:
    trajectory: Trajectory
    jobs: list[ExtractJob]
    answers: dict[int, Extraction] = field(default_factory=dict)
    error: Exception | None = None


class ModelRun:
    def __init__(self, state: StateDB, library: Library, settings: LLMSettings, summary: RunSummary,
                 client: LLMClient | None = None, chunk_chars: int | None = None) -> None:
        self.state = state
        self.llm_state = LLMState(state)
        self.library = library
        self.settings = settings
        self.summary = summary
        self.client = client or LLMClient(settings)
        self.model = settings.model
        self.version = version(self.model)
        self.chunk_chars = chunk_chars or settings.chunk_chars or CHUNK_CHARS
        self.work: dict[str, _Work] = {}
        self.cached_requests = 0
        self.stopped: LLMError | None = None
        summary.distillation.distiller = NAME
        summary.distillation.model = self.model

    # -- phase 1: extraction -----------------------------------------------------------
    def plan(self, trajectories: list[Trajectory]) -> list[ExtractJob]:
        """Render every pending trajectory; answers already paid for come from the cache."""
        for trajectory in trajectories:
            self.work[trajectory.id] = _Work(trajectory, jobs(trajectory, self.model, self.chunk_chars))
        keys = [job.key for work in self.work.values() for job in work.jobs]
        cached = self.llm_state.cached(keys)
        to_send: list[ExtractJob] = []
        for work in self.work.values():
            for job in work.jobs:
                answer = cached.get(job.key)
                if answer is not None:
                    try:
                        work.answers[job.part] = Extraction.model_validate_json(answer)
                        self.cached_requests += 1
                        continue
                    except ValueError:
                        pass  # stored under an older schema: ask again
                to_send.append(job)
        return to_send

    def answered(self, job: ExtractJob, answer: Extraction) -> None:
        self.work[job.trajectory].answers[job.part] = answer
        self.llm_state.store_answer(job.key, purpose="extract", model=self.model, prompt_version=PROMPT_VERSION,
                                    trajectory=job.trajectory, answer=answer.model_dump_json())

    def failed(self, job: ExtractJob, error: BaseException) -> None:
        work = self.work[job.trajectory]
        if work.error is None or isinstance(work.error, BudgetReached):
            work.error = error if isinstance(error, Exception) else RuntimeError(str(error))

    # -- phase 2: consolidation ----------------------------------------------------------
    def consolidate(self) -> WriteOutcome:
        outcome = WriteOutcome()
        ready = [w for w in sorted(self.work.values(), key=lambda w: w.trajectory.id)
                 if w.error is None and len(w.answers) == len(w.jobs)]
        consolidator = Consolidator(self.library, self.client, self.llm_state)
        repos: set[str] = set()
        written: dict[str, list[str]] = {}
        with progress.stage("merge", len(ready)) as bar:
            for work in ready:
                if self.stopped is not None:
                    break
                assembled = assemble(work.trajectory, [work.answers[p] for p in sorted(work.answers)], self.model)
                self._count(assembled)
                try:
                    names = self._place(consolidator, assembled, outcome)
                except (BudgetReached, ModelUnavailable) as exc:
                    work.error = exc
                    self.stopped = exc
                    break
                except LLMError as exc:
                    work.error = exc
                    continue
                if assembled.reason:
                    self.summary.nothing_reusable.append(NothingReusable(trajectory=work.trajectory.id,
                                                                         reason=assembled.reason))
                distill_tables.save_distillation(self.state, work.trajectory.id, NAME, self.version,
                                                 assembled.reason, names, assembled.facts)
                written[work.trajectory.id] = names
                repos.update(f.repo for f in assembled.facts)
                work.jobs = []  # done
                bar.advance()
        withdraw_superseded(self.library, ingest_tables.ancestors(self.state, written), written, outcome)
        consolidate_repos(self.state, self.library, repos, outcome)
        self.cached_requests += consolidator.cached_requests
        return outcome

    def _place(self, consolidator: Consolidator, assembled: Assembled, outcome: WriteOutcome) -> list[str]:
        names: list[str] = []
        decided = self.llm_state.decided([c.key for c in assembled.candidates], self.model, PROMPT_VERSION)
        info = self.summary.distillation
        for candidate in assembled.candidates:
            if candidate.key in decided:  # placed by an earlier run that stopped before recording the trajectory
                names.append(candidate.skill.name)
                continue
            placement = consolidator.place(candidate.skill)
            names.append(placement.name)
            if placement.result == "proposed":
                if placement.name not in info.proposed_changes:
                    info.proposed_changes.append(placement.name)
            else:  # a skill created earlier in this run and updated since is still a new skill
                previous = outcome.results.get(placement.name)
                if previous is None or (previous != "created" and placement.result != "unchanged"):
                    outcome.results[placement.name] = placement.result  # type: ignore[assignment]
            stored = consolidator.pool.skills.get(placement.name)
            flags = (stored.extra_metadata.get("flags", "") if stored else "").split(",")
            flags = [f for f in flags if f]
            if flags:
                info.flagged[placement.name] = flags
            self.llm_state.record_draft(
                candidate.key, model=self.model, prompt_version=PROMPT_VERSION, trajectory=assembled.trajectory.id,
                skill=placement.name, action=placement.action,
                target=placement.name if placement.action != "new" else None, reason=placement.reason,
                flags=flags, grounding={"checked": candidate.report.checked, "removed": candidate.report.removed})
        return names

    def _count(self, assembled: Assembled) -> None:
        grounding = self.summary.distillation.grounding
        grounding.checked += assembled.report.checked
        grounding.removed += len(assembled.report.removed)
        grounding.drafts_dropped += len(assembled.dropped)
        self.summary.distillation.drafts += assembled.drafts

    def undone(self) -> set[str]:
        """Trajectories this run did not record as distilled (the next run takes them up)."""
        return {tid for tid, work in self.work.items() if work.jobs}

    # -- the end ------------------------------------------------------------------------
    def finish(self, outcome: WriteOutcome) -> None:
        """Usage into ``llm_calls`` and the summary; undone work and why into the summary."""
        self.llm_state.record_calls(self.summary.run_id, PROMPT_VERSION, self.client.meter.drain())
        usage = self.client.meter.usage
        s = self.summary
        s.llm.requests = usage.requests
        s.llm.input_tokens = usage.input_tokens
        s.llm.output_tokens = usage.output_tokens
        s.llm.cost_usd = round(usage.cost_usd, 6)
        s.distillation.cached_requests = self.cached_requests
        outcome.count(s)
        if usage.unpriced:
            s.distillation.notes.append(
                f"litellm has no price for {self.model}: cost_usd counts 0 for {usage.unpriced} requests"
                + (" and SKILLMILL_BUDGET_USD cannot be enforced (use SKILLMILL_BUDGET_TOKENS)"
                   if self.settings.budget_usd is not None else ""))
        undone = [w for w in self.work.values() if w.jobs]
        unavailable = self.client.unavailable or next(
            (w.error for w in undone if isinstance(w.error, ModelUnavailable)), None)
        budget = self.client.budget.reached
        for work in undone:
            if isinstance(work.error, (ModelUnavailable, BudgetReached)) or work.error is None:
                continue
            s.trajectories.failed += 1
            s.errors.append(RunError(path=work.trajectory.source_path,
                                     reason=f"distilling {work.trajectory.id} with {self.model} failed: "
                                            f"{getattr(work.error, 'message', None) or work.error}"))
        left = [w for w in undone if w.error is None or isinstance(w.error, (ModelUnavailable, BudgetReached))]
        s.distillation.left_for_next_run = len(left)
        if unavailable is not None and left:
            s.trajectories.failed += len(left)
            s.distillation.stopped = f"model unavailable: {unavailable.message}"
            s.errors.append(RunError(reason=f"{unavailable.message}; {len(left)} trajector"
                                            f"{'y was' if len(left) == 1 else 'ies were'} not distilled and will "
                                            f"be picked up by the next run (hint: {unavailable.hint})"))
        elif budget is not None and left:
            s.distillation.stopped = (f"{budget}; {len(left)} trajector{'y' if len(left) == 1 else 'ies'} left "
                                      "for the next run")

