"""What an edit changed, said so a reader learns something: the function it touched, the lines that matter.

"Edit `src/hooks/index.ts`: add `/**`" says nothing. An edit is described by the code it changed
(the function or class a hunk sits in, from the hunk header or the definition lines) and by its
first meaningful before -> after pair, or it is not described at all.
"""

from __future__ import annotations

import re

_HUNK = re.compile(r"^@@[^@]*@@\s*(.*)$", re.M)
_DEFINITION = re.compile(r"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:def|class|function|func|fn|interface|type|"
                         r"struct|enum|impl)\s+([A-Za-z_$][\w$]*)|^\s*(?:export\s+)?(?:const|let)\s+([A-Za-z_$][\w$]*)"
                         r"\s*=\s*(?:async\s*)?\(")
#: A line worth quoting: more than punctuation, a comment opener or a bare keyword.
_TRIVIAL = re.compile(r"^[\s\W]*$|^\s*(/\*\*?|\*/?|#|//|import\s+\w+|from\s+\S+\s+import\s+\w+|pass|return|else:|"
                      r"try:|finally:|\}|\)|\]|end|\}\)|\);?)\s*$")


def symbols(diff: str, path: str = "") -> list[str]:
    """Names of the functions and classes a diff changed, in order of appearance."""
    names: list[str] = []
    for header in _HUNK.findall(diff):
        match = _DEFINITION.match(header)
        if match:
            names.append(match.group(1) or match.group(2))
    for line in diff.splitlines():
        if line.startswith(("+", "-")) and not line.startswith(("+++", "---")):
            match = _DEFINITION.match(line[1:])
            if match:
                names.append(match.group(1) or match.group(2))
    return list(dict.fromkeys(n for n in names if len(n) > 1))


def change_lines(diff: str) -> tuple[str, str] | None:
    """The first meaningful (removed, added) pair of a diff, or ("", added) for a pure addition.

    None when the diff shows nothing worth quoting (only punctuation, comments, blank lines, or
    the same text before and after).
    """
    removed = [line[1:].strip() for line in diff.splitlines()
               if line.startswith("-") and not line.startswith("---") and _meaningful(line[1:])]
    added = [line[1:].strip() for line in diff.splitlines()
             if line.startswith("+") and not line.startswith("+++") and _meaningful(line[1:])]
    for old, new in zip(removed, added, strict=False):
        if old != new and len(old) <= 160 and len(new) <= 160:
            return old, new
    if added and not removed and len(added[0]) <= 160:
        return "", added[0]
    return None


def _meaningful(line: str) -> bool:
    return not _TRIVIAL.match(line) and len(line.strip()) > 3
