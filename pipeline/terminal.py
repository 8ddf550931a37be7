"""Text from sessions, made safe to print on a terminal.

Skill files, tasks, commands, tool output and file names all come from transcripts nobody
vetted. Printed raw, an escape sequence in them is executed by the terminal: ``ESC [ 2 A``
moves the cursor up and ``ESC [ J`` erases what follows, so a crafted task can wipe the
RISK FLAGS block ``skillmill review show`` printed a moment before; a right-to-left override
(U+202E) can make ``rm -rf ~`` read as something else. :func:`visible` writes every such
character as an escape a person can read (``\\x1b``, ``\\u202e``) instead.

Standard library only, no imports beyond ``re``: ``skillmill recall`` prints through it at
every prompt.
"""

from __future__ import annotations

import re

#: C0 controls (tab and newline are decided below), DEL, C1 controls (0x80-0x9f: 0x9b is a
#: one-byte CSI), and the invisible marks that reorder text: ALM, LRM/RLM, the bidi embeddings
#: and overrides (U+202A-U+202E), the isolates (U+2066-U+2069), and the line/paragraph separators.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
_UNSAFE_OR_NEWLINE = re.compile(f"[\n{_UNSAFE.pattern[1:-1]}]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object, *, newlines: bool = False) -> str:
    """``text`` with control characters and bidi marks written out (``\\x1b``, ``\\u202e``).

    Tabs stay. Newlines stay only with ``newlines=True``, for text printed as several lines
    on purpose (a skill body, notes); in a one-line field a newline would let the text forge
    the lines after it, so it is written ``\\n``.
    """
    text = text if isinstance(text, str) else str(text)
    pattern = _UNSAFE if newlines else _UNSAFE_OR_NEWLINE
    return pattern.sub(_escape, text) if pattern.search(text) else text
