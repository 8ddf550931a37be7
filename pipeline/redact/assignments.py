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
    is_code,
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
    (anchor, re.compile(word + rb"[a-z0-9_.-]{0,40}(?:\\?[\"'])?(?:[ \t]*(?::=|=>|=|:)[ \t]*|[ \t]+)"))
    for anchor, word in ((b"pass", b"pass"), (b"pw", b"pwd"), (b"secret", b"secret"), (b"token", b"token"),
                         (b"key", b"key"), (b"cred", b"cred"), (b"auth", b"auth")))
assert all(anchor in ANCHORS for anchor, _ in _KEYWORDS)
# The value: quoted (also JSON-escaped quotes) or bare.
_VALUE = re.compile(rb"(?P<q>\\?[\"'`])(?P<quoted>[^\"'`\\\n]{1,256})(?P=q)|(?P<bare>[^\s\"'`,;)\]}\\<>|&]{1,256})")
_NAME_REVERSED = re.compile(rb"[A-Za-z0-9_.-]{0,64}")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_CODE_CHARS = re.compile(r"[\[\]{}<>]")  # regexes, templates, markup: not a literal secret
_GREP_LINE = re.compile(r"\d+[:-]")  # `auth.ts:10:export ...` is grep output

_PASSWORD = frozenset({"password", "passwd", "pass", "pwd", "passphrase", "pw", "passcode", "sshpass"})
#: One-word names (``PGPASSWORD``, ``REDISPASSWORD``) end with these.
_PASSWORD_ENDINGS = ("password", "passwd", "passphrase")
_SECRET = frozenset({"secret", "secrets", "credential", "credentials", "creds", "clientsecret", "secretkey"})
_TOKEN = frozenset({"token", "accesstoken", "authtoken", "refreshtoken", "apitoken", "bearertoken", "auth"})
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
    return name if raw else name.lstrip(".-")


def _kind(words: list[str]) -> str | None:
    """What a name says its value is; None when it is not a secret's name."""
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


def _plausible(value: str, kind: str, *, bare: bool, env: bool) -> bool:
    if len(value) < (6 if kind == "password" else 8) or len(value) > 256:
        return False
    if kind == "aws-secret-key" and len(value) == 40 and classes(value) >= 2 and not is_placeholder(value):
        return True
    if is_placeholder(value) or is_code(value) or is_pathlike(value) or is_wordlike(value):
        return False
    if value[:1] in "=#-" or " " in value or _CODE_CHARS.search(value) or _GREP_LINE.match(value):
        return False
    if value.isdigit() and len(value) < 16:
        return False
    if kind == "aws-secret-key":
        return False
    if bare and not env and not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False  # `password: some_variable` in code is a reference, not a literal
    return kind == "password" or classes(value) >= 2 and entropy(value) >= 2.5


class KeywordAssignmentRule:
    """``*KEY*`` / ``*TOKEN*`` / ``*SECRET*`` / ``*PASSWORD*`` names and the literal assigned to them."""

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
            name = prefix.lstrip(".-") + text[start:stop].rstrip(" \t:=>\"'\\")
            if b"=" not in operator and b":" not in operator and not prefix.startswith("-"):
                continue  # `token is ...`: prose, not `--token value`
            kind = _kind(name_words(name.lstrip("-")))
            if kind is None:
                continue
            value = _VALUE.match(data, stop)
            if value is None:
                continue
            group = "bare" if value.group("bare") is not None else "quoted"
            begin, end = value.span(group)
            secret = text[begin:end]
            bare = group == "bare"
            env = bare and bool(_ENV_NAME.fullmatch(name)) and b"=" in operator
            if _plausible(secret, kind, bare=bare, env=env):
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
