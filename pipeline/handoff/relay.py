"""What of a session a brief may hand to the next agent: a closed description, checked on the text shown.

A skill reaches an agent after a person read and approved it; a brief reaches the next session with no one
in between, and much of what it could quote was written by others: a test suite of a hostile checkout prints
what it likes into its failures, a README the agent read can steer what it plans and says. So a brief quotes
a text only when it fits the description of its kind below, and the text checked is the very string shown:

``shown`` is the one form a quoted text takes -- NFKC (fullwidth ``ｃｕｒｌ`` is ``curl``), every run of
whitespace and control characters one space (so no terminal escape, no line of its own), no backtick (each is
shown in a code span). A text holding invisible characters (zero-width, bidi, tag characters: an instruction
a person does not see), private-use or unassigned ones, or a word that mixes alphabets (a Cyrillic ``ѕ`` in
``ѕh``) is not quoted at all.

Then, by kind:

* ``WORDS`` -- the person's own (the task, their last instruction): no finding of the prose rules a skill's
  text is checked with (an order to an agent, a command that fetches and runs code, a secret, a credential
  file to hand on) and no password stated in prose.
* ``PROSE`` -- what the agent wrote (its last message, its plan, its questions): as ``WORDS``, and plain
  (:func:`pipeline.safety.plain.why_not_plain`: no web address, no place outside the checkout, no command
  inline that is not ordinary), no shell operator joining or feeding commands (``|``, ``&&``, ``$(``,
  ``>> f``, ``> ~/f``), no host name (``evil.example/x``, ``user@host:``), no credential file named.
* ``OUTPUT`` -- what a tool printed (the error line of a failing check): as ``PROSE``, in printable ASCII.
* ``COMMAND`` -- a command the agent ran: an ordinary project command
  (:func:`pipeline.safety.ordinary.why_not_ordinary`), as ``PROSE`` otherwise.
* ``PATH`` -- a file of the checkout: a relative path of plain characters (``[\\w.@+/-]``), not climbing out.

A text that does not fit is replaced by ``(withheld: <why>)``; nothing of it is quoted.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

WORDS, PROSE, OUTPUT, COMMAND, PATH = "words", "prose", "output", "command", "path"
WITHHELD = "(withheld: {why})"
#: A reason quotes nothing of the text: lower-case words of ours only (a brief read back is shown as it is).
_REASON = re.compile(r"[a-z][a-z ,'-]{0,99}")
_WITHHELD = re.compile(r"\(withheld: [a-z][a-z ,'-]{0,99}\)")

_SPACE = re.compile(r"[\s\x00-\x1f\x7f-\x9f]+")
#: Letters of alphabets whose shapes pass for Latin ones: a word may not mix these with Latin, or each other.
_LOOKALIKE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC")
#: Shell operators that join or feed commands, in the text as shown (no backticks are left by then).
_OPERATORS = re.compile(r"\||&&|\$\(|\$\{|<\(|>>|\d?>&|>\s*[~/$]")
#: A host name: a dotted name ending in letters, followed by a path or a port, or after ``@``; or a name under
#: a top-level domain used for sites, standing alone.
_HOST = re.compile(r"(?<![\w.-])(?:[a-z0-9-]+\.)+(?P<tld>[a-z]{2,24})(?=[/:][\w/~.-])"
                   r"|@(?:[a-z0-9-]+\.)*[a-z0-9-]+(?=:)|(?<![\w.-])(?:[a-z0-9-]+\.)+(?:com|net|org|io|dev|app|"
                   r"sh|ai|co|xyz|ru|cn|me|info|biz|site|online|top|example|invalid|test|local)\b(?!\.\w)", re.I)
#: Endings that make ``name.ext/`` a file or folder of a project rather than a host.
_FILE_ENDINGS = {"py", "js", "ts", "tsx", "jsx", "md", "txt", "json", "yaml", "yml", "toml", "cfg", "ini", "rs",
                 "go", "rb", "java", "kt", "c", "h", "cc", "cpp", "hpp", "cs", "sh", "lock", "html", "css", "scss",
                 "vue", "svelte", "php", "sql", "xml", "csv", "log", "d", "egg", "dist", "git", "github", "venv"}
_PATH = re.compile(r"[\w.@+/-]{1,300}")
#: A credential stated as a value: ``password: x``, ``token = x``, ``the api key is x`` (not a redaction's mark).
_STATED = re.compile(r"\b(?:pass(?:word|wd|phrase|code)?|pwd|secret|token|api[ _-]?key)\b\s*(?:[:=]|\bis\b)\s*"
                     r"(?![\[<(]?REDACTED)[^\s,;]{4,}", re.I)


def shown(text: object) -> str:
    """The one form a quoted text takes (see the module's docstring)."""
    flat = unicodedata.normalize("NFKC", str(text))
    return _SPACE.sub(" ", flat).strip().replace("`", "'")


def why_not(text: object, kind: str, password: Callable[[str], object] | None = None) -> str | None:
    """Why ``text`` of ``kind`` may not be quoted in a brief, or None (then quote ``shown(text)``). ``password``
    finds a password stated in prose (``pipeline.redact.prose_password``; passed in by the brief's writer: the
    hook that shows a brief imports nothing of redaction)."""
    raw = str(text)
    if any(unicodedata.category(c) in ("Cf", "Co", "Cn", "Cs") for c in raw):
        return "holds invisible or unassigned characters"
    text = shown(raw)
    if kind == PATH:
        if not _PATH.fullmatch(text) or text.startswith("/") or ".." in text.split("/"):
            return "not a plain path of the checkout"
        return None
    if _mixed_word(text):
        return "a word mixes alphabets"
    if kind == OUTPUT and not text.isascii():
        return "tool output that is not plain ASCII"
    if why := _prose_rules(text, password):
        return why
    if kind == WORDS:
        return None
    if kind == COMMAND:
        from pipeline.safety.ordinary import why_not_ordinary

        reasons = why_not_ordinary(text)
        return f"not an ordinary project command: {reasons[0]}" if reasons else None
    return _not_plain(text)


def relay(text: object, kind: str, password: Callable[[str], object] | None = None) -> str:
    """``shown(text)`` when it may be quoted, else ``WITHHELD`` with the reason (words of ours, none of the text's).
    A brief's own ``(withheld: ...)`` stays as it is, so a brief read back and relayed again is unchanged."""
    if isinstance(text, str) and _WITHHELD.fullmatch(text):
        return text
    why = why_not(text, kind, password)
    if why is None:
        return shown(text)
    reason = why.split(" (")[0].split(":")[0].strip().lower()
    return WITHHELD.format(why=reason if _REASON.fullmatch(reason) else "not a text a brief passes on")


def _mixed_word(text: str) -> str | None:
    for word in re.findall(r"\w+", text):
        if word.isascii():
            continue
        scripts = {unicodedata.name(c, "").split(" ")[0] for c in word if c.isalpha()}
        if len(scripts & set(_LOOKALIKE_SCRIPTS)) > 1:
            return word
    return None


def _prose_rules(text: str, password: Callable[[str], object] | None) -> str | None:
    from pipeline.safety.findings import PLACEHOLDER
    from pipeline.safety.prose import scan_text

    found = [f for f in scan_text(text) if f.rule != PLACEHOLDER]  # a [REDACTED] mark is redaction's own
    if found:
        return found[0].message.split(" (")[0]
    if _STATED.search(text) or (password is not None and password(text)):
        return "states a password"
    return None


def _not_plain(text: str) -> str | None:
    from pipeline.safety.credentials import secret_path
    from pipeline.safety.plain import why_not_plain

    if reasons := why_not_plain(text):
        return reasons[0].split(" (")[0]
    if _OPERATORS.search(text):
        return "joins or feeds commands"
    for match in _HOST.finditer(text):
        if (match.group("tld") or "").lower() not in _FILE_ENDINGS:
            return "names a host"
    if any(secret_path(word.strip("'\"()[],.:;!?")) for word in text.split() if re.search(r"[./~]", word)):
        return "names a credential file"
    return None


def withhold(brief: dict[str, Any], password: Callable[[str], object] | None = None) -> dict[str, Any]:
    """The brief with each text the session supplied relayed as its kind (``relay``): what may not be quoted is
    ``(withheld: why)``. Run when a brief is written and again when one is shown (a brief written by an older
    skillmill, or read back from disk, is held to the same description)."""
    out = dict(brief)
    for key in ("task", "last_instruction"):
        out[key] = _each(out.get(key), WORDS, password)
    out["last_reply"] = _each(out.get("last_reply"), PROSE, password)
    for key, kind in (("todos", PROSE), ("questions", PROSE), ("looked_at", PATH), ("files", PATH),
                      ("reverted", PATH)):
        out[key] = [_each(item, kind, password) for item in out.get(key) or []]
    here = [p for p in (out.get("checkout"), out.get("cwd")) if isinstance(p, str) and re.match(r"/|[A-Za-z]:\\", p)]

    def command(value: object) -> object:
        """A command as the checkout's own: ``cd /home/me/proj && make`` is ``cd . && make`` (ordinary)."""
        if isinstance(value, str):
            for path in sorted(here, key=len, reverse=True):
                value = re.sub(re.escape(path.rstrip("/\\")) + r"(?=[/\\\s&;)]|$)", ".", value,
                               flags=re.I if path[1:2] == ":" else 0)
        return _each(value, COMMAND)

    out["checks"] = [{**c, "command": command(c.get("command")), "error": _each(c.get("error"), OUTPUT, password)}
                     for c in out.get("checks") or [] if isinstance(c, dict)]
    out["tried"] = [{**t, "command": command(t.get("command")), "error": _each(t.get("error"), OUTPUT, password)}
                    for t in out.get("tried") or [] if isinstance(t, dict)]
    out["blocked"] = [_blocked(item, command) for item in out.get("blocked") or []]
    action = out.get("last_action")
    if isinstance(action, dict):
        what = command(action.get("what")) if action.get("command", True) else _each(action.get("what"), PROSE, password)
        out["last_action"] = {**action, "what": what, "error": _each(action.get("error"), OUTPUT, password)}
    return out


def _each(value: object, kind: str, password: Callable[[str], object] | None = None) -> object:
    return relay(value, kind, password) if isinstance(value, str) and value.strip() else value


#: What a refusal is called in a brief: fixed words of ours, never the output that said it.
REFUSALS = ("permission denied", "not permitted", "not allowed", "denied", "blocked", "rejected", "refused",
            "asked not to be used", "declined")


def _blocked(item: object, command: Any) -> object:
    if isinstance(item, dict):
        reason = item.get("reason") if item.get("reason") in REFUSALS else "refused"
        return {"command": command(item.get("command")), "reason": reason}
    return relay(item, OUTPUT) if isinstance(item, str) else item  # a brief of an older skillmill
