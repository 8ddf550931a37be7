"""Prompts a checkout defines: the text of its custom commands is the checkout's words, not the person's.

An agent records a custom command the person ran (``/fix``) as the prompt the command's file holds --
Gemini CLI and Qwen Code from ``.gemini/commands/fix.toml`` and ``.qwen/commands``, others from their own
folders -- so a checkout's file can put any words in a user turn. A user turn whose text holds a fixed
fragment of such a file (the parts between its ``{{args}}``, ``$ARGUMENTS``, ``!{...}`` and ``@{...}``
placeholders) is the checkout's: a brief never quotes it as the person's. Read through ``confined`` (regular
files inside the checkout, bounded), at most ``MAX_FILES`` of them.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

from pipeline import confined, spawn

#: Where agents find a project's own commands (a folder of the checkout).
FOLDERS = (".gemini/commands", ".qwen/commands", ".claude/commands", ".codex/prompts", ".github/prompts",
           ".cursor/commands", ".kimi/commands", ".opencode/command", ".continue/prompts", ".clinerules/workflows")
#: Agents that record a custom command the person ran as the command's expanded prompt, and where a checkout
#: defines them: a session of one of these in a checkout that defines any quotes none of its user turns
#: (``@{file}``, ``!{cmd}`` and short fragments leave no fixed text to recognise the prompt by).
EXPANDING = {"gemini-cli": (".gemini/commands", ".gemini/extensions"),
             "qwen-code": (".qwen/commands", ".qwen/extensions"),
             # /skill:<name> sends the whole SKILL.md as a plain user message (kimisoul.py _make_skill_runner), from
             # the project's skill folders it reads (skill/__init__.py get_project_skills_dir_candidates)
             "kimi-cli": (".kimi/skills", ".agents/skills", ".claude/skills", ".codex/skills", ".agents/hooks")}
#: Where a checkout configures MCP servers for those agents: an MCP prompt the person runs is recorded as its text
#: (Gemini CLI's McpPromptLoader submits it as the user's message), so a server other than skillmill's counts too.
MCP_SETTINGS = {"gemini-cli": ".gemini/settings.json", "qwen-code": ".qwen/settings.json"}
MAX_FILES = 200
MAX_BYTES = 64 * 1024
MIN_FRAGMENT = 16  # characters: shorter fixed text ("Fix {{args}}") names nothing a person would not type
_PLACEHOLDER = re.compile(r"\{\{\s*args\s*\}\}|\$ARGUMENTS|\$\d+|![{][^}]*[}]|@[{][^}]*[}]|\{\{[^}]*\}\}")
_FRONTMATTER = re.compile(r"\A---\s*\n.*?\n---\s*\n", re.S)


def fragments(root: Path) -> list[str]:
    """The fixed fragments of the prompts the checkout at ``root`` defines (whitespace made single spaces)."""
    found: list[str] = []
    files = 0
    for folder in FOLDERS:
        base = root / folder
        if not base.is_dir() or base.is_symlink():
            continue
        for here, _dirs, names in os.walk(base, followlinks=False):
            for name in sorted(names):
                if files >= MAX_FILES:
                    return found
                if not name.endswith((".toml", ".md")):
                    continue
                files += 1
                text = confined.read_text(root, Path(here, name).relative_to(root), MAX_BYTES)
                found += _fixed(_prompt(name, text)) if text else []
    return found


def defines_commands(root: Path, agent: str) -> bool:
    """True when the checkout at ``root`` defines custom commands for ``agent``, one that records their expanded
    prompts as the person's message (any entry in its folders counts: a link, a large file, one of many)."""
    if agent in MCP_SETTINGS and _settings_speak(root, MCP_SETTINGS[agent]):
        return True
    for folder in EXPANDING.get(agent, ()):
        path = root / folder
        if not os.path.lexists(path):
            continue
        if path.is_symlink() or not path.is_dir():
            return True  # a link or a file where the folder belongs: the agent may well follow it
        with os.scandir(path) as entries:
            if next(entries, None) is not None:
                return True
    return False


def _settings_speak(root: Path, settings: str) -> bool:
    """True when the checkout's settings file declares an MCP server or a hook that is not skillmill's own: an MCP
    prompt the person runs is recorded as its text, a BeforeAgent hook's reply joins the person's message (Gemini
    CLI's ``<hook_context>``). A file that is there but cannot be read as settings counts: fail closed."""
    import json

    if not os.path.lexists(root / settings):
        return False
    text = confined.read_text(root, settings, MAX_BYTES)
    if text == "":
        return False  # an empty settings file declares nothing
    try:
        data = json.loads(text) if text else None
    except ValueError:
        return True
    if not isinstance(data, dict):
        return True
    return _other_mcp_servers(data.get("mcpServers")) or _other_hooks(data.get("hooks"))


def _other_mcp_servers(servers: object) -> bool:
    if servers is None:
        return False
    return not isinstance(servers, dict) or any(not _ours(entry) for entry in servers.values())


def _other_hooks(hooks: object) -> bool:
    import shlex

    if not hooks:
        return False

    def commands(value: object) -> list[object]:
        if isinstance(value, dict):
            return [value.get("command")] if "command" in value else [c for v in value.values() for c in commands(v)]
        return [c for v in value for c in commands(v)] if isinstance(value, list) else []

    found = commands(hooks)
    if not found:
        return not isinstance(hooks, dict) or any(hooks.values())
    for command in found:
        try:
            words = shlex.split(command) if isinstance(command, str) else []
        except ValueError:
            return True
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
            words = words[1:]
        if len(words) < 3 or words[-2] != "hook" or not spawn.runs_skillmill(words[:-2]):
            return True
    return False


def _ours(entry: object) -> bool:
    """skillmill's MCP server as ``install`` writes it: ``skillmill mcp`` or ``python [-P] -m pipeline mcp``."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    args = entry.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args) or args[-1:] != ["mcp"]:
        return False
    return spawn.runs_skillmill([entry["command"], *args[:-1]])


def is_checkouts(text: str, known: list[str]) -> bool:
    """True when ``text`` holds a fixed fragment of one of the checkout's prompts."""
    flat = " ".join(str(text).split())
    return any(fragment in flat for fragment in known)


def _prompt(name: str, text: str) -> str:
    if name.endswith(".toml"):
        try:
            prompt = tomllib.loads(text).get("prompt")
        except (tomllib.TOMLDecodeError, ValueError):
            return ""
        return prompt if isinstance(prompt, str) else ""
    return _FRONTMATTER.sub("", text)


def _fixed(prompt: str) -> list[str]:
    parts = (" ".join(part.split()) for part in _PLACEHOLDER.split(prompt))
    return [part for part in parts if len(part) >= MIN_FRAGMENT]


def folders(where: str | Path, root: Path, most: int = 32) -> list[Path]:
    """The folders from ``where`` (the session's working folder) up to the checkout's ``root``: an agent started in
    a subfolder of a monorepo loads that folder's commands and settings (Qwen Code's FileCommandLoader and
    storage, Gemini CLI's project folder), not only the root's."""
    found: list[Path] = []
    here = Path(where)
    try:
        here.relative_to(root)
    except ValueError:
        return [root]
    while len(found) < most:
        found.append(here)
        if here == root or here.parent == here:
            break
        here = here.parent
    return found if found[-1] == root else [*found, root]


def fragments_between(where: str | Path, root: Path) -> list[str]:
    """``fragments`` of every folder from ``where`` up to ``root``."""
    return [f for folder in folders(where, root) for f in fragments(folder)]


def defines_commands_between(where: str | Path, root: Path, agent: str) -> bool:
    """``defines_commands`` for any folder from ``where`` up to ``root``."""
    return any(defines_commands(folder, agent) for folder in folders(where, root))
