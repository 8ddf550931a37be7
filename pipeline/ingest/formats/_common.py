"""Small helpers shared by the Codex, Gemini CLI and OpenCode readers.

They turn the loosely typed values these formats hold (JSON in strings, part lists, edit
arguments) into the plain strings the builder takes, and pick the task among the prompts.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

import orjson

#: Argument names agents use for the file a tool reads or writes.
PATH_KEYS = ("file_path", "filePath", "path", "absolute_path", "dir_path", "notebook_path", "directory")

#: Prompts that open a session without asking for anything: not the task when a real request follows.
_CHATTER = re.compile(r"^\s*(hi|hello|hey|yo|hola|ping|test|testing|thanks?( you)?|ok(ay)?|show( me)? (the )?tools|"
                      r"what (tools|can you do).*|who are you|list (your )?tools)\b[\s.!?]*$", re.I)


class BadShape(ValueError):
    """A record whose fields have the wrong type; reported for its line, the rest is read."""


def expect(record: dict[str, Any], key: str, kinds: type | tuple[type, ...], what: str) -> Any:
    """``record[key]`` when it has one of ``kinds``; None when absent; BadShape otherwise."""
    value = record.get(key)
    if value is None or isinstance(value, kinds):
        return value
    names = " or ".join(k.__name__ for k in (kinds if isinstance(kinds, tuple) else (kinds,)))
    raise BadShape(f"{what}: {key!r} should be {names}, found {type(value).__name__}")


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


def repo_slug(url: Any) -> str | None:
    """``git@github.com:owner/name.git`` or ``https://host/owner/name`` -> ``owner/name``."""
    if not isinstance(url, str):
        return None
    match = re.match(r"^(?:[\w+.-]+://)?(?:[^@/\s]+@)?[^/:\s]+[:/](?P<path>[^\s]+?)(?:\.git)?/*$", url.strip())
    if not match:
        return None
    parts = [p for p in match.group("path").split("/") if p]
    return "/".join(parts[-2:]) if len(parts) >= 2 else None
