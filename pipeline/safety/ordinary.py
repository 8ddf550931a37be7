"""Ordinary project commands: the only ones a batch approval lets through (a closed description).

A command line is ordinary when the shell reader reads it exactly and every simple command in it
is a program the tables in ``ordinary.toml`` name -- the repository's tests, build and lint
(``pytest``, ``python -m pytest``, ``tox``, ``npm test``, ``cargo test``, ``go test ./...``, ``make
test`` ...), its own files (``python tests/runtests.py``, ``bin/test``, ``./gradlew``), read-only
looks (``ls``, ``cat``, ``grep``, ``git status/diff/log``), installs of named packages from the
default index (``pip install -e .``, ``npm ci``) and deleting build output -- given only words
its table allows: named flags known to be harmless, options whose values are of the kind the
table says, operands inside the checkout. Besides: no environment assignment outside the table's
short list, no wrapper but ``uv run``/``timeout``/``env VAR=x`` and the like, no URL but a local
one, no ``$VARIABLE`` (its value is not in the line), no brace expansion, no redirection into a
file, no command substitution, here-document or ``bash -c``.

Anything else -- another program, a flag the table does not name (``--basetemp``, ``-p plugin``,
``--rootdir``), a value outside the checkout in either spelling (``-f /tmp/x.mk``,
``--file=/tmp/x.mk``) -- is not ordinary: a person approves the skill by name after reading the
line. ``why_not_ordinary`` says why in one line per command.
"""

from __future__ import annotations

import re

from pipeline.safety.credentials import expands
from pipeline.safety.kinds import (
    assignment,
    check,
    outside,
    outward_name,
    outward_path,
    project_value,
    runnable_path,
)
from pipeline.safety.shell import Command, parse
from pipeline.safety.tables import TABLES, Table
from pipeline.safety.words import is_local_url, is_test_path, looks_like_command

__all__ = ["is_ordinary", "looks_like_command", "why_not_ordinary"]


def why_not_ordinary(text: str) -> list[str]:
    """Why the command line TEXT is not an ordinary project command (empty: it is)."""
    script = parse(text or "")
    if not script.all_exact:
        return [f"{' '.join((text or '').split())[:100]} (the shell reader cannot read it exactly: unbalanced quotes "
                "or parentheses)"]
    reasons: list[str] = []
    for command in script.commands():
        if reason := _command(command):
            reasons.append(f"{command.display(100)} ({reason})")
    return list(dict.fromkeys(reasons))


def is_ordinary(text: str) -> bool:
    return not why_not_ordinary(text)


def _command(command: Command) -> str | None:
    if command.subs or command.inner is not None:
        return "runs a command inside another ($(...), <(...), bash -c, eval)"
    if command.reserved:
        return "a loop or a function, not a plain command"
    if any(r.op.lstrip("0123456789").startswith("<<") for r in command.redirects):
        return "feeds a here-document"
    for redirect in command.redirects:
        if redirect.writes and redirect.target not in ("/dev/null", "/dev/stdout", "/dev/stderr"):
            return f"writes to a file ({redirect.target})"
        if redirect.reads and (reason := outside(redirect.target)):
            return f"reads a file outside the project: {reason}"
    if reason := _expansions(command) or _urls(command):
        return reason
    for word in command.assignments:
        if reason := _assignment(word):
            return reason
    for wrapper in command.wrapped:
        if reason := _wrapper(wrapper):
            return reason
    if not command.argv:
        return None if command.assignments else "an empty command"
    return _argv(command.argv)


# -- what a line leaves to run time, and where it connects ---------------------------------------
def _expansions(command: Command) -> str | None:
    """``$VAR`` (its value is not in the line; ``$PWD`` is the checkout) and ``{a,b}`` brace expansion."""
    for word in command.words:
        unsingled = _unquoted(word.raw, "'")
        match = re.search(r"\$(?:\{?([A-Za-z_]\w*)|([0-9@*#?$!-])|(['\"]))", unsingled)
        if match and match.group(1) != "PWD":
            name = match.group(1) or match.group(2) or "'...'"
            return f"uses ${name}, whose value the line does not show"
        if brace := re.search(r"\{[^{}\s]*(?:,|\.\.)[^{}\s]*\}", _unquoted(word.raw, "'\"")):
            return f"uses brace expansion ({brace.group(0)}), which makes words the line does not show"
    return None


def _unquoted(raw: str, quotes: str) -> str:
    """RAW without the parts inside the given quote characters (and without escaped characters)."""
    out, quote, n = [], "", 0
    while n < len(raw):
        char = raw[n]
        if char == "\\" and quote != "'":
            n += 2
            continue
        if quote:
            if char == quote:
                quote = ""
            elif quote not in quotes:
                out.append(char)
        elif char in "'\"":
            quote = char
            out.append(char)  # a mark: `$'...'` and `$"..."` are expansions too
        else:
            out.append(char)
        n += 1
    return "".join(out)


_URL = re.compile(r"[A-Za-z][\w+.-]*://[^\s'\"`]*|^git\+|^[\w.-]+@[\w.-]+:(?!//)", re.I)


def _urls(command: Command) -> str | None:
    words = [*command.argv, *(w for wrapper in command.wrapped for w in wrapper[1:]),
             *(a.split("=", 1)[-1] for a in command.assignments)]
    for word in words:
        value = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
        for match in _URL.finditer(value):
            if not is_local_url(match.group(0)) and not is_local_url(value):
                return f"names a URL ({word[:80]}): only local ones are ordinary"
    return None


def _assignment(word: str) -> str | None:
    match = re.match(r"^([A-Za-z_]\w*)(\[[^\]]*\])?(\+?)=(.*)$", word, re.S)
    if not match:
        return f"sets {word[:40]}"
    name, index, append, value = match.groups()
    if index or append:
        return f"sets {name}{index or ''}{append}=, which is not a plain assignment"
    return assignment(name, value)


def _wrapper(words: list[str]) -> str | None:
    name = words[0].rsplit("/", 1)[-1]
    if reason := _named_program(words[0]):
        return reason
    if name in ("sudo", "doas", "pkexec", "su"):
        return "runs as root"
    table = TABLES.wrappers.get(name)
    if table is None:
        return f"runs a command through {name}"
    args = words[1:]
    if table.command:
        args = args[1:] if args[:1] == [table.command] else args
    return _args(table, args)


# -- programs and their words -------------------------------------------------------------------------
#: A program of a system folder named exactly: ``/usr/bin/python3``, ``/bin/ls``, ``/usr/local/bin/timeout``.
_SYSTEM_PROGRAM = re.compile(f"(?:{'|'.join(map(re.escape, TABLES.system_bins))})[\\w+][\\w.+-]*")


def _named_program(word: str) -> str | None:
    """Why the program (or wrapper) WORD is not one a table may judge by its name, or None. A bare name is
    looked up; a path is exactly a system folder's program (``/usr/bin/NAME``: no ``..``, no further folder) or
    a file inside the checkout, the project's own -- never a path that leaves it (``/usr/bin/../../tmp/x/git``,
    ``/tmp/x/timeout``, ``~/bin/time``, ``../x/uv``, ``.../python``). No spelling is a glob: the name that runs
    would not be the one in the line (``./scripts/d?ploy.sh``)."""
    if expands(word):
        return f"names what it runs through a glob ({word[:60]}), so the name that runs is not in the line"
    if "/" not in word or _SYSTEM_PROGRAM.fullmatch(word):
        return None
    if reason := outside(word):
        return f"runs a program outside the project: {reason}"
    return None


def _argv(argv: list[str], only: frozenset[str] | None = None, by: str = "") -> str | None:
    """ARGV judged by its program's table (ONLY: the programs allowed here, for ``npx``, ``uvx`` ...)."""
    first = argv[0]
    name = first.rsplit("/", 1)[-1]
    if only is not None and "any" not in only and name not in only:
        return f"{by} downloads or runs {name}, which is not one of the tools it may run here"
    if reason := _named_program(first):
        return reason
    if "/" in first and name not in TABLES.programs:
        if _SYSTEM_PROGRAM.fullmatch(first):
            return f"{name} is not a test, build, lint, read-only or package-install command"
        return _project_program(first, argv[1:])  # the project's own script: ./tests/runtests.py, bin/test
    table = TABLES.programs.get(name)
    if table is None:
        return f"{name} is not a test, build, lint, read-only or package-install command"
    if table.key == "programs.python":
        return _python(table, argv[1:])
    return _args(table, argv[1:])


def _python(table: Table, args: list[str]) -> str | None:
    n = 0
    while n < len(args):
        word = args[n]
        if word in ("-m", "-c", "-") or not word.startswith("-") or re.match(r"^-[A-Za-z]*[mc]", word) and \
                not table.knows(word):
            return _python_main(args[n:])
        step, reason = _option(table, args, n)
        if reason:
            return reason
        n += step
    if any(a in ("-V", "--version") for a in args):
        return None
    return "runs python code from its input"


def _python_main(words: list[str]) -> str | None:
    """``-m MODULE ...`` (a module a table names), ``FILE ...`` (the project's own), never ``-c`` or ``-``."""
    head = words[0]
    if head == "-":
        return "runs python code from its input"
    flags = re.match(r"^-([A-Za-z]*)([mc])(.*)$", head)
    if flags and flags.group(2) == "c":
        return "runs inline python code (python -c)"
    if flags:
        module = flags.group(3) or (words[1] if len(words) > 1 else "")
        rest = words[1:] if flags.group(3) else words[2:]
        table = TABLES.modules.get(module)
        if table is None:
            return f"runs the module {module or '?'}, which is not a test, build or lint module the tables name"
        return _args(table, rest)
    if reason := outside(head):
        return f"runs a python file outside the project: {reason}"
    return _project_program(head, words[1:])


def _project_program(path: str, words: list[str]) -> str | None:
    """The project's own program PATH, given WORDS: a file a table names (``manage.py``, ``setup.py``) by its
    table; any other not one named for acting beyond the checkout."""
    table = TABLES.files.get(path.rsplit("/", 1)[-1])
    if table is not None:
        return _args(table, words)
    if reason := runnable_path(path):
        return reason
    return _project_args(words)


def _project_args(words: list[str]) -> str | None:
    """What the project's own program is given: its flags are its own, but no value outside the checkout,
    no URL, no command line for it to run, and no word naming an act beyond the checkout -- an operand, an
    option or its value (``./run.sh deploy``, ``./run.sh --deploy``, ``--target=deployment``, ``release/``),
    a path too unless it is a test's (``tests/test_deploy.py`` is a test to run)."""
    for word in words:
        if word.startswith("-") and word not in ("-", "--"):
            name, _, value = word.partition("=")
            if not re.fullmatch(r"--?[\w][\w.:-]*", name):
                return f"gives the program an option that is not a plain name ({word[:60]})"
            if reason := outward_name(name.lstrip("-")):
                return reason
            word = value
        if "/" not in word and (reason := outward_name(word)) or \
                "/" in word and not is_test_path(word) and (reason := outward_path(word)):
            return reason
        if reason := project_value(word):
            return reason
    return None


def _args(table: Table, words: list[str]) -> str | None:
    """Why WORDS are not what TABLE allows, or None."""
    if table.raw:
        return next((r for w in words if (r := check(table.positional or "message", w))), None)
    unless = bool(table.first_unless) and any(w.split("=", 1)[0] in table.first_unless for w in words)
    operands, seen, n = 0, set(), 0
    while n < len(words):
        word = words[n]
        if word == "--":
            return _after_dashdash(table, words[n + 1:], operands, unless)
        if table.python and (word == "-m" or not word.startswith("-")):
            return _python_main(words[n:])
        if _is_option(table, word):
            step, reason = _option(table, words, n)
            if reason:
                return reason
            seen.add(word.split("=", 1)[0])
            n += step
            continue
        if table.commands and operands == 0:
            return _subcommand(table, word, words[n:])
        if table.runs is not None:
            return _argv(words[n:], table.runs, table.label)
        if reason := _operand(table, word, operands, unless):
            return reason
        operands += 1
        n += 1
        if table.project_args:
            return _project_args(words[n:])
    if table.needs_command:
        return f"{table.label} without one of its commands ({', '.join(sorted(table.commands))[:60]})"
    if table.needs_operand and operands == 0 and not seen & table.standalone:
        return f"{table.label} without an operand"
    if table.needs_flag and not seen & table.needs_flag:
        flags = " or ".join(sorted(table.needs_flag)[:4]) + (" ..." if len(table.needs_flag) > 4 else "")
        return f"{table.label} without {flags} {table.why or 'runs what follows'}"
    return None


def _subcommand(table: Table, word: str, words: list[str]) -> str | None:
    sub = table.commands.get(word)
    if sub is not None:
        return _args(sub, words[1:])
    if table.fallback is None:
        return f"{table.label} {word[:40]} is not one of the {table.label} commands the tables know to be ordinary"
    if word in table.builtins:
        return f"{table.label} {word} is {table.label}'s own command, not a project script or test"
    return _args(table.fallback, words)


def _after_dashdash(table: Table, rest: list[str], operands: int, unless: bool) -> str | None:
    if table.after_dashdash == "project-args":
        return _project_args(rest)
    if table.after_dashdash:
        return _args(TABLES.find(table.after_dashdash), rest)
    for word in rest:
        if reason := _operand(table, word, operands, unless):
            return reason
        operands += 1
    return None


def _is_option(table: Table, word: str) -> bool:
    if word in table.flags or any(word.startswith(p) and len(word) > len(p) for p in table.prefixed):
        return True
    return word.startswith("-") and len(word) > 1


def _operand(table: Table, word: str, operands: int, unless: bool) -> str | None:
    kind = table.first if operands == 0 and table.first and not unless else table.positional
    if kind is None:
        return f"{table.label} takes no operand here ({word[:60]})"
    if table.max_positional is not None and operands >= table.max_positional:
        return f"{table.label} with more than {table.max_positional} operand(s) ({word[:60]})"
    return check(kind, word)


def _option(table: Table, words: list[str], n: int) -> tuple[int, str | None]:
    """How many words the option at N takes, and why it is not one TABLE allows (None: it is)."""
    word = words[n]
    following = words[n + 1] if n + 1 < len(words) else None
    if word in table.flags:
        return 1, None
    for prefix, kind in table.prefixed.items():
        if word.startswith(prefix) and len(word) > len(prefix):
            return 1, check(kind, word[len(prefix):])
    if table.properties is not None and word.startswith("-D") and len(word) > 2:
        key, _, value = word[2:].partition("=")
        if key not in table.properties:
            return 1, f"{table.label} -D{key} is not a property the tables know to be harmless"
        return 1, check("text", value)
    if table.numeric and re.fullmatch(r"-\d+", word):
        return 1, None
    named = word.partition("=")[0]
    if named in table.options or named in table.optional or table.style == "single" or word.startswith("--"):
        name, equals, value = word.partition("=")
        if table.style == "single" and name.startswith("--") and not table.knows(name):
            name = name[1:]  # go accepts -flag and --flag alike
        return _valued(table, name, value if equals else None, following)
    for m, char in enumerate(word[1:], 1):  # -xvq, -kname, -n4
        option = f"-{char}"
        if option in table.flags:
            continue
        if option in table.options or option in table.optional:
            rest = word[m + 1:]
            if rest:
                return 1, check(table.options.get(option) or table.optional[option], rest.removeprefix("="))
            return _valued(table, option, None, following)
        return 1, _unknown(table, option if len(word) > 2 else word)
    return 1, None


def _valued(table: Table, name: str, value: str | None, following: str | None) -> tuple[int, str | None]:
    if name in table.flags and value is None:
        return 1, None
    if name in table.options:
        if value is not None:
            return 1, check(table.options[name], value)
        if following is None:
            return 1, f"{name} without its value"
        return 2, check(table.options[name], following)
    if name in table.optional:
        kind = table.optional[name]
        if value is not None:
            return 1, check(kind, value)
        if following is not None and not following.startswith("-") and check(kind, following) is None:
            return 2, None
        return 1, None
    return 1, _unknown(table, name)


def _unknown(table: Table, option: str) -> str:
    return f"{option} is not one of the {table.label} options known to be harmless"
