"""Secrets in XML and HTML: what an element or a key named for a credential holds.

* **an element named so** -- ``<password>X</password>`` (Maven's ``settings.xml`` ``<server>``),
  ``<apiKey>X</apiKey>``, ``<ns2:secret>X</ns2:secret>``, ``<passphrase><![CDATA[X]]></passphrase>``;
* **an element whose key attribute names one** -- ``<entry key="password">X</entry>`` (Java
  properties as XML), ``<string name="stripe_secret">X</string>`` (Android resources), and its
  ``value`` attribute when it has one: ``<add key="ClearTextPassword" value="X"/>`` (NuGet,
  .NET ``appSettings``), ``<property name="db.password" value="X"/>`` (Spring);
* **a plist's key**: ``<key>API_TOKEN</key>`` then ``<string>X</string>``.

Names are read as assignments read them (``assignments._kind``): ``<key>`` alone, ``<token-count>``
or ``<passwordPolicy>`` name no secret. Where the markup says "this is the password", the value is
one whatever it looks like; only placeholders (``${env.PW}``, ``<password>***</password>``),
template expressions (``{token}``) and nested markup stay. An attribute named for a credential
(``password="X"``) is the assignment rule's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipeline.redact.assignments import _kind
from pipeline.redact.heuristics import is_placeholder, name_words
from pipeline.redact.rules import PRIORITY_ASSIGNMENT, Candidate, View

PRIORITY = PRIORITY_ASSIGNMENT + 1

#: An opening tag: its name (maybe with a namespace prefix) and its attributes.
_TAG = re.compile(rb"<([A-Za-z_][\w.-]{0,40}:)?([A-Za-z_][\w.-]{0,60})((?:\s[^<>]{0,8192}?)?)(/?)>")
#: An attribute, its value quoted (JSON-escaped quotes too).
_ATTRIBUTE = re.compile(rb"([A-Za-z_:][\w.:-]{0,60})[ \t]*=[ \t]*(\\?[\"'])(.{0,8192}?)\2")
#: Attributes that name the entry (its value is in ``value=`` or in the element's text).
_NAMING = frozenset({b"key", b"name", b"id", b"k"})
_VALUES = frozenset({b"value", b"v", b"content"})
#: Blanks around an element's text, real or JSON-escaped.
_BLANKS = re.compile(rb"(?:\s|\\[nrt])*")
_CDATA_OPEN, _CDATA_CLOSE = b"<![CDATA[", b"]]>"
_TEMPLATE = re.compile(r"\{[\w.$ ]*\}|\{\{.*\}\}")
_PLIST_VALUE = re.compile(rb"(?:\s|\\[nrt])*<string>")
#: The longest element text read (an STS ``<SessionToken>`` is up to ~1,200 characters).
_MAX_TEXT = 16 * 1024


class MarkupRule:
    """Credentials in markup (see the module's docstring)."""

    @staticmethod
    def wanted(view: View) -> bool:
        return not view.quiet and (view.has(b"</") or view.has(b"/>"))

    def find(self, view: View) -> Iterator[Candidate]:
        data, lower, text = view.data, view.lower, view.text
        position = data.find(b"<")
        while position >= 0:
            tag = _TAG.match(data, position)
            position = data.find(b"<", position + 1)
            if tag is None:
                continue
            name = tag.group(2).decode()
            closing = not tag.group(4)
            kind = _kind(name_words(name))
            if kind is not None and closing:
                found = _element_text(data, text, tag.end(), tag.group(0)[1:tag.end(2) - tag.start()])
                if found is not None:
                    yield Candidate(*found, kind, PRIORITY)
                continue
            if name == "key" and closing and lower.startswith(b"</key>", tag.end() + (
                    data.find(b"<", tag.end(), tag.end() + 200) - tag.end())):
                yield from _plist(data, text, tag.end())
                continue
            attributes = tag.group(3)
            if not attributes:
                continue
            yield from _named_entry(data, text, tag, closing)


def _named_entry(data: bytes, text: str, tag: re.Match[bytes], closing: bool) -> Iterator[Candidate]:
    """``<entry key="password">X</entry>``, ``<add key="ApiKey" value="X"/>``."""
    kind, value = None, None
    for attribute in _ATTRIBUTE.finditer(data, tag.start(3), tag.end(3)):
        label = attribute.group(1).lower()
        if label in _NAMING and kind is None:
            kind = _kind(name_words(attribute.group(3).decode("ascii", "replace")))
        elif label in _VALUES:
            value = attribute.span(3)
    if kind is None:
        return
    if value is not None:
        if _literal(text[value[0]:value[1]]):
            yield Candidate(*value, kind, PRIORITY)
    elif closing:
        found = _element_text(data, text, tag.end(), tag.group(0)[1:tag.end(2) - tag.start()])
        if found is not None:
            yield Candidate(*found, kind, PRIORITY)


def _element_text(data: bytes, text: str, start: int, qualified: bytes) -> tuple[int, int] | None:
    """The text of the element opened just before ``start``, if it is a literal (no markup in it)."""
    end = data.find(b"</" + qualified, start, start + _MAX_TEXT)
    if end < 0:
        return None
    begin = _BLANKS.match(data, start, end).end()  # type: ignore[union-attr]
    stop = end
    while stop > begin and (data[stop - 1:stop].isspace() or data[stop - 2:stop] in (b"\\n", b"\\t", b"\\r")):
        stop -= 2 if data[stop - 2:stop] in (b"\\n", b"\\t", b"\\r") else 1
    if data.startswith(_CDATA_OPEN, begin) and data.endswith(_CDATA_CLOSE, begin, stop):
        begin, stop = begin + len(_CDATA_OPEN), stop - len(_CDATA_CLOSE)
    if stop <= begin or b"<" in data[begin:stop]:
        return None  # empty, or an element holding others (``<credentials><password>...``)
    return (begin, stop) if _literal(text[begin:stop]) else None


def _plist(data: bytes, text: str, start: int) -> Iterator[Candidate]:
    """``<key>API_TOKEN</key>`` then ``<string>X</string>``."""
    end = data.find(b"</key>", start, start + 200)
    kind = _kind(name_words(text[start:end].strip()))
    if kind is None:
        return
    following = _PLIST_VALUE.match(data, end + len(b"</key>"))
    if following is not None:
        found = _element_text(data, text, following.end(), b"string")
        if found is not None:
            yield Candidate(*found, kind, PRIORITY)


def _literal(value: str) -> bool:
    value = value.strip()
    if len(value) < 3 or len(value) > _MAX_TEXT or is_placeholder(value) or _TEMPLATE.fullmatch(value):
        return False
    return not value.startswith(("$", "%", "@{", "#{")) or value.startswith("$2")  # ${env.X}, %X%; $2b$ bcrypt
