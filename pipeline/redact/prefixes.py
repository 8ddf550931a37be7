"""The openings of the provider tokens redaction knows (ours and gitleaks'): ``AKIA``, ``xoxb-``, ``ghp_`` ...

The safety rules refuse a search for them as an ordinary command (``grep -r AKIA .`` looks for keys),
but ``pipeline.safety`` sits below this package and reads no code of it: the list is data there
(``prefixes`` in ``pipeline/safety/credentials.toml``), written from here, and a test fails when it
is stale. To update it after a rule changes::

    python -m pipeline.redact.prefixes --write

An opening is the literal text a rule's regex starts with, small classes and groups spelled out
(``gh[pousr]_`` -> ``ghp_``, ``gho_`` ...); one too plain to mean a token (``http``, ``sk``, ``pat``:
shorter than three characters, a lowercase word, three capitals) is left out.
"""

from __future__ import annotations

import re
import sys

from pipeline.redact.patterns import alternatives, closing
from pipeline.redact.rules import token_rules
from pipeline.redact.vendored import token_rules as gitleaks_rules

#: Openings a rule has that are words or version strings before they are tokens' openings.
TOO_PLAIN = {"API-": "a word (API-Version)", "v1.": "a version string (v1.0-rc1)", "v1.0-": "the same",
             "https://": "the opening of every web address", "pat.": "a word and a dot", "sat.": "the same"}
_LIMIT = 64  # spelled-out openings per rule, at most
_SMALL_CLASS = 8


def openings(regex: str) -> set[str]:
    """The literal openings of REGEX (Python syntax), small classes and groups spelled out."""
    regex = re.sub(r"^\(\?[a-z]+\)", "", regex)
    found: set[str] = set()
    for alternative in alternatives(regex):
        found |= _expand(alternative)[0]
    return {f for f in found if f}


def _optional(pattern: str, n: int) -> bool:
    return pattern[n:n + 1] in ("?", "*") or pattern.startswith("{0", n)


def _repeated(pattern: str, n: int) -> bool:
    return pattern[n:n + 1] in ("+", "{")


def _expand(pattern: str) -> tuple[set[str], bool]:
    """(the openings of PATTERN, whether all of PATTERN is literal so text after it may follow)."""
    found, n = {""}, 0
    while n < len(pattern):
        char = pattern[n]
        if char == "\\":
            escaped = pattern[n + 1:n + 2]
            if escaped in ("b", "B") and n == 0:
                n += 2
                continue
            if not escaped or escaped.isalnum():
                return found, False  # \d, \w, \s: a class, not a letter
            chars, end = {escaped}, n + 2
        elif char == "[":
            end = _class_end(pattern, n)
            body = pattern[n + 1:end - 1]
            if pattern[n + 1:n + 2] in ("^", "!") or re.search(r"\\[A-Za-z]|.-.", body) or len(body) > _SMALL_CLASS:
                return found, False  # a negated class, a range, \w: not a few letters
            chars = set(body.replace("\\", ""))
        elif char == "(":
            close = closing(pattern, n)
            inner = re.sub(r"^\?(?::|P<\w+>)", "", pattern[n + 1:close])
            if inner.startswith("?") or _optional(pattern, close + 1):
                return found, False
            spelled, complete = set(), True
            for alternative in alternatives(inner):
                more, whole = _expand(alternative)
                spelled |= more
                complete &= whole
            found = {f + s for f in found for s in spelled}
            if not complete or _repeated(pattern, close + 1) or len(found) > _LIMIT:
                return found, False
            n = close + 1
            continue
        elif char in ".^$|*+?{)":
            return found, False
        else:
            chars, end = {char}, n + 1
        if _optional(pattern, end):
            return found, False
        found = {f + c for f in found for c in chars}
        if _repeated(pattern, end) or len(found) > _LIMIT:
            return found, False
        n = end
    return found, True


def _class_end(pattern: str, n: int) -> int:
    """The index after the ``]`` that closes the class opening at N."""
    end = n + 1 + (pattern[n + 1:n + 2] in ("^", "!"))
    end += pattern[end:end + 1] == "]"
    while end < len(pattern) and pattern[end] != "]":
        end += 2 if pattern[end] == "\\" else 1
    return end + 1


def distinct(opening: str) -> bool:
    """Whether OPENING means a token: three characters or more, not a lowercase word, not three capitals."""
    return len(opening) >= 3 and not re.fullmatch(r"[a-z]+|[A-Z]{3}", opening) and opening not in TOO_PLAIN


def provider_prefixes() -> list[str]:
    """The openings of every provider-token rule redaction has, sorted."""
    found: set[str] = set()
    for rule in [*token_rules(), *gitleaks_rules()]:
        source = rule.pattern.pattern.decode()
        before = rule.before.decode() if rule.before else ""
        found |= {o for o in {before, *openings(source)} if distinct(o)}
    return sorted(found, key=lambda p: (p.lower(), p))


def write(path: object = None) -> bool:
    """Put the prefixes into the safety data file; whether it changed."""
    from pathlib import Path

    from pipeline.safety.credentials import DATA_FILE

    file = Path(str(path)) if path else DATA_FILE
    text = file.read_text(encoding="utf-8")
    listed = "prefixes = [\n" + "".join(f"    {_toml(p)},\n" for p in provider_prefixes()) + "]\n"
    new = re.sub(r"(?ms)^prefixes = \[\n.*?^\]\n", lambda _: listed, text, count=1)
    if new != text:
        file.write_text(new, encoding="utf-8")
    return new != text


def _toml(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        print("updated" if write() else "up to date")
    else:
        print("\n".join(provider_prefixes()))
