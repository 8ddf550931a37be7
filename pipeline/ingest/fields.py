"""The fields of a JSON file's first object, read past values of any size, for format detection.

A sniff that looks for a key in the first 64 KiB depends on where that key falls in the file:
a mini-swe-agent run writes ``info`` (holding the whole submitted patch) before ``messages``;
an OpenHands export's first event holds the whole system prompt before its ``"action"``. This
reads the keys of the top-level object (or of a top-level list's first element) and steps over
each value without parsing it: a string by finding its closing quote, an object or a list by counting
brackets, noting the object's own keys. It reads no further than ``MAX_SCAN_BYTES``, gives up
past orjson's nesting limit (the parser could not read the file either), and never raises:
malformed JSON ends the scan with what was found before it.

    fields = scan_fields(head, more)   # more(size) -> the next bytes of the file, b"" at its end
    fields.text("schema_version")      # 'ATIF-v1.2'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson

#: Bytes of a file read at most to find the fields of its first object.
MAX_SCAN_BYTES = 16 * 1024 * 1024
#: orjson refuses deeper documents; the scan stops there too.
MAX_DEPTH = 1024
#: Strings up to this many bytes (encoded) keep their value; longer ones only their kind.
MAX_TEXT_BYTES = 4096

_WS = re.compile(rb"[ \t\r\n]*+")
_BACKSLASH = ord("\\")
_STRUCTURE = re.compile(rb'["{}\[\]]')
_SCALAR = re.compile(rb"[^,}\]\s]*+")


@dataclass(frozen=True)
class Field:
    """One top-level field: what kind of value it holds, and as much of it as detection needs."""

    kind: str  # "string", "object", "array" or "scalar"
    #: A string's value (when at most MAX_TEXT_BYTES), a scalar's literal (``null``, ``3``).
    text: str | None = None
    #: An object's own keys in order, as far as the scan got.
    keys: tuple[str, ...] = ()


@dataclass
class Fields:
    """The first object's fields in file order; ``complete`` when its closing brace was reached."""

    items: dict[str, Field] = field(default_factory=dict)
    complete: bool = False

    def __contains__(self, key: str) -> bool:
        return key in self.items

    def get(self, key: str) -> Field | None:
        return self.items.get(key)

    def text(self, key: str) -> str | None:
        """The value of a short string field, else None."""
        found = self.items.get(key)
        return found.text if found is not None and found.kind == "string" else None

    def kind(self, key: str) -> str | None:
        found = self.items.get(key)
        return found.kind if found is not None else None


class _Truncated(Exception):
    """The budget ran out, the file ended, or the JSON broke: stop with what was found."""


class _Buffer:
    """The file's bytes read so far; positions stay valid as it grows."""

    def __init__(self, data: bytes, more: Callable[[int], bytes], budget: int) -> None:
        self.data = data
        self._more = more
        self._budget = budget

    def grow(self) -> None:
        """Read on, doubling what is held (so a 16 MiB value costs a few reads, not thousands)."""
        if len(self.data) >= self._budget:
            raise _Truncated
        chunk = self._more(min(max(len(self.data), 64 * 1024), self._budget - len(self.data)))
        if not chunk:
            raise _Truncated
        self.data += chunk[: self._budget - len(self.data)]

    def match(self, pattern: re.Pattern[bytes], pos: int) -> re.Match[bytes]:
        """``pattern.match`` at ``pos``, reading on while the match could still reach further."""
        while True:
            found = pattern.match(self.data, pos)
            if found is not None and found.end() < len(self.data):
                return found
            try:
                self.grow()
            except _Truncated:
                if found is None:
                    raise
                return found

    def string_end(self, start: int) -> int:
        """Where the string whose text begins at ``start`` ends (after its closing quote).

        ``bytes.find`` runs at memory speed; only a quote with an odd run of backslashes before it
        (escaped) costs a step in Python. A regex over the characters is 20 times slower here.
        """
        pos = start
        while True:
            quote = self.data.find(b'"', pos)
            if quote < 0:
                pos = len(self.data)
                self.grow()
                continue
            before = quote
            while before > start and self.data[before - 1] == _BACKSLASH:
                before -= 1
            if (quote - before) % 2 == 0:
                return quote + 1
            pos = quote + 1

    def search(self, pattern: re.Pattern[bytes], pos: int) -> re.Match[bytes]:
        while (found := pattern.search(self.data, pos)) is None:
            self.grow()
        return found

    def byte(self, pos: int) -> int:
        """The byte at ``pos``."""
        while pos >= len(self.data):
            self.grow()
        return self.data[pos]

    def skip_ws(self, pos: int) -> int:
        return self.match(_WS, pos).end()


def scan_fields(head: bytes, more: Callable[[int], bytes], budget: int = MAX_SCAN_BYTES) -> Fields:
    """The fields of the first object in ``head`` followed by what ``more(size)`` returns (b"" at the end)."""
    fields = Fields()
    buffer = _Buffer(head, more, budget)
    try:
        pos = buffer.skip_ws(0)
        if buffer.byte(pos) == ord("["):
            pos = buffer.skip_ws(pos + 1)
        if buffer.byte(pos) != ord("{"):
            return fields
        pos = buffer.skip_ws(pos + 1)
        if buffer.byte(pos) == ord("}"):
            fields.complete = True
            return fields
        while True:
            key, pos = _string(buffer, pos)
            pos = buffer.skip_ws(pos)
            if buffer.byte(pos) != ord(":"):
                return fields
            pos = buffer.skip_ws(pos + 1)
            value, pos = _value(buffer, pos)
            if key is not None:
                fields.items.setdefault(key, value)
            pos = buffer.skip_ws(pos)
            after = buffer.byte(pos)
            if after == ord("}"):
                fields.complete = True
                return fields
            if after != ord(","):
                return fields
            pos = buffer.skip_ws(pos + 1)
    except _Truncated:
        return fields


def _string(buffer: _Buffer, pos: int) -> tuple[str | None, int]:
    """A string at ``pos``: its value (None when too long or not decodable) and the position after it."""
    if buffer.byte(pos) != ord('"'):
        raise _Truncated
    end = buffer.string_end(pos + 1)
    if end - pos > MAX_TEXT_BYTES:
        return None, end
    try:
        value = orjson.loads(buffer.data[pos:end])
    except orjson.JSONDecodeError:
        return None, end
    return (value if isinstance(value, str) else None), end


def _value(buffer: _Buffer, pos: int) -> tuple[Field, int]:
    first = buffer.byte(pos)
    if first == ord('"'):
        text, end = _string(buffer, pos)
        return Field("string", text), end
    if first == ord("{") or first == ord("["):
        return _container(buffer, pos)
    end = buffer.match(_SCALAR, pos).end()
    if end == pos:
        raise _Truncated  # not a JSON value
    return Field("scalar", buffer.data[pos:end][:64].decode("utf-8", errors="replace")), end


def _container(buffer: _Buffer, pos: int) -> tuple[Field, int]:
    """Step over the object or list at ``pos`` by counting brackets outside strings."""
    is_object = buffer.data[pos] == ord("{")
    keys: list[str] = []
    depth, pos = 1, pos + 1
    while depth:
        found = buffer.search(_STRUCTURE, pos)
        char, pos = found.group(), found.end()
        if char == b'"':
            start = pos - 1
            pos = buffer.string_end(pos)
            if is_object and depth == 1 and buffer.byte(buffer.skip_ws(pos)) == ord(":"):
                key, _ = _string(buffer, start)
                if key is not None:
                    keys.append(key)
        elif char in (b"{", b"["):
            depth += 1
            if depth > MAX_DEPTH:
                raise _Truncated
        else:
            depth -= 1
    return Field("object" if is_object else "array", keys=tuple(keys)), pos
