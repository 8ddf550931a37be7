"""What a tool call does: test, build, lint, install, edit, explore ...

Agents run shell commands (``Bash``, mini-swe-agent's bash blocks, Codex ``exec_command``)
and call file tools (``Edit``, ``Write``, ``apply_patch``). Outcome inference and both
distillers classify them the same way, through this module.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from enum import StrEnum

from pipeline.trajectory.model import Step


class Purpose(StrEnum):
    TEST = "test"
    BUILD = "build"
    LINT = "lint"
    INSTALL = "install"
    EDIT = "edit"
    RUN = "run"
    EXPLORE = "explore"
    VCS = "vcs"
    SUBMIT = "submit"
    OTHER = "other"


#: Purposes whose success says something about the project's health.
CHECKS = frozenset({Purpose.TEST, Purpose.BUILD, Purpose.LINT})

_FILE_TOOLS_EDIT = {"edit", "multiedit", "write", "notebookedit", "str_replace_editor", "apply_patch",
                    "replace", "write_file", "create", "edit_file", "str_replace_based_edit_tool",
                    "smart_edit", "patch"}  # Gemini CLI smart_edit, OpenCode patch
_FILE_TOOLS_READ = {"read", "glob", "grep", "ls", "view", "read_file", "list_directory", "search_file_content",
                    "glob_files", "find_file", "search_dir", "search_file", "open", "goto", "scroll_down",
                    "scroll_up", "find", "webfetch", "websearch",
                    # Gemini CLI, OpenCode and Codex read-only tools
                    "read_many_files", "grep_search", "google_web_search", "web_fetch", "list", "codesearch",
                    "web_search", "view_image", "list_mcp_resources", "read_mcp_resource"}
_SHELL_TOOLS = {"bash", "shell", "exec_command", "run_shell_command", "execute_bash", "local_shell_call",
                "run", "terminal", "cmd", "execute_command",
                "shell_command", "local_shell", "container.exec"}  # Codex shell tools across versions

_TEST = re.compile(
    r"(^|[\s/])(py\.?test|pytest|tox|nox|runtests\.py|unittest|jest|vitest|mocha|rspec|phpunit|ctest|"
    r"go\s+test|cargo\s+(nextest|test)|mvn\s+(-\S+\s+)*(test|verify)|gradlew?\s+(\S+\s+)*test|"
    r"(npm|pnpm|yarn|bun)\s+(run\s+)?test(:\S+)?|make\s+(\S+\s+)*(test|check)\b|manage\.py\s+test|"
    r"bin/test|playwright\s+test|deno\s+test|dotnet\s+test|swift\s+test|mix\s+test)(\s|$|[;:&|])")
_LINT = re.compile(
    r"(^|[\s/])(ruff|flake8|pylint|mypy|pyright|eslint|prettier\s+(--check|-c)|black\s+(--check|--diff)|"
    r"isort\s+(--check|-c)|golangci-lint|cargo\s+(clippy|fmt\s+--check)|shellcheck|stylelint|"
    r"(npm|pnpm|yarn|bun)\s+(run\s+)?(lint|typecheck|type-check|format:check)|tsc\s+(\S+\s+)*--noEmit|"
    r"pre-commit\s+run|biome\s+(check|lint)|rubocop|gofmt\s+-l|go\s+vet)(\s|$|[;:&|])")
_BUILD = re.compile(
    r"(^|[\s/])((npm|pnpm|yarn|bun)\s+(run\s+)?(build|compile)|tsc|cargo\s+(build|check)|go\s+build|"
    r"mvn\s+(\S+\s+)*(package|compile|install)|gradlew?\s+(\S+\s+)*(build|assemble)|make(\s|$)|cmake|"
    r"python3?\s+setup\.py\s+(build|develop|build_ext)|python3?\s+-m\s+build|docker\s+build|"
    r"dotnet\s+build|swift\s+build|next\s+build|vite\s+build|webpack)(\s|$|[;:&|])")
_INSTALL = re.compile(
    r"(^|[\s/])(pip3?\s+install|python3?\s+-m\s+pip\s+install|uv\s+(pip\s+install|sync|add)|poetry\s+(install|add)|"
    r"(npm|pnpm|yarn|bun)\s+(install|i|ci|add)|conda\s+install|mamba\s+install|apt(-get)?\s+install|"
    r"brew\s+install|cargo\s+(add|install)|go\s+(get|mod\s+(tidy|download))|gem\s+install|bundle\s+install|"
    r"pipx\s+install)(\s|$)")
_VCS = re.compile(r"^git\s+(add|commit|checkout|switch|branch|merge|rebase|push|pull|stash|reset|restore|cherry-pick|tag)\b")
_EXPLORE = re.compile(
    r"^(ls|find|grep|egrep|rg|ag|cat|head|tail|nl|wc|tree|pwd|which|file|stat|du|echo|printf|"
    r"git\s+(status|log|diff|show|blame|grep|ls-files|rev-parse)|sed\s+-n|awk|sort|uniq|jq|less|more|type|env|"
    r"python3?\s+(-V|--version)|pip3?\s+(show|list|freeze)|npm\s+(ls|list|view)|cd|realpath|dirname|basename|"
    r"xargs\s+(grep|cat|ls))\b")
_EDIT_SHELL = re.compile(r"^(sed\s+(-\S*i|--in-place)|perl\s+-\S*i|patch\b|git\s+apply\b|tee\b|touch\b|mkdir\b|"
                         r"mv\b|cp\b|rm\b|ed\b|truncate\b)")
_REDIRECT_TARGET = re.compile(r"(?<![0-9&<])>>?\s*([^\s;&|<>]+)")
_SUBMIT = re.compile(r"(COMPLETE_TASK_AND_SUBMIT|MINI_SWE_AGENT_FINAL_OUTPUT|^submit\b)")
_ENV_PREFIX = re.compile(r"^(\w+=\S*\s+)+")


@dataclass(frozen=True)
class Action:
    """A tool call, understood."""

    purpose: Purpose
    command: str | None
    paths: tuple[str, ...]


def first_line(command: str) -> str:
    """The command line itself, without a heredoc body."""
    return command.strip().split("\n", 1)[0].strip()


def split_shell(command: str) -> list[str]:
    """The first command line of ``command`` cut at ``&&``, ``||`` and ``;`` -- where the shell cuts it.

    Separators inside quotes, after a backslash, or inside ``$( )``, backticks or a ``( )``
    subshell are part of a word: ``python -c "import a; print(a)"`` and ``git commit -m "fix;
    tests"`` are one command each. The line ends at the first newline outside quotes (a heredoc
    body is not a command line); a quoted newline belongs to the command. An unclosed quote runs
    to the end, as one part.
    """
    parts: list[str] = []
    start = depth = i = 0
    quote = ""
    text = command.strip()
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\" and quote == '"':
                i += 1
            elif char == quote:
                quote = ""
        elif char == "\\":
            i += 1
        elif char in "'\"`":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")" and depth:
            depth -= 1
        elif char == "\n" and not depth:
            break
        elif not depth and text.startswith(("&&", "||"), i):
            parts.append(text[start:i])
            start = i = i + 2
            continue
        elif not depth and char == ";":
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:i])
    return [p.strip() for p in parts if p.strip()]


def segments(command: str) -> list[str]:
    """``cd x && pytest -q || true`` -> ``['pytest -q']``: the parts that do something (see :func:`split_shell`)."""
    parts = [_ENV_PREFIX.sub("", p) for p in split_shell(command)]
    useful = [p for p in parts if not re.match(r"^(cd|source|\.|export|set|true|false|sleep)\b", p)]
    return useful or parts


#: When segments disagree, the most telling purpose wins: ``sed -i ... && pytest`` is a test run.
_PRIORITY = (Purpose.TEST, Purpose.LINT, Purpose.BUILD, Purpose.INSTALL, Purpose.EDIT, Purpose.RUN,
             Purpose.VCS, Purpose.EXPLORE, Purpose.OTHER)
_WRITERS = re.compile(r"^(cat|echo|printf|tee)\b")
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")


def segment_purpose(segment: str) -> Purpose:
    """Classify one segment of a command line (no ``&&`` / ``;`` inside)."""
    head = segment.split("|", 1)[0].strip()
    if _WRITERS.match(head) and _writes_file(segment):
        return Purpose.EDIT
    if _EDIT_SHELL.match(head):
        return Purpose.EDIT
    if _EXPLORE.match(head):
        return Purpose.EXPLORE
    # Quoted words are a program's data (`bd create "... verify cargo test passes"`), unless a shell runs them.
    words = head if re.match(r"^(?:\S*/)?(?:bash|sh|zsh)\s+(?:-\w+\s+)*-c\b", head) else _QUOTED.sub("''", head)
    for purpose, pattern in ((Purpose.TEST, _TEST), (Purpose.LINT, _LINT), (Purpose.BUILD, _BUILD),
                             (Purpose.INSTALL, _INSTALL)):
        if pattern.search(words):
            return purpose
    if _VCS.match(head):
        return Purpose.VCS
    if re.match(r"^(python3?|node|ruby|go\s+run|bash|sh|deno\s+run|npx|\./)", head):
        return Purpose.RUN
    return Purpose.OTHER


def shell_purpose(command: str) -> Purpose:
    """Classify a shell command by its most telling segment."""
    if _SUBMIT.search(command):
        return Purpose.SUBMIT
    found = {segment_purpose(seg) for seg in segments(command)}
    return next((p for p in _PRIORITY if p in found), Purpose.OTHER)


def _writes_file(line: str) -> bool:
    return any(not t.startswith("/dev/") for t in _REDIRECT_TARGET.findall(first_line(line)))


def edited_paths(command: str) -> list[str]:
    """Files a shell command writes: redirection targets and the file operands of ``sed -i``."""
    line = first_line(command)
    paths = [t for t in _REDIRECT_TARGET.findall(line) if not t.startswith("/dev/")]
    for seg in segments(command):
        if re.match(r"^(sed|perl)\s", seg):
            # A multi-line sed script spans lines: read the whole command, not just the first line.
            text = command.strip() if seg == segments(command)[-1] and "\n" in command else seg
            try:
                words = shlex.split(text)
            except ValueError:
                continue
            words = words[: next((i for i, w in enumerate(words) if w in ("&&", "||", ";", "|")), len(words))]
            operands: list[str] = []
            script_given = False
            skip = False
            for word in words[1:]:
                if skip:
                    skip = False
                elif word in ("-e", "--expression", "-f", "--file"):
                    script_given = skip = True
                elif not word.startswith("-"):
                    operands.append(word)
            paths.extend(operands if script_given else operands[1:])
    return list(dict.fromkeys(p.strip("'\"") for p in paths if p and "\n" not in p))


# SWE-agent's insert / filemap and OpenHands' agentskills (IPython helpers) file tools.
_FILE_TOOLS_EDIT |= {"insert", "create_file", "edit_file_by_replace", "insert_content_at_line", "append_file",
                     "edit_file_by_line"}
_FILE_TOOLS_READ |= {"filemap", "open_file", "goto_line"}
#: One tool for viewing and editing; its first argument (``view``, ``str_replace`` ...) says which.
_MULTIPLEXED_EDITORS = {"str_replace_editor", "str_replace_based_edit_tool"}


def classify(step: Step) -> Action:
    """What a tool call step does. Non-call steps are OTHER."""
    tool = (step.tool or "").lower().split(".")[-1]
    if step.command:
        purpose = shell_purpose(step.command)
        paths = tuple(edited_paths(step.command)) if purpose is Purpose.EDIT else tuple(step.paths)
        return Action(purpose, step.command, paths or tuple(step.paths))
    if tool in _MULTIPLEXED_EDITORS and step.text.split(maxsplit=1)[:1] == ["view"]:
        return Action(Purpose.EXPLORE, None, tuple(step.paths))
    if tool in _FILE_TOOLS_EDIT or step.diff:
        return Action(Purpose.EDIT, None, tuple(step.paths))
    if tool in _FILE_TOOLS_READ:
        return Action(Purpose.EXPLORE, None, tuple(step.paths))
    if tool == "submit":
        return Action(Purpose.SUBMIT, None, ())
    return Action(Purpose.OTHER, None, tuple(step.paths))


def is_shell_tool(name: str | None) -> bool:
    return (name or "").lower() in _SHELL_TOOLS


_TAGS = re.compile(r"</?(tool_use_error|error|output|stderr|stdout)>")
ERROR_LINE = re.compile(
    r"^\s*(?:E\s+)?((?:[A-Za-z_][\w.]*)?(?:Error|Exception|Exit|Failure|Warning)\b[:\s].*|"
    r"(?:error|fatal|FAILED|ERROR)\b[:\s].*|.*(?:command not found|No such file or directory|"
    r"Permission denied|not recognized as|cannot find module|Cannot find module|ModuleNotFoundError).*)$",
    re.MULTILINE)


def error_signature(text: str) -> str | None:
    """The line of tool output that names the error (the last one that looks like it)."""
    text = _TAGS.sub("", text or "")
    matches = [_with_next_line(m, text) for m in ERROR_LINE.finditer(text)]
    matches = [m for m in matches if len(m) > 3]
    named = [m for m in matches if not _EXIT_CODE_LINE.match(m)]  # Claude Code's "Exit code 1" names no error
    matches = named or matches
    if not matches:
        return None
    return matches[-1][:240]


_EXIT_CODE_LINE = re.compile(r"^(E\s+)?Exit code \d+$")


def _with_next_line(match: re.Match[str], text: str) -> str:
    """``ERROR:`` alone on its line (OpenHands' editor) names the error on the next line."""
    line = match.group(1).strip()
    if not re.fullmatch(r"(?i)error:?", line):
        return line
    rest = text[match.end():].lstrip("\n").split("\n", 1)[0].strip()
    return f"{line} {rest}".strip()
