"""What of a session a brief may hand to the next agent: a closed description, checked on the text shown.

A skill reaches an agent after a person read and approved it; a brief reaches the next session with no one
in between, and much of what it could quote was written by others: a test suite of a hostile checkout prints
what it likes into its failures, a README the agent read can steer what it plans and says. So a brief quotes
a text only when it fits the description of its kind below -- a description of what is allowed, not a list
of what is feared -- and the text checked is the very string shown.

``shown`` is the one form a quoted text takes: NFKC (fullwidth ``ｃｕｒｌ`` is ``curl``), every run of whitespace
and control characters one space (no terminal escape, no line of its own), no backtick (each is shown in a code
span). Every character of it must be a letter, a digit, a mark of the script of the letter it follows (a
Devanagari vowel sign, not a combining grapheme joiner or a variation selector), printable ASCII, or a few
typographic marks (quotes and dashes read as ASCII ones); and no word may mix alphabets (a Cyrillic ``ѕ`` in ``ѕh``). Then, by kind:

* ``WORDS`` -- the person's own (the task, their last instruction): no finding of the prose rules a skill's text
  is checked with (an order to an agent, a command that fetches and runs code, a secret, a credential file to hand
  on) and no password stated.
* ``AGENT`` -- what the agent wrote (its open plan items, its unanswered questions, its last message), its Markdown
  emphasis (``*``) dropped: printable ASCII of at most 320 characters whose every word is an English word, a number, a name of code (``divide``,
  ``divide()``) or a file of the checkout (``tinycalc/cli.py``, ``setup.py``); no flag, no shell character, no
  address; a program named (``make``, ``uvx``, ``pytest`` ...) only as the start of an ordinary project command to
  the clause's end; and the prose rules of ``WORDS``.
* ``OUTPUT`` -- what a tool printed (the error of a failing check) is never quoted: the brief names what in it has
  a closed shape -- an error's class (``AssertionError``), an error code (``TS2322``), a test's id
  (``tests/test_cli.py::test_divide``), a file and line, pytest's counts, a missing module's name.
* ``COMMAND`` -- a command the agent ran: an ordinary project command (:func:`pipeline.safety.ordinary.why_not_ordinary`;
  the checkout's own path reads as ``.``).
* ``PATH`` -- a file of the checkout: a relative path of ``[\\w.@+/-]``, not climbing out.

What does not fit is stored as ``{"withheld": why}`` -- an object no session text can be -- and shown as
``(withheld: why)``, ``why`` one of ``REASONS``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

WORDS, AGENT, OUTPUT, COMMAND, PATH = "words", "agent", "output", "command", "path"
PROSE = AGENT  # the name the brief's first description used
#: Why a text is withheld, in words of ours (a marker's reason outside these is shown as plain "withheld").
REASONS = frozenset({
    "holds characters a brief does not pass on", "a word mixes alphabets", "not a plain path of the checkout",
    "not an ordinary project command", "states a password", "the agent's words hold more than words, numbers, code "
    "names and files", "names a program outside an ordinary command", "a rule for skill text flagged it",
    "no error of a known shape in the output",
})
_SPACE = re.compile(r"[\s\x00-\x1f\x7f-\x9f]+")
_TYPOGRAPHIC = set("•·°±×€£¥")
#: Letters of alphabets whose shapes pass for Latin ones: a word may not mix these with Latin, or each other.
_LOOKALIKE_SCRIPTS = frozenset({"LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC"})
_PATH = re.compile(r"[\w.@+/-]{1,300}")
#: A credential stated as a value: ``password: x``, ``token = x``, ``the api key is x`` (not a redaction's mark).
_STATED = re.compile(r"\b(?:pass(?:word|wd|phrase|code)?|pwd|secret|token|api[ _-]?key)\b\s*(?:[:=]|\bis\b)\s*"
                     r"(?![\[<(]?REDACTED)[^\s,;]{4,}", re.I)
#: The agent's words: the characters, and the words, they may be made of.
_AGENT_CHARS = re.compile(r"[A-Za-z0-9 .,:;!?'\"()/_%#+=-]{0,320}")
_AGENT_WORD = re.compile(r"[A-Za-z]+(?:['-][A-Za-z]+){0,3}|\d+(?:\.\d+)*%?|[A-Za-z_]\w{0,60}(?:\(\))?|-{1,2}|#\d+")
_CLAUSE = re.compile(r"[.;:!?]\s|\s(?:and|then|or)\s|,\s")
#: What has a closed shape in a tool's output.
_ERROR_CLASS = re.compile(r"\b[A-Z][A-Za-z0-9]{0,40}(?:Error|Exception|Failure|Fault|Interrupt|Exit|Warning)\b")
_ERROR_CODE = re.compile(r"\b(?:TS\d{4,5}|E\d{3,4}|[A-Z]{1,3}\d{3,4})\b")
_TEST_ID = re.compile(r"(?<![\w/.-])[\w./-]{1,120}\.py::[\w:\[\]-]{1,120}")
_FILE_LINE = re.compile(r"(?<![\w/.-])[\w./-]{1,120}\.[a-z]{1,5}:\d{1,6}(?::\d{1,6})?\b")
_COUNTS = re.compile(r"\b\d{1,6} (?:failed|passed|errors?|skipped|xfailed|warnings?)\b")
_MODULE = re.compile(r"\bNo module named '([\w.]{1,80})'|\bCannot find module '([\w@/.-]{1,80})'")


_ASCII_MARKS = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "…": "...", "–": "-", "—": "-"})


def shown(text: object) -> str:
    """The one form a quoted text takes (see the module's docstring); typographic quotes and dashes as ASCII."""
    flat = unicodedata.normalize("NFKC", str(text)).translate(_ASCII_MARKS)
    return _SPACE.sub(" ", flat).strip().replace("`", "'")


def withheld(value: object) -> str | None:
    """The reason, when ``value`` is a withheld marker (``{"withheld": why}``); else None."""
    if isinstance(value, dict) and "withheld" in value:
        return value["withheld"] if value["withheld"] in REASONS else "withheld"
    return None


def form(text: object, kind: str) -> str:
    """The string a text of ``kind`` is checked as and shown as: ``shown``, and for the agent's words without
    Markdown emphasis."""
    flat = shown(text)
    return re.sub(r"\*+", "", flat).strip() if kind == AGENT else flat


def why_not(text: object, kind: str, password: Callable[[str], object] | None = None) -> str | None:
    """Why ``text`` of ``kind`` may not be quoted in a brief, or None (then quote ``form(text, kind)``).
    ``password`` finds a password stated in prose (``pipeline.redact.prose_password``; passed in by the brief's
    writer: the hook that shows a brief imports nothing of redaction)."""
    text = form(text, kind)
    if not _characters_allowed(text):
        return "holds characters a brief does not pass on"
    if kind == PATH:
        if not _PATH.fullmatch(text) or text.startswith("/") or ".." in text.split("/"):
            return "not a plain path of the checkout"
        return None
    if _mixed_word(text):
        return "a word mixes alphabets"
    if kind == COMMAND:
        from pipeline.safety.ordinary import why_not_ordinary

        return "not an ordinary project command" if why_not_ordinary(text) else None
    if kind == AGENT and (why := _not_agent_words(text)):
        return why
    return _prose_rules(text, password)


def relay(text: object, kind: str, password: Callable[[str], object] | None = None) -> object:
    """``shown(text)`` when it may be quoted (for ``OUTPUT``: what in it has a closed shape), else a withheld
    marker. A marker relayed again stays as it is."""
    if withheld(text) is not None:
        return {"withheld": withheld(text)}
    if kind == OUTPUT:
        found = summary(text)
        return found if found else {"withheld": "no error of a known shape in the output"}
    why = why_not(text, kind, password)
    return form(text, kind) if why is None else {"withheld": why}


def summary(text: object) -> str | None:
    """What in a tool's output has a closed shape, in the order found: error classes and codes, test ids, files
    and lines, counts, a missing module (at most eight, each once)."""
    flat = shown(text)
    if not flat.isascii():
        flat = "".join(c if c.isascii() else " " for c in flat)
    found: list[tuple[int, str]] = []
    for pattern in (_ERROR_CLASS, _ERROR_CODE, _TEST_ID, _FILE_LINE, _COUNTS):
        found += [(m.start(), m.group(0)) for m in pattern.finditer(flat)]
    for m in _MODULE.finditer(flat):
        found.append((m.start(), f"missing module {m.group(1) or m.group(2)}"))
    picked = [t for _, t in sorted(found) if not t.startswith(("/", "~", "-")) and ".." not in t]  # of the checkout
    return "; ".join(list(dict.fromkeys(picked))[:8]) or None


def _characters_allowed(text: str) -> bool:
    previous = ""
    for char in text:
        category = unicodedata.category(char)
        if char.isascii() and char.isprintable() or char in _TYPOGRAPHIC or category[0] in "LN":
            previous = char if category[0] == "L" else previous
            continue
        if category in ("Mn", "Mc") and previous:  # a vowel sign of the script of the letter before it
            name, base = unicodedata.name(char, ""), unicodedata.name(previous, "")
            if name and not name.startswith(("COMBINING", "VARIATION")) and name.split(" ")[0] == base.split(" ")[0]:
                continue
        return False
    return True


def _mixed_word(text: str) -> str | None:
    for word in re.findall(r"\w+", text):
        if word.isascii():
            continue
        scripts = {unicodedata.name(c, "").split(" ")[0] for c in word if c.isalpha()}
        if len(scripts & _LOOKALIKE_SCRIPTS) > 1:
            return word
    return None


def _not_agent_words(text: str) -> str | None:
    """Why the agent's words are not plain words (see the module's docstring), or None."""
    if not _AGENT_CHARS.fullmatch(text):
        return "the agent's words hold more than words, numbers, code names and files"
    programs = _programs()
    for clause in _CLAUSE.split(f" {text} "):
        words = clause.split()
        start = next((n for n, w in enumerate(words) if _program(w, n, programs)), None)
        if start is not None:
            from pipeline.safety.ordinary import why_not_ordinary

            if why_not_ordinary(" ".join(w.strip("'\"()") for w in words[start:])):
                return "names a program outside an ordinary command"
            words = words[:start]  # the rest is an ordinary command: its flags and arguments are its own
        for token in words:
            word = token.strip("'\"()").rstrip(".,:;!?")  # a leading dot is the word's own (.env)
            if word and not _AGENT_WORD.fullmatch(word) and not _checkout_file(word):
                return "the agent's words hold more than words, numbers, code names and files"
    return None


def _program(word: str, position: int, programs: frozenset[str]) -> bool:
    """A program's name: as written (``make``, ``uvx``), or capitalised where a clause starts (``Make publish``);
    ``Python 3.12`` inside a sentence is the language."""
    bare = word.strip("'\"()")
    return bare in programs or position == 0 and bare[:1].isupper() and bare.lower() in programs


#: Endings of a project's files: ``name.ext`` with one of these is a file, not a host (``evil.zip``, ``evil.tk``).
_FILE_ENDINGS = frozenset({"py", "pyi", "js", "mjs", "cjs", "ts", "tsx", "jsx", "md", "rst", "txt", "json", "yaml",
                           "yml", "toml", "cfg", "ini", "rs", "go", "rb", "java", "kt", "c", "h", "cc", "cpp", "hpp",
                           "cs", "lock", "html", "css", "scss", "vue", "svelte", "php", "sql", "xml", "csv", "proto",
                           "swift", "m", "ex", "exs", "erl", "hs", "ml", "lua", "r", "jl", "dart", "scala", "tf"})


def _checkout_file(word: str) -> bool:
    """``tinycalc/cli.py``, ``src/``, ``setup.py:12``: a file of the checkout, never a host (``evil.sh/x``)."""
    word = re.sub(r"(?::\d{1,6}){1,2}$", "", word)
    if "/" in word:
        return why_not(word, PATH) is None and "." not in word.split("/")[0].lstrip(".")
    name, _, ending = word.rpartition(".")
    return bool(name) and re.fullmatch(r"[\w-]+", name) is not None and ending in _FILE_ENDINGS


#: Programs of the tables whose names are everyday words ("the env config", "a file", "the test"): read-only looks
#: and text tools, whose harmful uses need a flag, a redirection or a credential file -- which the words may not hold.
_NOUNS = frozenset({"env", "test", "file", "time", "date", "cut", "head", "tail", "id", "column", "command", "diff",
                    "groups", "sort", "join", "split", "more", "less", "watch", "which", "yes", "true", "false", "host",
                    "hostname", "basename", "dirname", "find", "cat", "echo", "grep", "type", "wait", "read", "top",
                    "uniq", "wc", "stat", "touch", "mkdir", "ls", "pwd", "cd", "tree", "printf", "arch", "cmp", "du",
                    "black", "coverage", "go", "jest"})


def _programs() -> frozenset[str]:
    """Programs an agent's words may name only as an ordinary command: every program the ordinary tables know, and
    the package runners and tools that run or publish code."""
    from pipeline.safety.tables import TABLES

    known = {name for name in TABLES.programs if re.fullmatch(r"[a-z][\w.-]*", name)} - _NOUNS
    # (not "just" and "task": everyday words far more often than the runners; their recipes need a flag or a name
    # of the checkout's files to be asked for, which the agent's words show as such)
    return frozenset(known | {"uvx", "pipx", "bunx", "pnpx", "npx", "deno", "bun", "make", "docker",
                              "podman", "kubectl", "helm", "terraform", "ssh", "scp", "rsync", "sftp", "nc", "curl",
                              "wget", "sudo", "sh", "bash", "zsh", "eval", "exec", "source", "pwsh", "powershell",
                              "iex", "gh", "aws", "gcloud", "az", "twine", "poetry", "pdm", "rye", "conda", "brew",
                              "apt", "apt-get", "yum", "dnf", "pacman", "chmod", "chown", "rm", "mv", "cp", "dd",
                              "tee", "crontab", "systemctl", "launchctl", "osascript", "open", "xdg-open"})


def _prose_rules(text: str, password: Callable[[str], object] | None) -> str | None:
    from pipeline.safety.findings import PLACEHOLDER
    from pipeline.safety.prose import scan_text

    if any(f.rule != PLACEHOLDER for f in scan_text(text)):  # a [REDACTED] mark is redaction's own
        return "a rule for skill text flagged it"
    if _STATED.search(text) or (password is not None and password(text)):
        return "states a password"
    return None


#: Which description a brief was held to when written; one held to another (an older skillmill's) is held to this
#: one again when it is shown.
VERSION = 2


def withhold(brief: dict[str, Any], password: Callable[[str], object] | None = None) -> dict[str, Any]:
    """The brief with each text the session supplied relayed as its kind (``relay``), marked ``relayed: VERSION``.
    Run when a brief is written, and when one not marked so is shown (a brief an older skillmill wrote)."""
    out = dict(brief)
    out["relayed"] = VERSION
    for key in ("task", "last_instruction"):
        out[key] = _each(out.get(key), WORDS, password)
    out["last_reply"] = _each(out.get("last_reply"), AGENT, password)
    out["todos"] = [_todo(item, password) for item in out.get("todos") or []]
    for key, kind in (("questions", AGENT), ("looked_at", PATH), ("files", PATH), ("reverted", PATH)):
        out[key] = [_each(item, kind, password) for item in out.get(key) or []]
    here = [p for p in (out.get("checkout"), out.get("cwd")) if isinstance(p, str) and re.match(r"/|[A-Za-z]:\\", p)]

    def command(value: object) -> object:
        """A command as the checkout's own: ``cd /home/me/proj && make`` is ``cd . && make`` (ordinary)."""
        if isinstance(value, str):
            for path in sorted(here, key=len, reverse=True):
                value = re.sub(re.escape(path.rstrip("/\\")) + r"(?=[/\\\s&;)]|$)", ".", value,
                               flags=re.I if path[1:2] == ":" else 0)
        return _each(value, COMMAND)

    out["checks"] = [{**c, "command": command(c.get("command")), "error": _each(c.get("error"), OUTPUT)}
                     for c in out.get("checks") or [] if isinstance(c, dict)]
    out["tried"] = [{**t, "command": command(t.get("command")), "error": _each(t.get("error"), OUTPUT)}
                    for t in out.get("tried") or [] if isinstance(t, dict)]
    out["blocked"] = [_blocked(item, command) for item in out.get("blocked") or []]
    action = out.get("last_action")
    if isinstance(action, dict):
        what = command(action.get("what")) if action.get("command", True) else _tool_and_files(action.get("what"))
        out["last_action"] = {**action, "what": what, "error": _each(action.get("error"), OUTPUT)}
    return out


_STATE = re.compile(r"\s*\((pending|in progress|in_progress|blocked|todo|open|not started)\)\s*$", re.I)


def _todo(item: object, password: Callable[[str], object] | None) -> object:
    """A plan item ``text (state)``: the text relayed as the agent's words, its state kept either way."""
    if not isinstance(item, str):
        return _each(item, AGENT, password)
    match = _STATE.search(item)
    state = match.group(1).lower().replace("_", " ") if match else None
    kept = _each(item[:match.start()] if match else item, AGENT, password)
    if isinstance(kept, dict):
        return {**kept, "state": state} if state else kept
    return f"{kept} ({state})" if state else kept


def _each(value: object, kind: str, password: Callable[[str], object] | None = None) -> object:
    if withheld(value) is not None or isinstance(value, str) and value.strip():
        return relay(value, kind, password)
    return value


def _tool_and_files(value: object) -> object:
    """``Edit src/a.py, src/b.py``: a tool's name and files of the checkout."""
    if not isinstance(value, str):
        return _each(value, PATH)
    tool, _, files = shown(value).partition(" ")
    parts = [p.strip() for p in files.split(",") if p.strip()]
    if re.fullmatch(r"[\w.-]{1,40}", tool) and all(why_not(p, PATH) is None or p == "a file outside the checkout"
                                                    for p in parts):
        return shown(value)
    return {"withheld": "not a plain path of the checkout"}


#: What a refusal is called in a brief: fixed words of ours, never the output that said it.
REFUSALS = ("permission denied", "not permitted", "not allowed", "denied", "blocked", "rejected", "refused",
            "asked not to be used", "declined")


def _blocked(item: object, command: Callable[[object], object]) -> object:
    if isinstance(item, dict) and "command" in item:
        reason = item.get("reason") if item.get("reason") in REFUSALS else "refused"
        return {"command": command(item.get("command")), "reason": reason}
    return {"withheld": "no error of a known shape in the output"}  # a brief of an older skillmill: output text
