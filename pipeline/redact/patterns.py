"""Reading a regular expression's text: its top-level alternatives, where a group closes.

Both the vendored gitleaks rules (``vendored.py``, which splits their patterns) and the generated token
prefixes (``prefixes.py``, which expands their openings) walk patterns this way: escapes skipped, a
character class read as one piece (a ``]`` right after ``[`` is a member), parentheses counted.
"""

from __future__ import annotations

from collections.abc import Iterator


def _structure(pattern: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """(index, character) of each ``(``, ``)`` and ``|`` that is not escaped or in a character class."""
    i, in_class = start, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            i += 2 if pattern[i + 1:i + 2] == "]" else 1
            continue
        elif c in "()|":
            yield i, c
        i += 1


def alternatives(pattern: str) -> list[str]:
    """``pattern``'s top-level alternatives (``a|(b|c)|d`` -> ``a``, ``(b|c)``, ``d``)."""
    parts, depth, last = [], 0, 0
    for i, c in _structure(pattern):
        if c == "|" and depth == 0:
            parts.append(pattern[last:i])
            last = i + 1
        else:
            depth += {"(": 1, ")": -1}.get(c, 0)
    return [*parts, pattern[last:]]


def closing(pattern: str, i: int) -> int:
    """The index of the ``)`` that closes the ``(`` at ``i`` (the pattern's length when none does)."""
    depth = 0
    for n, c in _structure(pattern, i):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if c == ")" and depth == 0:
            return n
    return len(pattern)
