"""Secrets recognised by where they stand: the value assigned to a secret-sounding name.

* ``OPENAI_API_KEY=...``, ``export DB_PASSWORD="..."``, ``"client_secret": "..."``,
  ``token: ...``, ``--password ...``: names made of KEY / TOKEN / SECRET / PASSWORD words
  (``.env`` files, shell, JSON, YAML, Python, CLI flags). The kind comes from the name.
* a high-entropy string assigned to any name (``x = "q8Zk..."``): random base64-like
  text with all of lower case, upper case and digits; hex (git SHAs, digests), UUIDs,
  ``sha512-`` integrity strings and names such as ``sha``/``hash``/``commit`` are left alone.

Both anchor on something cheap to find (a keyword in the lower-cased text, an ``=`` or ``:``),
then read the name backwards and the value forwards; the checks in ``heuristics`` decide.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipeline.redact.heuristics import (
    classes,
    entropy,
    is_hex,
    is_pathlike,
    is_placeholder,
    is_uuid,
    is_wordlike,
    name_words,
)
from pipeline.redact.rules import ANCHORS, PRIORITY_ASSIGNMENT, PRIORITY_ENTROPY, Candidate, View

# A keyword, the rest of the name, an optional closing quote (JSON keys), then `=`, `:`, `:=`,
# `=>` or -- for `--password value` flags -- blanks. Runs on the lower-cased text, one pattern
# per keyword: a literal start is searched at ~1 GB/s, an alternation of them at ~100 MB/s.
# Each keyword is searched for through an anchor (``pw`` for ``pwd``): other rules (prose
# passwords) ask for the same anchors, and ``View.has`` searches each once.
_KEYWORDS = tuple(
    (anchor, re.compile(word + rb"[a-z0-9_.-]{0,40}(?:(?:\\?[\"'])?(?:\]?[ \t]*(?::=|=>|=|:)[ \t]*|[ \t]+)"
                                   rb"|\\?[\"'][ \t]*,[ \t]*)"))
    for anchor, word in ((b"pass", b"pass"), (b"pw", b"pw"), (b"secret", b"secret"), (b"token", b"token"),
                         (b"key", b"key"), (b"cred", b"cred"), (b"auth", b"auth")))
assert all(anchor in ANCHORS for anchor, _ in _KEYWORDS)
# The value, taken whole: to its closing quote (the other quotes and any punctuation may be
# inside; JSON-escaped quotes too), or a bare word to the next blank -- ``7p)abt3r_0k#i9-u)8%26``
# is one value. A bare word also ends where the shell or a list would end it (``;|<>``, a quote,
# a backslash: JSON's escapes); ``_bare_end`` then cuts what code or a URL put after it.
_VALUE = re.compile(rb"\\\"(?P<jq>[^\"\\\n]+)\\\"|\"(?P<dq>[^\"\\\n]+)\"|'(?P<sq>[^'\\\n]+)'"
                    rb"|`(?P<bq>[^`\\\n]+)`|(?P<bare>[^\s\"'`\\;|<>]+)")
_QUOTED = ("jq", "dq", "sq", "bq")
#: ``name(`` at a value's start: a call (``os.getenv(``, ``get_secret()``), not a literal.
_CALL = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)*\(")
#: A value that refers to another: ``$TOKEN``, ``$HOME/.key``, ``%API_KEY%``, ``@file.txt``, ``&token``.
_REFERENCE = re.compile(r"\$[\w$.:/@{}-]*|%[A-Za-z_]\w*%|@[\w./:-]+|&[\w.]+|-[\w.-]*|\([\w.,]*\)")
#: Before a call that stores a value under a name given first: ``setenv("API_TOKEN", "...")``,
#: ``os.environ.setdefault(...)``, ``define('AUTH_KEY', ...)``, ``localStorage.setItem(...)``.
_SETTER = re.compile(rb"(?:set|put|define|store|save|add)[A-Za-z_]*[ \t]*\([ \t]*\\?[\"']$", re.IGNORECASE)
_NAME_REVERSED = re.compile(rb"[A-Za-z0-9_.-]{0,64}")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_CODE_CHARS = re.compile(r"[\[\]{}<>]")  # regexes, templates, markup: not a literal secret
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)+[,;)\]}]*")  # settings.SECRET_KEY
_GREP_LINE = re.compile(r"\d+[:-]")  # `auth.ts:10:export ...` is grep output
_SEGMENTS = re.compile(r"\.|::|->")
#: The pieces a name reads as (``awsS3BucketV2Name``: aws S 3 Bucket V 2 Name); generated text
#: falls into many short ones (``CoipkPfUCqND2RkZ``: Coipk Pf U Cq ND 2 Rk Z).
_PIECES = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")

_PASSWORD = frozenset({"password", "passwd", "pass", "pwd", "passphrase", "pw", "passcode", "sshpass", "pgpass"})
#: Words that say where a value is meant for, before the name (Terraform's ``TF_VAR_db_password``).
_NAME_PREFIXES = (("tf", "var"),)
#: One-word names (``PGPASSWORD``, ``REDISPASSWORD``) end with these.
_PASSWORD_ENDINGS = ("password", "passwd", "passphrase")
_SECRET = frozenset({"secret", "secrets", "credential", "credentials", "creds", "clientsecret", "secretkey"})
_TOKEN = frozenset({"token", "accesstoken", "authtoken", "refreshtoken", "apitoken", "bearertoken", "auth",
                    "sessiontoken", "securitytoken"})
_KEY_WORDS = frozenset({"apikey", "accesskey", "privatekey", "authkey", "signingkey", "encryptionkey",
                        "masterkey", "licensekey", "appkey", "clientkey"})
_KEY_QUALIFIERS = frozenset({"api", "access", "secret", "private", "auth", "signing", "encryption", "master",
                             "license", "app", "client", "account", "admin", "service", "subscription", "x",
                             "openai", "anthropic", "stripe", "google", "gemini", "mistral", "groq", "cohere",
                             "together", "deepseek", "aws", "azure", "hf", "huggingface", "sendgrid", "twilio",
                             "mailgun", "algolia", "datadog", "sentry", "firebase", "supabase", "pinecone", "jwt",
                             "session", "cookie", "hmac", "webhook", "live", "prod", "dev", "test"})
#: Words that make a name about a secret, not the secret itself (``token_count``, ``key_path``).
_NOT_SECRET = frozenset({
    "path", "file", "filename", "dir", "folder", "url", "uri", "endpoint", "host", "hostname", "name", "id", "ids",
    "type", "length", "len", "size", "count", "max", "min", "limit", "expiry", "expires", "expiration", "ttl",
    "timeout", "header", "prefix", "suffix", "field", "param", "format", "env", "var", "label", "hint", "placeholder",
    "example", "regex", "pattern", "policy", "mode", "strategy", "kind", "style", "class", "method", "source",
    "input", "output", "usage", "hash", "hashed", "salt", "encoding", "algorithm", "algo", "version", "index",
    "cache", "public", "pub", "fingerprint", "location", "store", "storage", "manager", "provider", "required",
    "enabled", "reset", "validator", "validation", "rotation", "generator", "budget", "tokens", "keys", "counter",
    "window", "estimate", "sort", "primary", "foreign", "lookup", "map", "dict", "func", "fn", "attr", "column",
    "table", "value_type", "ref", "bytes", "bits", "number", "num", "file_path", "secret_name", "store_path",
    "passed", "passes", "passing", "through", "keyword", "keyword_only", "authors", "author", "authority",
    "authenticated", "authentication", "authorized", "authorize", "authorization", "key_id", "keyid", "keyring",
    "tokenizer", "tokenize", "tokens_used", "ssh", "gpg", "pgp", "pem", "cert", "certificate", "crt",
    "stdin", "fd",  # --password-stdin, --passphrase-fd 0: where it is read from, not the value
})
#: Names whose values are identifiers or digests, never secrets, for the entropy rule.
_NOT_ENTROPY = frozenset({
    "sha", "sha1", "sha256", "sha512", "md5", "hash", "digest", "checksum", "integrity", "commit", "rev",
    "revision", "etag", "uuid", "guid", "id", "nonce", "signature", "sig", "fingerprint", "version", "ref",
    "tag", "salt", "iv", "request", "trace", "span", "parent", "leaf", "message", "msg", "tool", "call",
    "path", "file", "url", "uri", "href", "src", "image", "data", "content", "blob", "base64", "b64", "payload",
    "encoded", "snapshot", "cursor", "next", "page", "continuation", "lock", "resolved", "oid", "node",
    "repo", "repository",  # a checkout folder named like `monochromatic2025MAY24-pnpmTest` is no secret
})
#: detect-secrets asks 4.5 bits/char of base64 strings, which only long strings reach
#: (a random 32-character string: 4.56 on average, 4.23 for 1 in 100). Shorter strings get
#: a threshold near their own expected value; three character classes are required anyway.
_MIN_ENTROPY = ((24, 3.7), (32, 3.9), (40, 4.1), (10_000, 4.3))
_ASSIGN = re.compile(rb"[=:][ \t]*(\\?[\"'`])?([A-Za-z0-9+/_-]{20,512}={0,2})")


def _name_before(data: bytes, position: int, *, raw: bool = False) -> str:
    """The identifier that ends at ``position``, blanks and a closing quote skipped (at most 64 characters).

    Leading dots and dashes are dropped unless ``raw``: ``--db-password`` names ``db-password``,
    and only the raw form tells that it was a command-line flag.
    """
    window = data[max(0, position - 72):position][::-1]
    match = _NAME_REVERSED.match(window, len(window) - len(window.lstrip(b" \t\"'\\")))
    name = match.group()[::-1].decode() if match else ""
    if name[:1] in ("n", "t", "r") and window[match.end():match.end() + 1] == b"\\":  # type: ignore[union-attr]
        name = name[1:]  # JSON-escaped text: `...\napi_key = ...` -- the line began after the escape
    return name if raw else name.lstrip(".-")


def _kind(words: list[str]) -> str | None:
    """What a name says its value is; None when it is not a secret's name."""
    for prefix in _NAME_PREFIXES:
        if tuple(words[:len(prefix)]) == prefix and len(words) > len(prefix):
            words = words[len(prefix):]
    if not words or any(w in _NOT_SECRET for w in words):
        return None
    joined = "_".join(words)
    if joined in _NOT_SECRET:
        return None
    if any(w in _PASSWORD or w.endswith(_PASSWORD_ENDINGS) for w in words):
        return "password"  # PGPASSWORD, MYSQL_PWD, SSHPASS, db_password
    if any(w in _SECRET for w in words) and words[-1] != "id":
        if "access" in words and ("aws" in words or words[-2:] == ["access", "key"]):
            return "aws-secret-key"
        return "secret"
    if any(w in _TOKEN for w in words):
        return "token"
    if any(w in _KEY_WORDS for w in words):
        return "api-key"
    if words[-1] == "key" and len(words) >= 2 and words[-2] in _KEY_QUALIFIERS:
        return "api-key"
    return None


def _plausible(value: str, kind: str, *, bare: bool, env: bool, spaced: bool) -> bool:
    """Is ``value``, assigned to a secret's name, a literal secret? ``env``: a bare value of
    ``NAME=value`` (shell, ``.env``); ``spaced``: blanks stood between the operator and the value."""
    if len(value) < (6 if kind == "password" else 8):  # however long: an STS session token has 400 to 1,200
        return False
    if kind == "aws-secret-key" and len(value) == 40 and classes(value) >= 2 and not is_placeholder(value):
        return True
    if is_placeholder(value) or is_pathlike(value) or is_wordlike(value) or _is_code(value, env=env):
        return False
    if kind == "password" and value[:1] in "/~" and value.count("/") >= 2:
        return False  # `PWD=/home/deploy/Build2024x`: the shell's working folder, a path however it is spelled
    if " " in value or _GREP_LINE.match(value):
        return False
    if value[0] == "#" and bare and spaced:
        return False  # `token: # set in CI`: a comment
    if value.startswith(("==", "=>", "=~")):
        return False  # a comparison, not an assignment
    if _CODE_CHARS.search(value):
        return False
    if value.isdigit() and len(value) < 16:
        return False
    if kind == "aws-secret-key":
        return False
    if bare and not env and not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False  # `password: some_variable` in code is a reference, not a literal
    return kind == "password" or classes(value) >= 2 and entropy(value) >= 2.5


def _is_code(value: str, *, env: bool = False) -> bool:
    """A reference or a call, not a literal: ``settings.SECRET_KEY``, ``os.getenv(``, ``$TOKEN``, ``get()``.

    Only what code looks like: ``7p)abt3r_0k#...`` has a ``)`` and is a literal all the same, and
    a dotted value is an attribute only if its parts are names: ``s.<random>`` (Vault),
    ``hvs.<random>``, ``q7k9t.Lx...`` are tokens. ``env``: the value of a shell's or ``.env``
    file's ``NAME=value``, where there are no attributes -- only words make it a name there
    (``API_TOKEN=docs.internal``; Python's ``f(SECRET_KEY=settings.SECRET_KEY_V2)`` too).
    """
    if _REFERENCE.fullmatch(value):
        return True
    if _DOTTED.fullmatch(value):
        parts = _SEGMENTS.split(value.rstrip(",;)]}"))
        if env:
            return all(is_wordlike(part) or len(part) < 3 or ("_" in part and not _generated(part)) for part in parts)
        return not any(_generated(part) for part in parts)
    if value.startswith(("$(", "${", "%(")):
        return True
    # the whole value is a call: ``get_password()``, ``os.getenv(`` (a quote ended the bare word)
    return _CALL.match(value) is not None and value.endswith(("(", ")"))


def _generated(part: str) -> bool:
    """A part of a dotted value that reads as generated text, not as a name: three pieces of one
    or two letters or more, counting each run of digits (``q7k9t``, ``CoipkPfUCqND2RkZSEgtL4qO``;
    not ``awsS3BucketV2Name``, ``oAuth2ClientId``, ``v1beta1``)."""
    pieces = _PIECES.findall(part)
    return sum(len(p) <= 2 or p.isdigit() for p in pieces) - any(p.isdigit() for p in pieces) >= 4


def _bare_end(data: bytes, name_start: int, start: int, end: int, *, env: bool) -> int:
    """Where a bare value ends, once what code or a URL put after it is cut off.

    In a URL's query (``?api_key=X&page=2``) the value ends at ``&`` or ``#``. Inside brackets
    opened before the name on the same line, code's value ends at a ``,`` or the closing bracket
    (``f(password=X, user=u)``, ``{token: X}``), a shell's only loses a last closing bracket
    the value does not open (``(export TOKEN=X)``). Elsewhere -- ``NAME=value`` in a shell or
    ``.env`` file, YAML's ``key: value`` -- the value goes on to the next blank, whatever
    punctuation is in it (``7p)abt3r_0k#i9-u)8%26``).
    """
    if name_start and data[name_start - 1] in b"?&":
        return min((i for i in (data.find(b"&", start, end), data.find(b"#", start, end)) if i >= 0), default=end)
    line_start = max(data.rfind(b"\n", 0, name_start) + 1, name_start - 400, 0)
    before = data[line_start:name_start]
    opened = [c for c in b"([{" if before.count(c) > before.count(_CLOSER[c])]
    if not opened:
        return end - 1 if not env and data[end - 1] == 0x2C else end  # `password: X,` in a list
    if env:
        while end > start and data[end - 1] in (_CLOSER[c] for c in opened) and \
                data.count(data[end - 1], start, end) > data.count(_OPENER[data[end - 1]], start, end):
            end -= 1
        return end
    stops = [data.find(b",", start, end)] + [data.find(_CLOSER[c], start, end) for c in opened]
    return min((i for i in stops if i > start), default=end)


_CLOSER = {ord("("): ord(")"), ord("["): ord("]"), ord("{"): ord("}")}
_OPENER = {closer: opener for opener, closer in _CLOSER.items()}


class KeywordAssignmentRule:
    """``*KEY*`` / ``*TOKEN*`` / ``*SECRET*`` / ``*PASSWORD*`` names and the literal assigned to them.

    Assignments (``NAME=``, ``name = ``, ``name: ``, ``"name": ``, ``name := ``, ``name => ``),
    subscripts (``app.config['SECRET_KEY'] = ``, ``os.environ["X_TOKEN"] = ``, ``config[:api_key] = ``),
    a setter given the name first (``os.environ.setdefault("SECRET_KEY", "...")``) and flags
    (``--password value``).
    """

    @staticmethod
    def wanted(view: View) -> bool:
        # Most texts are short and hold no keyword at all (9 in 10 in the shared corpus): the
        # View searched them for every anchor at once. Long text nearly always holds one.
        return not view.quiet

    def find(self, view: View) -> Iterator[Candidate]:
        seen: set[int] = set()
        for word, pattern in _KEYWORDS:
            if view.has(word):
                for candidate in self._matches(pattern, view):
                    if candidate.start not in seen:
                        seen.add(candidate.start)
                        yield candidate

    @staticmethod
    def _matches(pattern: re.Pattern[bytes], view: View) -> Iterator[Candidate]:
        text, data = view.text, view.data
        for match in pattern.finditer(view.lower):
            start, stop = match.span()
            operator = match.group()
            prefix = _name_before(data, start, raw=True)
            name = prefix.lstrip(".-") + text[start:stop].rstrip(" \t:=>\"'\\],")
            name_start = start - len(prefix)
            setter = operator.rstrip(b" \t").endswith(b",")
            if setter:
                if not _SETTER.search(data, max(0, name_start - 40), name_start):
                    continue  # `("token", "abc")`: a tuple, not a name given a value
            elif b"=" not in operator and b":" not in operator and not prefix.startswith("-"):
                continue  # `token is ...`: prose, not `--token value`
            kind = _kind(name_words(name.lstrip("-")))
            if kind is None:
                continue
            value = _VALUE.match(data, stop)
            if value is None:
                continue
            group = next((g for g in _QUOTED if value.group(g) is not None), "bare")
            if setter and group == "bare":
                continue
            begin, end = value.span(group)
            bare = group == "bare"
            env = bare and bool(_ENV_NAME.fullmatch(name)) and operator.endswith(b"=")
            if bare:
                end = _bare_end(data, name_start, begin, end, env=env)
            secret = text[begin:end]
            if _plausible(secret, kind, bare=bare, env=env, spaced=operator[-1:] in (b" ", b"\t")):
                yield Candidate(begin, end, kind, PRIORITY_ASSIGNMENT)


class EntropyAssignmentRule:
    """A random-looking base64/base62 string in assignment position, whatever the name."""

    kind = "high-entropy-string"

    @staticmethod
    def wanted(view: View) -> bool:
        return len(view.data) >= 21 and (b"=" in view.data or b":" in view.data)

    def find(self, view: View) -> Iterator[Candidate]:
        data, text = view.data, view.text
        for match in _ASSIGN.finditer(data):
            start, end = match.span(2)
            if end < len(data) and (chr(data[end]).isalnum() or data[end] in b"._~%?"):
                continue  # part of a longer token (a path, a domain, a URL, non-ASCII text)
            quote = match.group(1)
            if quote and not data.startswith(quote, end):
                continue
            if not _random_secret(text[start:end]):
                continue
            words = name_words(_name_before(data, match.start()))
            if not words or any(w in _NOT_ENTROPY for w in words):
                continue
            yield Candidate(start, end, self.kind, PRIORITY_ENTROPY)


def _random_secret(value: str) -> bool:
    core = value.rstrip("=")
    if len(core) < 20 or len(core) > 128 or classes(core) < 3:
        return False
    if is_hex(core) or is_uuid(core) or core.startswith(("sha1-", "sha256-", "sha384-", "sha512-")):
        return False
    if is_pathlike(core):
        return False
    if sum(core.count(c) for c in "_-/") * 6 > len(core):
        return False  # words joined by separators (`__Users__me__repo`), not random text
    threshold = next(limit for length, limit in _MIN_ENTROPY if len(core) < length)
    return entropy(core) >= threshold
