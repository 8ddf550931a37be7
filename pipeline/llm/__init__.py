"""Calling a language model: backends (plugins), retries, budget, usage records.

Nothing in this package imports litellm at import time: the built-in backend imports it on
the first request, so every code path that does not call a model stays free of it (and of
its ~2 s import). ``tests/test_llm_imports.py`` checks that in a subprocess.
"""

from pipeline.llm.backend import (
    BudgetReached,
    CallRecord,
    InvalidAnswer,
    LLMBackend,
    LLMError,
    ModelUnavailable,
    Request,
    backend_for,
)
from pipeline.llm.client import LLMClient, LLMSettings

__all__ = [
    "BudgetReached",
    "CallRecord",
    "InvalidAnswer",
    "LLMBackend",
    "LLMClient",
    "LLMError",
    "LLMSettings",
    "ModelUnavailable",
    "Request",
    "backend_for",
]
