"""Cheap tests on a candidate value: is it random-looking, a placeholder, code, a word?

Detectors find *where* a secret could be; these decide whether the value there is one.
They run only on candidates (a few per kilobyte of text), never over the whole text.
"""

from __future__ import annotations

import math
import re
from collections import Counter

_PLACEHOLDER = re.compile(
    r"\$\{|\{\{|\}\}|%\(|%s\b|<[^>]{0,40}>|x{4,}|X{4,}|\*{3,}|\.\.\.|\u2026|\[REDACTED|REDACTED|"
    r"(?i:your[_-]?|example|placeholder|changeme|dummy|sample|replace[_-]?me|insert[_-]?|put[_-]?your)")
#: The same, for a value that looks generated with punctuation (a Django ``SECRET_KEY``, a WordPress salt):
#: ``%(``, ``%s!``, ``<...>`` or a lone ``{{`` in such a value are where its random characters fell,
#: so only whole template forms and placeholder words count.
_GENERATED_PLACEHOLDER = re.compile(
    r"\$\{[A-Za-z_]|\{\{.*\}\}|%\(\w+\)|<[A-Za-z][\w .-]{0,40}>|x{4,}|X{4,}|\*{3,}|\.\.\.|\u2026|REDACTED|"
    r"(?i:your[_-]?|example|placeholder|changeme|dummy|sample|replace[_-]?me|insert[_-]?|put[_-]?your)")
_WORDS = re.compile(r"[a-z]+(?:[-_.][a-z]+)*|[A-Z]+(?:[-_.][A-Z]+)*|[A-Z]?[a-z]+(?:[A-Z][a-z]+)+")
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX = re.compile(r"[0-9a-fA-F]+")
_NOT_VALUES = frozenset({
    "none", "null", "nil", "true", "false", "undefined", "required", "optional", "string", "str", "text",
    "password", "passwd", "secret", "token", "hidden", "empty", "default", "unset", "string.empty", "bearer",
    "basic", "redacted", "masked", "sensitive",
})
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    if not text:
        return 0.0
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in Counter(text).values())


def classes(text: str) -> int:
    """How many of lower case, upper case and digits occur."""
    return (any(c.islower() for c in text) + any(c.isupper() for c in text) + any(c.isdigit() for c in text))


def is_placeholder(value: str) -> bool:
    """``${TOKEN}``, ``<your-key>``, ``xxxx``, ``***``, ``...``, an earlier placeholder ..."""
    if value.lower() in _NOT_VALUES:
        return True
    pattern = _GENERATED_PLACEHOLDER if looks_generated(value) else _PLACEHOLDER
    return bool(pattern.search(value))


def looks_generated(value: str) -> bool:
    """Random text with punctuation in it, as secret generators write: letters, digits and at least
    three symbols of two kinds or more, no blank, and a high entropy (``7p)abt3r_0k#i9-u)8%2609k(...``)."""
    if len(value) < 16 or " " in value:
        return False
    symbols = [c for c in value if not c.isalnum()]
    return (len(symbols) >= 3 and len(set(symbols)) >= 2 and any(c.isdigit() for c in value)
            and any(c.isalpha() for c in value) and entropy(value) >= 3.8)


def is_wordlike(value: str) -> bool:
    """A name rather than a secret: ``refresh_token``, ``MY_TOKEN``, ``accessToken``, ``sk-learn-docs``."""
    return bool(_WORDS.fullmatch(value))


def is_code(value: str) -> bool:
    """A reference or call, not a literal: ``settings.SECRET_KEY``, ``os.getenv(...)``, ``$TOKEN``."""
    return (value[:1] in "$%@&(" or "(" in value or ")" in value or bool(_DOTTED.fullmatch(value)))


def is_pathlike(value: str) -> bool:
    """A URL or a file path: ``./x``, ``~/.ssh/id_rsa``, ``/usr/lib/x`` -- not base64 that has slashes in it.

    A path's segments are words; a generated secret's pieces (``/lSN2umdfFMx/nm2rQ...``) mix
    lower case, upper case and digits.
    """
    if value.startswith(("./", "../", "~/", "//", "http://", "https://", "file:", "C:\\")):
        return True
    if "/" not in value:
        return False
    return not any(len(part) >= 8 and classes(part) == 3 for part in value.split("/"))


def random_like(value: str, *, min_length: int = 16) -> bool:
    """Looks generated: long enough, mixed character classes, no plain words."""
    if len(value) < min_length or is_wordlike(value):
        return False
    return classes(value) >= 2 and any(c.isdigit() for c in value) and entropy(value) >= 3.0


def is_uuid(value: str) -> bool:
    return bool(_UUID.fullmatch(value))


def is_hex(value: str) -> bool:
    return bool(_HEX.fullmatch(value))


def name_words(name: str) -> list[str]:
    """``OPENAI_API_KEY`` -> openai api key; ``secretAccessKey`` -> secret access key."""
    return [w.lower() for w in _NAME_WORDS.findall(name)]
