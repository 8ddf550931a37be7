"""The model path of the nightly flow: extract in parallel (Prefect tasks), then merge serially.

Extraction requests fan out as Prefect tasks; the client they share caps how many talk to
the model at once (``[llm] concurrency``), spends from one budget and stops everyone once
the model is found down. Everything that touches the state database or the library stays
in the flow's thread (``pipeline.distill.llm.run.ModelRun``).
"""

from __future__ import annotations

from prefect import task, unmapped
from prefect.cache_policies import NO_CACHE

from pipeline import progress, stages
from pipeline.distill.llm import NAME, version
from pipeline.distill.llm.extract import ExtractJob, ask
from pipeline.distill.llm.run import ModelRun
from pipeline.distill.llm.schema import Extraction
from pipeline.index.state import StateDB
from pipeline.library import Library
from pipeline.llm.backend import LLMError
from pipeline.llm.client import LLMClient, LLMSettings
from pipeline.summary import RunSummary
from pipeline.trajectory import Trajectory


@task(name="extract", cache_policy=NO_CACHE, persist_result=False)
def extract_part(job: ExtractJob, client: LLMClient) -> Extraction | LLMError:
    """The model's answer for one part; an expected failure (model down, budget) comes back as a value.

    Returned, not raised: the run reports it in one clear line, so Prefect need not log a
    traceback per task for a condition that is not a bug. Anything else still raises.
    """
    try:
        return ask(client, job)
    except LLMError as exc:
        return exc


def distill_with_model(state: StateDB, library: Library, trajectories: list[Trajectory], settings: LLMSettings,
                       summary: RunSummary) -> set[str]:
    """Distill what this model (at this prompt version) has not distilled yet; return the ids left undone.

    Undone trajectories (model down, budget reached, an answer that never validated) are
    stored but not recorded as distilled, so the next run takes them up again: a caller that
    skips unchanged files must read their files again (e.g. keep their watermarks back).
    """
    todo = stages.pending(state, trajectories, NAME, version(settings.model))
    run = ModelRun(state, library, settings, summary)
    to_send = run.plan(todo)
    with progress.stage("extract", len(to_send)) as bar:
        futures = extract_part.map(to_send, client=unmapped(run.client)) if to_send else []
        for job, future in zip(to_send, futures, strict=True):
            future.wait()
            if not future.state.is_completed():
                run.failed(job, future.state.result(raise_on_failure=False))
            elif isinstance(result := future.result(), LLMError):
                run.failed(job, result)
            else:
                run.answered(job, result)
            bar.advance()
    outcome = run.consolidate()
    run.finish(outcome)
    return run.undone()
