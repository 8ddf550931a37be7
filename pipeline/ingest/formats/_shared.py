"""Small helpers the SWE-agent, OpenHands and ATIF readers share.

They turn loosely typed JSON values into text without ever raising, so a field of the
wrong type costs that field, not the file.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

import orjson

_CRLF = re.compile(r"\r+\n")
_INSTANCE = re.compile(r"^(?P<owner>[A-Za-z0-9][\w.-]*?)__(?P<repo>[A-Za-z0-9][\w.-]*?)-i?\d+$")
_DIRNAME = re.compile(r"^(?P<owner>[A-Za-z0-9][\w.-]*?)__(?P<repo>[A-Za-z0-9][\w.-]*)$")
_GITHUB = re.compile(r"github\.com[/:](?P<owner>[\w.-]+)/(?P<repo>[\w.-]+?)(?:\.git)?(?:/|$)")


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


def unified(path: str, old: str, new: str) -> str:
    """A unified diff of one replacement, headed ``a/<path>`` / ``b/<path>`` like ``git diff``."""
    name = path.lstrip("/")
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{name}", f"b/{name}", lineterm="", n=1)
    return "\n".join(lines)


def repo_from_instance(instance_id: Any) -> str | None:
    """``django__django-16255`` -> ``django/django`` (SWE-bench instance ids)."""
    match = _INSTANCE.match(as_str(instance_id))
    return f"{match['owner']}/{match['repo']}" if match else None


def repo_from_dirname(name: str) -> str | None:
    """``pydicom__pydicom`` -> ``pydicom/pydicom`` (how SWE-bench images name the checkout)."""
    match = _DIRNAME.match(name)
    return f"{match['owner']}/{match['repo']}" if match else None


def repo_from_url(url: Any) -> str | None:
    match = _GITHUB.search(as_str(url))
    return f"{match['owner']}/{match['repo']}" if match else None
