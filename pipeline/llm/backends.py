"""Built-in LLM backends. They register through the same hook as third-party plugins."""

from collections.abc import Callable

from pipeline.llm.backend import LLMBackend
from pipeline.llm.litellm_backend import LiteLLMBackend
from pipeline.plugins import hookimpl


@hookimpl
def register_llm_backends(register: Callable[[LLMBackend], None]) -> None:
    register(LiteLLMBackend())
