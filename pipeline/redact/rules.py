"""The detectors: where a secret can be, and what kind it is.

detect-secrets' plugins are used where they fit: their regexes for AWS key ids, GitLab,
SendGrid, Twilio, PyPI, Mailchimp and URL credentials, their private-key markers and their
JWT validity check. What they miss is added here: OpenAI ``sk-proj-`` keys (their OpenAI
regex needs ``T3BlbkFJ`` and misses them), Anthropic, GitHub fine-grained tokens, Stripe test
and webhook keys, Google, Hugging Face, ``npm_`` tokens, Slack app/config tokens and workflow
hooks, whole private-key blocks, tokens as URL userinfo, and the context rules in
``assignments.py``.

Speed (ingest reads GBs): rules look at a :class:`View` of the text -- its ASCII bytes, one
byte per character so positions hold in the text, and the words rules gate on, each searched
once (``View.has``; a short text is searched for all of them at once, ``View.quiet``). Provider tokens are found in one pass:
``bytes.translate`` marks token characters, a literal search finds the runs of 16 or more,
and each run is dispatched on its first two characters to the few patterns that can start
there. Thirty patterns run one after the other would scan the text thirty times.
Heavier checks (entropy, JWT decoding, placeholder tests) run on candidates only.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from pipeline.redact.heuristics import classes, is_placeholder, is_wordlike, random_like

#: Overlapping candidates: the higher priority wins (a provider key inside ``API_KEY=...`` is
#: an ``openai-api-key``, not a generic ``api-key``).
PRIORITY_BLOCK = 100
#: A JWT is found whole before any rule that reads a part of it (base64 of its header, a value
#: under ``token:`` that the assignment rule would take): those would leave the other parts.
PRIORITY_JWT = 97
PRIORITY_CONFIG = 95
PRIORITY_PROVIDER = 90
PRIORITY_STRUCTURE = 80
PRIORITY_HEADER = 75
PRIORITY_ASSIGNMENT = 60
PRIORITY_ENTROPY = 40

_TOKEN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
_MARK = bytes(ord("a") if c in _TOKEN_CHARS else ord(" ") for c in range(256))
MIN_RUN = 16
#: On the marked bytes: sixteen ``a`` start a run, the next blank ends it.
_RUN_START = b"a" * MIN_RUN
_ALNUM = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_ESCAPE_LETTERS = frozenset(b"ntr")
#: The first character of base64 of printable ASCII (the top 6 bits of 0x20-0x7e), and the
#: shortest run worth decoding: base64 of printable text rarely holds '+' or '/' (only for
#: '>', '?' and '~'), so a span of it nearly always begins with a long run.
BASE64_LEAD = frozenset(b"IJKLMNOPQRSTUVWXYZabcdef")
BASE64_RUN = 20
_LINE_BREAK = frozenset(b"\r\n\\")  # a run followed by one of these may go on on the next line
_LINE_START = frozenset(b" \t\n\\n+->")  # ... and one after these may go on from the line before


class Wrapped(Protocol):
    by_start: dict[bytes, list[TokenRule]]

    def first_part(self, view: View, rules: list[TokenRule], start: int, end: int) -> Candidate | None: ...

    def second_part(self, view: View, start: int, end: int) -> Candidate | None: ...


@dataclass(frozen=True, slots=True)
class Candidate:
    start: int
    end: int
    kind: str
    priority: int


#: Words the context rules (assignments, command lines, prose) gate on. A short text is searched
#: for all of them at once: nine in ten hold none, and every such rule then skips it for free.
ANCHORS = (b"pass", b"pw", b"secret", b"token", b"key", b"cred", b"auth", b"curl", b"sudo", b"-p", b"\\u")
_ANY_ANCHOR = re.compile(b"|".join(map(re.escape, ANCHORS)))
_SHORT = 512


class View:
    """A text as the rules read it: ASCII bytes (non-ASCII -> ``?``), lower-cased, token runs."""

    __slots__ = ("_has", "_runs", "base64_starts", "data", "lower", "quiet", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = text.encode("ascii", "replace")
        self.lower = self.data.lower()
        self._runs: list[tuple[int, int]] | None = None
        #: A short text holding none of ``ANCHORS``: rules gated on them have nothing to do.
        self.quiet = len(self.lower) <= _SHORT and _ANY_ANCHOR.search(self.lower) is None
        self._has: dict[bytes, bool] = {}
        #: Runs that may begin base64 of printable text, noted by the token scanner on its way
        #: through the runs for the base64 rule (``encoded.Base64Rule``).
        self.base64_starts: list[int] = []

    def has(self, word: bytes) -> bool:
        """``word in self.lower``, searched once per text whichever rules ask (gates share anchors)."""
        found = self._has.get(word)
        if found is None:
            found = self._has[word] = word in self.lower
        return found

    def runs(self) -> list[tuple[int, int]]:
        """Maximal runs of ``[A-Za-z0-9_-]`` at least ``MIN_RUN`` long, as (start, end)."""
        if self._runs is None:
            # bytes.find, not a regex (``a{16,}``): prose is mostly short runs of token characters,
            # each a false start the regex engine steps into; find skips them ~1.5x faster.
            marked = self.data.translate(_MARK)
            find, runs = marked.find, []
            start = find(_RUN_START)
            while start >= 0:
                end = find(b" ", start + MIN_RUN)
                if end < 0:
                    end = len(marked)
                runs.append((start, end))
                start = find(_RUN_START, end)
            self._runs = runs
        return self._runs


def _b(pattern: re.Pattern[str] | str, flags: int = 0) -> re.Pattern[bytes]:
    """A bytes version of a (detect-secrets) str pattern: rules run on ASCII bytes."""
    if isinstance(pattern, re.Pattern):
        flags |= pattern.flags & (re.IGNORECASE | re.VERBOSE | re.MULTILINE | re.DOTALL)
        pattern = pattern.pattern
    return re.compile(pattern.encode(), flags)


def _random(min_length: int) -> Callable[[str], bool]:
    return lambda value: random_like(value, min_length=min_length)


def _after(prefix: str, min_length: int = 16) -> Callable[[str], bool]:
    """The part after a public prefix (``sk-proj-``) must look generated."""
    head = re.compile(prefix)
    return lambda value: random_like(head.sub("", value, count=1), min_length=min_length)


def _jwt(value: str) -> bool:
    """Three base64url segments whose first is a JOSE header: a JSON object naming ``alg`` or ``typ``
    (a Kubernetes service-account token's ``kid`` may be anything), or -- cut, mis-padded -- the
    ``eyJ...eyJ...`` shape detect-secrets takes."""
    header = value.split(".", 1)[0]
    try:
        decoded = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        decoded = None
    if isinstance(decoded, dict):
        return "alg" in decoded or "typ" in decoded
    return value.startswith("eyJ") and value.split(".", 2)[1][:3] == "eyJ" or JwtTokenDetector.is_formally_valid(value)


_BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"


def _discord(value: str) -> bool:
    """A Discord bot token's first part is base64 of the bot's id: 17 to 20 digits."""
    head = value.split(".", 1)[0]
    try:
        decoded = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return False
    return decoded.isdigit() and 17 <= len(decoded) <= 20


# -- provider tokens ------------------------------------------------------------------------
@dataclass(frozen=True)
class TokenRule:
    """A provider token that starts a run of token characters (or follows ``before``)."""

    kind: str
    pattern: re.Pattern[bytes]
    check: Callable[[str], bool] | None = None
    #: Fixed-length tokens must not be followed by more letters or digits.
    bounded_after: bool = False
    priority: int = PRIORITY_PROVIDER
    #: For dotted tokens (``SG.<run>``, ``ya29.<run>``): the literal just before the run.
    before: bytes = b""
    #: The group of ``pattern`` that is the token (gitleaks' rules match a boundary after it);
    #: ``FIRST_GROUP``: the first group that took part in the match, or the whole match (gitleaks' rule).
    group: int = 0
    #: The two characters a run can start with, when the pattern does not open with them.
    start: frozenset[bytes] = frozenset()
    #: What the text just before the token must end with (``\d+:`` before a Telegram bot's secret).
    after: re.Pattern[bytes] | None = None

    def starts(self) -> set[bytes]:
        """The two characters a run can start with, for dispatch."""
        if self.start:
            return set(self.start)
        source = self.pattern.pattern
        literal = re.match(rb"[A-Za-z0-9_-]{2}", source)
        if literal:
            return {literal.group()}
        group = re.match(rb"\((?:\?:)?([^)]*)\)", source)
        if group:
            return {alt[:2] for alt in group.group(1).split(b"|")}
        raise ValueError(f"token pattern {source!r} does not start with a literal")


def token_rules() -> list[TokenRule]:
    """Provider keys and tokens, identified by their published prefixes."""
    return [
        TokenRule("anthropic-api-key", _b(r"sk-ant-[A-Za-z0-9_-]{20,}"), _after(r"^sk-ant-(?:[a-z]+\d\d-)?"),
                  priority=PRIORITY_PROVIDER + 2),
        TokenRule("openai-api-key", _b(r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}"),
                  _after(r"^sk-(?:proj-|svcacct-|admin-|None-)?")),
        TokenRule("aws-access-key-id", _b(AWSKeyDetector.denylist[0]), bounded_after=True),
        # Classic tokens have 36 characters after the prefix; the prefix is distinctive enough to take
        # a truncated or hand-made one too (a planted 35-character value once slipped through).
        TokenRule("github-token", _b(r"gh[pousr]_[A-Za-z0-9]{30,255}"), bounded_after=True),
        TokenRule("github-fine-grained-token", _b(r"github_pat_[A-Za-z0-9_]{22,255}"), bounded_after=True),
        *(TokenRule("gitlab-token", _b(p)) for p in GitLabTokenDetector.denylist),
        TokenRule("slack-token", _b(r"xox[abposre]-[A-Za-z0-9-]{10,}"), _random(10)),
        TokenRule("slack-token", _b(r"xapp-\d-[A-Za-z0-9-]{10,}")),
        TokenRule("stripe-key", _b(r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,}")),
        TokenRule("stripe-key", _b(r"whsec_[0-9A-Za-z]{24,}")),
        TokenRule("google-api-key", _b(r"AIza[0-9A-Za-z_-]{35}"), bounded_after=True),
        TokenRule("google-oauth-token", _b(r"ya29\.[0-9A-Za-z_-]{20,}"), before=b"ya29."),
        TokenRule("google-client-secret", _b(r"GOCSPX-[0-9A-Za-z_-]{28}"), bounded_after=True),
        TokenRule("huggingface-token", _b(r"hf_[A-Za-z0-9]{34,40}"), _random(30), bounded_after=True),
        TokenRule("huggingface-token", _b(r"api_org_[A-Za-z0-9]{34}"), _random(30), bounded_after=True),
        TokenRule("npm-token", _b(r"npm_[A-Za-z0-9]{36}"), _random(30), bounded_after=True),
        TokenRule("sendgrid-api-key", _b(SendGridDetector.denylist[0]), bounded_after=True, before=b"SG."),
        *(TokenRule("twilio-key", _b(p), _random(32), bounded_after=True) for p in TwilioKeyDetector.denylist),
        *(TokenRule("pypi-token", _b(p)) for p in PypiTokenDetector.denylist),
        TokenRule("llm-api-key", _b(r"(?:gsk_|xai-|pplx-)[A-Za-z0-9]{40,}"), _random(30)),
        TokenRule("llm-api-key", _b(r"r8_[A-Za-z0-9]{30,}"), _random(30)),
        # a JOSE header opens with `{"` (eyJ), or `{` and a blank or line break (eyA, ewo, ...)
        TokenRule("jwt", _b(r"e[wy][A-Za-z0-9_-]{14,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), _jwt,
                  priority=PRIORITY_JWT, start=frozenset({b"ey", b"ew"})),
        # base64 of the bot's numeric id, a timestamp, an HMAC: gitleaks has no rule for it
        TokenRule("discord-bot-token", _b(r"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}"),
                  _discord, bounded_after=True, start=frozenset(f"{a}{b}".encode() for a in "MNO" for b in _BASE64URL)),
        TokenRule("telegram-bot-token", _b(r"AA[A-Za-z0-9_-]{33}"), _random(30), bounded_after=True,
                  after=re.compile(rb"(?<![0-9])[0-9]{6,12}:\Z")),
    ]


_MAILCHIMP = _b(MailchimpDetector.denylist[0])
FIRST_GROUP = -1


def token_span(match: re.Match[bytes], group: int) -> tuple[int, int]:
    """Where the token is in a rule's match (:attr:`TokenRule.group`)."""
    if group != FIRST_GROUP:
        return match.span(group)
    for number in range(1, (match.re.groups or 0) + 1):
        if match.start(number) >= 0:
            return match.span(number)
    return match.span()


class TokenScanner:
    """Every prefix-identified token, in one pass over the runs of token characters."""

    @staticmethod
    def wanted(view: View) -> bool:
        return len(view.data) >= MIN_RUN

    def __init__(self, rules: list[TokenRule], wrapped: Wrapped | None = None) -> None:
        self.wrapped = wrapped  # tokens cut by a line break (``encoded.WrappedTokens``)
        self.by_start: dict[bytes, list[TokenRule]] = {}
        self.dotted: list[TokenRule] = []
        for rule in rules:
            if rule.before:
                self.dotted.append(rule)
                continue
            for start in rule.starts():
                self.by_start.setdefault(start, []).append(rule)
        if wrapped is not None:
            wrapped.by_start = self.by_start

    def find(self, view: View) -> Iterator[Candidate]:
        data, text, by_start, wrapped = view.data, view.text, self.by_start, self.wrapped
        size = len(data)
        base64_starts = view.base64_starts
        for start, end in view.runs():
            if start and data[start - 1] == 0x5C and data[start] in _ESCAPE_LETTERS:
                start += 1  # JSON-escaped text: `\nghp_...` -- the run began with the escape's letter
            if data[start] == 0x2D and start and (data[start - 1] == 0x0A or data[start - 2:start] == b"\\n"):
                start += 1  # a removed line of a diff, `-ghp_...`: no token starts with '-'
            if data[start] in BASE64_LEAD and end - start >= BASE64_RUN and not (start and data[start - 1] in b"+/"):
                base64_starts.append(start)
            if start and data[start - 1] == 0x2E:  # '.': SG.<run>, ya29.<run>
                dotted = self._dotted(view, start)
                if dotted is not None:
                    yield dotted
                    continue
            rules = by_start.get(data[start:start + 2])
            if rules is None:
                if end - start in (35, 36) and data[start + 32:start + 35] == b"-us" and \
                        _MAILCHIMP.fullmatch(data, start, end):
                    yield Candidate(start, end, "mailchimp-key", PRIORITY_PROVIDER)
                elif wrapped is not None and start and data[start - 1] in _LINE_START and (
                        start < 2 or data[start - 2] in _LINE_START):  # a line break, then indentation
                    joined = wrapped.second_part(view, start, end)
                    if joined is not None:
                        yield joined
                continue
            if wrapped is not None and end < size and data[end] in _LINE_BREAK:
                joined = wrapped.first_part(view, rules, start, end)
                if joined is not None:
                    yield joined
                    continue
            found = None
            for rule in rules:
                match = rule.pattern.match(data, start)
                if match is None:
                    continue
                begin, stop = token_span(match, rule.group)
                if rule.bounded_after and stop < len(data) and data[stop] in _ALNUM:
                    continue
                if rule.after is not None and not rule.after.search(data, max(0, begin - 24), begin):
                    continue
                if rule.check is not None and not rule.check(text[begin:stop]):
                    continue
                found = Candidate(begin, stop, rule.kind, rule.priority)
                break
            if found is not None:
                yield found
            elif wrapped is not None and start and data[start - 1] in _LINE_START and (
                    start < 2 or data[start - 2] in _LINE_START):  # a run no rule took may end a wrapped token
                joined = wrapped.second_part(view, start, end)
                if joined is not None:
                    yield joined

    def _dotted(self, view: View, start: int) -> Candidate | None:
        for rule in self.dotted:
            begin = start - len(rule.before)
            if begin >= 0 and view.data.startswith(rule.before, begin):
                match = rule.pattern.match(view.data, begin)
                if match is None or (begin and view.data[begin - 1] in _ALNUM):
                    continue
                token_start, token_end = token_span(match, rule.group)
                if rule.check is None or rule.check(view.text[token_start:token_end]):
                    return Candidate(token_start, token_end, rule.kind, rule.priority)
        return None


# -- URLs -----------------------------------------------------------------------------------
# detect-secrets' URL rule (``BasicAuthDetector``) leaves sub-delimiters (``!$&'()*+,;=``) out
# of the password, so ``postgres://app:Pa55!word@db`` goes through: RFC 3986 allows them in
# userinfo, and generated passwords use them. Only what cannot be inside userinfo ends it here.
# The user may be empty (``redis://:pw@host``), and a password typed with a '#' in it is still
# one when '@' follows before any '/' (``postgres://app:pa#ss@db``).
_URL_PASSWORD = _b(r"://[^\s:/?#\[\]@\"'`<>]*:([^\s/?\[\]@\"'`<>]+)@")
assert BasicAuthDetector.denylist[0].pattern.startswith("://")  # the same anchor as theirs
_URL_TOKEN = _b(r"://([A-Za-z0-9_-]{20,})@")
_SLACK_HOOK = _b(r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_/-]{16,})")
_DISCORD_HOOK = _b(r"(?:(?:www|canary|ptb)\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/([A-Za-z0-9_-]{60,72})")


class UrlRule:
    """Credentials in URLs (``scheme://user:password@``, ``https://<token>@``) and Slack webhooks."""

    @staticmethod
    def wanted(view: View) -> bool:
        return b"://" in view.data

    def find(self, view: View) -> Iterator[Candidate]:
        data, text = view.data, view.text
        position = data.find(b"://")
        while position >= 0:
            match = _URL_PASSWORD.match(data, position)
            if match and _url_password(text[match.start(1):match.end(1)]):
                yield Candidate(match.start(1), match.end(1), "url-password", PRIORITY_STRUCTURE)
            else:
                match = _URL_TOKEN.match(data, position)
                if match and random_like(text[match.start(1):match.end(1)], min_length=20):
                    yield Candidate(match.start(1), match.end(1), "url-password", PRIORITY_STRUCTURE)
            hook = _SLACK_HOOK.match(data, position + 3)
            if hook is None and data.startswith(b"www.", position + 3):
                hook = _SLACK_HOOK.match(data, position + 7)
            if hook:
                yield Candidate(hook.start(1), hook.end(1), "slack-webhook", PRIORITY_PROVIDER)
            if b"discord" in data[position + 3:position + 20]:
                hook = _DISCORD_HOOK.match(data, position + 3)
                if hook:
                    yield Candidate(hook.start(1), hook.end(1), "discord-webhook", PRIORITY_PROVIDER)
            position = data.find(b"://", position + 3)


def _url_password(value: str) -> bool:
    return len(value) >= 3 and not is_placeholder(value) and value.lower() not in ("pass", "pwd", "x-oauth-basic")


# An AWS key id followed by its secret (CSV exports, credentials dumps); run only when an id was found.
_AWS_PAIR = _b(r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}[\s,;:|\"'=]{1,8}"
               r"(?:[A-Za-z_]{1,40}[\s:=\"']{1,6})?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])")


def aws_pairs(view: View) -> Iterator[Candidate]:
    for match in _AWS_PAIR.finditer(view.data):
        if random_like(view.text[match.start(1):match.end(1)], min_length=40):
            yield Candidate(match.start(1), match.end(1), "aws-secret-key", PRIORITY_PROVIDER - 2)


# -- private keys -------------------------------------------------------------------------
_KEY_TYPES = sorted({p.pattern.removeprefix("BEGIN ") for p in PrivateKeyDetector.denylist
                     if p.pattern.startswith("BEGIN ")}, key=len, reverse=True)
_BEGIN = _b(r"-----BEGIN (" + "|".join(map(re.escape, _KEY_TYPES)) + r")-----")
#: What a key body is made of when its END line is missing (cut-off output): base64, headers,
#: real or JSON-escaped newlines. Over-redacting a trailing word is better than leaking.
_BODY = _b(r"(?:[A-Za-z0-9+/=]|\s|\\[nr]|(?:Proc-Type|DEK-Info|Comment):[^\n\\]*)*")
_PUTTY = _b(r"PuTTY-User-Key-File-\d")
_PUTTY_END = _b(r"Private-MAC: *[0-9a-fA-F]+")
_MAX_BLOCK = 64 * 1024


class PrivateKeyRule:
    """A whole ``-----BEGIN ... PRIVATE KEY-----`` block (or PuTTY key), not just its first line."""

    kind = "private-key"

    @staticmethod
    def wanted(view: View) -> bool:
        return b"-----BEGIN" in view.data or b"PuTTY-User-Key-File-" in view.data

    def find(self, view: View) -> Iterator[Candidate]:
        data = view.data
        if b"-----BEGIN" in data:
            for match in _BEGIN.finditer(data):
                end_marker = b"-----END " + match.group(1) + b"-----"
                end = data.find(end_marker, match.end(), match.end() + _MAX_BLOCK)
                end = end + len(end_marker) if end >= 0 else _BODY.match(data, match.end()).end()  # type: ignore[union-attr]
                yield Candidate(match.start(), end, self.kind, PRIORITY_BLOCK)
        if b"PuTTY-User-Key-File-" in data:
            for match in _PUTTY.finditer(data):
                tail = _PUTTY_END.search(data, match.end(), match.end() + _MAX_BLOCK)
                end = tail.end() if tail else _BODY.match(data, match.end()).end()  # type: ignore[union-attr]
                yield Candidate(match.start(), end, self.kind, PRIORITY_BLOCK)


# A key's body printed without its BEGIN line (``sed -n 2,10p id_rsa``, a paste that lost it):
# lines of exactly 64 (PEM) or 70 (OpenSSH) base64 characters, one after the other.
_B64_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_MARK = bytes(ord("a") if c in _B64_CHARS else ord(" ") for c in range(256))
_BODY_NEXT = (_b(r"(?:\r?\n|\\r\\n|\\n)[ \t]*([A-Za-z0-9+/]{1,70}={0,2})(?![A-Za-z0-9+/=])"),
              _b(r"(?:\r?\n|\\r\\n|\\n)[-+>][ \t]*([A-Za-z0-9+/]{1,70}={0,2})(?![A-Za-z0-9+/=])"))  # in a diff
_LINE_END = (b"\n", b"\r\n", b"\\n", b"\\r\\n")
_NOT_SECRET_BLOCK = re.compile(rb"-----BEGIN |ssh-(?:rsa|ed25519|dss) |ecdsa-sha2")


class KeyBodyRule:
    """Two or more lines of a private key's body, with no BEGIN line before them."""

    kind = "private-key"

    @staticmethod
    def wanted(view: View) -> bool:
        return len(view.data) >= 130

    def find(self, view: View) -> Iterator[Candidate]:
        data = view.data
        marked = data.translate(_B64_MARK)
        position = marked.find(_B64_LINE)
        while position >= 0:
            end = marked.find(b" ", position)
            end = len(marked) if end < 0 else end
            # after a JSON-escaped line break the run began with its 'n'
            begin = position + 1 if position and data[position - 1] == 0x5C else position
            if data[begin:begin + 1] == b"+" and end - begin in (65, 71) and _line_start(data, begin):
                begin += 1  # a line a diff added
            position = marked.find(_B64_LINE, end)
            width = end - begin
            if width not in (64, 70) or not data.startswith(_LINE_END, end) or not _line_start(data, begin):
                continue
            stop, full = end, 1
            while True:
                following = _next_body_line(data, stop, width)
                if following is None:
                    break
                line = following.group(1)
                if len(line) != width:
                    if line.endswith(b"=") or classes(line.decode()) == 3:
                        stop = following.end(1)  # the last, shorter line (not the next command's name)
                    break
                stop = following.end(1)
                full += 1
            if full < 2 or classes(view.text[begin:end]) < 3 or \
                    _NOT_SECRET_BLOCK.search(data, max(0, begin - 200), begin):
                continue  # the whole-block rule's, or a certificate, a public key, a signature
            position = marked.find(_B64_LINE, stop)
            yield Candidate(begin, stop, self.kind, PRIORITY_BLOCK - 1)


_B64_LINE = b"a" * 64


def _next_body_line(data: bytes, position: int, width: int) -> re.Match[bytes] | None:
    """The line after ``position`` if it can go on a key's body: of the same width, else the shorter
    last line. A leading '+' is base64 -- or the diff's mark of an added line: whichever gives the width."""
    plain, marked = (pattern.match(data, position) for pattern in _BODY_NEXT)
    if plain is not None and len(plain.group(1)) == width:
        return plain
    if marked is not None and len(marked.group(1)) == width:
        return marked
    return plain or marked


def _line_start(data: bytes, i: int) -> bool:
    j = i
    while j and data[j - 1] in b" \t":
        j -= 1
    if j and data[j - 1] in b"+->":  # a diff's or a quote's line marker
        j -= 1
    return j == 0 or data[j - 1] == 0x0A or data[j - 2:j] == b"\\n"


# -- Authorization headers ----------------------------------------------------------------
_AUTH_HEADER = _b(r"authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?[ \t]*(?:(bearer|basic|token|digest)[ \t]+)?")
_BEARER = _b(r"bearer[ \t]+")
_CREDENTIAL = _b(r"[A-Za-z0-9._~+/=-]{8,}")


class AuthorizationRule:
    """``Authorization: Bearer <token>`` / ``Basic <base64>`` / ``token <t>``, and a bare ``Bearer <token>``."""

    @staticmethod
    def wanted(view: View) -> bool:
        return b"bearer" in view.lower or b"authorization" in view.lower

    def find(self, view: View) -> Iterator[Candidate]:
        lower = view.lower
        seen: set[int] = set()
        if b"authorization" in lower:
            for match in _AUTH_HEADER.finditer(lower):
                scheme = match.group(1)
                found = self._value(view, match.end(), strict=scheme is None)
                if found:
                    seen.add(found[0])
                    kind = "basic-auth" if scheme == b"basic" else "bearer-token"
                    yield Candidate(found[0], found[1], kind, PRIORITY_HEADER)
        if b"bearer" in lower:
            for match in _BEARER.finditer(lower):
                if match.start() > 0 and lower[match.start() - 1] in _ALNUM:
                    continue
                found = self._value(view, match.end(), strict=True)
                if found and found[0] not in seen:
                    yield Candidate(found[0], found[1], "bearer-token", PRIORITY_HEADER)

    @staticmethod
    def _value(view: View, position: int, *, strict: bool) -> tuple[int, int] | None:
        match = _CREDENTIAL.match(view.data, position)
        if not match:
            return None
        value = view.text[match.start():match.end()]
        if is_placeholder(value) or is_wordlike(value):
            return None
        if strict and not random_like(value, min_length=12):
            return None
        return match.span()
