"""What an LLM backend plugin provides, and the errors every backend raises.

A backend turns a :class:`Request` (messages + a pydantic response model) into a validated
answer. It retries transient HTTP failures itself (so a model's re-ask after an invalid
answer is not lost to a 500 in between) following the :class:`RetryPolicy` it is given, and
reports every HTTP call through ``on_call`` so usage is recorded even when the answer is
never used. Backends register through the ``register_llm_backends`` hook, built-ins the
same way as third-party ones (``pipeline/plugins.py``).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from pipeline.errors import SkillmillError


class LLMError(SkillmillError):
    """A model call did not give a usable answer."""


class ModelUnavailable(LLMError):
    """The model kept failing (HTTP 429/5xx, timeouts, refused connections) or refused us (auth)."""


class InvalidAnswer(LLMError):
    """The model answered, but not in the required shape, even after the re-asks."""


class BudgetReached(LLMError):
    """The run's token or cost budget does not allow another request."""


@dataclass(frozen=True)
class Request:
    """One structured question to a model."""

    purpose: str  # extract | consolidate
    trajectory: str | None
    messages: list[dict[str, str]]
    response_model: type[BaseModel]
    context: dict[str, Any] | None = None  # pydantic validation context (e.g. allowed names)


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4  # HTTP attempts per model call (1 = no retry)
    delay: float = 1.0  # first backoff in seconds; doubles each time
    max_delay: float = 30.0
    validation_retries: int = 2  # re-asks after an answer that does not validate
    timeout: float = 180.0
    max_output_tokens: int = 4096
    sleep: Callable[[float], None] = time.sleep

    def backoff(self, attempt: int, retry_after: float | None = None) -> float:
        wait = min(self.max_delay, self.delay * (2 ** (attempt - 1)))
        if retry_after is not None:
            wait = min(self.max_delay, max(wait, retry_after))
        return wait


@dataclass
class CallRecord:
    """One HTTP request to a model, as stored in ``llm_calls``."""

    purpose: str
    trajectory: str | None
    model: str
    status: str  # ok | http-429 | http-500 | timeout | connection | error
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None  # None: the backend does not know the price
    latency_ms: int = 0
    error: str | None = None
    called_at: datetime = field(default_factory=lambda: datetime.now(UTC))


OnCall = Callable[[CallRecord], None]


class LLMBackend(ABC):
    """A way to reach models. ``handles`` says which model strings it serves."""

    #: Stable identifier, recorded with every call.
    name: str
    #: Higher wins when several backends handle the same model string.
    priority: int = 0

    @abstractmethod
    def handles(self, model: str) -> bool:
        """True when this backend can call ``model``."""

    @abstractmethod
    def structured(self, request: Request, *, model: str, api_base: str | None, policy: RetryPolicy,
                   on_call: OnCall) -> BaseModel:
        """The validated answer. Raises ModelUnavailable, InvalidAnswer or LLMError."""

    def count_tokens(self, model: str, messages: list[dict[str, str]]) -> int:
        """Input tokens of ``messages``; a rough estimate is fine (used for budget admission)."""
        return sum(len(m.get("content", "")) for m in messages) // 4 + 4 * len(messages)

    def price(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        """Cost in USD of that many tokens, None when unknown."""
        return None


def backend_for(model: str) -> LLMBackend:
    from pipeline.plugins import registered_llm_backends

    for backend in registered_llm_backends():
        if backend.handles(model):
            return backend
    raise LLMError(f"no LLM backend handles the model {model!r}",
                   hint="use a litellm model string such as openai/gpt-4o-mini, or install the backend plugin")
