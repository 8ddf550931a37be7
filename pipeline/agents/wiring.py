"""Where each agent that loads Agent Skills looks for them, for hooks and for MCP servers.

``install``, ``export`` and ``setup`` read this table; ``setup`` also uses it to find the agents
present on this machine (one of their folders exists in the home folder, or one of their executables
is on PATH).
Paths are relative to the home folder (user-wide) or to the project (``--project DIR``); Linux and
macOS share them unless the row says otherwise. Every row is from the agent's own documentation:

| agent | skills (user / project) | hooks | MCP server (user / project, key) |
|---|---|---|---|
| claude-code | ~/.claude/skills / .claude/skills | .claude/settings.json: SessionStart, UserPromptSubmit, Stop, SessionEnd | ~/.claude.json / .mcp.json, ``mcpServers`` |
| codex | ~/.agents/skills / .agents/skills | .codex/hooks.json: SessionStart, UserPromptSubmit, Stop | .codex/config.toml, ``[mcp_servers.NAME]`` |
| gemini | ~/.gemini/skills / .gemini/skills | .gemini/settings.json: SessionStart, BeforeAgent, AfterAgent, SessionEnd | .gemini/settings.json, ``mcpServers`` |
| opencode | ~/.config/opencode/skills / .opencode/skills [1] | none [2] | ~/.config/opencode/opencode.json / opencode.json, ``mcp`` (type local, command array) [3] |
| cursor | ~/.cursor/skills / .cursor/skills [4] | not wired [5] | ~/.cursor/mcp.json / .cursor/mcp.json, ``mcpServers`` [6] |
| copilot | ~/.copilot/skills / .github/skills [7] | not wired [8] | ~/.copilot/mcp-config.json (type local, tools) / .mcp.json, ``mcpServers`` [9] |
| vscode | ~/.copilot/skills / .github/skills [7] | not wired [8] | user profile mcp.json [10] / .vscode/mcp.json, ``servers`` (type stdio) [11] |
| qwen | ~/.qwen/skills / .qwen/skills [12] | .qwen/settings.json: SessionStart, UserPromptSubmit, Stop, SessionEnd [13] | ~/.qwen/settings.json / .qwen/settings.json, ``mcpServers`` [14] |
| kimi | ~/.kimi/skills / none documented [15] | ~/.kimi/config.toml ``[[hooks]]``: SessionStart, UserPromptSubmit, Stop, SessionEnd [23] | ~/.kimi/mcp.json, ``mcpServers``; no project file [16] |
| goose | ~/.agents/skills / .agents/skills [17] | not wired [18] | ~/.config/goose/config.yaml, ``extensions`` (type stdio, cmd, args) [19] |
| amp | ~/.config/agents/skills / .agents/skills [20] | none documented [21] | ~/.config/amp/settings.json / .amp/settings.json, ``amp.mcpServers`` [22] |

Sources (the agents' docs and source, as stored in 2026-12):

1. opencode.ai/docs/skills: ``.opencode/skills/<name>/SKILL.md``, ``~/.config/opencode/skills/<name>/SKILL.md``
   (it also reads .claude/skills and .agents/skills).
2. OpenCode has no command hooks; its plugins are JavaScript modules.
3. opencode.ai/docs/mcp-servers and config: ``{"mcp": {NAME: {"type": "local", "command": [...], "environment": {...},
   "enabled": true}}}`` in opencode.json(c), project or ``~/.config/opencode/``. An existing ``opencode.jsonc``
   (JSON with comments) is not rewritten: the plan says what to add by hand.
4. cursor.com/docs/context/skills: ``.cursor/skills`` and ``~/.cursor/skills`` (also .agents/skills, .claude/skills).
5. Cursor's ``hooks.json`` events (sessionStart, beforeSubmitPrompt) answer in Cursor's own JSON shape, which
   ``skillmill hook`` does not speak (it answers Claude Code, Codex and Gemini CLI).
6. cursor.com/docs/mcp: ``{"mcpServers": {NAME: {"command", "args", "env"}}}``; Windows ``%USERPROFILE%\\.cursor``.
7. docs.github.com, "Adding agent skills for GitHub Copilot CLI": project ``.github/skills`` (or .claude/skills,
   .agents/skills), personal ``~/.copilot/skills``; the same skills serve agent mode in VS Code.
8. docs.github.com "Hooks configuration" (Copilot CLI, ``.github/hooks/*.json``): the session-start hook's
   "Output: Ignored (no return value processed)", and the Copilot SDK lists session start and prompt submitted
   as observation only: a hook cannot add skills to the context, so none is wired.
9. docs.github.com "Adding MCP servers for GitHub Copilot CLI" and code.visualstudio.com "MCP configuration
   reference": ``~/.copilot/mcp-config.json`` (``$COPILOT_HOME``), ``{"mcpServers": {NAME: {"type": "local",
   "command", "args", "env", "tools": ["*"]}}}``; the project's portable file is ``.mcp.json`` at the root, the
   same file (and entry) as Claude Code's.
10. code.visualstudio.com "MCP configuration reference": ``mcp.json`` in the user profile: Linux
    ``~/.config/Code/User/mcp.json``, macOS ``~/Library/Application Support/Code/User/mcp.json``, Windows
    ``%APPDATA%\\Code\\User\\mcp.json``.
11. The same page: ``{"servers": {NAME: {"type": "stdio", "command", "args", "env"}}}`` in ``.vscode/mcp.json``.
    VS Code allows comments there; a file with comments is left alone (the plan says what to add by hand).
12. qwenlm.github.io/qwen-code-docs "Agent Skills": ``~/.qwen/skills/``, ``.qwen/skills/``.
13. QwenLM/qwen-code ``docs/users/features/hooks.md``: ``hooks`` in settings.json take Claude Code's shape (input
    ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``; UserPromptSubmit adds ``prompt`` and, for a
    prompt typed in the TUI, ``submitted_prompt``; output ``hookSpecificOutput.additionalContext``), a command
    hook's ``timeout`` in milliseconds. Wired by ``install`` (pipeline/agents/install.py), not by this table.
14. qwen-code-docs "Connect Qwen Code to tools via MCP": ``mcpServers`` in ``~/.qwen/settings.json`` (user) or
    ``.qwen/settings.json`` (project), ``{"command", "args", "env"}``. (Qwen Code 1.x writes new project servers
    to ``.mcp.json`` and still reads ``.qwen/settings.json``, the file both versions read.)
15. MoonshotAI/kimi-cli ``docs/en/customization/skills.md``: ``~/.kimi/skills`` (and ~/.claude/skills); it names no
    project folder, so ``export --agent kimi --project`` is refused.
16. moonshotai.github.io/kimi-cli "Model Context Protocol": ``~/.kimi/mcp.json``, ``{"mcpServers": {NAME:
    {"command", "args", "env"}}}``; project servers only through ``--mcp-config-file``.
17. block/goose ``documentation/docs/guides/context-engineering/using-skills.md``: ``~/.agents/skills/`` (global) and
    ``.agents/skills/`` (project) are the recommended folders; .goose/skills, .claude/skills and the platform config
    folder are still read for compatibility.
18. Goose hooks come inside plugins (``hooks/hooks.json``), with Goose's own events; not wired.
19. block.github.io/goose "Configuration Files": ``~/.config/goose/config.yaml`` (Windows
    ``%APPDATA%\\Block\\goose\\config\\config.yaml``); an extension is ``extensions: NAME: {enabled, type: stdio,
    name, cmd, args, envs, timeout}`` (``ExtensionEntry`` in block/goose flattens the config). Goose reads no
    project config file. The YAML is edited as text and parsed again before it is written; a file that would not
    parse back to the same settings plus ours is left alone (the plan says what to add by hand).
20. Amp's own manual is not in the stored copies; syllago.dev's Amp provider page and decodeclaude.com's reading
    of Amp agree on ``.agents/skills`` in the workspace and ``~/.config/agents/skills`` for the user (Amp also
    reads ~/.config/amp/skills and .claude/skills).
21. Amp documents no command hooks.
22. ``amp.mcpServers`` in ``~/.config/amp/settings.json`` (Windows ``%USERPROFILE%\\.config\\amp\\settings.json``) or
    the workspace's ``.amp/settings.json``, whose servers each person approves once (``amp mcp approve NAME``):
    developersdigest.tech's Amp config reference (from 8 official pages) and the setup guides of several MCP
    servers (anchorbrowser, fetch-url-mcp) agree.
23. MoonshotAI/kimi-cli ``docs/en/customization/hooks.md``: hooks (beta) are ``[[hooks]]`` tables in
    ``~/.kimi/config.toml`` (``event``, ``command``, ``timeout`` in seconds; input ``session_id``, ``cwd``,
    ``hook_event_name``, ``prompt``; a JSON answer's ``hookSpecificOutput.additionalContext`` becomes a system
    reminder). The input names no transcript: the hook finds it where Kimi CLI writes it
    (``<share>/sessions/<md5(cwd)>/<session_id>/context.jsonl``). Wired by ``install``, not by this table.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import UsageError


@dataclass(frozen=True)
class McpFile:
    """One file an agent reads MCP servers from: its path (relative to the home folder or the project), its
    format and key, and the shape of one stdio entry (``claude``: type stdio, command, args; ``plain``: command,
    args; ``copilot``: type local, tools; ``opencode``: type local, a command array; ``vscode``: type stdio
    under ``servers``; ``goose``: an extension in YAML)."""

    path: str
    key: str = "mcpServers"
    shape: str = "plain"
    fmt: str = "json"


@dataclass(frozen=True)
class Agent:
    name: str
    title: str
    skills_user: str | None
    skills_project: str | None
    mcp_user: McpFile | None = None
    mcp_project: McpFile | None = None
    #: Folders (under home) whose presence means the agent is used here, and its executables.
    homes: tuple[str, ...] = ()
    executables: tuple[str, ...] = ()
    #: What install leaves out for this agent, and why (shown in its plan; the second only with --project).
    notes: tuple[str, ...] = field(default_factory=tuple)
    project_notes: tuple[str, ...] = field(default_factory=tuple)
    #: The agent its session files name (the formats' ``agent``), where it differs from ``name``: its hook's
    #: transcript is read only as one of those formats.
    sessions: str | None = None

    @property
    def session_agent(self) -> str:
        return self.sessions or self.name


def _vscode_user() -> str:
    """Where VS Code keeps the user profile's ``mcp.json``, relative to home (Windows: under %APPDATA%)."""
    if sys.platform == "darwin":
        return "Library/Application Support/Code/User/mcp.json"
    if sys.platform == "win32" and os.environ.get("APPDATA"):
        return str(Path(os.environ["APPDATA"]) / "Code" / "User" / "mcp.json")
    return ".config/Code/User/mcp.json"


def _goose_config() -> str:
    if sys.platform == "win32" and os.environ.get("APPDATA"):
        return str(Path(os.environ["APPDATA"]) / "Block" / "goose" / "config" / "config.yaml")
    return ".config/goose/config.yaml"


NO_HOOK = "no hook: {why}; skills reach {title} through the MCP server and its skills folder (`skillmill export`)."


def agents() -> dict[str, Agent]:
    """Every agent skillmill wires, by name (computed per call: a few paths depend on the platform)."""
    table = [
        Agent("claude-code", "Claude Code", ".claude/skills", ".claude/skills", homes=(".claude", ".claude.json"),
              executables=("claude",)),
        Agent("codex", "Codex", ".agents/skills", ".agents/skills", homes=(".codex",), executables=("codex",)),
        Agent("gemini", "Gemini CLI", ".gemini/skills", ".gemini/skills", homes=(".gemini",),
              executables=("gemini",), sessions="gemini-cli"),
        Agent("opencode", "OpenCode", ".config/opencode/skills", ".opencode/skills",
              McpFile(".config/opencode/opencode.json", "mcp", "opencode"), McpFile("opencode.json", "mcp", "opencode"),
              homes=(".config/opencode", ".local/share/opencode"), executables=("opencode",),
              notes=(NO_HOOK.format(why="OpenCode runs no command hooks (its plugins are JavaScript modules)",
                                    title="OpenCode"),)),
        Agent("cursor", "Cursor", ".cursor/skills", ".cursor/skills", McpFile(".cursor/mcp.json"),
              McpFile(".cursor/mcp.json"), homes=(".cursor",), executables=("cursor", "cursor-agent"),
              notes=(NO_HOOK.format(why="Cursor's hooks.json answers in its own shape, which `skillmill hook` does "
                                        "not speak yet", title="Cursor"),)),
        Agent("copilot", "GitHub Copilot CLI", ".copilot/skills", ".github/skills",
              McpFile(".copilot/mcp-config.json", shape="copilot"), McpFile(".mcp.json", shape="claude"),
              homes=(".copilot",), executables=("copilot",),
              notes=(NO_HOOK.format(why="Copilot's session-start and prompt hooks are observation only (their output "
                                        "adds no context)", title="Copilot"),)),
        Agent("vscode", "VS Code (Copilot agent mode)", ".copilot/skills", ".github/skills",
              McpFile(_vscode_user(), "servers", "vscode"), McpFile(".vscode/mcp.json", "servers", "vscode"),
              homes=(str(Path(_vscode_user()).parent),), executables=("code",),
              notes=(NO_HOOK.format(why="VS Code documents no command hook that adds context", title="VS Code"),)),
        Agent("qwen", "Qwen Code", ".qwen/skills", ".qwen/skills", McpFile(".qwen/settings.json"),
              McpFile(".qwen/settings.json"), homes=(".qwen",), executables=("qwen",), sessions="qwen-code"),
        Agent("kimi", "Kimi CLI", ".kimi/skills", None, McpFile(".kimi/mcp.json"), None, homes=(".kimi",),
              executables=("kimi",), sessions="kimi-cli",
              project_notes=("Kimi CLI reads MCP servers and skills from the home folder only: nothing is written in a "
                     "project (use user-wide setup, or `kimi --mcp-config-file`).",)),
        Agent("goose", "Goose", ".agents/skills", ".agents/skills",
              McpFile(_goose_config(), "extensions", "goose", "yaml"), None, homes=(".config/goose",),
              executables=("goose",),
              notes=(NO_HOOK.format(why="Goose hooks come inside plugins, with Goose's own events", title="Goose"),),
              project_notes=("Goose reads extensions from its user config only: nothing is written in a project.",)),
        Agent("amp", "Amp", ".config/agents/skills", ".agents/skills", McpFile(".config/amp/settings.json",
              "amp.mcpServers"), McpFile(".amp/settings.json", "amp.mcpServers"), homes=(".config/amp",),
              executables=("amp",),
              notes=(NO_HOOK.format(why="Amp documents no command hooks", title="Amp"),)),
    ]
    return {a.name: a for a in table}


NAMES = tuple(agents())


def get(name: str) -> Agent:
    found = agents().get(name)
    if found is None:
        raise UsageError(f"unknown agent {name!r}", hint=f"use one of: {', '.join(NAMES)}")
    return found


def present() -> list[str]:
    """The agents used on this machine: one of their folders is in the home folder, or one of their
    executables is on PATH (in the table's order). A project's folders (``.github``, ``.agents``) say
    nothing about which agents a person runs, so they are not looked at."""
    home = Path.home()
    return [a.name for a in agents().values()
            if any((home / h).exists() for h in a.homes) or any(shutil.which(e) for e in a.executables)]
