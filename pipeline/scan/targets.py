"""The targets a Makefile defines and the recipes a justfile does, read without a regex that backtracks.

A checkout's files are the attacker's: ``Makefile`` = ``"a" + " " * 100_000`` took a backtracking
pattern 36 s of the hook (``re`` holds the GIL, so the hook's own deadline could not fire), and scan
minutes on a justfile. Each line here is split at its first ``:`` or ``=`` by ``str`` methods, in
time linear in its length; a line longer than ``MAX_LINE`` is no rule line.
"""

from __future__ import annotations

import re

MAX_LINE = 4096
_MAKE_NAME = re.compile(r"[A-Za-z0-9][\w.-]*")
_JUST_NAME = re.compile(r"[A-Za-z_][\w-]*")


def _head(line: str, indented: tuple[str, ...]) -> str | None:
    """What precedes a rule's ``:`` on LINE (not ``:=``, not after an ``=``), or None when LINE is no rule."""
    if not line or len(line) > MAX_LINE or line.startswith(indented) or line.startswith("#"):
        return None
    colon, equals = line.find(":"), line.find("=")
    if colon < 0 or 0 <= equals < colon or line.startswith("=", colon + 1):
        return None
    return line[:colon]


def make_targets(line: str) -> list[str]:
    """``build test: deps`` -> ``["build", "test"]``; ``X := 1``, a recipe line (a tab first), a comment: []."""
    head = _head(line, ("\t",))
    if head is None or head[:1].isspace():
        return []
    return [name for name in head.split() if _MAKE_NAME.fullmatch(name)]  # not $(OBJ), %.o, .PHONY


def just_recipe(line: str) -> str | None:
    """``@test *ARGS: build`` -> ``"test"``; ``x := "1"``, an indented line, a comment: None."""
    head = _head(line, (" ", "\t"))
    if head is None:
        return None
    words = head.removeprefix("@").split()
    return words[0] if words and _JUST_NAME.fullmatch(words[0]) else None


def split_commands(line: str) -> list[str]:
    """A shell line cut at ``&&``, ``;`` and ``||`` (each part stripped)."""
    parts = [line]
    for separator in ("&&", "||", ";"):
        parts = [piece for part in parts for piece in part.split(separator)]
    return [part.strip() for part in parts]
