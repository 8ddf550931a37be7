"""The LLM distiller: extract drafts per trajectory (in parallel), consolidate them into the library (serially).

Used when a model is configured (``SKILLMILL_MODEL``); it produces the same ``Skill`` model as
the zero-LLM distiller. Nothing here imports litellm: the backend does, on the first request.
"""

from pipeline.distill.llm.prompts import PROMPT_VERSION

NAME = "llm"


def version(model: str) -> str:
    """The distiller version recorded per trajectory: a new prompt or model redoes the work."""
    return f"{PROMPT_VERSION}:{model}"


__all__ = ["NAME", "PROMPT_VERSION", "version"]
