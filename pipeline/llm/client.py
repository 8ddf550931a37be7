"""The client a run uses: one backend, a concurrency limit, a budget, a usage meter.

Worker threads (Prefect tasks) share one client. It never touches the state database:
calls are collected in :class:`Meter` and the flow's thread stores them. Once the model is
found unavailable, later requests fail at once instead of hammering a dead server; once the
budget is reached, later requests are refused before anything is sent.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel

from pipeline.llm.backend import (
    BudgetReached,
    CallRecord,
    LLMBackend,
    ModelUnavailable,
    Request,
    RetryPolicy,
    backend_for,
)

if TYPE_CHECKING:
    from pipeline.config import LLMConfig


@dataclass(frozen=True)
class LLMSettings:
    model: str
    api_base: str | None = None
    budget_usd: float | None = None
    budget_tokens: int | None = None
    concurrency: int = 4
    chunk_chars: int = 40_000
    policy: RetryPolicy = field(default_factory=RetryPolicy)

    @classmethod
    def from_config(cls, config: LLMConfig) -> LLMSettings | None:
        """None when no model is configured: the zero-LLM distiller runs instead."""
        if not config.model:
            return None
        policy = RetryPolicy(attempts=max(1, config.retries + 1), delay=config.retry_delay)
        return cls(model=config.model, api_base=config.api_base, budget_usd=config.budget_usd,
                   budget_tokens=config.budget_tokens, concurrency=max(1, config.concurrency),
                   chunk_chars=config.chunk_chars, policy=policy)


@dataclass
class Usage:
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0  # requests whose cost the backend could not tell


class Meter:
    """Every HTTP call of the run, thread-safe; the flow drains ``records`` into the database."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.usage = Usage()
        self.records: list[CallRecord] = []

    def record(self, call: CallRecord) -> None:
        with self._lock:
            self.records.append(call)
            self.usage.requests += 1
            self.usage.input_tokens += call.input_tokens
            self.usage.output_tokens += call.output_tokens
            if call.cost_usd is None:
                self.usage.unpriced += call.status == "ok"
            else:
                self.usage.cost_usd += call.cost_usd

    def drain(self) -> list[CallRecord]:
        with self._lock:
            records, self.records = self.records, []
            return records


class Budget:
    """Admission control: a request is sent only if its input fits in what is left.

    Tokens in flight are reserved, so concurrent workers cannot overshoot together; the
    output of the requests admitted last may still go past the limit by one answer each.
    """

    def __init__(self, usd: float | None, tokens: int | None, meter: Meter) -> None:
        self.usd = usd
        self.tokens = tokens
        self.meter = meter
        self._lock = threading.Lock()
        self._reserved_tokens = 0
        self._reserved_usd = 0.0
        self.reached: str | None = None

    def admit(self, tokens: int, usd: float | None) -> None:
        with self._lock:
            used = self.meter.usage
            if self.reached is None and self.tokens is not None:
                spent = used.input_tokens + used.output_tokens + self._reserved_tokens
                if spent + tokens > self.tokens:
                    self.reached = (f"token budget reached: {used.input_tokens + used.output_tokens:,} of "
                                    f"{self.tokens:,} tokens used")
            if (self.reached is None and self.usd is not None and usd is not None
                    and used.cost_usd + self._reserved_usd + usd > self.usd):
                self.reached = f"cost budget reached: ${used.cost_usd:.4f} of ${self.usd:.2f} spent"
            if self.reached is not None:
                raise BudgetReached(self.reached, hint="raise SKILLMILL_BUDGET_USD / SKILLMILL_BUDGET_TOKENS, "
                                                       "or let the next run continue")
            self._reserved_tokens += tokens
            self._reserved_usd += usd or 0.0

    def release(self, tokens: int, usd: float | None) -> None:
        with self._lock:
            self._reserved_tokens -= tokens
            self._reserved_usd -= usd or 0.0


class LLMClient:
    def __init__(self, settings: LLMSettings, backend: LLMBackend | None = None) -> None:
        self.settings = settings
        self.backend = backend or backend_for(settings.model)
        self.meter = Meter()
        self.budget = Budget(settings.budget_usd, settings.budget_tokens, self.meter)
        self._slots = threading.BoundedSemaphore(settings.concurrency)
        self._lock = threading.Lock()
        self.unavailable: ModelUnavailable | None = None
        self.in_flight = 0
        self.peak_in_flight = 0

    @property
    def model(self) -> str:
        return self.settings.model

    def ask(self, request: Request) -> BaseModel:
        """The validated answer to ``request``; raises the errors of ``pipeline.llm.backend``."""
        if self.unavailable is not None:
            raise ModelUnavailable(self.unavailable.message, hint=self.unavailable.hint)
        # The response schema travels in the prompt too (instructor adds it): count it.
        schema = json.dumps(request.response_model.model_json_schema(), indent=2)
        estimate = self.backend.count_tokens(self.model, [*request.messages, {"role": "system", "content": schema}])
        price = self.backend.price(self.model, estimate, 0)
        self.budget.admit(estimate, price)
        try:
            with self._slots:
                if self.unavailable is not None:  # it went down while this request waited for a slot
                    raise ModelUnavailable(self.unavailable.message, hint=self.unavailable.hint)
                with self._lock:
                    self.in_flight += 1
                    self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
                try:
                    return self.backend.structured(request, model=self.model, api_base=self.settings.api_base,
                                                   policy=self.settings.policy, on_call=self.meter.record)
                finally:
                    with self._lock:
                        self.in_flight -= 1
        except ModelUnavailable as exc:
            with self._lock:
                self.unavailable = self.unavailable or exc
            raise
        finally:
            self.budget.release(estimate, price)
