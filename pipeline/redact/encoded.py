"""Secrets written another way: a token wrapped over two lines, or text encoded in base64.

* **Wrapped tokens.** A terminal or an editor cuts a long token at the end of a line and goes
  on with it on the next one, often indented: ``ghp_abc...`` / ``    ...xyz`` (real or
  JSON-escaped line breaks, lines of a diff or a quote). The provider-token rules run on the two
  parts joined; the whole span, line break included, is redacted under the token's kind. A
  token complete on its own line is not joined with a plain word that follows it.
* **base64.** A kubectl Secret's ``data:`` values, ``echo ... | base64 -d``, a ``.env`` stored
  as a secret: runs of standard base64 of at least 24 characters whose first bytes decode to
  printable text are decoded, and every other detector runs on the result; if they find
  anything, the whole run is redacted as ``base64-secret``.

Both ride on the token scanner's one pass over the runs of token characters (``View.runs``):
it asks :class:`WrappedTokens` about runs that touch a line break, and notes runs that may open
base64 of printable text (``View.base64_starts``). Decoding happens only where the first
characters of three 4-character groups fit (about one random run in twenty), up to ``_MAX_DECODE``.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable, Iterator

from pipeline.redact.heuristics import classes, is_wordlike
from pipeline.redact.rules import MIN_RUN, PRIORITY_PROVIDER, Candidate, TokenRule, View, token_span

# -- wrapped tokens ---------------------------------------------------------------------------
#: A line break (``\r\n``, ``\n`` or their JSON escapes), then the next line's diff or quote
#: marker (``+``, ``-``, ``>``) and indentation: a wrapped line of a diff goes on as ``+    rest``.
_BREAK = re.compile(rb"(?:\r?\n|\\r\\n|\\n)[-+>]?(?:[ \t]|\\t)*")
_TOKEN = re.compile(rb"[A-Za-z0-9_-]+")
_TOKEN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


class WrappedTokens:
    """Provider tokens cut in two by a line break; :class:`TokenScanner` asks, run by run.

    Not a rule of its own: the scanner already holds each run and the token rules its first
    two characters lead to, so asking here costs a byte comparison per run.
    """

    def __init__(self) -> None:
        self.by_start: dict[bytes, list[TokenRule]] = {}

    def first_part(self, view: View, rules: list[TokenRule], start: int, end: int) -> Candidate | None:
        """The run ``start:end`` begins a token (``rules`` matched its start) and ends at a line break."""
        brk = _BREAK.match(view.data, end)
        tail = _TOKEN.match(view.data, brk.end()) if brk is not None else None
        if brk is None or tail is None:
            return None
        return self._match(view, rules, start, end, brk.end(), tail.end())

    def second_part(self, view: View, start: int, end: int) -> Candidate | None:
        """The run ``start:end`` opens a line: does a short first part end the line before?"""
        data = view.data
        i = start
        while i > 0 and data[i - 1] in b" \t":
            i -= 1
        if data[i - 1:i] in (b"+", b"-", b">"):  # a diff's or a quote's line marker
            i -= 1
        if data[i - 1:i] == b"\n":
            brk = i - 1 - (data[i - 2:i - 1] == b"\r")
        elif data[i - 2:i] == b"\\n":
            brk = i - 2 - 2 * (data[i - 4:i - 2] == b"\\r")
        else:
            return None
        head = brk
        while head > 0 and data[head - 1] in _TOKEN_BYTES and brk - head < MIN_RUN:
            head -= 1
        if brk - head < 2 or brk - head >= MIN_RUN or (head and data[head - 1] in _TOKEN_BYTES):
            return None  # no first part, or one long enough to be a run of its own (first_part's case)
        if data[head:head + 1] == b"-":
            head += 1  # a removed line of a diff: '-' is a token character
        rules = self.by_start.get(data[head:head + 2])
        return None if rules is None else self._match(view, rules, head, brk, start, end)

    @staticmethod
    def _match(view: View, rules: list[TokenRule], head: int, brk: int, resume: int, stop: int) -> Candidate | None:
        """The token in ``data[head:brk] + data[resume:stop]``, if it goes on past the break."""
        data, text = view.data, view.text
        first = brk - head
        joined = data[head:brk] + data[resume:stop]
        for rule in rules:
            match = rule.pattern.match(joined)
            token_start, end = token_span(match, rule.group) if match is not None else (0, 0)
            if match is None or end <= first:
                continue
            if rule.bounded_after and end < len(joined) and joined[end] in _TOKEN_BYTES:
                continue
            if rule.check is not None and not rule.check(joined[token_start:end].decode()):
                continue
            if _whole(rule, view, head, brk) and not _token_like(text[resume:resume + end - first]):
                continue  # a whole token, then the next line's first word (``python3 run.py``)
            return Candidate(head, resume + end - first, rule.kind, rule.priority)
        return None


def _whole(rule: TokenRule, view: View, head: int, brk: int) -> bool:
    """Is the line's part a whole token by itself (the rule and its check take it as it is)?"""
    alone = rule.pattern.fullmatch(view.data, head, brk)
    if alone is None:
        return False
    start, end = token_span(alone, rule.group)
    return rule.check is None or rule.check(view.text[start:end])


def _token_like(rest: str) -> bool:
    """Could ``rest`` be the rest of a token cut by the line break, not an ordinary word?

    Generated text of eight characters or more mixes upper case, lower case and digits nearly
    always; a command, a word or a name (``python3``, ``h2o``, ``ls``) does not.
    """
    return len(rest) >= 8 and classes(rest) == 3 and not is_wordlike(rest)


# -- base64 -----------------------------------------------------------------------------------
KIND_BASE64 = "base64-secret"
_MIN_BASE64 = 24
_MAX_DECODE = 64 * 1024
_BASE64_SPAN = re.compile(rb"[A-Za-z0-9+/]+={0,2}")
#: The first character of each 4-character group of base64 of printable ASCII (its top 6 bits).
_PRINTABLE_LEAD = frozenset(b"IJKLMNOPQRSTUVWXYZabcdef")
_PRINTABLE = bytes(range(0x20, 0x7F)) + b"\t\n\r"


class Base64Rule:
    """base64 runs that decode to text holding a secret (``find`` is the other detectors)."""

    def __init__(self, find: Callable[[str], list]) -> None:
        self.inner = find

    @staticmethod
    def wanted(view: View) -> bool:
        return bool(view.base64_starts)  # noted by the token scanner, which runs first

    def find(self, view: View) -> Iterator[Candidate]:
        data = view.data
        done = -1
        for start in view.base64_starts:
            if start < done or not _printable_lead(data, start):
                continue
            span = _BASE64_SPAN.match(data, start)
            if span is None or span.end() - start < _MIN_BASE64:
                continue
            done = span.end()
            if span.end() < len(data) and data[span.end()] in b"_-":
                continue  # url-safe base64 or an identifier, not what kubectl and base64(1) write
            decoded = _decode(data[start:min(span.end(), start + _MAX_DECODE)])
            if decoded is not None and self.inner(decoded):
                yield Candidate(start, span.end(), KIND_BASE64, PRIORITY_PROVIDER + 5)


def _printable_lead(data: bytes, start: int) -> bool:
    """The 2nd and 3rd groups also start like base64 of printable text (1 in 7 random runs pass)."""
    lead = data[start + 4:start + 9:4]
    return len(lead) == 2 and lead[0] in _PRINTABLE_LEAD and lead[1] in _PRINTABLE_LEAD


def _decode(run: bytes) -> str | None:
    """The text a base64 run encodes, or None when it is not (mostly) printable ASCII."""
    core = run.rstrip(b"=")
    core = core[:len(core) - len(core) % 4] if len(core) % 4 == 1 else core
    try:
        raw = binascii.a2b_base64(core + b"=" * (-len(core) % 4))
    except binascii.Error:
        return None
    if len(raw.translate(None, _PRINTABLE)) * 20 > len(raw):
        return None
    return raw.decode("ascii", "replace")
