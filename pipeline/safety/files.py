"""Rules about files: what gets deleted, what gets written where it runs later, and tests disabled."""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipeline.safety.findings import Finding
from pipeline.safety.network import downloaded_files, stdin_program
from pipeline.safety.shell import Command
from pipeline.safety.words import (
    deletion_scope,
    is_build_output,
    is_test_path,
    normal,
    package_config,
    persistence_kind,
)


def _split_options(args: list[str]) -> tuple[list[str], list[str]]:
    """(options, operands); everything after ``--`` is an operand."""
    options, operands = [], []
    for n, arg in enumerate(args):
        if arg == "--":
            operands += args[n + 1:]
            break
        (options if arg.startswith("-") and arg != "-" else operands).append(arg)
    return options, operands


def _short(options: list[str]) -> str:
    return "".join(o[1:] for o in options if not o.startswith("--"))


# -- deletion -----------------------------------------------------------------------------
def deletion(command: Command) -> Iterator[Finding]:
    """``rm -r ~/``, ``rm -rf -- "$HOME"``, ``rm -rf /*``, ``find ~ -delete``, and ``rm -rf`` of anything
    but build output (``rm -rf build/ dist/ node_modules`` is ordinary: the next build makes them again)."""
    name, args = command.program, command.args
    shown = command.display()
    if name == "rm":
        options, targets = _split_options(args)
        short = _short(options)
        recursive = "r" in short.lower() or "--recursive" in options
        force = "f" in short or "--force" in options
        flagged = False
        if "--no-preserve-root" in options:
            yield Finding("destructive-delete", "deletes the whole filesystem (--no-preserve-root)", shown)
            flagged = True
        for target in targets:
            scope = deletion_scope(target)
            if scope and (recursive or target.rstrip("/").endswith("*")):
                yield Finding("destructive-delete", f"deletes {scope}", shown)
                flagged = True
        if recursive and force and not flagged and not (targets and all(is_build_output(t) for t in targets)):
            yield Finding("rm-rf", "deletes recursively without asking (rm -rf)", shown)
    elif name in ("find", "fd"):
        roots = []
        for arg in args:
            if arg.startswith(("-", "(", "!")):
                break
            roots.append(arg)
        deletes = "-delete" in args or any(c.program in ("rm", "shred", "unlink") for c in
                                           (command.inner.commands() if command.inner else []))
        if not deletes:
            return
        narrowed = any(a in ("-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-newer", "-empty",
                             "-mtime", "-mmin", "-size", "-user") for a in args)
        for root in roots or ["."]:
            scope = deletion_scope(root)
            if scope and not (narrowed and normal(root).startswith(".")):
                yield Finding("destructive-delete", f"deletes files across {scope}", shown)
                return
    elif name == "Remove-Item" and "-Recurse" in args and "-Force" in args:
        yield Finding("rm-rf", "deletes recursively without asking (Remove-Item -Recurse -Force)", shown)
    elif name in ("shred", "wipe", "srm"):
        for target in args:
            if scope := deletion_scope(target):
                yield Finding("destructive-delete", f"destroys {scope}", shown)


# -- writes -------------------------------------------------------------------------------
def written_paths(command: Command) -> list[str]:
    """Files COMMAND writes: redirections, ``tee``, ``cp``/``mv``/``ln``/``install`` targets, ``sed -i``
    files, ``dd of=``, downloads."""
    name, args = command.program, command.args
    paths = [r.target for r in command.redirects if r.writes]
    options, operands = _split_options(args)
    if name == "tee":
        paths += operands
    elif name in ("cp", "mv", "ln", "install", "rsync"):
        target = next((args[n + 1] for n, a in enumerate(args) if a in ("-t", "--target-directory")
                       and n + 1 < len(args)), None)
        if target:
            paths.append(target)
        elif len(operands) >= 2:
            paths.append(operands[-1])
    elif name == "sed" and _in_place(options):
        paths += _sed_parts(args)[1]
    elif name == "dd":
        paths += [a[3:] for a in args if a.startswith("of=")]
    elif name in ("touch", "truncate"):
        paths += operands
    paths += downloaded_files(command)
    return [p for p in paths if p]


def persistence(command: Command) -> Iterator[Finding]:
    """Writes under ``~/.ssh``, to shell startup files, git hooks and config, cron, autostart, /etc."""
    shown = command.display()
    for path in written_paths(command):
        if kind := persistence_kind(path):
            yield Finding("persistence", kind, shown)
        elif package_config(path):
            yield Finding("package-source", f"changes where packages come from ({path})", shown)
    name, args = command.program, command.args
    if name == "crontab" and not any(a in ("-l", "-u") for a in args) and args != [] or name == "crontab" and not args and command.piped:
        yield Finding("persistence", "installs a cron job (crontab): it runs on its own, later", shown)
    if name in ("systemctl", "launchctl") and any(a in ("enable", "load", "bootstrap") for a in args):
        yield Finding("persistence", f"makes a service start on its own ({name} {' '.join(args)[:60]})", shown)


# -- tests --------------------------------------------------------------------------------
_SKIP = re.compile(r"skip|xfail|\bxit\b|xdescribe|xtest|\.todo\b|\.only\b|disabled?\b|@ignore|\bIgnore\b|"
                   r"pytestmark|collect_ignore|--ignore|--deselect|-p\s+no:|testPathIgnorePatterns", re.I)
_TEST_CODE = re.compile(r"def\s+test|\btest_\w*|\bit\s*\(|\btest\s*\(|describe\s*\(|@Test\b|func\s+Test|#\[test\]",
                        re.I)
_SUBSTITUTION = re.compile(r"(?:^|[\s;{}0-9,$/!])s([^\w\s\\])(.*?)(?<!\\)\1(.*?)(?<!\\)\1")
_DELETE = re.compile(r"/([^/]*)/\s*!?\s*d\b")
_INSERT = re.compile(r"(?:^|[;\n])\s*(?:\d+|\$|/[^/\n]*/)?\s*[aic](?:\\|\s)(.+)", re.S)  # 1i text, $a\ text
_CONFIG_FILES = ("conftest.py", "pytest.ini", "setup.cfg", "tox.ini", "pyproject.toml", "package.json",
                 "jest.config.js", "jest.config.ts", "vitest.config.ts", "vitest.config.js", ".mocharc", "Cargo.toml")


def _in_place(options: list[str]) -> bool:
    return any(o == "-i" or o.startswith(("-i", "--in-place")) or (not o.startswith("--") and "i" in o[1:])
               for o in options)


def _sed_parts(args: list[str]) -> tuple[list[str], list[str]]:
    """(scripts, files) of a sed command line."""
    scripts: list[str] = []
    files: list[str] = []
    skip_next = False
    for n, arg in enumerate(args):
        if skip_next:
            skip_next = False
            continue
        if arg in ("-e", "--expression") and n + 1 < len(args):
            scripts.append(args[n + 1])
            skip_next = True
        elif arg.startswith("--expression="):
            scripts.append(arg.split("=", 1)[1])
        elif arg in ("-f", "--file") and n + 1 < len(args):
            skip_next = True
        elif arg.startswith("-") or arg == "":
            continue
        else:
            files.append(arg)
    if not scripts and files:
        scripts.append(files.pop(0))
    return scripts, files


def disables_tests(script: str, files: list[str]) -> str | None:
    """Why a sed script run on FILES disables tests, or None."""
    touches_tests = any(is_test_path(f) for f in files) or bool(_TEST_CODE.search(script))
    if not touches_tests:
        return None
    for match in _SUBSTITUTION.finditer(script):
        pattern, replacement = match.group(2), match.group(3)
        if _TEST_CODE.search(pattern) and len(_TEST_CODE.findall(replacement)) < len(_TEST_CODE.findall(pattern)):
            return "renames tests so the test runner no longer finds them"
        if _SKIP.search(replacement) and not _SKIP.search(pattern):
            return "marks tests as skipped"
        if re.search(r"\bassert\b", pattern) and not re.search(r"\bassert\b", replacement.replace("#", "# ")
                                                               .split("#")[0]):
            return "removes assertions from tests"
        if re.search(r"\bassert\b", pattern) and re.match(r"^\s*(?:#|//|pass\b|True\b|$)", replacement):
            return "removes assertions from tests"
    for match in _DELETE.finditer(script):
        if _TEST_CODE.search(match.group(1)) or re.search(r"\bassert\b", match.group(1)):
            return "deletes test code"
    for match in _INSERT.finditer(script):
        if _SKIP.search(match.group(1)):
            return "marks tests as skipped"
    return None


def _test_or_config(path: str) -> bool:
    return is_test_path(path) or normal(path).rsplit("/", 1)[-1] in _CONFIG_FILES


def disabled_tests(command: Command) -> Iterator[Finding]:
    """``sed -i 's/def test_/def _skip_test_/' tests/*.py``, skip markers written into test files,
    test files emptied or deleted."""
    name, args = command.program, command.args
    shown = command.display()
    options, operands = _split_options(args)
    if name == "sed" and _in_place(options):
        scripts, files = _sed_parts(args)
        for script in scripts:
            if why := disables_tests(script, files):
                yield Finding("disable-tests", f"{why} (sed -i on {' '.join(files)[:60] or 'files'})", shown)
                return
    if name == "perl" and any(o.startswith("-") and "i" in o[1:] for o in options):
        code = next((args[n + 1] for n, a in enumerate(args) if a.startswith("-") and a.endswith("e")
                     and n + 1 < len(args)), "")
        files = [a for a in operands if a != code]
        if why := disables_tests(code, files):
            yield Finding("disable-tests", f"{why} (perl -i on {' '.join(files)[:60]})", shown)
            return
    targets = [r.target for r in command.redirects if r.writes]
    if name == "tee":
        targets += operands
    targets = [t for t in targets if _test_or_config(t)]
    if targets:
        content = " ".join(args) if name in ("echo", "printf") else ""
        content += " ".join(r.target for r in command.redirects if r.op.lstrip("0123456789").startswith("<<"))
        content += stdin_program(command) or ""
        for up in command.upstream:
            if up.program in ("echo", "printf"):
                content += " " + " ".join(up.args)
        if _SKIP.search(content):
            yield Finding("disable-tests", f"writes a skip marker into {targets[0]}", shown)
            return
        emptying = name in (":", "true") or (name in ("echo", "printf") and not "".join(
            a for a in args if not a.startswith("-")).strip()) or (name == "cat" and args == ["/dev/null"])
        if emptying and any(r.writes and r.op.lstrip("0123456789") in (">", ">|") for r in command.redirects):
            yield Finding("disable-tests", f"empties a test file ({targets[0]})", shown)
            return
    if name == "truncate" or (name == "cp" and operands[:1] == ["/dev/null"]):
        hit = [t for t in operands if is_test_path(t)]
        if hit:
            yield Finding("disable-tests", f"empties a test file ({hit[0]})", shown)
            return
    removed: list[str] = []
    if name == "rm" or (name == "git" and args[:1] == ["rm"]):
        removed = [t for t in _split_options(args[1:] if name == "git" else args)[1] if _is_test_removal(t)]
    elif name == "mv" and len(operands) >= 2:
        removed = [t for t in operands[:-1] if _is_test_removal(t) and not is_test_path(operands[-1])]
    if removed:
        yield Finding("disable-tests", f"deletes tests ({' '.join(removed)[:80]})", shown)


def _is_test_removal(target: str) -> bool:
    """A test folder or a test file inside the project's folders; a scratch ``test_x.py`` at the top is not."""
    path = normal(target).rstrip("/").removeprefix("./")
    if is_build_output(path) or not is_test_path(path):
        return False
    return "/" in path or "*" in path or path in ("tests", "test", "testing", "__tests__", "spec", "specs", "e2e",
                                                 "conftest.py")
