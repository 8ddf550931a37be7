"""Passwords on command lines: the flags, pipes and files tools take them through.

* ``mysql -p'x'`` / ``-px`` / ``--password=x`` (mysqldump, mariadb ...; ``-p value`` would be
  the database name, ``-p`` alone prompts), ``sshpass -p x``, ``docker login -p x`` /
  ``--password x`` (podman, nerdctl, helm registry, oras ...), ``mongosh -p x``,
  ``curl -u user:pass`` / ``--user`` / ``--proxy-user``;
* ``echo 'x' | sudo -S ...``, ``printf '%s\\n' x | sudo -S ...``, ``sudo -S ... <<< x``;
* ``.netrc`` entries: ``machine host login user password x``, on one line or several;
* libpq connection strings: ``psql "host=db user=app password=x"``;
* tools that store a secret given on their command line: ``gh secret set NAME --body x`` / ``-b x``,
  ``kubectl create secret ... --from-literal=key=x``, ``security add-generic-password ... -w x``
  (``aws configure set`` and npm's ``_authToken`` are the assignment rules').

Where the syntax says "this is the password", the value is one whatever it looks like
(``-proot`` is a password), so only references (``$PASS``, ``"$(cat pw)"``), placeholders
(``<password>``, ``***``) and flags stay. Every form has an anchor -- a word it cannot do
without -- searched once per text through ``View.has``; texts without one cost nothing more.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipeline.redact.heuristics import is_placeholder
from pipeline.redact.rules import PRIORITY_ASSIGNMENT, Candidate, View

KIND = "password"
PRIORITY = PRIORITY_ASSIGNMENT + 2

#: A shell word as the value: quoted (JSON-escaped quotes too) or bare.
_VALUE = (rb"(?:\\?'(?P<s>[^'\n\\]+)\\?'|\\?\"(?P<d>[^\"\n\\]+)\\?\""
          rb"|(?P<b>[^\s'\"|;&<>()`\\]+))")
#: The rest of one command after the tool's name: up to a separator (``\\`` line continuations
#: go on; an escaped ``\n`` in JSON text ends it).
_SEGMENT = rb"(?:[^\n|;&\\]|\\[^n]){0,300}?"
_BLANKS = rb"(?:[ \t]|\\\n)+"


def _rx(pattern: bytes) -> re.Pattern[bytes]:
    return re.compile(pattern)


#: (anchor, pattern): the pattern runs when the (lower-cased) text holds its anchor. Every
#: pattern here starts with a literal, which the regex engine finds fast; a pattern starting
#: with a lookbehind or an alternation is tried at every position of a text (~100 MB/s), so
#: where a word must start, ``_word_start`` checks it after the match.
_FLAGS: list[tuple[bytes, re.Pattern[bytes]]] = [
    # mysql: the value is glued to -p, or follows --password= (``--password value`` prompts)
    *((tool, _rx(tool + rb"[\w-]*\b" + _SEGMENT + rb"[\s\"'](?:-p(?=[^\s-])|--password=)" + _VALUE))
      for tool in (b"mysql", b"mariadb")),
    (b"sshpass", _rx(rb"sshpass(?:" + _BLANKS + rb"(?:-[fdP][ \t]*\S+|-[evhV]))*" + _BLANKS + rb"-p[ \t]*" + _VALUE)),
    # docker login, podman login, helm registry login ...: the login comes first, the tool before it
    (b"login", _rx(rb"login\b" + _SEGMENT + rb"[\s\"'](?:-p|--password)(?:=|[ \t]+)" + _VALUE)),
    (b"mongo", _rx(rb"mongo(?:sh|dump|restore|export|import)?\b" + _SEGMENT +
                   rb"[\s\"'](?:-p|--password)(?:=|[ \t]+)" + _VALUE)),
]
#: (anchor, pattern): tools that store the secret they are given (kind ``secret``).
_SETTERS: list[tuple[bytes, re.Pattern[bytes]]] = [
    (b"secret", _rx(rb"secret" + _BLANKS + rb"set\b" + _SEGMENT + rb"[\s\"'](?:-b|--body)(?:=|[ \t]*)" + _VALUE)),
    (b"from-literal", _rx(rb"--from-literal(?:=|[ \t]+)\\?['\"]?[\w.-]{1,80}=" + _VALUE)),
    (b"-password", _rx(rb"add-(?:generic|internet)-password\b" + _SEGMENT + rb"[\s\"']-w[ \t]*" + _VALUE)),
]
_LOGIN_TOOLS = re.compile(rb"(?:docker|podman|nerdctl|buildah|skopeo|oras|crane|finch|helm[ \t]+registry)"
                          rb"\b[^\n|;&]{0,60}$")
#: curl's user:password; only the part after the colon is redacted.
_CURL = _rx(rb"curl\b" + _SEGMENT + rb"[\s\"'](?:-u|-U|--user|--proxy-user)(?:=|[ \t]*)(?P<q>\\?['\"])?"
            rb"[^\s:'\"\\]*:(?P<b>[^\s'\"\\]+)(?(q)(?P=q)|(?=[\s;&|)]|$))")
#: echo / printf piped into ``sudo -S`` (``-S``: read the password from standard input).
#: The echoed word may end with an escaped new line (``printf 'pw\\n'``), which is not part of it.
_ECHOED = (rb"(?:\\?'(?P<s>[^'\n\\]+)(?:\\{1,2}n)?\\?'|\\?\"(?P<d>[^\"\n\\]+)(?:\\{1,2}n)?\\?\""
           rb"|(?P<b>[^\s'\"|;&<>()`\\]+))")
_ECHO_SUDO = tuple(_rx(command + rb"(?:[ \t]+-[neE]+)*(?:[ \t]+\\?['\"]?%s(?:\\{1,2}n)?\\?['\"]?)?[ \t]+" + _ECHOED +
                       rb"[ \t]*\|[ \t]*sudo\b[^\n|;&]{0,80}?[ \t]-[A-Za-z]*S") for command in (b"echo", b"printf"))
_SUDO_HERESTRING = _rx(rb"sudo\b[^\n|;&]{0,80}?[ \t]-[A-Za-z]*S\b[^\n|;&]{0,200}?<<<[ \t]*" + _VALUE)
#: .netrc: ``machine <host> [login <user>] [account <a>] password <p>`` (or ``default ...``),
#: separated by blanks or new lines (real or JSON-escaped).
_SEP = rb"(?:[ \t\r\n]|\\[nrt])+"
_NETRC = tuple(_rx(entry + rb"(?:" + _SEP + rb"(?:login|account|port)" + _SEP + rb"[^\s\\]+)*" + _SEP +
                   rb"password" + _SEP + _VALUE) for entry in (rb"machine" + _SEP + rb"[^\s\\]+", rb"default"))
#: libpq key=value connection strings: ``password=`` next to ``host=`` / ``dbname=`` / ``user=``.
_CONNINFO_PASSWORD = _rx(rb"password[ \t]*=[ \t]*" + _VALUE)
_CONNINFO_KEY = _rx(rb"(?<![\w.-])(?:host|hostaddr|dbname|user|port|sslmode)[ \t]*=")
_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _word_start(data: bytes, i: int) -> bool:
    """Does a word start at ``i``: after a non-word character, a JSON-escaped line break
    (``\\nmachine``), or the '-' opening a line a diff removed?"""
    if i == 0 or data[i - 1] not in _WORD_BYTES:
        return True
    if data[i - 2:i] in (b"\\n", b"\\r", b"\\t"):
        return True
    return data[i - 1] == 0x2D and (i == 1 or data[i - 2] == 0x0A or data[i - 3:i - 1] == b"\\n")


def _literal(value: str) -> bool:
    """A value typed in, not a reference to one (``$PASS``, ``$(cat f)``), a placeholder or a flag."""
    if len(value) < 3 or value[:1] in "$%-" or is_placeholder(value):
        return False
    return "$(" not in value and "${" not in value and "`" not in value


def _value_span(match: re.Match[bytes]) -> tuple[int, int]:
    for group in ("s", "d", "b"):
        if group in match.re.groupindex and match.group(group) is not None:
            return match.span(group)
    return match.span()


class CommandLineRule:
    """Passwords given to tools on the command line, through ``sudo -S``, in ``.netrc`` and conninfo."""

    @staticmethod
    def wanted(view: View) -> bool:
        # Every flag form has " -p" or "--password"; "pass" is searched for by the assignment rule
        # already, and most texts holding it say "passed": "password" is searched only in those.
        return not view.quiet and (view.has(b" -p") or view.has(b"curl") or view.has(b"sudo") or (
            view.has(b"pass") and view.has(b"password")) or any(view.has(anchor) for anchor, _ in _SETTERS))

    def find(self, view: View) -> Iterator[Candidate]:
        data, text = view.data, view.text
        flags = view.has(b" -p") or (view.has(b"password") and view.has(b"--password"))
        for anchor, pattern in _FLAGS if flags else ():
            if view.has(anchor):
                for match in pattern.finditer(data):
                    if anchor == b"login" and not (data[match.start() - 1:match.start()] in (b" ", b"\t") and
                                                   _LOGIN_TOOLS.search(data, max(0, match.start() - 80), match.start())):
                        continue
                    yield from self._value(match, text)
        for anchor, pattern in _SETTERS:
            if view.has(anchor):
                for match in pattern.finditer(data):
                    yield from self._value(match, text, "secret")
        if view.has(b"curl"):
            for match in _CURL.finditer(data):
                yield from self._value(match, text)
        if view.has(b"sudo"):
            for pattern in (*_ECHO_SUDO, _SUDO_HERESTRING):
                for match in pattern.finditer(data):
                    yield from self._value(match, text)
        if view.has(b"pass") and view.has(b"password"):
            for anchor, pattern in zip((b"machine", b"default login"), _NETRC, strict=True):
                for match in pattern.finditer(data) if view.has(anchor) else ():
                    if _word_start(data, match.start()):
                        yield from self._value(match, text)
            yield from self._conninfo(data, text)

    @staticmethod
    def _value(match: re.Match[bytes], text: str, kind: str = KIND) -> Iterator[Candidate]:
        start, end = _value_span(match)
        if _literal(text[start:end]):
            yield Candidate(start, end, kind, PRIORITY)

    @staticmethod
    def _conninfo(data: bytes, text: str) -> Iterator[Candidate]:
        for match in _CONNINFO_PASSWORD.finditer(data):
            if not _word_start(data, match.start()):
                continue
            start, end = _value_span(match)
            line_start = max(data.rfind(b"\n", 0, match.start()), match.start() - 200)
            line_end = data.find(b"\n", end, end + 200)
            around = data[max(0, line_start):line_end if line_end >= 0 else end + 200]
            if _CONNINFO_KEY.search(around) and _literal(text[start:end]):
                yield Candidate(start, end, KIND, PRIORITY)
