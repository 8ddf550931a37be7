"""Ordinary project commands: the only ones a batch approval lets through (default-deny).

A command line is ordinary when the shell reader reads it exactly and every simple command in
it is one of: the repository's tests, build or lint (``pytest``, ``python -m pytest``, ``tox``,
``python tests/runtests.py``, ``bin/test``, ``npm test``, ``npm run X``, ``cargo test``,
``go test``, ``make X``, ``ruff``, ``mypy``, ``tsc`` ...); running the project's own files or
modules (``python path/to/file.py``, ``python -m package``, ``./script``); read-only looks
(``ls``, ``cat``/``grep`` of project files, ``git status/diff/log/show``); installs of named
packages from the default index (``pip install name==1.0``, ``pip install -e .``,
``pip install -r requirements.txt``, ``npm install name``, ``npm ci``, ``cargo add``); and
deleting build output (``rm -rf build/ dist/``: the next build makes it again).

Anything else -- inline code (``python -c``), edits (``sed -i``), system packages, network
tools, ``git`` commands that change state, redirections into files, command substitution --
is not ordinary: a person approves the skill by name after reading the line.
"""

from __future__ import annotations

import re

from pipeline.safety.shell import Command, parse
from pipeline.safety.words import (
    CREDENTIAL_PATH,
    command_host,
    is_build_output,
    is_local_host,
    is_python,
    looks_like_command,
    normal,
)

__all__ = ["is_ordinary", "looks_like_command", "why_not_ordinary"]

_TEST_RUNNERS = {"pytest", "py.test", "tox", "nox", "ctest", "jest", "vitest", "mocha", "phpunit", "rspec",
                 "unittest", "trial", "ava", "tap", "karma"}
_LINTERS = {"ruff", "flake8", "black", "isort", "mypy", "pyright", "pylint", "eslint", "prettier", "tsc", "biome",
            "golangci-lint", "gofmt", "rustfmt", "shellcheck", "codespell", "pydocstyle", "pycodestyle", "yapf",
            "autopep8", "stylelint", "clang-format", "ktlint", "rubocop", "bandit", "vulture", "dmypy"}
_PY_MODULES = {"pytest", "unittest", "tox", "nox", "mypy", "black", "isort", "flake8", "ruff", "pylint", "build",
               "compileall", "doctest", "coverage", "pyright", "pycodestyle", "pydocstyle", "json.tool", "timeit",
               "py_compile", "tabnanny", "django", "sphinx"}
_NOT_MODULES = {"http.server", "smtpd", "webbrowser", "ensurepip", "pip", "venv", "site", "ftplib", "telnetlib",
                "base64", "pdb", "code", "idlelib", "pydoc", "zipapp", "runpy", "trace", "cProfile", "profile"}
_JS_TOOLS = _TEST_RUNNERS | _LINTERS | {"playwright", "next", "vite", "tsx", "ts-node", "turbo", "nx", "webpack",
                                        "rollup", "esbuild", "jest", "vitest", "lerna", "tsup"}
_READ_ONLY = {"ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "ag", "ack", "tree", "pwd", "echo",
              "printf", "which", "type", "file", "stat", "du", "diff", "cmp", "sort", "uniq", "cut", "tr", "nl",
              "column", "jq", "basename", "dirname", "realpath", "date", "true", "false", "ps", "less", "more",
              "cd", "test", "[", "sleep", "uname", "whoami", "id", "md5sum", "sha256sum", "find", "fd",
              "tac", "xxd", "od", "strings", "readlink", "sed"}
_GIT_READ = {"status", "diff", "log", "show", "blame", "rev-parse", "ls-files", "grep", "describe", "shortlog",
             "branch", "remote", "tag", "ls-tree", "cat-file", "rev-list", "merge-base", "whatchanged", "reflog"}
_BUILD = {"mvn": {"test", "verify", "compile", "package", "install", "clean", "validate", "test-compile"},
          "gradle": {"test", "build", "check", "assemble", "compileJava", "clean", "compileKotlin"},
          "cargo": {"test", "build", "check", "clippy", "fmt", "run", "bench", "doc", "tree", "metadata", "nextest"},
          "go": {"test", "build", "vet", "fmt", "run", "list", "version", "env"},
          "dotnet": {"test", "build", "restore", "format"},
          "swift": {"test", "build"}, "bundle": {"exec", "install"}, "rake": None, "meson": {"test", "compile"},
          "ninja": None, "cmake": None, "bazel": {"test", "build"}, "sbt": {"test", "compile"}}
_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[A-Za-z0-9._,\s-]+\])?"
                          r"(?:\s*(?:===|==|>=|<=|~=|!=|<|>)\s*[A-Za-z0-9.*+!_-]+(?:\s*,\s*(?:===|==|>=|<=|~=|!=|<|>)"
                          r"\s*[A-Za-z0-9.*+!_-]+)*)?$")
_NPM_PACKAGE = re.compile(r"^(?:@[a-z0-9][\w.-]*/)?[a-z0-9][\w.-]*(?:@[\w.^~<>=*|-]+)?$", re.I)
_PIP_FLAGS = {"-e", "--editable", "-r", "--requirement", "-c", "--constraint", "-U", "--upgrade", "-q", "--quiet",
              "-v", "--verbose", "--no-deps", "--pre", "--no-cache-dir", "--force-reinstall", "--no-build-isolation",
              "--user", "--upgrade-strategy", "--no-input", "--disable-pip-version-check", "-y", "--yes",
              "--dev", "--group", "--optional", "-D", "--system"}
_NPM_FLAGS = {"-D", "--save-dev", "-S", "--save", "-E", "--save-exact", "--legacy-peer-deps", "--no-audit",
              "--no-fund", "--silent", "-O", "--save-optional", "--frozen-lockfile", "--prefer-offline", "--dev",
              "--exact", "-w", "--ignore-scripts", "--no-save"}
_DENIED_SCRIPTS = {"dlx", "exec", "x", "config", "set", "global", "publish", "login", "adduser", "token", "link",
                   "unlink", "plugin", "policies", "npm", "node", "create", "init", "pack", "deploy", "release"}


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
        if redirect.reads and not _project_path(redirect.target):
            return f"reads a file outside the project ({redirect.target})"
    for assignment in command.assignments:
        if reason := _assignment(assignment):
            return reason
    for wrapper in command.wrappers:
        name = wrapper.rsplit("/", 1)[-1]
        if name in ("sudo", "doas", "pkexec", "su"):
            return "runs as root"
        if name in ("xargs", "exec", "nohup", "setsid", "watch"):
            return f"runs a command through {name}"
    if not command.argv:
        return None if command.assignments else "an empty command"
    return _program(command)


_ENV_DENIED = re.compile(r"^(?:PATH|LD_\w+|DYLD_\w+|BASH_ENV|ENV|PROMPT_COMMAND|PYTHONSTARTUP|PYTHONHOME|NODE_OPTIONS|"
                         r"PIP_\w+|UV_\w+|NPM_CONFIG_\w+|YARN_\w+|GIT_\w+|GO\w+|CARGO_\w+|\w*_PROXY|HOME|SHELL|"
                         r"IFS|PS4|PERL5OPT|RUBYOPT|JAVA_TOOL_OPTIONS|\w*(?:TOKEN|SECRET|PASSWORD|KEY)\w*)=", re.I)


def _assignment(assignment: str) -> str | None:
    if _ENV_DENIED.match(assignment):
        return f"sets {assignment.split('=', 1)[0]}, which changes what runs or where it connects"
    if "://" in assignment or "$(" in assignment or "`" in assignment:
        return f"sets a variable to a URL or a command ({assignment[:60]})"
    return None


def _project_path(path: str) -> bool:
    """A path inside the project: relative, no ``..``, no home, not a credential file."""
    p = normal(path)
    if not p or p.startswith(("/", "~", "$")) or ".." in p.split("/") or CREDENTIAL_PATH.search(p):
        return False
    return not p.startswith(".git/")


def _program(command: Command) -> str | None:
    name, args, first = command.program, command.args, command.argv[0]
    if name in _TEST_RUNNERS or name in _LINTERS:
        return _paths_inside(args)
    if is_python(name):
        return _python(args)
    if re.match(r"^pip(?:\d(?:\.\d+)?)?$", name):
        return _pip(args)
    if name in ("uv", "poetry", "pdm", "hatch", "pipenv", "rye"):
        return _python_manager(name, args)
    if name in ("npm", "yarn", "pnpm", "bun", "cnpm"):
        return _node_manager(name, args)
    if name in ("npx", "bunx", "pnpx"):
        tool = next((a for a in args if not a.startswith("-")), "")
        return None if tool in _JS_TOOLS else f"{name} downloads and runs a package ({tool or '?'})"
    if name == "node":
        plain = [a for a in args if not a.startswith("-")]
        return None if plain and _project_path(plain[0]) and not any(a in ("-e", "-p", "--eval") for a in args) \
            else "runs inline or outside code with node"
    if name in ("make", "gmake"):
        return _make(args)
    if name in ("gradlew", "mvnw") or name in _BUILD:
        return _build(name.removesuffix("w") if name in ("gradlew", "mvnw") else name, args)
    if name == "git":
        return _git(args)
    if name in ("curl", "wget", "http", "xh"):
        return _local_request(command)
    if name == "rm":
        targets = [a for a in args if not a.startswith("-")]
        return None if targets and all(is_build_output(t) for t in targets) else "deletes files"
    if name == "mkdir":
        return None if all(_project_path(a) for a in args if not a.startswith("-")) else "creates folders outside"
    if name in _READ_ONLY:
        return _read_only(name, args)
    if "/" in first and _project_path(first):
        return None  # the project's own script: ./tests/runtests.py, bin/test, ./gradlew
    return f"{name} is not a test, build, lint, read-only or package-install command"


def _local_request(command: Command) -> str | None:
    """``curl -s http://localhost:8000/health``: a look at the project's own server, nothing sent or saved."""
    if not is_local_host(command_host(command)):
        return f"{command.program} reaches the network ({command_host(command) or '?'})"
    for arg in command.args:
        if arg in ("-o", "-O", "--output", "--remote-name", "-T", "--upload-file", "-K", "--config", "-F", "--form",
                   "--post-file", "--body-file") or arg.startswith(("--output=", "--post-file=", "--body-file=", "-o",
                                                                     "@")) or "=@" in arg or re.match(r"^-\w*[oOTK]$", arg):
            return f"{command.program} saves or sends a file ({arg})"
    return None


def _paths_inside(args: list[str]) -> str | None:
    for arg in args:
        value = arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg
        if value.startswith(("/", "~")) and not value.startswith("/dev/null") or ".." in value.split("/"):
            return f"points at a path outside the project ({value})"
    return None


def _python(args: list[str]) -> str | None:
    n = 0
    while n < len(args) and args[n].startswith("-") and args[n] not in ("-m", "-c", "-"):
        n += 2 if args[n] in ("-X", "-W") else 1
    if n >= len(args) or args[n] == "-":
        return "runs python code from its input"
    if args[n] == "-c" or args[n].startswith("-c"):
        return "runs inline python code (python -c)"
    if args[n] == "-m":
        module = args[n + 1] if n + 1 < len(args) else ""
        rest = args[n + 2:]
        if module == "pip":
            return _pip(rest)
        if module in _NOT_MODULES or not re.match(r"^[A-Za-z_][\w.]*$", module):
            return f"runs the module {module or '?'}, which is not a test, build or project module"
        return _paths_inside(rest)
    if args[n].startswith("-m") and len(args[n]) > 2:
        return _python(["-m", args[n][2:], *args[n + 1:]])
    if not _project_path(args[n]):
        return f"runs a python file outside the project ({args[n]})"
    return _paths_inside(args[n + 1:])


def _pip(args: list[str]) -> str | None:
    sub = args[0] if args else ""
    if sub in ("list", "show", "freeze", "check", "--version", "-V", "help"):
        return None
    if sub == "uninstall":
        return None if all(_REQUIREMENT.match(a) or a in ("-y", "--yes") for a in args[1:]) else \
            "pip uninstall with options"
    if sub != "install":
        return f"pip {sub or ''} is not an install of named packages".replace("  ", " ")
    return _requirements(args[1:])


def _requirements(args: list[str]) -> str | None:
    skip_next = False
    for n, arg in enumerate(args):
        if skip_next:
            skip_next = False
            continue
        option = arg.split("=", 1)[0]
        if arg.startswith("-"):
            if option not in _PIP_FLAGS:
                return f"installs with {option}, not from the default index by name"
            if option in ("-r", "--requirement", "-c", "--constraint", "-e", "--editable", "--upgrade-strategy",
                          "--group") and "=" not in arg:
                value = args[n + 1] if n + 1 < len(args) else ""
                if option in ("-e", "--editable") and not _local_project(value):
                    return f"installs an editable package from outside the project ({value})"
                if option in ("-r", "-c", "--requirement", "--constraint") and not _project_path(value):
                    return f"reads requirements from outside the project ({value})"
                skip_next = True
            continue
        if not (_REQUIREMENT.match(arg) or _local_project(arg)):
            return f"installs something other than a named package ({arg[:60]})"
    return None


def _local_project(value: str) -> bool:
    """``.``, ``./``, ``.[test]``, ``'.[dev,test]'``: the project itself."""
    return bool(re.match(r"^\.(?:/)?(?:\[[\w.,\s-]+\])?$", value))


def _python_manager(name: str, args: list[str]) -> str | None:
    sub = args[0] if args else ""
    if name == "uv" and sub == "pip":
        return _pip(args[1:])
    if sub in ("sync", "lock", "build", "install", "check", "show", "list", "tree", "test", "version", "shell"):
        return None if all(a.startswith("-") for a in args[1:]) or name == "hatch" else _requirements(args[1:])
    if sub == "add":
        return _requirements(args[1:])
    return f"{name} {sub} is not an ordinary project command"


def _node_manager(name: str, args: list[str]) -> str | None:
    sub = args[0] if args else ("install" if name == "yarn" else "")
    rest = args[1:]
    if sub in ("test", "t", "tst", "start", "build", "lint", "ls", "list", "outdated", "audit", "why", "typecheck",
               "format", "check"):
        return _paths_inside(rest)
    if sub in ("run", "run-script"):
        script = next((a for a in rest if not a.startswith("-")), "")
        return None if script and script not in _DENIED_SCRIPTS else f"{name} run {script}".strip()
    if sub == "ci" or (sub in ("install", "i") and not [a for a in rest if not a.startswith("-")]):
        return None if all(a in _NPM_FLAGS for a in rest) else f"installs with {' '.join(rest)}"
    if sub in ("install", "i", "add"):
        for arg in rest:
            if arg.startswith("-"):
                if arg not in _NPM_FLAGS:
                    return f"installs with {arg}, not from the default registry by name"
            elif not _NPM_PACKAGE.match(arg):
                return f"installs something other than a named package ({arg[:60]})"
        return None
    if sub == "exec":
        tool = next((a for a in rest if not a.startswith("-")), "")
        return None if tool in _JS_TOOLS else f"{name} exec {tool}"
    if name in ("yarn", "pnpm", "bun") and re.match(r"^[\w:.-]+$", sub) and sub not in _DENIED_SCRIPTS:
        return None  # `yarn lint`, `pnpm typecheck`: a script of the project's package.json
    return f"{name} {sub} is not an ordinary project command"


def _make(args: list[str]) -> str | None:
    skip_next = False
    for n, arg in enumerate(args):
        if skip_next:
            skip_next = False
            continue
        if arg in ("-C", "--directory", "-f", "--file", "-j", "--jobs"):
            value = args[n + 1] if n + 1 < len(args) else ""
            if arg in ("-C", "--directory", "-f", "--file") and not _project_path(value):
                return f"make with a file or folder outside the project ({value})"
            skip_next = True
        elif arg.startswith("-"):
            continue
        elif "=" in arg:
            if reason := _assignment(arg):
                return reason
        elif not re.match(r"^[\w./-]+$", arg):
            return f"make {arg[:40]}"
    return None


def _build(name: str, args: list[str]) -> str | None:
    allowed = _BUILD.get(name)
    goals = [a for a in args if not a.startswith("-") and "=" not in a]
    if name == "cargo" and goals[:1] == ["add"]:
        return None if all(_NPM_PACKAGE.match(a) for a in goals[1:]) and not any(
            a.startswith(("--git", "--registry", "--index", "--path")) for a in args) else "cargo add from elsewhere"
    if name == "go" and goals[:2] in (["mod", "tidy"], ["mod", "download"], ["mod", "verify"]):
        return None
    if allowed is None:
        return _paths_inside(args)
    if not goals or any(g.split(":")[-1] not in allowed for g in goals[:1]):
        return f"{name} {' '.join(goals[:2])} is not a test or build".replace("  ", " ")
    return _paths_inside(args)


def _git(args: list[str]) -> str | None:
    n = 0
    while n < len(args) and args[n].startswith("-"):
        if args[n] in ("-c", "--config-env", "--exec-path"):
            return f"git {args[n]} changes how git runs"
        n += 2 if args[n] in ("-C",) else 1
    sub = args[n] if n < len(args) else ""
    rest = args[n + 1:]
    if sub not in _GIT_READ:
        return f"git {sub} changes the repository (only status, diff, log, show ... are read-only)"
    if sub in ("branch", "tag", "remote") and [a for a in rest if a not in ("-a", "-v", "-vv", "-r", "-l", "--list",
                                                                          "--show-current", "--all")]:
        return f"git {sub} {' '.join(rest)[:40]} changes the repository"
    if any(a.startswith(("--output", "--ext-diff", "--textconv")) for a in rest):
        return f"git {sub} with {next(a for a in rest if a.startswith('--'))}"
    return None


def _read_only(name: str, args: list[str]) -> str | None:
    if name == "find" and any(a in ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf",
                                    "-fls") for a in args):
        return "find that deletes or runs commands"
    if name == "fd" and any(a in ("-x", "--exec", "-X", "--exec-batch") for a in args):
        return "fd that runs commands"
    if name == "sed":
        script = [a for a in args if not a.startswith("-")][:1]
        if "-i" in args or any(a.startswith(("-i", "--in-place")) for a in args):
            return "edits files in place: sed -i"
        if not script or not re.match(r"^\$?\d*(?:,\s*\$?\d+)?p$", script[0]):
            return "sed that transforms text; only `sed -n 'N,Mp'` is a read-only look"
    if name == "cd":
        target = args[0] if args else "~"
        return None if target == "-" or not (normal(target).startswith("~") or re.match(
            r"^/(?:etc|root|home|Users|usr|var|bin|boot|sys|proc|dev)?/?$", target)) else f"cd {target}"
    plain = [a for a in args if not a.startswith("-")]
    if name in ("grep", "egrep", "fgrep", "rg", "ag", "ack") and not any(a in ("-e", "-f") for a in args):
        plain = plain[1:]  # the first operand is the pattern
    for arg in plain:
        if CREDENTIAL_PATH.search(arg):
            return f"reads a credential file ({arg})"
        if name in ("cat", "head", "tail", "less", "more", "tac", "xxd", "od", "strings", "grep", "rg", "ag", "ack",
                    "nl", "wc", "diff", "cmp", "md5sum", "sha256sum") and arg.startswith(("/", "~", "$")) \
                and "/" in arg and not arg.startswith(("/dev/null", "/tmp/")):
            return f"reads a file outside the project ({arg})"
    return None

