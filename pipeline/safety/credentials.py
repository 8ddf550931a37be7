"""Credential files and token prefixes, read from ``credentials.toml``: what a path, a glob, a search
or a sentence may not name.

* ``secret_file(name)`` / ``secret_path(path)``: a file people keep secrets in (``.env``, ``.envrc``,
  ``secrets.json``, ``server.pem``, ``id_ed25519``, ``~/.aws/credentials`` ...), without case;
* ``glob_secret(part)``: the secret name a glob could match (``.en*``, ``*.pem``, ``.gi?``, even ``*``),
  decided by intersecting the two globs, so no spelling of the glob escapes it;
* ``could_match(glob, name)``: whether two globs match a common name (the shell's rule kept: a
  wildcard does not match a leading dot);
* ``credential_prefix(pattern)``: the token opening a search pattern looks for (``AKIA``, ``xoxb-``,
  ``A[K]IA``, ``\\bghp_``), from the list redaction's rules are written as.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

from pipeline.safety.words import CREDENTIAL_PATH

DATA_FILE = Path(__file__).with_name("credentials.toml")
_DATA = tomllib.loads(DATA_FILE.read_text(encoding="utf-8"))
FILES: tuple[str, ...] = tuple(name.lower() for name in _DATA["files"])
FOLDERS: tuple[str, ...] = tuple(name.lower() for name in _DATA["folders"])
TEMPLATES: tuple[str, ...] = tuple(name.lower() for name in _DATA["templates"])
PREFIXES: tuple[str, ...] = tuple(_DATA["prefixes"])
#: Openings of credentials redaction finds by their structure, not a prefix rule (a JWT's header, base64 of
#: ``{"alg"`` / ``{"typ"``): searched for like the prefixes.
STRUCTURED: tuple[str, ...] = tuple(_DATA["structured"])
SECRET_WORDS: tuple[str, ...] = tuple(word.lower() for word in _DATA["secret_words"])


# -- names -----------------------------------------------------------------------------------------
def is_glob(part: str) -> bool:
    """Whether PART may be a glob (any ``*``, ``?`` or ``[``: the wary reading, for paths)."""
    return bool(re.search(r"[*?\[]", part))


def expands(word: str) -> bool:
    """Whether the shell expands WORD as a glob: a ``*``, a ``?`` or a closed ``[...]`` (``[`` alone, the test
    command, is a plain word)."""
    return bool(re.search(r"[*?]", word)) or any(char == "[" and _class_end(word, n) > 0 for n, char in enumerate(word))


def secret_file(name: str) -> bool:
    """Whether the file name NAME (no folder) is one people keep secrets in; a template (``.env.example``) is not."""
    low = name.lower()
    return any(fnmatch.fnmatchcase(low, p) for p in FILES) and not any(fnmatch.fnmatchcase(low, t) for t in TEMPLATES)


def secret_path(path: str) -> bool:
    """Whether PATH names a credential file or a file in a credential folder (``~/.aws/credentials``, ``.env``)."""
    parts = [p for p in re.split(r"[/\\]", path.strip().lower()) if p]
    if not parts:
        return False
    return bool(CREDENTIAL_PATH.search(path)) and not any(fnmatch.fnmatchcase(parts[-1], t) for t in TEMPLATES) \
        or any(p in FOLDERS for p in parts) or not is_glob(parts[-1]) and secret_file(parts[-1])


def glob_secret(part: str, *, last: bool = True, shell: bool = True) -> str | None:
    """The credential file (or folder) name the glob PART could match, or None. LAST: PART is the file name
    (else a folder of the path); SHELL: a wildcard matches no leading dot (the shell's rule; ``grep --include``
    and ``rg -g`` have no such rule)."""
    for name in (*FOLDERS, *(FILES if last else ())):
        if could_match(part, name, shell=shell):
            return name
    return None


# -- two globs, one name ---------------------------------------------------------------------------
_STAR = None  # an item of a glob: None for `*`, else (negated, ranges) for one character
_Item = tuple[bool, tuple[tuple[str, str], ...]] | None
_ANY: _Item = (True, ())


def _items(glob: str) -> list[_Item]:
    items: list[_Item] = []
    n = 0
    while n < len(glob):
        char = glob[n]
        if char == "*":
            if not items or items[-1] is not _STAR:
                items.append(_STAR)
        elif char == "?":
            items.append(_ANY)
        elif char == "[" and (end := _class_end(glob, n)) > 0:
            body = glob[n + 1:end]
            negated = body[:1] in ("!", "^")
            body = body[1:] if negated else body
            ranges, m = [], 0
            while m < len(body):
                if m + 2 < len(body) and body[m + 1] == "-":
                    ranges.append((body[m], body[m + 2]))
                    m += 3
                else:
                    ranges.append((body[m], body[m]))
                    m += 1
            items.append((negated, tuple(ranges)))
            n = end
        elif char == "\\" and n + 1 < len(glob):
            n += 1
            items.append((False, ((glob[n], glob[n]),)))
        else:
            items.append((False, ((char, char),)))
        n += 1
    return items


def _class_end(glob: str, n: int) -> int:
    """Where the ``]`` closing the class opened at N is (-1: the ``[`` is a plain character)."""
    m = n + 1 + (glob[n + 1:n + 2] in ("!", "^"))
    m += glob[m:m + 1] == "]"
    end = glob.find("]", m)
    return end


def _meet(a: _Item, b: _Item) -> bool:
    """Whether one character can match both items."""
    a, b = a or _ANY, b or _ANY
    if a[0] and b[0]:
        return True
    if not a[0] and not b[0]:
        return any(lo <= other_hi and other_lo <= hi for lo, hi in a[1] for other_lo, other_hi in b[1])
    positive, negative = (a, b) if b[0] else (b, a)
    for lo, hi in positive[1]:
        for code in range(ord(lo), min(ord(hi), ord(lo) + 512) + 1):
            if not any(ord(x) <= code <= ord(y) for x, y in negative[1]):
                return True
    return False


def _may_open_with_dot(items: list[_Item]) -> bool:
    first = items[0] if items else _STAR
    return first is not _STAR and first != _ANY and _meet(first, (False, ((".", "."),)))


def could_match(glob: str, name: str, shell: bool = True) -> bool:
    """Whether the globs GLOB and NAME (either may be a plain name) match one file name, without case."""
    a, b = _items(glob.lower()), _items(name.lower())
    if shell and name.startswith(".") and not _may_open_with_dot(a):
        return False
    seen: set[tuple[int, int]] = set()
    todo = [(0, 0)]
    while todo:
        i, j = todo.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(a) and j == len(b):
            return True
        if i < len(a) and a[i] is _STAR:
            todo.append((i + 1, j))
        if j < len(b) and b[j] is _STAR:
            todo.append((i, j + 1))
        if i < len(a) and j < len(b) and _meet(a[i], b[j]):
            todo.append((i if a[i] is _STAR else i + 1, j if b[j] is _STAR else j + 1))
    return False


# -- searches --------------------------------------------------------------------------------------
#: An item of a search pattern: the characters it matches (None: nearly any), whether it may be left out,
#: the character as written (for telling an identifier from a token), and whether it may repeat.
_Search = tuple[frozenset[str] | None, bool, str, bool]
_CLASSES = {"d": None, "w": None, "s": None, "D": None, "W": None, "S": None}


def _search_items(pattern: str) -> list[list[_Search]]:
    """PATTERN (a grep or ripgrep regex) as alternatives of items; groups, anchors and boundaries dropped.
    Read warily: ``\\|``, ``\\?``, ``\\+`` and ``\\{m,n\\}`` are grep's basic regex operators, taken as such
    (to ripgrep they are the characters: reading them as operators only lets a pattern match more)."""
    alternatives: list[list[_Search]] = [[]]

    def quantify(optional: bool, repeat: bool) -> None:
        if alternatives[-1]:
            chars, was_optional, written, was_repeat = alternatives[-1][-1]
            alternatives[-1][-1] = (chars, was_optional or optional, written, was_repeat or repeat)

    n = 0
    while n < len(pattern):
        char, item = pattern[n], None
        if char == "\\" and n + 1 < len(pattern):
            n += 1
            escaped = pattern[n]
            if escaped in "bB<>AZzGK`'":
                n += 1
                continue  # a boundary: matches no character
            if escaped == "|":
                alternatives.append([])
            elif escaped in "?+":
                quantify(escaped == "?", escaped == "+")
            elif escaped == "{" and (interval := re.match(r"(\d*)(,?)(\d*)\\\}", pattern[n + 1:])):
                low, comma, high = interval.groups()
                quantify(not low.strip("0"), bool(comma) and high != "1" or int(high or low or 0) > 1)
                n += len(interval.group(0))
            elif escaped in "()":
                pass
            else:
                item = (None, False, "", False) if escaped in _CLASSES else \
                    (frozenset({escaped.lower()}), False, escaped, False)
        elif char == "[" and (end := _class_end(pattern, n)) > 0:
            body = pattern[n + 1:end]
            spanned = body[:1] in ("^", "!") or re.search(r"\[:\w+:\]|\\[dwsDWS]|.-.", body)
            chars = frozenset(c.lower() for c in body.replace("\\", ""))
            item = (None, False, "", False) if spanned or len(chars) > 8 else \
                (chars, False, body if len(chars) == 1 else "", False)
            n = end
        elif char == ".":
            item = (None, False, "", False)
        elif char == "|":
            alternatives.append([])
        elif char in "?*+":
            quantify(char != "+", char != "?")
        elif char == "{" and (interval := re.match(r"\{(\d*)(,?)(\d*)\}", pattern[n:])):
            low, comma, high = interval.groups()
            quantify(not low.strip("0"), bool(comma) and high != "1" or int(high or low or 0) > 1)
            n += len(interval.group(0)) - 1
        elif char == "(":
            group = re.match(r"\(\?(?:[:=!]|<[=!]|P?<\w+>|[a-zA-Z]*:?)", pattern[n:])
            n += len(group.group(0)) - 1 if group else 0
        elif char not in "^$)":
            item = (frozenset({char.lower()}), False, char, False)
        if item is not None:
            alternatives[-1].append(item)
        n += 1
    return alternatives


def _aligned(items: list[_Search], start: int, prefix: str) -> int | None:
    """The index after PREFIX matched from item START (None: it does not), with at most one item that
    matches nearly anything and three characters matched as written. A pattern may also end where only the
    prefix's separator is left, if what it matched is a token's opening, not a name: ``xoxb`` finds ``xoxb-``
    tokens, ``glpat`` ``glpat-``; ``rubygems`` (a word past six letters) is a name."""
    cut = len(prefix.rstrip("-_.=~"))
    stem = prefix[:cut]
    short = cut >= 4 and (len(stem) <= 6 or not stem.isalpha()) and cut < len(prefix)

    def walk(k: int, p: int, loose: int) -> int | None:
        if p == len(prefix):
            return k if loose <= 1 and len(prefix) - loose >= 3 else None
        if k == len(items):
            return k if short and p == cut and loose <= 1 and cut - loose >= 4 else None
        chars, optional, _, _ = items[k]
        if optional and (end := walk(k + 1, p, loose)) is not None:
            return end
        if chars is None:
            return walk(k + 1, p + 1, loose + 1)
        return walk(k + 1, p + 1, loose) if prefix[p] in chars else None

    return walk(start, 0, 0)


def secret_word(pattern: str) -> str | None:
    """The word secrets are kept under (``password``, ``secret``, ``token``, ``BEGIN ... KEY`` ...: ``secret_words``
    of ``credentials.toml``) the search PATTERN could match, however spelled: through a class or a wildcard
    (``pass[w]ord``, ``p.ssword``, ``BEGIN .* KEY``), cut short where the word allows (``pass``, ``secr``), or
    without its first letter or two (``assword``). Four characters must be matched as written (three for a word
    cut short), so ``.....`` or ``or`` is no search for one."""
    for items in _search_items(pattern):
        for spec in SECRET_WORDS:
            if _finds(items, spec):
                return spec.replace("|", "")
    return None


def _finds(items: list[_Search], spec: str) -> bool:
    """Whether ITEMS could match text holding the secret word SPEC (``*``: any run of characters; the pattern may
    end anywhere after ``|``). The word may start at any item if the pattern goes on to its end (``db_password``);
    the pattern must start at the word's start to end inside it, or at its second or third letter."""
    word = spec.replace("|", "")
    cut = spec.find("|") if "|" in spec else len(word)
    todo: list[tuple[int, int, int, bool]] = []  # item, character of the word, characters written, may end early
    todo += [(i, 0, 0, all(item[1] for item in items[:i])) for i in range(len(items))]
    todo += [(0, j, 0, False) for j in (1, 2) if j < cut]
    seen: set[tuple[int, int, int, bool]] = set()
    while todo:
        state = todo.pop()
        if state in seen:
            continue
        seen.add(state)
        i, j, written, early = state
        if j == len(word) and written >= 4 or i == len(items) and early and j >= cut and written >= 3:
            return True
        if i < len(items) and items[i][1]:
            todo.append((i + 1, j, written, early))
        if j == len(word):
            continue
        if word[j] == "*":
            todo.append((i, j + 1, written, early))
            if i < len(items):
                todo += [(i, j, written, early), (i + 1, j, written, early)] if items[i][3] else \
                    [(i + 1, j, written, early)]
            continue
        if i == len(items):
            continue
        chars, _, _, repeat = items[i]
        if chars is None or word[j] in chars:
            counted = min(written + (chars is not None), 4)
            todo.append((i + 1, j + 1, counted, early))
            if repeat:
                todo.append((i, j + 1, counted, early))
    return False


def credential_prefix(pattern: str) -> str | None:
    """The token prefix (``AKIA``, ``xoxb-``, ``ghp_`` ...) the search PATTERN looks for, or None. A prefix
    counts where a token could start (no letter or digit just before it) and unless what follows it is a
    lowercase word -- an identifier (``hf_hub_download``, ``npm_config_cache``), not a token."""
    for items in _search_items(pattern):
        for start in range(len(items)):
            before = items[start - 1] if start else None
            if before is not None and not before[1] and before[0] is not None and len(before[0]) == 1 and \
                    next(iter(before[0])).isalnum():
                continue
            for prefix in (*PREFIXES, *STRUCTURED):
                end = _aligned(items, start, prefix.lower())
                if end is None:
                    continue
                rest = "".join(written for _, _, written, _ in items[end:end + 40])
                if re.match(r"[a-z]{2,}(?![A-Za-z0-9])", rest):
                    continue
                return prefix
    return None
