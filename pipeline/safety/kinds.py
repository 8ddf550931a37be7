"""The kinds of value ``ordinary.toml`` names: what a word must look like where a table says ``KIND``.

Each check takes the word as the shell gives it to the program (quotes removed) and returns why it
is not of that kind -- a few words a reviewer reads after the command -- or None. Every kind that can
hold a path refuses one outside the checkout (``/``, ``~``, ``..``, a drive letter), inside ``.git``,
or naming a credential file (``.env``, ``id_rsa``, ``~/.aws``, ``secrets.json`` ... from ``credentials.toml``),
also through a glob that could match one (``.en*``, ``.gi?``, ``*.pem``).
A kind written ``a|b|c`` is one of those values. ``outward`` and ``environment`` are set by
``pipeline.safety.tables`` from the data file.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

from pipeline.safety.credentials import (
    could_match,
    credential_prefix,
    expands,
    glob_secret,
    is_glob,
    secret_path,
    secret_word,
)
from pipeline.safety.words import (
    CREDENTIAL_PATH,
    instruction_place,
    is_build_output,
    is_local_url,
    looks_like_command,
    normal,
    url_host,
)

Check = Callable[[str], "str | None"]

#: Names a script or make target may not have (``deploy``, ``publish`` ...): set from ``outward_names``.
OUTWARD: set[str] = set()
#: Variables and the kind of their value: set from ``[environment]``.
ENVIRONMENT: dict[str, str] = {}
#: Gradle tasks a build may run: set from ``gradle_tasks``.
GRADLE_TASKS: set[str] = set()

_DEVICES = ("/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr")


def outside(value: str) -> str | None:
    """Why the path VALUE is not a path inside the checkout, or None. A glob counts for every name it could
    match: ``.gi?`` could be ``.git``, ``.?`` could be ``..``, ``*.pem`` a key, ``*`` a ``credentials`` file."""
    path = re.sub(r"^\$\{?PWD\}?(?=/|$)", ".", normal(value))
    if not path or path in _DEVICES:
        return None
    if path.startswith(("/", "~", "\\\\")) or re.match(r"^[A-Za-z]:[\\/]", path):
        return f"points at a path outside the project ({value})"
    parts = re.split(r"[/\\]", path)
    if any(climbs(p) for p in parts):
        return f"points at a path outside the project ({value})"
    if any(p.lower() == ".git" or is_glob(p) and could_match(p, ".git") for p in parts):
        return f"points into .git ({value})"
    if CREDENTIAL_PATH.search(path) or secret_path(path):
        return f"names a credential file ({value})"
    for n, part in enumerate(parts):
        if is_glob(part) and (name := glob_secret(part, last=n == len(parts) - 1)):
            return f"could name a credential file through a glob ({value} could match {name})"
    return None


def climbs(part: str) -> bool:
    """Whether the path part PART is, or could be, a way up out of its folder: ``..``; ``...`` (``../..`` to
    some shells and tools); a glob that could match ``..`` (``.?``, ``.[.]``, ``.*``: dash and older bash expand
    them to ``..``)."""
    return part == ".." or bool(re.fullmatch(r"\.{3,}", part)) or is_glob(part) and could_match(part, "..")


def _pieces(value: str) -> str | None:
    """``--out=dir``, ``a:b``, ``x,y``: each piece a path inside the checkout."""
    for piece in re.split(r"[=:,]", value):
        if reason := outside(piece):
            return reason
    return None


def _matches(pattern: str, what: str) -> Check:
    compiled = re.compile(pattern)
    return lambda value: None if compiled.fullmatch(value) and not CREDENTIAL_PATH.search(value) else \
        f"{value or '(nothing)'} is not {what}"


def text(value: str) -> str | None:
    """A pattern, a format, a test name: anything on one line that names no path outside the checkout."""
    if "\n" in value:
        return "spans several lines"
    return outside(value) if re.match(r"^(?:/|~|\$HOME|\.\./)", value) or CREDENTIAL_PATH.search(value) else None


def project_path(value: str) -> str | None:
    return "spans several lines" if "\n" in value else outside(value)


def project_value(value: str) -> str | None:
    """An operand of the project's own program: no path outside, no command line for it to run."""
    if " " in value.strip() and looks_like_command(value):
        return f"gives the program a command line to run ({value[:60]})"
    return project_path(value) or _pieces(value)


def project_file(value: str) -> str | None:
    """A file inside the checkout that a program reads as code or instructions: never ``-`` (its input)."""
    if value in ("-", "/dev/stdin"):
        return f"reads what it runs from its input ({value})"
    return project_path(value)


def script_operand(value: str) -> str | None:
    """What a package.json script is given: a path or a name inside the checkout, not ``publish``/``deploy``."""
    if "/" not in value and _outward(value):
        return f"gives the script {value}, which says it acts beyond the checkout"
    return project_path(value)


def test_selector(value: str) -> str | None:
    """``tests/test_x.py::TestA::test_b[1]``, ``spec/a_spec.rb:12``, ``tests/``, ``<tests>``."""
    return project_path(value.split("::", 1)[0])


_REPORT_SUFFIXES = (".xml", ".json", ".html", ".htm", ".txt", ".log", ".lcov", ".out", ".sarif", ".md", ".csv")


def test_label(value: str) -> str | None:
    """``tests/test_x.py``, ``tests.test_x.TestA``, ``polls``: tests of the project by path or by dotted name.
    A dotted name is imported, so it may not be a module of Python's own library (``antigravity`` opens a web
    browser); ``test`` is also the name of many projects' test folder."""
    if "/" in value or value.endswith(".py") or value in (".", ""):
        return project_path(value)
    if re.fullmatch(r"<[\w./:-]+>", value):
        return None
    if not re.fullmatch(r"[A-Za-z_]\w*(?:\.\w+)*", value):
        return f"{value[:60]} is not a test module or path"
    return _own_module(value, "a test of the project")


def _own_module(value: str, what: str) -> str | None:
    """A dotted name that is imported must be the project's: not a module of Python's own library (importing
    ``antigravity`` opens a web browser, ``this`` prints); ``test`` is also the name of many projects' test folder."""
    top = value.split(".", 1)[0]
    if top != "test" and top in sys.stdlib_module_names:
        return f"imports {top}, a module of Python's own library, not {what}"
    return None


def module(value: str) -> str | None:
    """A module of the project by its dotted name (``--ds=myapp.settings``, ``DJANGO_SETTINGS_MODULE``)."""
    if not re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*|<\w+>", value) or CREDENTIAL_PATH.search(value):
        return f"{value or '(nothing)'} is not a module name"
    return _own_module(value, "a module of the project")


def output_path(value: str) -> str | None:
    """A file or folder a program writes (``-o dist``, ``--outDir build``): inside the checkout, and nowhere an
    agent, git, an editor or CI reads instructions from (``.claude/``, ``.husky/``, ``CLAUDE.md``, ``Makefile``)."""
    return project_path(value) or instruction_place(value)


def cd_folder(value: str) -> str | None:
    """Where ``cd`` goes: a folder inside the checkout; not ``-`` (the folder before, wherever that was)."""
    return "goes back to the folder before (cd -), which may be outside the project" if value == "-" \
        else project_path(value)


def report_file(value: str) -> str | None:
    if reason := output_path(value):
        return reason
    if value.startswith("<") or value.lower().endswith(_REPORT_SUFFIXES):
        return None
    return f"writes a report to {value}, which is not a report file ({', '.join(_REPORT_SUFFIXES[:4])} ...)"


def cov_report(value: str) -> str | None:
    kind, _, where = value.partition(":")
    if kind not in ("term", "term-missing", "html", "xml", "json", "lcov", "annotate", "markdown", "markdown-append"):
        return f"{value} is not a coverage report kind"
    if where and kind.startswith("term"):
        return None if where == "skip-covered" else f"{value} is not a coverage report kind"
    return output_path(where) if where else None


_ACTIONS = {"error", "ignore", "always", "default", "module", "once", "all"}


def warning_filter(value: str) -> str | None:
    """``error``, ``ignore::DeprecationWarning``: a dotted category would be imported (a module of the sender's)."""
    parts = value.split(":")
    if parts[0] not in _ACTIONS:
        return f"{value} is not a warning filter"
    category = parts[2] if len(parts) > 2 else ""
    if category and not re.fullmatch(r"\w+", category):
        return f"a warning filter that imports a module ({value})"
    return None


def local_project(value: str) -> str | None:
    """``.``, ``./``, ``.[test]``, ``'.[dev,test]'``, ``packages/core``: the project itself or a part of it."""
    path = re.sub(r"\[[\w.,\s-]+\]$", "", value)
    return project_path(path or ".") if re.fullmatch(r"[\w./-]*", path) else \
        f"installs something other than the project itself ({value[:60]})"


_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[A-Za-z0-9._,\s-]+\])?"
                          r"(?:\s*(?:===|==|>=|<=|~=|!=|<|>)\s*[A-Za-z0-9.*+!_-]+(?:\s*,\s*(?:===|==|>=|<=|~=|!=|<|>)"
                          r"\s*[A-Za-z0-9.*+!_-]+)*)?$")


def requirement(value: str) -> str | None:
    """A package by name from the default index (``requests==2.31``), or the project (``.``, ``.[test]``)."""
    if _REQUIREMENT.match(value) or (value.startswith(".") and local_project(value) is None):
        return None
    return f"installs something other than a named package ({value[:60]})"


#: Endings that keep a word what it was (``deployment``, ``publishing``, ``released``, ``uploader``, ``dropped``).
_ENDINGS = ("", "s", "es", "ed", "ing", "ings", "er", "ers", "ment", "ments", "ion", "ions", "ation", "ations")


def _outward_word(word: str) -> bool:
    """Whether WORD is one of ``OUTWARD`` or a form of one: ``deploys``, ``deployment``, ``releasing``,
    ``promotion``, ``shipped`` (not ``dropout`` nor ``pushd``: the ending must be one of ``_ENDINGS``)."""
    for name in OUTWARD:
        for stem in {name, name.removesuffix("e"), name + name[-1]}:
            if word.startswith(stem) and word[len(stem):] in _ENDINGS:
                return True
    return False


def _outward(name: str) -> bool:
    low = name.lower()
    return _outward_word(low) or any(_outward_word(part) for part in re.split(r"[-_:./\\,]", low))


def outward_name(value: str) -> str | None:
    """The one check on every name a project defines and a line runs -- a make target, a package.json script,
    a tox environment, a nox session, a cargo binary, a script's file or folder, the word a project's own
    program is given: none may say it acts beyond the checkout (``deploy``, ``release``, ``publish`` ...)."""
    return f"runs {value[:60]}, whose name says it acts beyond the checkout" if _outward(value) else None


def script_name(value: str) -> str | None:
    if not re.fullmatch(r"[\w:.-]+", value) and not re.fullmatch(r"<[\w./:-]+>", value):
        return f"{value[:60]} is not a script name"
    return outward_name(value)


def project_name(value: str) -> str | None:
    """A name the project defines (a nox session, a cargo binary, a ninja or CMake target, a tox label)."""
    if not re.fullmatch(r"[\w.+@:-]+|<[\w./:-]+>", value):
        return f"{value[:60]} is not a name"
    return outward_name(value)


def project_names(value: str) -> str | None:
    """``py311,lint``: tox environments; ``ALL`` runs every one the project defines, its release ones too."""
    for name in value.split(","):
        if name.upper() == "ALL":
            return f"runs every environment the project defines ({value[:60]}), its release or publish ones too"
        if reason := project_name(name):
            return reason
    return None


def project_expression(value: str) -> str | None:
    """``tests and not slow``: an expression over the project's names (nox -k)."""
    return text(value) or next((r for word in re.findall(r"[\w.:-]+", value) if (r := outward_name(word))), None)


def project_script(value: str) -> str | None:
    """A file of the project that a program runs (``node scripts/build.js``, ``make -f ci.mk``), named for
    what stays in the checkout: not ``deploy.mk``, ``scripts/release.js``."""
    return project_file(value) or runnable_path(value)


def project_folder(value: str) -> str | None:
    """A folder of the project a program runs in (``make -C docs``): not ``deploy/``."""
    return project_path(value) or runnable_path(value)


def runnable_path(value: str) -> str | None:
    """A path of the project that a line runs (a script, a makefile, the folder whose Makefile runs): spelled out,
    since through a glob (``scripts/d?ploy.sh``, ``dep*.mk``) the name that runs is not the one in the line, and
    not named for acting beyond the checkout."""
    if expands(value):
        return f"names what it runs through a glob ({value[:60]}), so the name that runs is not in the line"
    return outward_path(value)


def outward_path(value: str) -> str | None:
    """A path with a file or folder named for acting beyond the checkout (``scripts/deploy.sh``, ``bin/release``)."""
    for part in re.split(r"[/\\]", value):
        if part and _outward(part):
            return f"runs {value[:60]}, whose name says it acts beyond the checkout ({part})"
    return None


def assignment(name: str, value: str) -> str | None:
    """``NAME=value`` for the environment or make: NAME from ``[environment]``, value of its kind."""
    kind = ENVIRONMENT.get(name)
    if kind is None:
        return f"sets {name}, which is not one of the variables known to be harmless"
    if reason := check(kind, value):
        return f"sets {name}: {reason}"
    return None


def make_operand(value: str) -> str | None:
    """A target of the project's Makefile (or rake task), or ``VAR=value`` with VAR from ``[environment]``."""
    if "=" in value:
        name, _, setting = value.partition("=")
        return assignment(name, setting)
    if not re.fullmatch(r"[\w.%<>-][\w./:%<>-]*", value):
        return f"{value[:60]} is not a target name"
    if _outward(value):
        return f"runs the target {value}, whose name says it acts beyond the checkout"
    return outside(value)


def gradle_task(value: str) -> str | None:
    task = value.rsplit(":", 1)[-1]
    if task in GRADLE_TASKS and re.fullmatch(r"(?::?[\w-]+)*:?[\w-]+", value):
        return None
    return f"{value} is not a build or test task of the tables"


def go_package(value: str) -> str | None:
    """A package of this module by its folder: ``.``, ``./...``, ``./pkg/...``, ``main.go``."""
    if re.fullmatch(r"\.(?:/[\w.-]*)*(?:/\.\.\.)?|\.\.\.|[\w./-]+\.go|<[\w./:-]+>", value):
        return outside(value.replace("...", "x"))
    return f"{value} is not a package of this checkout (./..., ./pkg)"


def go_program(value: str) -> str | None:
    """``go run ./cmd/app``: a package of this module, not one named ``./cmd/deploy``."""
    return go_package(value) or runnable_path(value.replace("...", ""))


def go_list_operand(value: str) -> str | None:
    if value in ("all", "std", "cmd") or go_package(value) is None:
        return None
    if re.fullmatch(r"[\w.-]+(?:/[\w.~-]+)+(?:/\.\.\.)?", value):
        return None  # an import path: looked up, never run
    return f"{value} is not a package name"


def git_operand(value: str) -> str | None:
    """A revision (``HEAD~2``, ``main...HEAD``, ``v1.0``), ``REV:path``, a pathspec (``:(exclude)tests/``), a path."""
    if value.startswith("-"):
        return f"{value} is not a revision or a path"
    if re.match(r"^:(?:\([^)]*\)|[!^/])", value):
        return project_path(re.sub(r"^:(?:\([^)]*\)|[!^/])", "", value))
    revision, colon, path = value.partition(":")
    if colon:
        return project_path(path) if path else None
    return project_path(value)


_SECRETS = re.compile(r"passw|secret|token|api[_-]?key|apikey|private[_ -]?key|credential|aws_access|"
                      r"BEGIN [A-Z ]*PRIVATE", re.I)


def search_pattern(value: str) -> str | None:
    """What grep, ripgrep, git grep or git log -S look for: not secrets by their name (``password``) nor keys by
    the opening of their token (``AKIA``, ``xoxb-``, ``A[K]IA``: the prefixes redaction knows)."""
    if "\n" in value:
        return "spans several lines"
    if _SECRETS.search(value):
        return f"searches for secrets ({value[:60]})"
    if word := secret_word(value):
        return f"searches for secrets ({value[:60]} could match {word})"
    if prefix := credential_prefix(value):
        return f"searches for keys ({value[:60]} finds tokens that start {prefix})"
    return None


def search_glob(value: str) -> str | None:
    """``grep --include=GLOB``, ``rg -g GLOB``: the files searched, none a credential file (``*.env``, ``*.pem``;
    these globs match dotfiles too). ``!GLOB`` leaves files out."""
    if "\n" in value:
        return "spans several lines"
    if value.startswith("!"):
        return None
    parts = [p for p in value.replace("**", "*").split("/") if p]
    for n, part in enumerate(parts):
        name = glob_secret(part, last=n == len(parts) - 1, shell=False) if is_glob(part) else \
            (part if secret_path(part) or part.lower() == ".git" else None)
        if name:
            return f"searches credential files ({value[:60]} could match {name})"
    return None


def sed_script(value: str) -> str | None:
    if re.fullmatch(r"\$?\d*(?:,\s*\$?\d+)?p", value):
        return None
    return "sed that transforms text; only `sed -n 'N,Mp'` is a read-only look"


def jq_filter(value: str) -> str | None:
    if re.search(r"\$ENV\b|\benv\b|\$__loc__|\binput_filename\b|\bimport\b|\binclude\b|\bgetpath\b.*ENV", value):
        return f"a jq filter that reads the environment or other files ({value[:60]})"
    return None if "\n" not in value else "spans several lines"


def local_url(value: str) -> str | None:
    if is_local_url(value) or re.fullmatch(r"<[\w./:-]+>", value):
        return None
    return f"reaches the network ({url_host(value) or value.split('/')[0][:60]})"


def curl_text(value: str) -> str | None:
    """A header, body or format written in the line; ``@file`` would send (or read) a file."""
    return f"sends a file ({value[:60]})" if value.startswith("@") or value.startswith("<") and ">" not in value \
        else None


_METHOD_OVERRIDE = re.compile(r"^\s*x-(?:http-)?method(?:-override)?\s*:", re.I)


def curl_header(value: str) -> str | None:
    """A header written in the line, not one that asks the server to take the GET as another method."""
    if reason := curl_text(value):
        return reason
    if _METHOD_OVERRIDE.match(value):
        return f"asks the server for another method ({value[:60]}): only GET and HEAD requests are ordinary"
    return None


def curl_format(value: str) -> str | None:
    """What ``-w`` prints: ``%{http_code}``; not ``@file`` (a format read from a file) nor ``%output{path}``
    (curl 8.3 and later write what follows into that file)."""
    if reason := curl_text(value):
        return reason
    if re.search(r"%\{?output\{", value, re.I):
        return f"writes to a file ({value[:60]}): curl's %output{{...}} sends the rest of the format there"
    return None


def build_output(value: str) -> str | None:
    """``build/``, ``dist``, ``*.egg-info``: and no part a way up (``.?/build`` is ``../build`` to dash)."""
    if any(climbs(part) for part in re.split(r"[/\\]", normal(value))):
        return f"points at a path outside the project ({value})"
    return None if is_build_output(value) else f"deletes something that is not build output ({value})"


def date_format(value: str) -> str | None:
    return None if value.startswith("+") else f"date {value} sets the clock (only date +FORMAT is a look)"


def bazel_target(value: str) -> str | None:
    if re.fullmatch(r"(?://)?[\w./-]*(?::[\w.*+-]+)?|//\.\.\.|\.\.\.", value) and ".." not in value.replace("...", ""):
        return None
    return f"{value} is not a target of this workspace"


def go_packages(value: str) -> str | None:
    return next((r for part in value.split(",") if (r := go_package(part))), None)


def project_paths(value: str) -> str | None:
    return next((r for part in value.split(":") if (r := project_path(part))), None)


def module_or_path(value: str) -> str | None:
    """``--cov=myapp``, ``--source=src``: a module of the project (coverage may import it to find it) or a path."""
    if re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", value):
        return _own_module(value, "a module of the project")
    return project_path(value)


def message(value: str) -> str | None:
    """What echo or printf prints: anything (it is read, never run)."""
    return None


KINDS: dict[str, Check] = {
    "text": text,
    "message": message,
    "word": _matches(r"[\w%@<][\w.+,:%@^<>-]*", "a plain word"),
    "name": _matches(r"[\w@<][\w.+@<>-]*", "a name"),
    "name-or-path": project_path,
    "number": _matches(r"[+-]?\d+(?:\.\d+)?|<\w+>", "a number"),
    "line-count": _matches(r"[+-]?\d+[KMGkmgbB]?|<\w+>", "a count"),
    "jobs": _matches(r"\d+%?|auto|logical|max|<\w+>", "a number of jobs"),
    "duration": _matches(r"(?:\d+(?:\.\d+)?(?:ns|us|ms|s|m|h|d)?)+|<\w+>", "a duration"),
    "version": _matches(r"(?:c?python-?|pypy|py)?\d+(?:\.\d+)*[a-z0-9]*|python\d?(?:\.\d+)?|<\w+>", "a version"),
    "module": module,
    "module-or-path": module_or_path,
    "flag": _matches(r"(?i:0|1|2|3|true|false|yes|no|on|off|)", "0, 1, true or false"),
    "project-path": project_path,
    "output-path": output_path,
    "cd-folder": cd_folder,
    "project-paths": project_paths,
    "project-file": project_file,
    "script-operand": script_operand,
    "project-value": project_value,
    "test-selector": test_selector,
    "test-label": test_label,
    "report-file": report_file,
    "cov-report": cov_report,
    "warning-filter": warning_filter,
    "python-x": _matches(r"dev|utf8(?:=[01])?|importtime(?:=2)?|faulthandler|tracemalloc(?:=\d+)?|"
                         r"warn_default_encoding|no_debug_ranges|frozen_modules=(?:on|off)|int_max_str_digits=\d+|"
                         r"showrefcount|cpu_count=\d+|gil=[01]", "a harmless -X option"),
    "disable-plugin": lambda v: None if re.fullmatch(r"no:[\w.-]+", v) else
    f"-p loads a plugin ({v}); only -p no:NAME, which turns one off, is ordinary",
    "requirement": requirement,
    "local-project": local_project,
    "npm-package": _matches(r"(?:@[a-z0-9][\w.-]*/)?[a-z0-9][\w.-]*(?:@[\w.^~<>=*|-]+)?|<[\w-]+>",
                            "a package name from the default registry"),
    "crate": _matches(r"[\w-]+(?:@[\w.^~<>=*+-]+)?", "a crate name"),
    "script-name": script_name,
    "project-name": project_name,
    "project-names": project_names,
    "project-expression": project_expression,
    "project-script": project_script,
    "project-folder": project_folder,
    "go-program": go_program,
    "make-operand": make_operand,
    "gradle-task": gradle_task,
    "bazel-target": bazel_target,
    "go-package": go_package,
    "go-packages": go_packages,
    "go-local": go_package,
    "go-list-operand": go_list_operand,
    "git-operand": git_operand,
    "search-pattern": search_pattern,
    "search-glob": search_glob,
    "sed-script": sed_script,
    "jq-filter": jq_filter,
    "local-url": local_url,
    "curl-text": curl_text,
    "curl-header": curl_header,
    "curl-format": curl_format,
    "build-output": build_output,
    "date-format": date_format,
}


def check(kind: str, value: str) -> str | None:
    """Why VALUE is not of KIND (a name in ``KINDS`` or ``a|b|c``), or None."""
    if "|" in kind:
        choices = kind.split("|")
        return None if value in choices else f"{value or '(nothing)'} is not one of {', '.join(choices)}"
    return KINDS[kind](value)
