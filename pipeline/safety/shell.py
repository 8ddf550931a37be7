"""A small shell reader: a command line split into simple commands the way a shell splits it.

Enough of POSIX sh to see what a line *runs*: quotes and escapes, ``|`` ``&&`` ``||`` ``;``
``&`` and newlines, ``$(...)``, backticks and ``<(...)``/``>(...)`` (read as scripts of their
own), redirections with their targets, here-documents (their text kept as data), ``bash -c
'...'``/``sh -c``/``eval``/``find -exec`` (read as scripts of their own), and the wrappers
that run another command (``sudo``, ``env VAR=x``, ``nohup``, ``time``, ``timeout``,
``xargs``, ``uv run`` ...). It never evaluates anything and never raises: unbalanced quotes
or parentheses close at the end of the text and mark the result ``exact=False``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

MAX_DEPTH = 6  # nested $(...) / bash -c levels read; deeper text is kept as words
MAX_TEXT = 10_000  # longer texts are cut (and marked inexact): skills hold commands, not files
MAX_NESTED = 64  # nested scripts read per text: beyond that the words stay words (and the result is inexact)

_OPERATORS = sorted(["&&", "||", ";;&", ";;", ";&", "|&", "&>>", "&>", ">>", "<<<", "<<-", "<<", ">&", "<&", ">|",
                     "<>", "|", "&", ";", "(", ")", "<", ">"], key=len, reverse=True)
_OPERATOR_START = set("|&;<>()")
_SEPARATORS = {"&&", "||", ";;&", ";;", ";&", "&", ";", "(", ")", "\n"}
_PIPES = {"|", "|&"}
_RESERVED = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "[[", "]]"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
#: ``<tests>``, ``<path/to/file>``: placeholders in skill text, not redirections.
_PLACEHOLDER = re.compile(r"<([A-Za-z_][\w./:-]*)>")

SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish", "csh", "tcsh", "busybox", "rbash"}


@dataclass
class Word:
    """One shell word: its text after quote removal, as written, and what it substitutes."""

    text: str
    raw: str
    subs: list[tuple[str, str]] = field(default_factory=list)  # ("$(" | "`" | "<(" | ">(", inner text)
    quoted: bool = False
    heredoc: str | None = None  # for the delimiter word of a here-document: the document


@dataclass
class Redirect:
    op: str  # ">", ">>", "2>", "<", "<<" (target: the document), "<<<", ">&" ...
    target: str

    @property
    def writes(self) -> bool:
        """Output into a file (not ``2>&1``, not a here-document)."""
        base = self.op.lstrip("0123456789")
        if base in (">&", "&>") and (self.target.isdigit() or self.target == "-"):
            return False
        return base in (">", ">>", ">|", "&>", "&>>", "<>", ">&")

    @property
    def reads(self) -> bool:
        return self.op.lstrip("0123456789") in ("<", "<>")


@dataclass
class Command:
    """A simple command: ``VAR=x sudo -E bash -s -- arg > out``."""

    argv: list[str]  # the program and its arguments (wrappers and assignments taken off)
    assignments: list[str] = field(default_factory=list)
    wrappers: list[str] = field(default_factory=list)  # the wrapper words, e.g. ["sudo", "-E"]
    wrapped: list[list[str]] = field(default_factory=list)  # the same, one list per wrapper: [["sudo", "-E"]]
    redirects: list[Redirect] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)  # every word as written (for substitutions)
    subs: list[tuple[str, Script]] = field(default_factory=list)  # ("$(" ..., the script it runs)
    inner: Script | None = None  # bash -c / sh -c / eval / find -exec: the script it runs
    upstream: list[Command] = field(default_factory=list)  # earlier commands of its pipeline
    reserved: bool = False  # a compound-command header (for/case/select/function)

    @property
    def program(self) -> str:
        """The program's name without its folder (``/bin/bash`` -> ``bash``)."""
        return self.argv[0].rsplit("/", 1)[-1] if self.argv else ""

    @property
    def args(self) -> list[str]:
        return self.argv[1:]

    @property
    def piped(self) -> bool:
        return bool(self.upstream)

    def display(self, limit: int = 160) -> str:
        parts = [w.raw for w in self.words]
        text = (" ".join(parts) or " ".join(self.argv)).replace("\\<", "<").replace("\\>", ">")
        return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class Script:
    """What a command line runs: pipelines of simple commands, and the scripts nested in them."""

    source: str
    pipelines: list[list[Command]] = field(default_factory=list)
    exact: bool = True  # False when quotes or parentheses were left open, or the text was cut

    def commands(self) -> Iterator[Command]:
        """Every simple command, nested ones included, in reading order."""
        for pipeline in self.pipelines:
            for command in pipeline:
                yield command
                for _, script in command.subs:
                    yield from script.commands()
                if command.inner is not None:
                    yield from command.inner.commands()

    def scripts(self) -> Iterator[Script]:
        """This script and every script nested in it."""
        yield self
        for pipeline in self.pipelines:
            for command in pipeline:
                for _, script in command.subs:
                    yield from script.scripts()
                if command.inner is not None:
                    yield from command.inner.scripts()

    @property
    def all_exact(self) -> bool:
        return all(s.exact for s in self.scripts())


def pipeline_display(pipeline: list[Command], limit: int = 160) -> str:
    text = " | ".join(c.display(limit) for c in pipeline)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- tokens ---------------------------------------------------------------------------------
class _Tokenizer:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.exact = True
        self.tokens: list[Word | str] = []
        self.pending: list[tuple[Word, bool]] = []  # here-documents whose text starts at the next newline

    def run(self) -> list[Word | str]:
        s, n = self.s, len(self.s)
        expect_delimiter: bool | None = None  # after << / <<-: strip tabs?
        while self.i < n:
            c = s[self.i]
            if c in " \t\r\f\v":
                self.i += 1
            elif c == "\\" and s.startswith("\n", self.i + 1):
                self.i += 2
            elif c == "#":
                end = s.find("\n", self.i)
                self.i = n if end < 0 else end
            elif c == "\n":
                self.tokens.append("\n")
                self.i += 1
                self._heredocs()
            elif c in "<>" and s.startswith("(", self.i + 1):
                inner, end = _balanced(s, self.i + 2, self)
                raw = s[self.i:end]
                self.tokens.append(Word("/dev/fd/63", raw, [(c + "(", inner)]))
                self.i = end
            elif c in _OPERATOR_START:
                op = next(o for o in _OPERATORS if s.startswith(o, self.i))
                self.tokens.append(op)
                self.i += len(op)
                if op in ("<<", "<<-"):
                    expect_delimiter = op == "<<-"
            else:
                word = self._word()
                if word is None:
                    continue
                if expect_delimiter is not None:
                    self.pending.append((word, expect_delimiter))
                    expect_delimiter = None
                self.tokens.append(word)
        for word, _ in self.pending:  # a here-document without its text: the text ended first
            word.heredoc = ""
            self.exact = False
        return self.tokens

    def _heredocs(self) -> None:
        s = self.s
        for word, strip in self.pending:
            delimiter = word.text
            lines: list[str] = []
            while self.i < len(s):
                end = s.find("\n", self.i)
                line = s[self.i:] if end < 0 else s[self.i:end]
                self.i = len(s) if end < 0 else end + 1
                if (line.lstrip("\t") if strip else line) == delimiter:
                    break
                lines.append(line)
            else:
                self.exact = False
            word.heredoc = "\n".join(lines)
        self.pending = []

    def _word(self) -> Word | None:
        s, n = self.s, len(self.s)
        start = self.i
        text: list[str] = []
        subs: list[tuple[str, str]] = []
        quoted = False
        while self.i < n:
            c = s[self.i]
            if c in " \t\r\f\v\n" or c in _OPERATOR_START:
                if c in "<>" and not quoted and text and "".join(text).isdigit() and self.i == start + len(text):
                    # "2>" "2>>" "2>&1": a file-descriptor prefix of a redirection
                    op = next(o for o in _OPERATORS if s.startswith(o, self.i))
                    self.tokens.append("".join(text) + op)
                    self.i += len(op)
                    return None
                break
            if c == "'":
                quoted = True
                end = s.find("'", self.i + 1)
                if end < 0:
                    self.exact = False
                    end = n
                text.append(s[self.i + 1:end])
                self.i = end + 1
            elif c == '"':
                quoted = True
                self.i += 1
                self._double(text, subs)
            elif c == "\\":
                if self.i + 1 < n and s[self.i + 1] != "\n":
                    text.append(s[self.i + 1])
                self.i += 2
            elif c == "$" and s.startswith("(", self.i + 1):
                inner, end = _balanced(s, self.i + 2, self)
                if not inner.startswith("("):  # $(( arithmetic )) runs nothing
                    subs.append(("$(", inner))
                text.append(s[self.i:end])
                self.i = end
            elif c == "$" and s.startswith("{", self.i + 1):
                end = s.find("}", self.i + 2)
                end = n if end < 0 else end + 1
                text.append(s[self.i:end])
                self.i = end
            elif c == "`":
                end = _backtick_end(s, self.i + 1)
                if end >= n:
                    self.exact = False
                subs.append(("`", s[self.i + 1:min(end, n)]))
                text.append(s[self.i:min(end + 1, n)])
                self.i = end + 1
            else:
                text.append(c)
                self.i += 1
        self.i = min(self.i, n)
        return Word("".join(text), s[start:self.i], subs, quoted)

    def _double(self, text: list[str], subs: list[tuple[str, str]]) -> None:
        s, n = self.s, len(self.s)
        while self.i < n:
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 < n and s[self.i + 1] in '"\\$`\n':
                if s[self.i + 1] != "\n":
                    text.append(s[self.i + 1])
                self.i += 2
            elif c == "$" and s.startswith("(", self.i + 1):
                inner, end = _balanced(s, self.i + 2, self)
                if not inner.startswith("("):
                    subs.append(("$(", inner))
                text.append(s[self.i:end])
                self.i = end
            elif c == "`":
                end = _backtick_end(s, self.i + 1)
                subs.append(("`", s[self.i + 1:min(end, n)]))
                text.append(s[self.i:min(end + 1, n)])
                self.i = end + 1
            else:
                text.append(c)
                self.i += 1
        self.exact = False  # the text ended inside double quotes


def _backtick_end(s: str, i: int) -> int:
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s[i] == "`":
            return i
        i += 1
    return len(s)


def _balanced(s: str, i: int, owner: _Tokenizer) -> tuple[str, int]:
    """The text up to the ``)`` that closes an opening already read, and the index after it."""
    depth, start, n = 1, i, len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
        elif c == "'":
            end = s.find("'", i + 1)
            i = n if end < 0 else end + 1
        elif c == '"':
            i += 1
            while i < n and s[i] != '"':
                i += 2 if s[i] == "\\" else 1
            i += 1
        elif c == "`":
            i = _backtick_end(s, i + 1) + 1
        elif c == "(":
            depth += 1
            i += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return s[start:i], i + 1
            i += 1
        else:
            i += 1
    owner.exact = False
    return s[start:n], n


# -- commands -------------------------------------------------------------------------------
def tokens(text: str) -> list[Word | str]:
    """TEXT's words and operators in order (``&&``, ``|``, ``2>`` ...), as the shell splits it; never raises."""
    try:
        return _Tokenizer(_PLACEHOLDER.sub(r"\\<\1\\>", str(text)[:MAX_TEXT])).run()
    except (RecursionError, IndexError, ValueError, StopIteration):
        return [Word(w, w) for w in str(text).split()]


def parse(text: str, depth: int = 0, budget: list[int] | None = None) -> Script:
    """Read TEXT as a shell would split it. Never raises; see ``Script.exact``."""
    text = text if isinstance(text, str) else str(text)
    budget = budget if budget is not None else [MAX_NESTED]
    cut = len(text) > MAX_TEXT
    source = text[:MAX_TEXT]
    tokenizer = _Tokenizer(_PLACEHOLDER.sub(r"\\<\1\\>", source))
    try:
        tokens = tokenizer.run()
        script = _build(source, tokens, depth, budget)
    except (RecursionError, IndexError, ValueError, StopIteration):  # a reader bug must not stop a review
        script = Script(source, [[Command(text.split(), words=[Word(w, w) for w in text.split()])]], exact=False)
    script.exact = script.exact and tokenizer.exact and not cut
    return script


def _build(source: str, tokens: list[Word | str], depth: int, budget: list[int]) -> Script:
    script = Script(source)
    pipeline: list[Command] = []
    words: list[Word] = []  # the arguments
    shown: list[Word] = []  # everything as written, redirections included
    redirects: list[Redirect] = []
    i = 0

    def finish_command() -> None:
        nonlocal words, shown, redirects
        if words or redirects:
            command = _command(words, redirects, shown, depth, budget)
            if budget[0] < 0:
                script.exact = False
            command.upstream = list(pipeline)
            pipeline.append(command)
        words, shown, redirects = [], [], []

    def finish_pipeline() -> None:
        nonlocal pipeline
        finish_command()
        if pipeline:
            script.pipelines.append(pipeline)
        pipeline = []

    while i < len(tokens):
        token = tokens[i]
        if isinstance(token, Word):
            words.append(token)
            shown.append(token)
        elif token in _PIPES:
            finish_command()
        elif token in _SEPARATORS:
            finish_pipeline()
        else:  # a redirection and its target
            target = tokens[i + 1] if i + 1 < len(tokens) else None
            if isinstance(target, Word):
                document = token.lstrip("0123456789") in ("<<", "<<-") and target.heredoc is not None
                redirects.append(Redirect(token, target.heredoc if document else target.text))  # type: ignore[arg-type]
                shown.append(Word(target.text, token + target.raw, target.subs, target.quoted))
                i += 1
            else:
                redirects.append(Redirect(token, ""))
                shown.append(Word("", token))
        i += 1
    finish_pipeline()
    return script


_SUDO_ARG_OPTIONS = {"-u", "-g", "-p", "-C", "-D", "-h", "-r", "-t", "-U", "-T", "--user", "--group", "--prompt"}
_XARGS_ARG_OPTIONS = {"-I", "-i", "-n", "-P", "-L", "-l", "-d", "-E", "-e", "-a", "-s"}
_RUNNERS = {"uv": "run", "poetry": "run", "pipenv": "run", "pdm": "run", "hatch": "run", "rye": "run",
            "conda": "run", "mamba": "run", "micromamba": "run"}
#: Options of ``uv run`` & co. that take the next word as their value (so it is not read as the program).
_RUNNER_ARG_OPTIONS = {
    "uv": {"-p", "--python", "--with", "--with-requirements", "--with-editable", "--index", "--default-index",
           "--index-url", "-i", "--extra-index-url", "--find-links", "-f", "--extra", "--group", "--only-group",
           "--no-group", "--package", "--project", "--directory", "--env-file", "--config-file", "--index-strategy",
           "--keyring-provider", "--cache-dir", "-C", "--config-setting", "--python-platform"},
    "poetry": {"-C", "--directory", "-P", "--project"},
    "pdm": {"-p", "--project", "-v"},
    "rye": {"--pyproject"},
    "conda": {"-n", "--name", "-p", "--prefix"}, "mamba": {"-n", "--name", "-p", "--prefix"},
    "micromamba": {"-n", "--name", "-p", "--prefix", "-e", "--env"},
}


def _command(words: list[Word], redirects: list[Redirect], shown: list[Word], depth: int,
             budget: list[int]) -> Command:
    argv = [w.text for w in words]
    command = Command([], redirects=redirects, words=shown)
    while argv and argv[0] in _RESERVED and not words[0].quoted:
        argv, words = argv[1:], words[1:]
    if argv and argv[0] in ("for", "case", "select", "function") and not words[0].quoted:
        command.reserved = True
    while argv and _ASSIGNMENT.match(argv[0]) and not words[0].raw.startswith(("'", '"')):
        command.assignments.append(argv[0])
        argv, words = argv[1:], words[1:]
    command.argv = _unwrap(argv, command)
    if depth < MAX_DEPTH:
        for word in shown:
            for kind, inner in word.subs:
                budget[0] -= 1
                if budget[0] >= 0:
                    command.subs.append((kind, parse(inner, depth + 1, budget)))
        budget[0] -= 1
        if budget[0] >= 0:
            command.inner = _inner(command, depth, budget)
    return command


def _unwrap(argv: list[str], command: Command) -> list[str]:
    """Take off the wrappers that run another command, recording them."""
    for _ in range(12):
        if not argv:
            return argv
        name = argv[0].rsplit("/", 1)[-1]
        rest = argv[1:]
        taken: list[str] = [argv[0]]
        if name in ("sudo", "doas", "pkexec"):
            while rest and rest[0].startswith("-") and rest[0] != "--":
                option = rest.pop(0)
                taken.append(option)
                if option in _SUDO_ARG_OPTIONS and rest:
                    taken.append(rest.pop(0))
            if rest and rest[0] == "--":
                taken.append(rest.pop(0))
        elif name == "env":
            while rest and (rest[0].startswith("-") or _ASSIGNMENT.match(rest[0])):
                option = rest.pop(0)
                if _ASSIGNMENT.match(option):
                    command.assignments.append(option)
                    continue
                taken.append(option)
                if option in ("-u", "-C", "--unset", "--chdir") and rest:
                    taken.append(rest.pop(0))
                elif option in ("-S", "--split-string") and rest:
                    rest = rest.pop(0).split() + rest
            if not rest:  # `env` alone prints the environment: that is the command
                command.wrappers.extend(taken[1:])
                if taken[1:]:
                    command.wrapped.append(taken)
                return ["env"]
        elif name in ("nohup", "setsid", "unbuffer", "builtin", "stdbuf", "caffeinate"):
            while rest and rest[0].startswith("-"):
                taken.append(rest.pop(0))
        elif name == "exec":
            while rest and rest[0].startswith("-"):
                option = rest.pop(0)
                taken.append(option)
                if option == "-a" and rest:
                    taken.append(rest.pop(0))
        elif name == "command" and not (rest and rest[0] in ("-v", "-V")) or name == "time":
            while rest and rest[0].startswith("-"):
                taken.append(rest.pop(0))
        elif name in ("nice", "ionice", "chrt", "taskset"):
            while rest and rest[0].startswith("-"):
                option = rest.pop(0)
                taken.append(option)
                if option in ("-n", "-c", "-p") and rest:
                    taken.append(rest.pop(0))
        elif name == "timeout":
            while rest and rest[0].startswith("-"):
                option = rest.pop(0)
                taken.append(option)
                if option in ("-s", "-k", "--signal", "--kill-after") and rest:
                    taken.append(rest.pop(0))
            if rest:
                taken.append(rest.pop(0))  # the duration
        elif name == "xargs":
            while rest and rest[0].startswith("-"):
                option = rest.pop(0)
                taken.append(option)
                if option in _XARGS_ARG_OPTIONS and rest:
                    taken.append(rest.pop(0))
        elif name in _RUNNERS and rest and rest[0] == _RUNNERS[name]:
            taken.append(rest.pop(0))
            while rest and rest[0].startswith("-"):
                option = rest.pop(0)
                taken.append(option)
                if option in _RUNNER_ARG_OPTIONS.get(name, set()) and rest:
                    taken.append(rest.pop(0))
        else:
            return argv
        if not rest and name in ("sudo", "doas"):  # `sudo` alone: the wrapper is the command
            return argv
        command.wrappers.extend(taken)
        command.wrapped.append(taken)
        argv = rest
    return argv


def _inner(command: Command, depth: int, budget: list[int]) -> Script | None:
    """The script a command runs from its arguments: ``bash -c 'x'``, ``eval x``, ``find -exec x``."""
    name, args = command.program, command.args
    if name in SHELLS or name == "su":
        for n, arg in enumerate(args):
            if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
                return parse(args[n + 1], depth + 1, budget) if n + 1 < len(args) else None
            if arg == "--command" and n + 1 < len(args):
                return parse(args[n + 1], depth + 1, budget)
        return None
    if name == "eval" and args:
        return parse(" ".join(args), depth + 1, budget)
    if name == "watch" and args:
        rest = [a for a in args if not a.startswith("-")]
        return parse(" ".join(rest), depth + 1, budget) if rest else None
    if name in ("find", "fd"):
        for n, arg in enumerate(args):
            if arg in ("-exec", "-execdir", "-ok", "-okdir", "-x", "--exec", "-X", "--exec-batch"):
                part: list[str] = []
                for word in args[n + 1:]:
                    if word in (";", "+"):
                        break
                    part.append(word)
                if part:
                    inner = Script(" ".join(part), [[Command(part, words=[Word(w, w) for w in part])]])
                    inner.pipelines[0][0].argv = _unwrap(part, inner.pipelines[0][0])
                    return inner
    return None
