"""``Sanitized``: text the redactor has already seen. Only ``pipeline.redact`` makes one.

Text-bearing fields of the trajectory model (``Step.text``, ``command``, ``paths``, ``diff``,
``Trajectory.task``, ``cwd`` ...) are typed ``Sanitized``. Pydantic validation of such a field
**sanitizes** a plain ``str`` (runs the redactor on it) instead of rejecting it, because:

* every way a trajectory is (re)built must stay safe, not only the builder: a JSON read-back
  from the state database, a third-party format plugin that builds a ``Step`` itself, an
  assignment (``validate_assignment`` is on), a ``model_copy(update=...)``;
* rejecting would turn a forgotten call into a crash in the middle of a GB-sized ingest, while
  sanitizing turns it into a little extra work -- the redactor is idempotent (placeholders
  never match a detector), so re-sanitizing sanitized text changes nothing;
* a ``Sanitized`` value passes through unscanned, so the normal path (the builder redacts once)
  pays nothing twice. ``fallback_count()`` counts the plain strings that took the slow path,
  and a test keeps the builder's fields at zero.

Prefect hands trajectories between tasks with ``model_construct`` (no validation) and pickles
with ``__reduce__`` below, so a sanitized value stays one. Values found while validating are
reported to the innermost :func:`collecting` block (with the step's index when the field is a
``Step``'s), so a model can record what was redacted.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

#: (field, kind, count) tuples, appended by validation while a collecting() block is open.
Found = list[tuple[str, str, int]]
_collector: contextvars.ContextVar[Found | None] = contextvars.ContextVar("skillmill_redactions", default=None)
_fallbacks: Counter[str] = Counter()
#: How validation redacts a plain string: ``pipeline.redact.engine`` sets it when imported (the
#: package imports it first), so this module, which the engine builds on, does not import it.
_redactor: Callable[[str], tuple[str, dict[str, int]]] | None = None


def use_redactor(redactor: Callable[[str], tuple[str, dict[str, int]]]) -> None:
    global _redactor
    _redactor = redactor


class Sanitized(str):
    """A ``str`` the redactor produced: secrets in it are already placeholders.

    ``Sanitized("x")`` raises: use :func:`pipeline.redact.sanitize`. Slicing, ``strip()`` or
    concatenation give a plain ``str`` again (Python's own rule for ``str`` subclasses), which
    a model field then sanitizes once more -- safe by default.
    """

    __slots__ = ()

    def __new__(cls, *args: object, **kwargs: object) -> Sanitized:
        raise TypeError("Sanitized text comes from pipeline.redact.sanitize(), not from Sanitized(...)")

    def __reduce__(self) -> tuple[Callable[[str], Sanitized], tuple[str]]:
        return _make, (str(self),)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        # ``str()`` in pydantic-core, not a Python callback: a trajectory's JSON (its content id,
        # the state DB) has tens of thousands of text fields.
        return core_schema.with_info_plain_validator_function(
            _validate, serialization=core_schema.to_string_ser_schema(when_used="json"))

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: core_schema.CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return {"type": "string"}


def _make(text: str) -> Sanitized:
    """The private factory: only the redactor (and unpickling a Sanitized) call it."""
    return str.__new__(Sanitized, text)


EMPTY = _make("")

def _validate(value: Any, info: core_schema.ValidationInfo) -> Sanitized:
    if type(value) is Sanitized:
        return value
    if not isinstance(value, str):
        raise PydanticCustomError("string_type", "Input should be a valid string")
    _fallbacks[info.field_name or ""] += 1
    if _redactor is None:  # never: importing pipeline.redact imports the engine, which sets it
        raise RuntimeError("pipeline.redact.engine is not loaded: import pipeline.redact")
    text, counts = _redactor(value)
    found = _collector.get()
    if found is not None and counts:
        # Only a Step has an ``index`` (validated before its text fields): it names the step.
        index = info.data.get("index") if isinstance(info.data, dict) else None
        where = f"{index}:{info.field_name}" if isinstance(index, int) else (info.field_name or "")
        found.extend((where, kind, count) for kind, count in counts.items())
    return _make(text)


def fallback_count() -> dict[str, int]:
    """Plain strings sanitized by model validation (not by the builder), per field name."""
    return dict(_fallbacks)


@contextlib.contextmanager
def collecting() -> Iterator[Found]:
    """Collect what model validation redacts inside the block: (``"<step>:<field>"`` or field, kind, count)."""
    found: Found = []
    token = _collector.set(found)
    try:
        yield found
    finally:
        _collector.reset(token)


def collect(validate: Callable[[], object]) -> tuple[object, Found]:
    """``validate()`` with findings collected: the same as :func:`collecting`, cheaper (no generator)."""
    found: Found = []
    token = _collector.set(found)
    try:
        return validate(), found
    finally:
        _collector.reset(token)
