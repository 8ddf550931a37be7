"""What the rules know about programs and paths: which download, which run code, which paths matter."""

from __future__ import annotations

import ipaddress
import posixpath
import re
from urllib.parse import urlsplit

from pipeline.safety.shell import SHELLS, Command, parse

DOWNLOADERS = {"curl", "wget", "fetch", "http", "https", "xh", "curlie", "aria2c", "lwp-request", "lwp-download",
               "GET", "iwr", "irm", "Invoke-WebRequest", "Invoke-RestMethod"}
SOCKETS = {"nc", "ncat", "netcat", "socat", "telnet"}
INTERPRETERS = {"perl", "ruby", "node", "nodejs", "php", "deno", "bun", "lua", "Rscript", "osascript", "pwsh",
                "powershell", "iex", "tclsh", "jshell"}
_PYTHON = re.compile(r"^(?:python|pypy)(?:[23](?:\.\d+)?)?$|^py$")
#: Readers of a file's contents (what `cat .env | curl ...` sends).
READERS = {"cat", "tac", "less", "more", "head", "tail", "base64", "xxd", "od", "strings", "gzip", "zip", "tar",
           "bzip2", "xz", "openssl", "gpg", "jq", "sed", "awk", "grep", "rg", "cut", "sort"}
ENV_DUMPS = {"env", "printenv", "set", "export", "declare", "typeset", "compgen"}
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|PRIVATE_KEY|ACCESS_KEY|CREDENTIAL|AUTH", re.I)
SECRET_VAR = re.compile(r"\$\{?(\w*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|APIKEY|PRIVATE_KEY|ACCESS_KEY|"
                        r"CREDENTIALS?)\w*)\}?", re.I)

#: Files that hold credentials: reading them, or sending them, leaks a key.
CREDENTIAL_PATH = re.compile(
    r"(?:^|/|~)\.ssh(?:/|$)|\bid_(?:rsa|ed25519|ecdsa|dsa)\b|\.aws/(?:credentials|config)\b|(?:^|/)\.netrc\b"
    r"|/etc/(?:shadow|gshadow|sudoers)\b|\.docker/config\.json|\.kube/config|\.git-credentials|(?:^|/)\.pypirc\b"
    r"|(?:^|/)\.npmrc\b|\.config/gh/hosts\.yml|\.gnupg(?:/|$)|\.password-store|(?:^|/)\.env(?:\.[\w.-]+)?$"
    r"|/proc/(?:self|\d+|\*)/environ|\.config/gcloud|\.azure/|\.vault-token", re.I)

_HOME = re.compile(r"^(?:~[\w.-]*|\$\{?HOME\}?|/home/[^/]+|/Users/[^/]+|/root)/?(?:\*|\.\*?)?/?$")
_ROOT = re.compile(r"^/+(?:\*|\.\*?|\.\.?)?/?$")
_SYSTEM = re.compile(r"^/(?:bin|boot|dev|etc|home|lib|lib32|lib64|opt|proc|root|run|sbin|srv|sys|usr|var|"
                     r"Users|System|Library|Applications|private|mnt|media|snap)(?:/\*?)?/?$")
_HERE = re.compile(r"^(?:\.?/?\*|\./?|\.\*|\.\./?.*|\.\.)$")

#: Folders a build or a test run makes again: deleting them is ordinary, not destruction.
BUILD_DIRS = {"build", "dist", "target", "node_modules", "__pycache__", ".pytest_cache", ".mypy_cache",
              ".ruff_cache", ".tox", ".nox", ".eggs", ".hypothesis", "htmlcov", ".coverage", "coverage",
              ".next", ".nuxt", ".turbo", ".parcel-cache", ".expo", "_build", ".gradle", "pip-wheel-metadata",
              ".cache", ".angular", ".svelte-kit", "out-tsc", "cmake-build-debug", "cmake-build-release"}

_RC_FILES = {".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile", ".zshenv",
             ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc", ".mkshrc", ".xprofile", ".xinitrc", ".xsession",
             ".inputrc", "config.fish", ".envrc", ".pam_environment"}
_RC_SYSTEM = re.compile(r"^/etc/(?:profile|profile\.d/|bash\.bashrc|bashrc|zsh|environment|zshenv|zprofile)")
TEST_PATH = re.compile(
    r"(?:^|/)(?:tests?|testing|__tests__|spec|specs|e2e)(?:/|$)|(?:^|/)(?:test_[^/]*|[^/]*_tests?\.\w+|tests\.py"
    r"|conftest\.py|[^/]*\.(?:test|spec)\.[cm]?[jt]sx?|[^/]*_test\.go|[^/]*Tests?\.(?:java|kt|cs)|[^/]*_spec\.rb"
    r"|pytest\.ini|tox\.ini|jest\.config\.[cm]?[jt]s|vitest\.config\.[cm]?[jt]s)$", re.I)


def is_python(name: str) -> bool:
    return bool(_PYTHON.match(name))


def is_shell(name: str) -> bool:
    return name in SHELLS


def runs_code(name: str) -> bool:
    """A program whose input or argument is a program: shells, interpreters, eval, source."""
    return is_shell(name) or is_python(name) or name in INTERPRETERS or name in ("eval", "source", ".", "exec")


def downloads(command: Command) -> bool:
    name = command.program
    if name in DOWNLOADERS:
        return True
    if name == "git" and command.args[:1] == ["clone"]:
        return False
    if (is_python(name) or name in INTERPRETERS) and (code := inline_code(command)) is not None:
        return bool(NETWORK_CODE.search(code))
    return name in SOCKETS and not any(a in ("-l", "-lp", "-lvp", "-lnvp") for a in command.args)


def inline_code(command: Command) -> str | None:
    """The program text given with ``python -c``, ``node -e``, ``perl -e`` ... (None if there is none)."""
    args = command.args
    for n, arg in enumerate(args):
        if arg in ("-c", "-e", "--eval", "-E", "-p", "--print", "-r") or (
                arg.startswith("-") and not arg.startswith("--") and arg[-1:] in "ce" and len(arg) <= 4
                and not is_python(command.program)):
            return args[n + 1] if n + 1 < len(args) else ""
        if arg.startswith("-c") and len(arg) > 2 and is_python(command.program):
            return arg[2:]
        if not arg.startswith("-"):
            return None
    return None


NETWORK_CODE = re.compile(
    r"urllib|urlopen|urlretrieve|\brequests\.(?:get|post|put|request|Session)|http\.client|httpx|aiohttp|\bsocket\b"
    r"|ftplib|smtplib|\bfetch\s*\(|https?\.(?:get|request)|\bnet\.connect|axios|XMLHttpRequest|LWP::|HTTP::Tiny"
    r"|IO::Socket|Net::HTTP|open-uri|TCPSocket|Invoke-WebRequest|Net\.WebClient|DownloadString|curl|wget", re.I)
ENV_CODE = re.compile(r"os\.environ|getenv|\benviron\b|process\.env|%ENV|\$ENV\{|\bENV\[|Env:|printenv", re.I)
FILE_CODE = re.compile(r"\bopen\s*\(|read_text|read_bytes|readFileSync|readFile\s*\(|File\.read|slurp|glob\.|"
                       r"os\.walk|os\.listdir|\.ssh|\.aws|\.env\b|id_rsa", re.I)
EXEC_CODE = re.compile(r"\bexec\s*\(|\beval\s*\(|subprocess|os\.system|os\.popen|child_process|\bsystem\s*\(|"
                       r"Function\s*\(|compile\s*\(|__import__|IEX\b|Invoke-Expression", re.I)


def url_host(text: str) -> str | None:
    """The host of the first URL in TEXT (``evil.example``), or None."""
    match = re.search(r"\b(?:https?|ftp|wss?|git|ssh)://[^\s'\"`]+", text)
    if match:
        try:
            return urlsplit(match.group(0)).hostname or None
        except ValueError:
            return None
    return None


#: Options that send a request somewhere other than the URL's host: the host they name is where it goes.
_REROUTES = {"--resolve", "--connect-to", "-x", "--proxy", "--preproxy", "--socks4", "--socks4a", "--socks5",
             "--socks5-hostname", "--doh-url", "--dns-servers"}
#: Options whose request (URLs, proxy, headers) is read from a file, per program: where it goes is not in the line.
_FROM_FILE = {"curl": {"-K", "--config"}, "wget": {"-i", "--input-file", "--config"}}
#: What ``command_host`` says when the host is in a file, not the line (never a local host).
FROM_A_FILE = "a host named in a file"


#: Short options that take a value, per program (the rest of a cluster after one of them is its value).
_SHORT_VALUES = {"curl": "dHouXwAbceFmrTyYzCEKxUQPt", "wget": "oaOiBeDTtwQPUYlAR"}


def command_host(command: Command) -> str | None:
    """Where COMMAND connects: a rerouted or proxied destination first (``--resolve``, ``--connect-to``,
    ``-x``, wget's ``-e https_proxy=``), "a host named in a file" for ``curl -K``/``wget -i``, then the first
    URL whose host is not local, then the first host named at all."""
    name, args = command.program, command.args
    if name in DOWNLOADERS or name == "curlie":
        from_file = _FROM_FILE.get(name, set())
        for n, arg in enumerate(args):
            following = args[n + 1] if n + 1 < len(args) else ""
            if arg.startswith("--"):
                option, eq, value = arg.partition("=")
                options = [(option, value if eq else following)]
            elif arg.startswith("-"):
                options = _short_options(arg, _SHORT_VALUES.get(name, ""), following)
            else:
                continue
            for option, value in options:
                if option in from_file:
                    return FROM_A_FILE
                if (option in _REROUTES or (option == "-e" and name == "wget")) and (host := _rerouted(option, value)):
                    return host
    hosts = [h for arg in args if (h := url_host(arg))]
    if name in SOCKETS:
        hosts += [a for a in args if not a.startswith("-")][:1]
    for arg in args:  # curl example.com/x
        if re.match(r"^(?:[\w-]+(?:\.[\w-]+)+|localhost)(?::\d+)?(?:/\S*)?$", arg) and not arg.endswith(
                (".json", ".txt", ".py")):
            hosts.append(arg.split("/", 1)[0].split(":", 1)[0])
    return next((h for h in hosts if not is_local_host(h)), hosts[0] if hosts else None)


def _short_options(arg: str, takes_value: str, following: str) -> list[tuple[str, str]]:
    """``-sSx proxy:8080`` -> [("-s", ""), ("-S", ""), ("-x", "proxy:8080")]."""
    found = []
    for n, char in enumerate(arg[1:], 1):
        if char in takes_value:
            found.append((f"-{char}", arg[n + 1:] or following))
            break
        found.append((f"-{char}", ""))
    return found


def _rerouted(option: str, value: str) -> str | None:
    """The host a reroute option sends the request to (``--resolve name:port:ADDR``, ``--connect-to
    name:port:HOST:port``, ``-x [scheme://]HOST[:port]``, wget's ``-e https_proxy=HOST``)."""
    if option == "-e":  # wget -e use_proxy=yes -e http_proxy=evil:8080
        name, _, value = value.partition("=")
        if not name.lower().endswith("_proxy"):
            return None
    if option == "--resolve":
        address = value.lstrip("+").split(":", 2)[-1].split(",")[0]
        return address.strip("[]") or None
    if option == "--connect-to":
        parts = re.split(r":(?![^\[]*\])", value)
        return parts[2].strip("[]") if len(parts) >= 3 and parts[2] else None
    if option in ("--dns-servers", "--doh-url"):
        return url_host(value) or value.split(",")[0].split(":")[0] or None
    return url_host(value) or value.split("/")[0].rsplit("@", 1)[-1].split(":")[0] or None


def is_local_host(host: str | None) -> bool:
    """``localhost`` or a loopback address written as one (``127.0.0.1``, ``[::1]``, ``0.0.0.0``); not a name
    that merely starts like one (``127.0.0.1.evil.example``, ``localhost.evil.com``), which DNS may send anywhere."""
    if not host:
        return False
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


#: A URL (or ``host:port/path``) on this machine, spelled so no parser can read another host into it:
#: no user part, no ``@``, nothing after the host but a port and a path.
_LOCAL_URL = re.compile(r"^(?:https?://)?(?:localhost|127(?:\.\d{1,3}){3}|\[::1\]|0\.0\.0\.0)(?::\d{1,5})?"
                        r"(?:[/?#][^\s@\\]*)?$", re.I)


def is_local_url(text: str) -> bool:
    return bool(_LOCAL_URL.match(text))


def normal(path: str) -> str:
    """A path as written, with its quotes gone and ``$HOME``/``${HOME}`` spelled ``~``."""
    path = path.strip()
    path = re.sub(r"^\$\{?HOME\}?(?=/|$)", "~", path)
    return path


def deletion_scope(target: str) -> str | None:
    """What deleting TARGET recursively destroys, when it is more than a project folder."""
    path = normal(target)
    if path.startswith("--no-preserve-root"):
        return "the whole filesystem"
    if _ROOT.match(path):
        return "the whole filesystem (/)"
    if _HOME.match(path):
        return f"your home folder ({target})"
    if _SYSTEM.match(path):
        return f"a system folder ({target})"
    if _HERE.match(path):
        if path.rstrip("/") == "..":
            return "the parent folder (..)"
        if path.startswith(".."):
            return f"a folder outside the project ({target})"
        return f"everything in the current folder ({target})"
    return None


def is_build_output(target: str) -> bool:
    """``build/``, ``./dist``, ``docs/_build``, ``*.egg-info``: regenerated by the next build."""
    path = normal(target).rstrip("/")
    if not path or path.startswith(("/", "~", "$", "-")) or ".." in path.split("/"):
        return False
    path = path.removeprefix("./")
    last = posixpath.basename(path.rstrip("/*") or path)
    return last in BUILD_DIRS or last.endswith(".egg-info") or (last == "*" and posixpath.dirname(path) in BUILD_DIRS)


def persistence_kind(path: str) -> str | None:
    """Why writing PATH reaches beyond the project (it runs later, or lets someone in), or None."""
    p = normal(path)
    base = posixpath.basename(p.rstrip("/"))
    if re.search(r"(?:^|/)\.ssh(?:/|$)", p):
        return f"writes to ~/.ssh ({path}): an authorized key lets someone log in as you"
    if base in _RC_FILES and (p.startswith(("~", "/")) or "/" not in p) or _RC_SYSTEM.match(p):
        return f"changes a shell startup file ({path}): it runs in every new shell"
    if re.search(r"(?:^|/)\.git/hooks(?:/|$)", p):
        return f"installs a git hook ({path}): it runs on every commit"
    if base in (".gitconfig",) or re.search(r"\.config/git/config$|^/etc/gitconfig$", p):
        return f"changes the global git configuration ({path})"
    if re.match(r"^/etc/cron|^/var/spool/cron", p):
        return f"installs a cron job ({path})"
    if re.search(r"\.config/(?:autostart|systemd)|/etc/systemd|LaunchAgents|LaunchDaemons|/etc/init\.d|/etc/rc\.local"
                 r"|\.config/fish/conf\.d", p):
        return f"installs something that starts on its own ({path})"
    if re.match(r"^/etc/sudoers", p):
        return f"changes who may run commands as root ({path})"
    if package_config(p):
        return None  # where packages come from: package_config() reports it as a package source
    if re.match(r"^/(?:etc|usr|bin|sbin|lib|lib64|boot|System|Library)(?:/|$)", p):
        return f"writes to a system file ({path})"
    return None


#: Folders agents, editors, git hooks and CI read as configuration or instructions: a file a command writes
#: there is read as what to do next (``.claude/settings.json``, ``.github/workflows/``, ``.husky/pre-commit``).
AGENT_FOLDERS = frozenset({
    ".git", ".github", ".gitlab", ".claude", ".codex", ".gemini", ".cursor", ".vscode", ".idea", ".husky",
    ".devcontainer", ".continue", ".clinerules", ".roo", ".kilocode", ".goose", ".opencode", ".windsurf",
    ".amazonq", ".aider", ".crush", ".zed", ".circleci", ".buildkite"})
#: Files an agent or a tool reads as instructions or configuration wherever they are, without case.
AGENT_FILES = frozenset({
    "claude.md", "claude.local.md", "agents.md", "agent.md", "gemini.md", "crush.md", "opencode.md", "conventions.md",
    "copilot-instructions.md", ".cursorrules", ".clinerules", ".windsurfrules", ".roorules", ".goosehints",
    ".mcp.json", "mcp.json", ".aider.conf.yml", ".pre-commit-config.yaml", ".gitlab-ci.yml", ".gitattributes",
    ".gitmodules", ".envrc", "conftest.py", "makefile", "gnumakefile", "package.json", "pyproject.toml",
    "setup.py", "setup.cfg", "tox.ini", "noxfile.py", "justfile", "taskfile.yml", "cargo.toml", "build.rs"})


def instruction_place(path: str) -> str | None:
    """Why a file written at PATH is read later as instructions or configuration (by an agent, git, an editor,
    CI, the project's own build), or None: any part of it one of ``AGENT_FOLDERS``, or its name one of
    ``AGENT_FILES``."""
    parts = [part.lower() for part in re.split(r"[/\\]", normal(path)) if part not in ("", ".")]
    if not parts:
        return None
    if folder := next((part for part in parts if part in AGENT_FOLDERS), None):
        return f"writes into {folder}/ ({path}), which agents or tools read as instructions"
    if parts[-1] in AGENT_FILES:
        return f"writes {parts[-1]} ({path}), which agents or tools read as instructions"
    return None


def package_config(path: str) -> bool:
    low = normal(path).lower()
    return low.endswith(("pip.conf", "pip.ini", ".npmrc", ".yarnrc", ".yarnrc.yml", ".condarc", "uv.toml",
                         ".cargo/config", ".cargo/config.toml", ".gemrc")) or "/etc/apt/sources.list" in low \
        or "/etc/apt/keyrings" in low or "/etc/apt/trusted.gpg" in low


def is_test_path(path: str) -> bool:
    return bool(TEST_PATH.search(normal(path)))


#: Programs that make a span in backticks a command line (``pytest -q``) rather than a name (``setup.py``).
KNOWN_PROGRAMS = {
    "pytest", "py.test", "tox", "nox", "pip", "pip3", "pipx", "uv", "uvx", "poetry", "pdm", "hatch", "pipenv", "rye",
    "conda", "mamba", "npm", "npx", "yarn", "pnpm", "pnpx", "bun", "bunx", "node", "deno", "tsc", "eslint", "prettier",
    "jest", "vitest", "mocha", "cargo", "rustc", "rustup", "go", "gofmt", "make", "gmake", "cmake", "ctest", "ninja",
    "meson", "mvn", "gradle", "javac", "java", "dotnet", "gcc", "g++", "clang", "ruby", "gem", "bundle", "rake",
    "perl", "php", "composer", "git", "gh", "curl", "wget", "ssh", "scp", "rsync", "sftp", "nc", "ncat", "netcat",
    "socat", "telnet", "bash", "sh", "zsh", "dash", "ksh", "fish", "eval", "exec", "source", "sudo", "doas", "su",
    "env", "printenv", "unset", "echo", "printf", "cat", "tac", "less", "more", "head", "tail", "wc", "grep", "egrep",
    "fgrep", "rg", "ag", "ack", "find", "fd", "ls", "tree", "pwd", "cd", "mkdir", "rmdir", "rm", "mv", "cp", "ln",
    "touch", "chmod", "chown", "chgrp", "sed", "awk", "gawk", "tr", "cut", "sort", "uniq", "xargs", "tee", "diff",
    "patch", "tar", "zip", "unzip", "gzip", "gunzip", "base64", "xxd", "dd", "mkfs", "kill", "pkill", "killall", "ps",
    "lsof", "jq", "docker", "docker-compose", "podman", "kubectl", "helm", "terraform", "aws", "gcloud", "az",
    "crontab", "systemctl", "launchctl", "apt", "apt-get", "apt-key", "add-apt-repository", "dpkg", "yum", "dnf",
    "apk", "brew", "snap", "ruff", "black", "isort", "flake8", "mypy", "pyright", "pylint", "bandit", "pre-commit",
    "coverage", "sphinx-build", "mkdocs", "django-admin", "flask", "uvicorn", "gunicorn", "alembic", "psql", "mysql",
    "sqlite3", "redis-cli", "openssl", "ssh-keygen", "gpg", "security", "shred", "wipefs", "which", "nohup",
    "timeout", "time", "watch", "iex", "iwr", "irm", "pwsh", "powershell", "Invoke-WebRequest", "Remove-Item",
    "ctags", "true", "sleep", "python", "python3", "py",
}


def looks_like_command(span: str) -> bool:
    """Whether a span in backticks is a command line (``pytest -q``, ``./x.sh``, ``FOO=1 make``), not a name,
    a path or code (``setup.py``, ``src/app.py``, ``except TypeError:``)."""
    text = (span or "").strip()
    if not text:
        return False
    script = parse(text)
    first = next(iter(script.commands()), None)
    if first is None or first.reserved:
        return False
    if not first.argv:
        return False  # `FOO=1` alone, or `<div className="x">`
    word = first.argv[0]
    if word.endswith(":"):
        return False  # an error message a program printed (`/usr/bin/python3: No module named pytest`)
    if word.startswith("./") or word.startswith(("/bin/", "/usr/bin/", "/usr/local/bin/", "~/")):
        return True
    if first.wrappers or first.assignments:
        return True
    if word == "export":
        return bool(first.args) and "=" in first.args[0]
    return word in KNOWN_PROGRAMS or is_python(word) or bool(re.match(r"^pip\d(?:\.\d+)?$", word))
