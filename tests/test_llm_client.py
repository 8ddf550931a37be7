"""The model client over the real litellm HTTP path, against a scripted stand-in server."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from pipeline.distill.llm.extract import ask, jobs
from pipeline.distill.llm.schema import Extraction
from pipeline.ingest import ingest_file
from pipeline.llm import BudgetReached, InvalidAnswer, LLMClient, LLMSettings, ModelUnavailable
from pipeline.llm.backend import RetryPolicy
from tests.conftest import SAMPLES
from tests.fake_llm import FakeLLM, answer, status, text

MODEL = "openai/stand-in"
NOTHING = {"drafts": [], "nothing_reusable": "a smoke test"}
DRAFT = {"drafts": [{"name": "sitemaps-lastmod", "kind": "procedure", "title": "Fix lastmod",
                     "when_to_use": "Use when sitemaps fail", "procedure": [
                         {"text": "Run the sitemap tests", "command": "python3 tests/runtests.py sitemaps_tests",
                          "steps": [44]}]}]}


@pytest.fixture(autouse=True)
def _offline(loopback_only) -> None:
    """Every test here fails if anything tries to reach a host other than 127.0.0.1."""


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture
def job():
    [t] = ingest_file(SAMPLES / "mini_swe_agent/django__django-16255.traj.json")[1]
    return jobs(t, MODEL)[0]


def client(fake: FakeLLM, waits: list[float] | None = None, **settings) -> LLMClient:
    policy = RetryPolicy(attempts=settings.pop("attempts", 4), delay=0.01,
                         sleep=(waits.append if waits is not None else lambda _: None))
    return LLMClient(LLMSettings(model=MODEL, api_base=fake.url, policy=policy, **settings))


def test_a_valid_answer_is_parsed_and_its_usage_recorded(fake: FakeLLM, job) -> None:
    fake.script(answer(DRAFT))
    c = client(fake)
    result = ask(c, job)
    assert isinstance(result, Extraction) and result.drafts[0].procedure[0].steps == [44]
    [sent] = fake.requests
    assert sent["model"] == "stand-in" and sent["messages"][1]["content"] == job.messages[1]["content"]
    assert sent["messages"][0]["content"].startswith(job.messages[0]["content"])  # + the JSON schema
    assert "nothing_reusable" in sent["messages"][0]["content"]
    [call] = c.meter.drain()
    assert call.status == "ok" and call.input_tokens > 1000 and call.output_tokens > 10
    assert c.meter.usage.requests == 1


def test_invalid_json_then_valid_re_asks_with_the_error(fake: FakeLLM, job) -> None:
    fake.script(text("Sure! Here are the drafts: {drafts: oops"), answer(NOTHING))
    result = ask(client(fake), job)
    assert result.nothing_reusable == "a smoke test"
    assert len(fake.requests) == 2
    retry = fake.requests[1]["messages"]
    assert retry[-2]["content"].startswith("Sure!") and "json" in retry[-1]["content"].lower()


def test_an_answer_that_breaks_the_schema_is_re_asked(fake: FakeLLM, job) -> None:
    fake.script(answer({"drafts": []}), answer(NOTHING))  # neither drafts nor a reason
    assert ask(client(fake), job).nothing_reusable == "a smoke test"
    assert "nothing_reusable" in fake.requests[1]["messages"][-1]["content"]


def test_429_and_500_are_retried_with_backoff(fake: FakeLLM, job) -> None:
    waits: list[float] = []
    fake.script(status(429), status(500), status(503), answer(NOTHING))
    c = client(fake, waits)
    assert ask(c, job).nothing_reusable == "a smoke test"
    assert len(fake.requests) == 4
    assert [r.status for r in c.meter.drain()] == ["http-429", "http-500", "http-503", "ok"]
    assert waits == sorted(waits) and waits[0] < waits[-1]  # exponential backoff


def test_retry_after_is_honoured(fake: FakeLLM, job) -> None:
    waits: list[float] = []
    fake.script(status(429, headers={"Retry-After": "7"}), answer(NOTHING))
    ask(client(fake, waits), job)
    assert waits == [7.0]


def test_a_model_that_stays_down_is_unavailable_and_not_hammered(fake: FakeLLM, job) -> None:
    fake.responder = lambda body: status(500)
    c = client(fake, attempts=3)
    with pytest.raises(ModelUnavailable) as raised:
        ask(c, job)
    assert "500" in raised.value.message and "3 attempts" in raised.value.message and raised.value.hint
    assert len(fake.requests) == 3
    with pytest.raises(ModelUnavailable):
        ask(c, job)
    assert len(fake.requests) == 3  # the second question is not sent


def test_answers_that_never_validate_give_invalid_answer(fake: FakeLLM, job) -> None:
    fake.responder = lambda body: text("not json at all")
    with pytest.raises(InvalidAnswer):
        ask(client(fake), job)
    assert len(fake.requests) == 3  # the answer and two re-asks


def test_the_token_budget_stops_before_sending(fake: FakeLLM, job) -> None:
    c = client(fake, budget_tokens=500)
    with pytest.raises(BudgetReached) as raised:
        ask(c, job)
    assert "token budget" in raised.value.message
    assert fake.requests == []


def test_the_cost_budget_uses_litellm_prices(fake: FakeLLM, job) -> None:
    import litellm

    fake.script(answer(NOTHING))
    model = "openai/gpt-4o-mini"  # a priced model, served by the stand-in
    policy = RetryPolicy(attempts=1, sleep=lambda _: None)
    c = LLMClient(LLMSettings(model=model, api_base=fake.url, policy=policy, budget_usd=1.0))
    ask(c, job)
    [call] = c.meter.drain()
    expected = sum(litellm.cost_per_token(model="gpt-4o-mini", prompt_tokens=call.input_tokens,
                                          completion_tokens=call.output_tokens))
    assert call.cost_usd == pytest.approx(expected) and call.cost_usd > 0
    tiny = LLMClient(LLMSettings(model=model, api_base=fake.url, policy=policy, budget_usd=call.cost_usd / 10))
    with pytest.raises(BudgetReached, match="cost budget"):
        ask(tiny, job)
    assert len(fake.requests) == 1


def test_concurrent_requests_respect_the_limit(fake: FakeLLM, job) -> None:
    fake.responder = lambda body: answer(NOTHING, delay=0.15)
    c = client(fake, concurrency=2)
    threads = [threading.Thread(target=ask, args=(c, job)) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(fake.requests) == 6
    assert fake.peak <= 2 and c.peak_in_flight <= 2

