"""Passwords stated in prose, in several languages: "the staging password is X", "пароль от базы: X".

A statement is a password word (password, passwd, passphrase, passcode, pw, pwd; Passwort,
Kennwort; mot de passe; contraseña; senha; пароль; 密码; パスワード), an optional short
qualifier ("for staging", "от базы", "für die DB"), a copula or a colon (is, was, ist,
lautet, est, es, é, это, 是, は, ``:``) and one word, perhaps quoted. Then the value decides:

* **redacted** (:class:`ProsePasswordRule`) when it has a password's shape: letters mixed with
  digits or symbols ("is hunter2", "is Xk9#mq2"), six digits or more, or anything quoted that
  is not a plain word;
* **only reported** (:func:`prose_password`) when it is a plain word ("the staging password is
  tulip"): too ambiguous to cut out of text, so review flags the skill ``possible-secret``
  instead and a person decides. Words that say something *about* a password ("is required",
  "ist falsch", "est incorrect") are neither.

``password = x`` and ``password: x`` in code are the assignment rule's (``assignments.py``);
here ``:`` only makes a plain word ambiguous after a non-English keyword ("пароль: тюльпан"),
since ``password: str`` is everywhere in code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipeline.redact.heuristics import is_code, is_pathlike, is_placeholder, is_wordlike
from pipeline.redact.rules import PRIORITY_ASSIGNMENT, Candidate, View

KIND = "password"

_STATEMENT = re.compile(r"""
    (?P<key>
        (?<![\w-])(?:password|passwd|passphrase|passcode|pwd|pw)(?:'s)?(?![\w-])
      | (?P<foreign>
            (?<!\w)(?:passwort|kennwort|senha|contrase(?:ñ|n)a|пароль|mot\s+de\s+passe)(?!\w)
          | 密码 | パスワード)
    )
    (?:[ \t]+(?:for|to|of|on|at|in|für|fuer|von|zu[mr]?|de|du|des|pour|del|para|do|da|от|для|к|на)
       (?:[ \t]+[\w.@:/-]{1,40}){1,3}?)?              # "for the staging db", "от базы"
    [ \t]*
    (?P<copula>
        (?<![\w-])(?:(?:(?:is|was|has[ \t]+been)[ \t]+)?(?:set|reset|changed|updated)[ \t]+to
                     |is|was|ist|lautet|war|est|es|é|era|это)(?![\w-])
      | 是 | 为 | は | [:：] | — | – | -> | →
    )
    [ \t]*
    (?P<quote>["'`«“‘「])?
    (?P<value>[^\s"'`«»“”‘’「」()\[\]{}<>\u3000-\u30ff\u4e00-\u9fff\uff00-\uffef]{3,})
""", re.VERBOSE | re.IGNORECASE)
_CLOSING = {'"': '"', "'": "'", "`": "`", "«": "»", "“": "”", "‘": "’", "「": "」"}
_WORD_COPULAS = frozenset({"is", "was", "ist", "lautet", "war", "est", "es", "é", "era", "это", "是", "为", "は"})
_SET_TO = re.compile(r"(?:(?:is|was|has\s+been)\s+)?(?:set|reset|changed|updated)\s+to", re.IGNORECASE)
#: Anchors searched in every text (shared with the assignment rule through ``View.has``): they
#: cover password, passwd, passphrase, passcode, pw, pwd, Passwort and mot de passe.
_ANCHORS = (b"pass", b"pw")
#: Searched only in text that is not pure ASCII, where other languages are: every search of
#: all text costs ~2% of the redactor's time. (So "Kennwort ist X" in pure ASCII text is not
#: redacted; ``prose_password``, for review flags, searches for every anchor.)
_FOREIGN_ANCHORS = (b"kennwort", b"senha")
_FOREIGN = ("ароль", "АРОЛЬ", "密码", "パスワード", "contraseña")
#: The non-ASCII words as JSON escapes them (lower-case hex, as Python's json writes it): one
#: pattern, whose common start ``\\u`` the regex engine searches for as a literal.
_ESCAPED_FOREIGN = re.compile(b"|".join(re.escape(w.encode("ascii", "backslashreplace").replace(b"\\x", b"\\u00"))
                                        for w in ("ароль", "密码", "パスワード", "contraseña")))
_UNICODE_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\[nrt]")
_PASS_WORDS = (b"password", b"passwd", b"passphrase", b"passcode", b"passwort")
#: Words that say something about a password rather than being one.
_ABOUT = frozenset("""
    a an the this that it its not no never also still now then only just already always here there what which
    in on at to of for from with without by and or but as so if when be been being was is are will must should
    required requis requise obligatoire obligatorio obligatoria obrigatório obrigatória erforderlich
    обязателен обязательно optional mandatory needed necessary incorrect incorrecto incorrecta incorreto
    incorreta wrong falsch faux invalid invalide inválido inválida ungültig неверный неверен неправильный
    correct correcto correcta correto correta richtig valid valide válido válida set unset missing empty
    blank none null stored saved hashed encrypted encoded salted masked hidden shown visible displayed printed
    logged sent generated changed reset rotated updated expired locked disabled enabled active inactive
    too very really probably likely case-sensitive same different weak strong short long secure insecure
    ok okay fine good bad unknown known given provided used accepted rejected verified checked configured
    defined read taken correct changed managed handled kept stale old new current default
    ist der die das ein eine nicht nicht est le la les un une pas es el los una no é o os um uma não
    это не
""".split())  # noqa: SIM905 -- a word list reads better as text


def prose_password(text: str) -> re.Match[str] | None:
    """The first password stated in prose, redactable or only ambiguous; None when there is none.

    For review flags: a skill whose text gives a match gets ``possible-secret`` (the excerpt
    is ``text[match.start():match.end()]``; ``match.group("value")`` is the word in question).
    """
    for match, _clear, _start in _statements(View(text), every_anchor=True):
        if match.string is text:
            return match
    return None


class ProsePasswordRule:
    """Passwords with a password's shape, stated in prose (the clear cases of :func:`prose_password`)."""

    @staticmethod
    def wanted(view: View) -> bool:
        if view.text.isascii():
            # raw JSON written by Python escapes the other scripts: "\u043f\u0430\u0440..."
            return not view.quiet and (view.has(b"pass") or view.has(b"pw") or view.has(b"\\u"))
        return view.has(b"pass") or view.has(b"pw") or (
            any(view.has(a) for a in _FOREIGN_ANCHORS) or any(w in view.text for w in _FOREIGN))

    def find(self, view: View) -> Iterator[Candidate]:
        for match, clear, start in _statements(view):
            if clear and start >= 0:
                raw = match.group("value")
                yield Candidate(start, start + len(raw) - _trailing(raw), KIND, PRIORITY_ASSIGNMENT - 2)


def _statements(view: View, *, every_anchor: bool = False) -> Iterator[tuple[re.Match[str], bool, int]]:
    """Statements in text order: the match, whether its value has a password's shape, and
    where the value starts in the text (-1 if it cannot be found again).

    In JSON text with ``\\uXXXX`` escapes (``skillmill redact`` on a file Python wrote) the
    window around a keyword is unescaped first, and the value found again in the text.
    """
    text, seen = view.text, -1
    escaped = view.text.isascii() and view.has(b"\\u")
    for position in _anchor_positions(view, escaped or every_anchor):
        if position <= seen:
            continue
        window_start = max(0, position - 12)
        window = text[window_start:position + 400]
        if escaped and "\\u" in window:
            match = _STATEMENT.search(_UNICODE_ESCAPE.sub(_unescape, window))
            if match is None:
                continue
            raw = match.group("value")
            start = text.find(raw.encode("ascii", "backslashreplace").decode().replace("\\x", "\\u00"), position)
        else:
            match = _STATEMENT.search(text, window_start, position + 320)
            if match is None or match.start() <= seen:
                continue
            start = match.start("value")
        clear = _classify(match)
        if clear is not None:
            seen = max(start, position)
            yield match, clear, start


def _unescape(match: re.Match[str]) -> str:
    return chr(int(match.group(1), 16)) if match.group(1) else " "


def _anchor_positions(view: View, every_anchor: bool) -> list[int]:
    positions: list[int] = []
    lower = view.lower
    ascii_only = view.text.isascii()
    anchors = _ANCHORS + _FOREIGN_ANCHORS if every_anchor or not ascii_only else _ANCHORS
    if every_anchor and view.has(b"\\u"):
        positions += [match.start() for match in _ESCAPED_FOREIGN.finditer(lower)]
    for anchor in anchors:
        if view.has(anchor):
            position = lower.find(anchor)
            while position >= 0:
                if _names_password(lower, anchor, position):
                    positions.append(position)
                position = lower.find(anchor, position + len(anchor))
    if not ascii_only:
        for word in _FOREIGN:
            position = view.text.find(word)
            while position >= 0:
                positions.append(max(0, position - 1))  # the П of Пароль
                position = view.text.find(word, position + len(word))
    return sorted(positions)


def _names_password(lower: bytes, anchor: bytes, position: int) -> bool:
    """Is the anchor found a password word? "pass" is mostly "passed" or "bypass", "pw" mostly
    the middle of a random string; a regex is tried only where a password word can start."""
    if anchor == b"pass":
        return lower.startswith(_PASS_WORDS, position) or lower.startswith(b"mot de passe", position - 7)
    if anchor == b"pw":
        before = lower[position - 1:position] if position else b" "
        after = lower[position + 2:position + 4]
        return not before.isalnum() and (not after[:1].isalnum() or (after[:1] == b"d" and not after[1:].isalnum()))
    return True


def _trailing(value: str) -> int:
    """Sentence punctuation after the value: "the password is hunter2." """
    return len(value) - len(value.rstrip(".,;:)"))


def _classify(match: re.Match[str]) -> bool | None:
    """True: a password's shape (redact); False: a plain word (report only); None: not a password."""
    raw = match.group("value")
    value = raw[:len(raw) - _trailing(raw)]
    quote = match.group("quote")
    if quote and not match.string.startswith(_CLOSING[quote], match.end("value") - _trailing(raw)):
        quote = None  # an opening quote without its closing one right after the word
    if len(value) < 3 or value.lower() in _ABOUT or is_placeholder(value) or is_code(value) or is_pathlike(value):
        return None
    if value.startswith(("http", "-", "=")) or (not quote and not value[0].isalnum()):
        return None
    letters = any(c.isalpha() for c in value)
    digits = any(c.isdigit() for c in value)
    others = any(not c.isalnum() for c in value)
    if len(value) >= 6 and letters and (digits or others) and not is_wordlike(value):
        return True
    if len(value) >= 6 and value.isdigit():
        return True
    if quote and len(value) >= 4 and not is_wordlike(value):
        return True  # "is 'tulip'" or "is `INFO`" stays a plain word: reported, not redacted
    copula = match.group("copula").lower()
    word_copula = copula in _WORD_COPULAS or _SET_TO.fullmatch(copula) is not None
    if not (word_copula or match.group("foreign")):
        return None  # `password: str` -- code, not a statement
    return False if len(value) >= 4 and (letters or digits) else None
