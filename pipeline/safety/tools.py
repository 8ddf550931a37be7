"""Rules about tools: git, package managers, root, permissions, disks, and credentials."""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipeline.safety.findings import Finding
from pipeline.safety.shell import Command
from pipeline.safety.words import CREDENTIAL_PATH, SECRET_VAR, is_python, url_host

# -- git --------------------------------------------------------------------------------------
_GIT_ARG_OPTIONS = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"}


def git_parts(command: Command) -> tuple[list[str], str, list[str]]:
    """(global ``-c k=v`` settings, subcommand, its arguments) of a git command line."""
    args = command.args
    settings: list[str] = []
    n = 0
    while n < len(args) and args[n].startswith("-"):
        if args[n] == "-c" and n + 1 < len(args):
            settings.append(args[n + 1])
        if args[n] in _GIT_ARG_OPTIONS:
            n += 1
        n += 1
    return settings, (args[n] if n < len(args) else ""), args[n + 1:]


_HOOK_KEYS = re.compile(r"^(?:core\.(?:hookspath|fsmonitor|sshcommand|gitproxy|askpass|pager|editor)"
                        r"|credential\..*|filter\..*\.(?:clean|smudge|process)|diff\.external|sequence\.editor"
                        r"|uploadpack\.packobjectshook)$", re.I)
_GLOBAL_KEYS = re.compile(r"^(?:url\..*\.(?:pushinsteadof|insteadof)|include\.path|includeif\..*|init\.templatedir"
                          r"|http\.(?:proxy|sslverify|.*\.proxy)|https\.proxy|protocol\..*allow|safe\.directory"
                          r"|alias\..*)$", re.I)


def git(command: Command) -> Iterator[Finding]:
    if command.program != "git":
        return
    shown = command.display()
    settings, sub, args = git_parts(command)
    for setting in settings:
        key = setting.split("=", 1)[0]
        if _HOOK_KEYS.match(key):
            yield Finding("persistence", f"runs git with {key} set: it runs programs of someone else's choosing",
                          shown)
    if sub == "push":
        short = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
        if "f" in short or any(a.startswith(("--force", "+")) for a in args):
            yield Finding("force-push", "force-pushes", shown)
    elif sub == "reset" and "--hard" in args:
        yield Finding("discard-changes", "discards local changes (git reset --hard)", shown)
    elif sub == "clean" and ("f" in "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
                             or "--force" in args):
        yield Finding("discard-changes", "discards local changes (git clean -f deletes untracked files)", shown)
    elif sub == "config":
        yield from _git_config(args, shown)


def _git_config(args: list[str], shown: str) -> Iterator[Finding]:
    scope = "local"
    plain: list[str] = []
    reading = False
    skip_next = False
    for n, arg in enumerate(args):
        if skip_next:
            skip_next = False
            continue
        if arg in ("--global", "--system"):
            scope = arg[2:]
        elif arg in ("-f", "--file", "--blob"):
            scope = "file"
            skip_next = True
            if n + 1 < len(args) and re.search(r"(?:^~|\$\{?HOME\}?|/etc/)", args[n + 1]):
                scope = "global"
        elif arg.startswith(("--get", "--list", "-l", "--unset", "--remove-section", "--show", "--name-only")):
            reading = True
        elif not arg.startswith("-"):
            plain.append(arg)
    if plain[:1] in (["get"], ["list"], ["unset"]):
        reading = True
    if plain[:1] in (["set"],):
        plain = plain[1:]
    if reading or len(plain) < 2:
        return
    key = plain[0]
    if _HOOK_KEYS.match(key):
        where = "global" if scope in ("global", "system") else "repository"
        yield Finding("persistence", f"changes the {where} git configuration ({key}): git will run a program "
                      "of someone else's choosing", shown)
    elif scope in ("global", "system") and _GLOBAL_KEYS.match(key):
        yield Finding("persistence", f"changes the {scope} git configuration ({key}) for every repository", shown)


# -- package sources ----------------------------------------------------------------------
_DEFAULT_INDEXES = {"pypi.org", "files.pythonhosted.org", "pypi.python.org", "upload.pypi.org", "registry.npmjs.org",
                    "registry.yarnpkg.com", "crates.io", "index.crates.io", "static.crates.io", "rubygems.org",
                    "proxy.golang.org", "sum.golang.org"}
_INDEX_OPTIONS = {"-i", "--index-url", "--extra-index-url", "--trusted-host", "-f", "--find-links", "--index",
                  "--default-index", "--registry", "--source", "-s", "--git", "--channel", "-c"}
_URL_REQUIREMENT = re.compile(r"^(?:git\+|hg\+|svn\+|bzr\+)|^(?:https?|ftp|file|git|ssh)://|^git@|^(?:github|gitlab|"
                              r"bitbucket|gist):", re.I)
_INDEX_ENV = re.compile(r"^(?:PIP_(?:INDEX_URL|EXTRA_INDEX_URL|TRUSTED_HOST|FIND_LINKS)|UV_(?:INDEX_URL|"
                        r"EXTRA_INDEX_URL|INDEX|DEFAULT_INDEX|FIND_LINKS)|NPM_CONFIG_REGISTRY|YARN_(?:NPM_)?REGISTRY"
                        r"(?:_SERVER)?|GOPROXY|GOINSECURE|GONOSUMDB|GONOSUMCHECK|GOSUMDB|GOFLAGS|CARGO_REGISTRIES_\w+"
                        r"|BUNDLE_MIRROR__\w+|GEM_SOURCE|POETRY_REPOSITORIES_\w+|PDM_PYPI_URL|CONDA_CHANNELS)=(.*)$",
                        re.I)


def installer(command: Command) -> tuple[str, list[str]] | None:
    """(manager, the arguments after its install subcommand) for pip/uv/npm/yarn/pnpm/cargo/gem/conda."""
    name, args = command.program, command.args
    if is_python(name) and args[:2] == ["-m", "pip"]:
        name, args = "pip", args[2:]
    elif name == "uv" and args[:1] == ["pip"]:
        name, args = "pip", args[1:]
    elif name == "uv" and args[:2] == ["tool", "install"]:
        return "pip", args[2:]
    elif name in ("uv", "poetry", "pdm", "rye") and args[:1] == ["add"] or name in ("pipx", "pipenv") and args[:1] == ["install"]:
        return "pip", args[1:]
    elif name == "easy_install":
        return "pip", args
    if re.match(r"^pip(?:\d(?:\.\d+)?)?$", name):
        return ("pip", args[1:]) if args[:1] in (["install"], ["download"], ["wheel"]) else None
    if name in ("npm", "yarn", "pnpm", "bun", "cnpm"):
        if args[:1] in (["install"], ["i"], ["add"], ["ci"], ["in"], ["isntall"], ["update"], ["up"]):
            return "npm", args[1:]
        if name == "yarn" and not args:
            return "npm", []
        if args[:1] in (["dlx"], ["x"]):
            return "npm", args[1:]
        return None
    if name in ("npx", "bunx", "pnpx"):  # the package it runs; what follows is that tool's own arguments
        packages = [v for n, a in enumerate(args) for v in ([args[n + 1]] if a in ("-p", "--package") and
                                                             n + 1 < len(args) else [])]
        packages += [a.split("=", 1)[1] for a in args if a.startswith("--package=")]
        first = next((a for n, a in enumerate(args) if not a.startswith("-") and (n == 0 or args[n - 1] not in
                                                                                ("-p", "--package"))), None)
        return "npm", [*packages, *([first] if first else [])]
    if name == "cargo" and args[:1] in (["install"], ["add"]):
        return "cargo", args[1:]
    if name == "gem" and args[:1] in (["install"], ["sources"]):
        return "gem", args[1:]
    if name in ("conda", "mamba", "micromamba") and args[:1] in (["install"], ["create"]):
        return "conda", args[1:]
    return None


def package_source(command: Command) -> Iterator[Finding]:
    """Installs from an index other than the default one, from a URL or a git repository."""
    shown = command.display()
    env = list(command.assignments)
    if command.program == "export":
        env += command.args
    for assignment in env:
        if (match := _INDEX_ENV.match(assignment)) and _non_default(assignment, match.group(1)):
            yield Finding("package-source", f"points package installs at another index ({assignment[:80]})", shown)
    name, args = command.program, command.args
    if name in ("pip", "pip3", "npm", "yarn", "pnpm", "uv") and args[:2] in (["config", "set"], ["set", "registry"]) \
            and any(re.search(r"index|registry|trusted|find-links", a, re.I) for a in args):
            yield Finding("package-source", f"changes where packages come from ({' '.join(args)[:80]})", shown)
    if name == "go" and args[:2] == ["env", "-w"] and any(_INDEX_ENV.match(a) for a in args[2:]):
        yield Finding("package-source", f"points go at another module proxy ({' '.join(args[2:])[:80]})", shown)
    if name == "add-apt-repository" or (name == "apt-key" and args[:1] in (["add"], ["adv"])):
        yield Finding("package-source", f"adds a package source or signing key ({name})", shown)
    found = installer(command)
    if found is None:
        return
    manager, rest = found
    for n, arg in enumerate(rest):
        option, _, attached = arg.partition("=")
        value = attached or (rest[n + 1] if n + 1 < len(rest) else "")
        if option in _INDEX_OPTIONS or re.match(r"^-i\S", arg):
            if manager == "conda" and option in ("-c", "--channel") and "://" not in value:
                continue
            if manager == "npm" and option in ("-s", "-c", "-f", "-i"):
                continue
            if manager == "gem" and option == "-s" and not value:
                continue
            value = arg[2:] if re.match(r"^-i\S", arg) else value
            host = url_host(value) or value
            if host.lower() not in _DEFAULT_INDEXES:
                yield Finding("package-source", f"installs packages from a non-default index ({host})", shown)
                return
        elif manager == "gem" and option in ("-a", "--add"):
            yield Finding("package-source", f"adds a gem source ({value})", shown)
            return
        elif not arg.startswith("-") and (_URL_REQUIREMENT.search(arg) or (arg == "@" and n + 1 < len(rest))
                                          or re.search(r"@\s*(?:https?|git\+|file):", arg)):
            yield Finding("package-source", f"installs a package from a URL or a repository ({arg[:80]})", shown)
            return
        elif manager == "npm" and not arg.startswith(("-", "@")) and (
                re.match(r"^[\w.-]+/[\w.-]+(?:#\S*)?$", arg) or arg.endswith((".tgz", ".tar.gz"))) and "/" in arg:
            yield Finding("package-source", f"installs a package from a repository or a tarball ({arg[:80]})", shown)
            return


def _non_default(assignment: str, value: str) -> bool:
    value = value.strip("'\"")
    name = assignment.split("=", 1)[0].upper()
    if name == "GOPROXY":
        return any(part not in ("https://proxy.golang.org", "direct", "off", "") for part in value.split(","))
    if name == "GOFLAGS":
        return "insecure" in value
    host = url_host(value)
    return not (host and host.lower() in _DEFAULT_INDEXES)


# -- root, permissions, disks -----------------------------------------------------------------
_WORLD_MODE = re.compile(r"^(?:[0-7]?[0-7]{2}[2367]|(?:[ugo]*[ao][ugo]*|)[+=][rwxXst]*w[rwxXst]*|\+rwx|=rwx|a=rwx)$")


def privilege(command: Command) -> Iterator[Finding]:
    shown = command.display()
    if any(w.rsplit("/", 1)[-1] in ("sudo", "doas", "pkexec") for w in command.wrappers) or command.program in (
            "sudo", "doas", "pkexec") or (command.program == "su" and command.args[:1] != ["--help"]):
        yield Finding("root", "runs as root", shown)
    if command.program == "chmod":
        modes = [a for a in command.args if not a.startswith("-") or re.match(r"^-[rwx]+$", a)]
        if modes and any(_WORLD_MODE.match(m) and (not m.startswith(("+", "=")) or "rwx" in m) for m in modes[:1]):
            yield Finding("world-writable", "makes files world-writable", shown)
    name = command.program
    if name.startswith("mkfs") or name in ("wipefs", "fdisk", "sfdisk", "parted") or (
            name == "dd" and any(re.match(r"^of=/dev/(?!null|zero|stdout|stderr)", a) for a in command.args)):
        yield Finding("raw-disk", "writes to a raw disk", shown)
    for redirect in command.redirects:
        if redirect.writes and re.match(r"^/dev/(?:sd[a-z]|nvme|hd[a-z]|disk\d|mmcblk|xvd|vd[a-z])", redirect.target):
            yield Finding("raw-disk", "writes to a raw disk", shown)


# -- credentials ----------------------------------------------------------------------------
_TOKEN_TOOLS = [
    (re.compile(r"^gh auth (?:token|status .*(?:-t|--show-token))"), "gh auth token"),
    (re.compile(r"^git credential(?:-\w+)? (?:fill|get)"), "git credential fill"),
    (re.compile(r"^security find-(?:generic|internet)-password"), "the macOS keychain"),
    (re.compile(r"^aws (?:configure (?:get|export-credentials)|sts get-session-token|ecr get-login-password)"),
     "aws"),
    (re.compile(r"^gcloud auth (?:print-access-token|print-identity-token|application-default print-access-token)"),
     "gcloud"),
    (re.compile(r"^az account get-access-token"), "az"),
    (re.compile(r"^kubectl config view .*--raw"), "kubectl"),
    (re.compile(r"^(?:op (?:read|item get)|vault (?:read|kv get)|pass show|bw get)"), "a password manager"),
]
_ECHOES = {"echo", "printf", "cat", "curl", "wget", "http", "nc", "ncat", "logger", "tee", "print"}


def credentials(command: Command, written: list[str]) -> Iterator[Finding]:
    """Reading credential files or tool tokens, printing secrets, dumping the environment."""
    shown = command.display()
    name, args = command.program, command.args
    line = " ".join([name, *args])
    for pattern, tool in _TOKEN_TOOLS:
        if pattern.match(line):
            yield Finding("credential-access", f"reads credentials from a tool ({tool})", shown)
            break
    if (name == "env" and not args) or (name == "printenv" and not [a for a in args if not a.startswith("-")]) or (
            name in ("export", "declare", "typeset") and args and all(a in ("-p", "-x", "-px") for a in args)) or (
            name == "set" and not args):
        yield Finding("credential-access", "dumps environment secrets", shown)
    elif name == "printenv" and any(re.search(r"TOKEN|SECRET|PASSWORD|KEY", a, re.I) for a in args):
        yield Finding("credential-access", "prints a secret from the environment", shown)
    written_set = set(written)
    for arg in args:
        if arg in written_set or not CREDENTIAL_PATH.search(arg):
            continue
        if re.search(r"(?:^|/)\.env(?:\.[\w.-]+)?$", arg):
            if name in ("cat", "less", "more", "head", "tail", "source", ".", "grep", "rg", "cp", "scp", "base64",
                        "strings", "xxd", "sort", "awk", "sed", "tac", "nl"):
                yield Finding("credential-access", f"reads a secrets file ({arg})", shown)
                break
            continue
        yield Finding("credential-access", f"reads credential files ({arg})", shown)
        break
    for redirect in command.redirects:
        if redirect.reads and CREDENTIAL_PATH.search(redirect.target):
            yield Finding("credential-access", f"reads credential files ({redirect.target})", shown)
    if name in _ECHOES and any(SECRET_VAR.search(a) for a in args):
        yield Finding("credential-access", "prints or sends a secret from the environment", shown)
