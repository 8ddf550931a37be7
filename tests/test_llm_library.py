"""The LLM distiller as a library: a backend plugin registered through the hook, a chunked session.

No Prefect and no HTTP here: a third-party style backend answers in-process, the way a
plugin for another client library would, and ``ModelRun`` is driven step by step.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from pipeline.distill.llm.extract import ask, join
from pipeline.distill.llm.run import ModelRun
from pipeline.distill.llm.schema import Extraction, SkillDraft
from pipeline.index.state import StateDB
from pipeline.ingest import ingest_file
from pipeline.library import Library
from pipeline.llm import LLMSettings, backend_for
from pipeline.llm.backend import CallRecord, LLMBackend, OnCall, Request, RetryPolicy
from pipeline.plugins import hookimpl, plugin_manager, registered_llm_backends
from pipeline.summary import RunSummary


class ScriptedBackend(LLMBackend):
    """Answers ``scripted/...`` models with a function of the request."""

    name = "scripted"
    priority = 10

    def __init__(self) -> None:
        self.answer: Callable[[Request], BaseModel] = lambda r: Extraction(nothing_reusable="n/a")
        self.requests: list[Request] = []

    def handles(self, model: str) -> bool:
        return model.startswith("scripted/")

    def structured(self, request: Request, *, model: str, api_base: str | None, policy: RetryPolicy,
                   on_call: OnCall) -> BaseModel:
        self.requests.append(request)
        on_call(CallRecord(purpose=request.purpose, trajectory=request.trajectory, model=model, status="ok",
                           input_tokens=self.count_tokens(model, request.messages), output_tokens=50))
        return self.answer(request)


class _Plugin:
    def __init__(self, backend: LLMBackend) -> None:
        self.backend = backend

    @hookimpl
    def register_llm_backends(self, register: Callable[[LLMBackend], None]) -> None:
        register(self.backend)


@pytest.fixture
def scripted() -> Iterator[ScriptedBackend]:
    backend = ScriptedBackend()
    manager = plugin_manager()
    manager.register(_Plugin(backend), name="test-scripted")
    registered_llm_backends.cache_clear()
    try:
        yield backend
    finally:
        manager.unregister(name="test-scripted")
        registered_llm_backends.cache_clear()


def test_a_backend_plugin_serves_its_models_and_litellm_the_rest(scripted: ScriptedBackend) -> None:
    assert backend_for("scripted/any") is scripted
    assert backend_for("openai/gpt-4o-mini").name == "litellm"


def test_a_long_session_is_asked_in_parts_and_its_drafts_joined(scripted: ScriptedBackend, corpus: Path,
                                                               tmp_path: Path) -> None:
    [t, *_] = ingest_file(corpus / "claude_code/codemie-code/session-196820da.jsonl")[1]

    def per_part(request: Request) -> BaseModel:
        """One step per part: the first command that part shows running cleanly."""
        user = request.messages[1]["content"]
        ran = re.findall(r"^\[(\d+)\] \$ ([^\n]+)\n  → exit 0", user, re.M)
        if not ran:
            return Extraction(nothing_reusable="nothing ran in this part")
        step, command = ran[0]
        return Extraction(drafts=[SkillDraft(
            name="debug-sso-conversation-tracking", kind="procedure", title="Debug conversation tracking",
            when_to_use="Use when conversation tracking breaks",
            procedure=[{"text": "Run this", "command": command, "steps": [int(step)]}])])

    scripted.answer = per_part
    library = Library(tmp_path / "skills")
    summary = RunSummary(run_id="test-run")
    with StateDB() as state:
        run = ModelRun(state, library, LLMSettings(model="scripted/x"), summary, chunk_chars=8_000)
        to_send = run.plan([t])
        assert len(to_send) > 3 and {j.parts for j in to_send} == {len(to_send)}
        for job in to_send:  # what the flow's Prefect tasks do, one after the other
            run.answered(job, ask(run.client, job))
        run.finish(run.consolidate())
        assert run.undone() == set()
        assert state.con.execute("SELECT count(*) FROM llm_cache").fetchone()[0] == len(to_send)

    answering = sum(1 for j in to_send if "  → exit 0" in j.messages[1]["content"])
    skill = library.get("debug-sso-conversation-tracking").skill
    assert len(skill.procedure) == answering > 1  # one step from each part that had one
    steps = [i.evidence[0].steps[0] for i in skill.procedure]
    assert steps == sorted(steps)  # in session order, across the parts
    assert summary.distillation.left_for_next_run == 0 and summary.llm.requests == len(scripted.requests)
    assert summary.llm.requests == len(to_send)  # no merge decision: the library was empty


def test_join_keeps_a_reason_only_when_no_part_has_a_draft() -> None:
    draft = SkillDraft(name="x", kind="pitfall", title="t", when_to_use="Use when",
                       pitfalls=[{"symptom": "s", "fix": "f", "steps": [1]}])
    assert join([Extraction(nothing_reusable="a"), Extraction(nothing_reusable="b")]).nothing_reusable == "a; b"
    joined = join([Extraction(nothing_reusable="a"), Extraction(drafts=[draft]), Extraction(drafts=[draft])])
    assert joined.nothing_reusable is None and len(joined.drafts[0].pitfalls) == 2


def test_notes_for_the_manual_are_an_answer_and_parts_giving_the_same_note_give_it_once() -> None:
    note = {"quote": "don't produce code, design solution first", "step": 103}
    assert Extraction(corrections=[note]).notes == 1  # no draft, no reason: still an answer
    with pytest.raises(ValueError, match="at least one draft or note"):
        Extraction()
    joined = join([Extraction(corrections=[note]), Extraction(corrections=[note], nothing_reusable="design only"),
                   Extraction(commands=[{"purpose": "test", "command": "npm test", "steps": [4]}])])
    assert joined.notes == 2 and joined.nothing_reusable == "design only"
    assert join([Extraction(corrections=[note])]).nothing_reusable == "no skill draft, only notes for the manual"
