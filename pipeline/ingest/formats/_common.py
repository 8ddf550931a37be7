"""Small helpers the format readers share.

They turn the loosely typed values these formats hold (JSON in strings, part lists, edit
arguments) into the plain strings the builder takes without ever raising, so a field of the
wrong type costs that field, not the file; and they pick the task among the prompts.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from pipeline.ingest.identity import repo_slug as repo_slug  # where the formats have always found it

if TYPE_CHECKING:
    from pipeline.ingest.report import FileReport

#: Argument names agents use for the file a tool reads or writes.
PATH_KEYS = ("file_path", "filePath", "path", "absolute_path", "dir_path", "notebook_path", "directory")

#: Prompts that open a session without asking for anything: not the task when a real request follows.
_CHATTER = re.compile(r"^\s*(hi|hello|hey|yo|hola|ping|test|testing|thanks?( you)?|ok(ay)?|show( me)? (the )?tools|"
                      r"what (tools|can you do).*|who are you|list (your )?tools)\b[\s.!?]*$", re.I)


class BadShape(ValueError):
    """A record whose fields have the wrong type; reported for its line, the rest is read."""


#: What translating a record of an unexpected shape raises: the parsers' own BadShape (a
#: ValueError) and the errors of a field that is missing or of another type than the format says.
SHAPE_ERRORS = (TypeError, AttributeError, ValueError, KeyError)


def shape_error(what: str, exc: Exception) -> str:
    """The report line for a record that could not be read: ``<what>: <why>``.

    Every parser reads record by record and catches ``SHAPE_ERRORS`` around each one, so a bad
    record costs that record; this is the one wording of what it lost.
    """
    if isinstance(exc, BadShape):
        return f"{what}: {exc}"  # says which field and what it should have been
    return f"{what}: unexpected shape ({type(exc).__name__}: {exc})"


def add_record(record: Any, line: int, report: FileReport, add: Callable[[dict[str, Any], int], None],
               noun: str) -> None:
    """Hand one JSONL record to ``add``; a value that is not an object, or an object of the wrong
    shape, is reported for its line (``a 'user' <noun>: ...``) and the read goes on."""
    if not isinstance(record, dict):
        report.error(f"expected a JSON object, found {type(record).__name__}", line)
        return
    try:
        add(record, line)
    except SHAPE_ERRORS as exc:
        report.error(shape_error(f"a {record.get('type')!r} {noun}", exc), line)


def expect(record: dict[str, Any], key: str, kinds: type | tuple[type, ...], what: str = "") -> Any:
    """``record[key]`` when it has one of ``kinds``; None when absent; BadShape otherwise.

    ``what`` names ``record`` when it is not the record the parser reports (a tool call inside
    a message); the report already names that one (``shape_error``).
    """
    value = record.get(key)
    if value is None or isinstance(value, kinds):
        return value
    names = " or ".join(k.__name__ for k in (kinds if isinstance(kinds, tuple) else (kinds,)))
    where = f"{what}: " if what else ""
    raise BadShape(f"{where}{key!r} should be {names}, found {type(value).__name__}")


def loads_object(text: Any) -> dict[str, Any] | None:
    """A JSON object held in a string (tool arguments); None when it is not one."""
    if isinstance(text, dict):
        return text
    if not isinstance(text, str) or not text.lstrip().startswith("{"):
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def as_text(value: Any) -> str:
    """Text of a string, a content part, or a list of parts (``text`` / ``output`` fields)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(t for t in (as_text(v) for v in value) if t)
    if isinstance(value, dict):
        for key in ("text", "output", "content"):
            if isinstance(value.get(key), str | list):
                return as_text(value[key])
        if value.get("type") in ("input_image", "image", "image_url"):
            return "[image]"
    return orjson.dumps(value, default=str).decode()


def paths_in(args: dict[str, Any]) -> list[str]:
    return [args[k] for k in PATH_KEYS if isinstance(args.get(k), str) and args[k]]


def unified(path: str, old: str, new: str) -> str:
    name = path.lstrip("/")
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{name}", f"b/{name}", lineterm="", n=1)
    return "\n".join(lines)


def describe(name: str, args: dict[str, Any]) -> str:
    """One line saying what a non-shell tool call asked for."""
    for key in ("pattern", "query", "url", "description", "objective", "prompt", *PATH_KEYS):
        value = args.get(key)
        if isinstance(value, str) and value:
            return f"{name} {value}"
    return f"{name} {orjson.dumps(args, default=str).decode()[:500]}"


def pick_task(prompts: list[str]) -> str | None:
    """The first prompt that asks for something; a greeting or "show tools" opener is not the task."""
    for prompt in prompts:
        if prompt.strip() and not _CHATTER.match(prompt):
            return prompt
    return next((p for p in prompts if p.strip()), None)


_CRLF = re.compile(r"\r+\n")
_INSTANCE = re.compile(r"^(?P<owner>[A-Za-z0-9][\w.-]*?)__(?P<repo>[A-Za-z0-9][\w.-]*?)-i?\d+$")
_DIRNAME = re.compile(r"^(?P<owner>[A-Za-z0-9][\w.-]*?)__(?P<repo>[A-Za-z0-9][\w.-]*)$")


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str:
    """A string field as text; numbers and booleans printed, anything else empty."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    return ""


def text_of(content: Any) -> str:
    """Message content in any of the usual shapes: a string, a list of parts, an object."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                parts.append(text if isinstance(text, str) else f"[{as_str(part.get('type')) or 'part'}]")
        return "\n".join(p for p in parts if p)
    if content is None:
        return ""
    return dumps(content)


def dumps(value: Any) -> str:
    try:
        return orjson.dumps(value, default=str).decode()
    except (TypeError, orjson.JSONEncodeError):
        return str(value)


def unix_newlines(text: str) -> str:
    """Terminal output recorded through a pty ends its lines with ``\\r\\n``."""
    return _CRLF.sub("\n", text) if "\r" in text else text




def repo_from_instance(instance_id: Any) -> str | None:
    """``django__django-16255`` -> ``django/django`` (SWE-bench instance ids)."""
    match = _INSTANCE.match(as_str(instance_id))
    return f"{match['owner']}/{match['repo']}" if match else None


def repo_from_dirname(name: str) -> str | None:
    """``pydicom__pydicom`` -> ``pydicom/pydicom`` (how SWE-bench images name the checkout)."""
    match = _DIRNAME.match(name)
    return f"{match['owner']}/{match['repo']}" if match else None

