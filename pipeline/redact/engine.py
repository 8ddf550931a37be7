"""The redactor: find secrets in text and replace them with typed placeholders.

    redactor = current()                       # built from [redaction] in skillmill.toml
    text, counts = redactor.redact("export OPENAI_API_KEY=sk-proj-...")
    # 'export OPENAI_API_KEY=[REDACTED:openai-api-key]', {'openai-api-key': 1}

Placeholders keep the text readable (``https://user:[REDACTED:url-password]@host``) and are
never matched again, so redacting twice gives the same text. Values found are never kept:
only their kind, count and position leave this module.
"""

from __future__ import annotations

import bisect
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from pipeline.errors import UsageError

if TYPE_CHECKING:
    from pipeline.redact.rules import Candidate, View
from pipeline.redact import sanitized
from pipeline.redact.sanitized import Sanitized, _make

#: ``[REDACTED:<kind>]`` -- kinds are lower-case words joined by ``-``.
PLACEHOLDER = "[REDACTED:{kind}]"
PLACEHOLDER_RE = re.compile(r"\[REDACTED:[a-z0-9-]+\]")
_KIND = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
#: Shorter text cannot hold any secret we detect; it is returned as it is.
_MIN_TEXT = 8
_WORD = re.compile(r"[A-Za-z0-9_.-]+")
_WORD_MAX = 128



@dataclass(frozen=True, slots=True)
class Finding:
    """Where a secret is: ``text[start:end]``. The value itself is never stored."""

    start: int
    end: int
    kind: str


class _Rule(Protocol):
    def wanted(self, view: View) -> bool: ...  # a cheap gate: most rules have nothing to do in most texts

    def find(self, view: View) -> Iterable[Candidate]: ...


def placeholder(kind: str) -> str:
    return PLACEHOLDER.format(kind=kind)


class Redactor:
    """Detectors plus the user's extra patterns and allow-list."""

    def __init__(self, extra_patterns: dict[str, str] | None = None, allow: Iterable[str] = ()) -> None:
        from pipeline.redact import assignments, commands, encoded, markup, positions, prose, rules, vendored

        self.allow = frozenset(a for a in allow if a)
        tokens = rules.token_rules() + vendored.token_rules()  # ours first: they name a token they share
        self.rules: list[_Rule] = [rules.PrivateKeyRule(),
                                   rules.TokenScanner(tokens, encoded.WrappedTokens()),
                                   rules.UrlRule(), rules.AuthorizationRule(),
                                   assignments.KeywordAssignmentRule(), assignments.EntropyAssignmentRule(),
                                   commands.CommandLineRule(), positions.PositionRule(), positions.ProseSecretRule(),
                                   positions.SignatureRule(), positions.CookieRule(), rules.KeyBodyRule(),
                                   prose.ProsePasswordRule(), markup.MarkupRule()]
        self.rules[:0] = [_config_rule(kind, pattern) for kind, pattern in (extra_patterns or {}).items()]
        # Decoded base64 is searched with every other rule (one level deep: no base64 in base64).
        plain = list(self.rules)
        self.rules.append(encoded.Base64Rule(lambda decoded: self._find(decoded, plain)))
        # A single word (an id, a tool name, a model name) can only hold a token or base64 of one:
        # every other rule needs a blank, '=', ':' or '/' to anchor on.
        self._word_rules = [r for r in self.rules if isinstance(r, _ConfigRule | rules.TokenScanner
                                                                   | encoded.Base64Rule)]
        self._min_word = _MIN_TEXT if extra_patterns else rules.MIN_RUN
        # ... and only if it starts like a provider token or like base64 of text: call ids
        # (toolu_..., call_...) and tool names, redacted by the thousand, mostly stop here.
        self._word_starts = frozenset(start.decode() for rule in self._word_rules if isinstance(rule, rules.TokenScanner)
                                      for start in rule.by_start)
        self._base64_lead, self._base64_run = frozenset(map(chr, rules.BASE64_LEAD)), rules.BASE64_RUN
        self._check_every_word = bool(extra_patterns)
        self._view, self._aws_pairs = rules.View, rules.aws_pairs  # not an import per text

    def find(self, text: str) -> list[Finding]:
        """Non-overlapping findings, in text order."""
        if len(text) <= _WORD_MAX and _WORD.fullmatch(text):
            if len(text) < self._min_word:
                return []  # shorter than any token (and no pattern of the user's to try)
            if self._check_every_word or "." in text or "-us" in text or text[:2] in self._word_starts or (
                    text[0] in self._base64_lead and len(text) >= self._base64_run):
                return self._find(text, self._word_rules)
            return []
        return self._find(text, self.rules)

    def _find(self, text: str, rules: list[_Rule]) -> list[Finding]:
        if len(text) < _MIN_TEXT:
            return []
        view = self._view(text)
        candidates: list[Candidate] = []
        for rule in rules:
            if rule.wanted(view):
                candidates.extend(rule.find(view))
        if not candidates:
            return []
        if any(c.kind == "aws-access-key-id" for c in candidates):
            candidates.extend(self._aws_pairs(view))
        if self.allow:
            candidates = self._allowed_removed(text, candidates)
        candidates.sort(key=lambda c: (-c.priority, c.start, -(c.end - c.start)))
        starts: list[int] = []  # the findings taken so far, by position: they never overlap,
        taken: list[Finding] = []  # so a candidate only needs checking against its neighbours
        for c in candidates:
            i = bisect.bisect_right(starts, c.start)
            if (i and taken[i - 1].end > c.start) or (i < len(taken) and taken[i].start < c.end):
                continue
            if PLACEHOLDER_RE.fullmatch(text, c.start, c.end):
                continue
            starts.insert(i, c.start)
            taken.insert(i, Finding(c.start, c.end, c.kind))
        return taken

    def _allowed_removed(self, text: str, candidates: list[Candidate]) -> list[Candidate]:
        """An allowed value stays, and so does every candidate overlapping it (a URL, an assignment)."""
        kept = []
        allowed: list[tuple[int, int]] = []
        for c in candidates:
            value = text[c.start:c.end]
            if value in self.allow or any(a in value for a in self.allow):
                allowed.append((c.start, c.end))
            else:
                kept.append(c)
        return [c for c in kept if not any(c.start < e and s < c.end for s, e in allowed)]

    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        """The text with every finding replaced by its placeholder, and how many of each kind."""
        findings = self.find(text)
        if not findings:
            return text, {}
        return replace(text, findings), dict(Counter(f.kind for f in findings))

    def sanitize(self, text: str, *, then: Callable[[str], str] | None = None) -> tuple[Sanitized, dict[str, int]]:
        """Redact ``text`` (unless it already is), then apply ``then``, a cut: a clip, a first line.

        Cutting text out of redacted text cannot make a secret appear, so the result is still
        Sanitized without a second scan. ``then`` must only remove text or add fixed markers.
        """
        if type(text) is Sanitized:
            redacted, counts = str(text), {}
        else:
            redacted, counts = self.redact(text)
        if then is not None:
            redacted = then(redacted)
        return _make(redacted), counts


def replace(text: str, findings: list[Finding]) -> str:
    parts: list[str] = []
    position = 0
    for f in findings:
        parts.append(text[position:f.start])
        parts.append(placeholder(f.kind))
        position = f.end
    parts.append(text[position:])
    return "".join(parts)


@dataclass(frozen=True)
class _ConfigRule:
    kind: str
    pattern: re.Pattern[str]

    @staticmethod
    def wanted(view: View) -> bool:
        return True

    def find(self, view: View) -> Iterator[Candidate]:
        from pipeline.redact.rules import PRIORITY_CONFIG, Candidate

        group: int | str = "secret" if "secret" in self.pattern.groupindex else (1 if self.pattern.groups else 0)
        for match in self.pattern.finditer(view.text):
            start, end = match.span(group)
            if end > start:
                yield Candidate(start, end, self.kind, PRIORITY_CONFIG)


def _config_rule(kind: str, pattern: str) -> _ConfigRule:
    if not _KIND.fullmatch(kind):
        raise UsageError(f"[redaction] extra_patterns: kind {kind!r} must be lower-case words joined by '-'",
                         hint='e.g. extra_patterns = { internal-token = "itk_[A-Za-z0-9]{32}" }')
    try:
        return _ConfigRule(kind, re.compile(pattern))
    except re.error as exc:
        raise UsageError(f"[redaction] extra_patterns: {kind!r} is not a valid regular expression: {exc}",
                         hint="fix the pattern in skillmill.toml (Python `re` syntax)") from exc


# -- the redactor for the current configuration ---------------------------------------------
_lock = threading.Lock()
_cached: tuple[object, Redactor] | None = None


#: The config file's path for each (``$SKILLMILL_HOME``, ``$HOME``): every trajectory builder
#: asks for the redactor, and building the path (``Path.home()``, ``expanduser``) cost 3/4 of
#: the 15 us a look-up took -- 3% of ingest. The stat that notices an edited file stays.
_paths: dict[tuple[str | None, str | None], str] = {}


def _config_key() -> tuple[str, int, int]:
    from pipeline import settings

    where = (os.environ.get(settings.ENV_HOME), os.environ.get("HOME"))
    path = _paths.get(where)
    if path is None:
        from pipeline.config import config_path

        path = _paths[where] = str(config_path())
    try:
        stat = os.stat(path)
    except OSError:
        return path, 0, 0
    return path, stat.st_mtime_ns, stat.st_size


def current() -> Redactor:
    """The redactor for ``[redaction]`` in the config file; rebuilt when the file changes."""
    global _cached
    key = _config_key()
    cached = _cached
    if cached is not None and cached[0] == key:
        return cached[1]
    with _lock:
        if _cached is None or _cached[0] != key:
            from pipeline import config

            section = config.load().redaction
            _cached = (key, Redactor(section.extra_patterns, section.allow))
            from pipeline.redact import logs

            logs.install(redact)  # from now on the process holds trajectory text: logs are redacted too
        return _cached[1]


def sanitize(text: str, *, then: Callable[[str], str] | None = None) -> Sanitized:
    """Text with every secret replaced, typed as such (the counts are dropped); see Redactor.sanitize."""
    if type(text) is Sanitized and then is None:
        return text
    return current().sanitize(text, then=then)[0]


def redact(text: str) -> str:
    return current().redact(text)[0]


sanitized.use_redactor(lambda text: current().redact(text))  # plain strings met by validation
