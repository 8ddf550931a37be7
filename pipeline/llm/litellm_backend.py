"""The built-in backend: any litellm model string, answers validated by instructor.

litellm and instructor are imported on the first request (never at import time). The
OpenAI SDK's own retries are switched off so that every HTTP request is one we count,
back off from and record; instructor re-asks when an answer does not validate.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from functools import cache
from typing import Any

from pydantic import BaseModel

from pipeline.llm.backend import (
    CallRecord,
    InvalidAnswer,
    LLMBackend,
    LLMError,
    ModelUnavailable,
    OnCall,
    Request,
    RetryPolicy,
)

#: Sent as the API key to an OpenAI-compatible server at ``api_base`` when none is configured:
#: local servers (Ollama, vLLM, llama.cpp) ignore it, the OpenAI SDK refuses to start without one.
LOCAL_KEY = "sk-local-no-key"
_import_lock = threading.Lock()


@cache
def _modules() -> tuple[Any, Any, type[Exception]]:
    from pipeline import settings

    settings.apply_offline_env()  # before the import: no price-map download
    with _import_lock:
        import instructor
        import litellm
        from instructor.core import InstructorRetryException

    litellm.suppress_debug_info = True
    litellm.drop_params = True  # a provider without response_format support still answers
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "instructor", "httpx"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return litellm, instructor, InstructorRetryException


class LiteLLMBackend(LLMBackend):
    name = "litellm"
    priority = 0

    def handles(self, model: str) -> bool:
        return bool(model)

    def count_tokens(self, model: str, messages: list[dict[str, str]]) -> int:
        litellm, _, _ = _modules()
        try:
            return int(litellm.token_counter(model=model, messages=messages))
        except Exception:  # an unknown tokenizer must not stop a run: fall back to an estimate
            return super().count_tokens(model, messages)

    def price(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        litellm, _, _ = _modules()
        try:
            prompt, completion = litellm.cost_per_token(model=model, prompt_tokens=input_tokens,
                                                         completion_tokens=output_tokens)
        except Exception:  # litellm raises for models it has no price for
            return None
        return float(prompt) + float(completion)

    def structured(self, request: Request, *, model: str, api_base: str | None, policy: RetryPolicy,
                   on_call: OnCall) -> BaseModel:
        litellm, instructor, retry_exhausted = _modules()
        transient = (litellm.RateLimitError, litellm.InternalServerError, litellm.ServiceUnavailableError,
                     litellm.APIConnectionError, litellm.Timeout, litellm.BadGatewayError)

        def completion(**kwargs: Any) -> Any:
            kwargs.update(max_retries=0, num_retries=0, timeout=policy.timeout)
            for attempt in range(1, policy.attempts + 1):
                started = time.monotonic()
                try:
                    response = litellm.completion(**kwargs)
                except transient as exc:
                    status = _status(exc)
                    on_call(CallRecord(purpose=request.purpose, trajectory=request.trajectory, model=model,
                                       status=status, latency_ms=_ms(started), error=_short(exc)))
                    if _missing_key(exc):  # raised before anything was sent: retrying cannot help
                        raise ModelUnavailable(f"no API key for {model}: {_short(exc)}", hint=_KEY_HINT) from exc
                    if attempt == policy.attempts:
                        raise ModelUnavailable(
                            f"the model {model} did not answer ({status}: {_short(exc)}) after {attempt} "
                            f"attempt{'s' if attempt > 1 else ''}",
                            hint="check the server or the provider's status page, and SKILLMILL_API_BASE") from exc
                    policy.sleep(policy.backoff(attempt, _retry_after(exc)))
                    continue
                except (litellm.AuthenticationError, litellm.PermissionDeniedError) as exc:
                    on_call(CallRecord(purpose=request.purpose, trajectory=request.trajectory, model=model,
                                       status=_status(exc), latency_ms=_ms(started), error=_short(exc)))
                    raise ModelUnavailable(f"the provider refused the request for {model}: {_short(exc)}",
                                           hint=_KEY_HINT) from exc
                except litellm.ContextWindowExceededError as exc:
                    on_call(CallRecord(purpose=request.purpose, trajectory=request.trajectory, model=model,
                                       status=_status(exc), latency_ms=_ms(started), error=_short(exc)))
                    raise LLMError(f"the prompt is longer than {model} accepts: {_short(exc)}",
                                   hint="lower chunk_chars in the [llm] section of skillmill.toml") from exc
                except (litellm.NotFoundError, litellm.BadRequestError) as exc:
                    on_call(CallRecord(purpose=request.purpose, trajectory=request.trajectory, model=model,
                                       status=_status(exc), latency_ms=_ms(started), error=_short(exc)))
                    raise ModelUnavailable(f"the model {model} rejected the request: {_short(exc)}",
                                           hint="check SKILLMILL_MODEL (a litellm model string such as "
                                                "openai/gpt-4o-mini) and SKILLMILL_API_BASE") from exc
                usage = getattr(response, "usage", None)
                tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
                tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
                on_call(CallRecord(purpose=request.purpose, trajectory=request.trajectory, model=model,
                                   status="ok", input_tokens=tokens_in, output_tokens=tokens_out,
                                   cost_usd=_cost(litellm, response), latency_ms=_ms(started)))
                return response
            raise AssertionError("unreachable")

        client = instructor.from_litellm(completion, mode=instructor.Mode.JSON)
        kwargs: dict[str, Any] = {"model": model, "max_tokens": policy.max_output_tokens}
        if api_base:
            kwargs["api_base"] = api_base
            if model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
                kwargs["api_key"] = LOCAL_KEY
        try:
            return client.chat.completions.create(
                response_model=request.response_model, messages=[dict(m) for m in request.messages],
                max_retries=policy.validation_retries, context=request.context, **kwargs)
        except retry_exhausted as exc:
            cause = exc.__cause__
            if isinstance(cause, LLMError):
                raise cause from None
            if exc.failed_attempts:
                raise InvalidAnswer(f"the answer of {model} did not validate after {exc.n_attempts} "
                                    f"attempts: {_short(cause or exc)}",
                                    hint="a stronger model, or a later run, may do better") from exc
            raise LLMError(f"calling {model} failed: {_short(cause or exc)}") from exc


_KEY_HINT = ("set the provider's API key in its usual environment variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, "
             "GEMINI_API_KEY ...), or SKILLMILL_API_BASE for a local OpenAI-compatible server")


def _missing_key(exc: BaseException) -> bool:
    text = str(exc)
    return "Missing credentials" in text or "api_key client option must be set" in text


def _status(exc: BaseException) -> str:
    if "Connection error" in str(exc) or isinstance(exc.__cause__, ConnectionError):
        return "connection"  # litellm reports a refused connection as a 500
    code = getattr(exc, "status_code", None)
    if isinstance(code, int) and code >= 400:
        return f"http-{code}"
    name = type(exc).__name__.lower()
    return "timeout" if "timeout" in name else "connection" if "connection" in name else "error"


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _cost(litellm: Any, response: Any) -> float | None:
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # no price known for this model (local servers, new models)
        return None


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def _short(exc: BaseException, limit: int = 300) -> str:
    from pipeline.errors import validation_summary

    text = " ".join(validation_summary(exc).split())  # an answer that did not validate: no pydantic links
    return text if len(text) <= limit else text[: limit - 3] + "..."
