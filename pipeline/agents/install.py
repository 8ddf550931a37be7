"""``skillmill install``: register the task-start hook and the MCP server in an agent's settings.

A plan lists each file and the entries skillmill adds or updates there; applying it merges
those entries into the existing file (JSON or TOML) and keeps everything else the user has,
byte for byte where the format allows. Running it twice changes nothing the second time.

Where each agent reads them (user-wide, or with ``--project DIR``):

| agent       | hook                                   | MCP server                              |
|-------------|----------------------------------------|-----------------------------------------|
| claude-code | ~/.claude/settings.json, DIR/.claude/settings.json | ~/.claude.json, DIR/.mcp.json |
| codex       | ~/.codex/hooks.json, DIR/.codex/hooks.json         | ~/.codex/config.toml, DIR/.codex/config.toml |
| gemini      | ~/.gemini/settings.json, DIR/.gemini/settings.json (hooks and mcpServers) |  |

The other agents that load Agent Skills (OpenCode, Cursor, Copilot CLI, VS Code, Qwen Code, Kimi CLI,
Goose, Amp) get the MCP server in the file and under the key their docs name (the table and its sources
are in :mod:`pipeline.agents.wiring`); where an agent has no hook ``skillmill hook`` can answer, the plan
says so in its notes rather than guess, and where a file cannot be edited safely (JSON with comments,
YAML that would not parse back the same) the plan gives the snippet to add by hand.

A project's files are committed and run on teammates' machines, so ``--project`` writes the bare
command ``skillmill`` (found on each machine's PATH: ``pipx install``, ``uv tool install`` or
``pip install --user``) and none of the installer's own paths or ``SKILLMILL_*`` variables. The
user-wide files stay on this machine, so they name this installation's executable by absolute path.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import shutil
import tomllib
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline import confined, settings, spawn
from pipeline.agents import wiring
from pipeline.errors import UsageError

SERVER = "skillmill"
HOOK_TIMEOUT_S = 10  # the agent's own limit; ours (`skillmill hook --timeout`) is shorter
#: Events that get the hook, per agent.
#: SessionStart and the prompt event get skills (and handoffs); the end events spool the session for the
#: background capture (Claude Code and Qwen Code: Stop after each turn, SessionEnd; Codex: Stop; Gemini CLI:
#: AfterAgent, SessionEnd). Gemini CLI and Qwen Code take a command hook's timeout in milliseconds.
HOOK_EVENTS = {"claude-code": ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"),
               "codex": ("SessionStart", "UserPromptSubmit", "Stop"),
               "gemini": ("SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd"),
               "qwen": ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"),
               "kimi": ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")}


#: What a project's committed files run: resolved from PATH on whichever machine runs the agent.
PORTABLE = ["skillmill"]


def executable(portable: bool = False) -> list[str]:
    """How the agent should start skillmill: ``skillmill`` from PATH for a project's (shared) files,
    this installation's own executable by absolute path for the user's own."""
    if portable:
        return list(PORTABLE)
    found = shutil.which("skillmill")
    if found:
        return [str(Path(found).absolute())]
    return spawn.argv("-m", "pipeline")  # -P: the agent runs it in its own folder, whose files must not import


def _env(portable: bool = False) -> dict[str, str]:
    """Environment the agent must pass so skillmill finds the same home and library (none in a project's
    files: a teammate's skillmill uses their own home)."""
    if portable:
        return {}
    return {k: os.environ[k] for k in (settings.ENV_HOME, settings.ENV_LIBRARY) if os.environ.get(k)}


def hook_command(agent: str, portable: bool = False) -> str:
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in _env(portable).items())
    cmd = " ".join(shlex.quote(p) for p in [*executable(portable), "hook", agent])
    return f"{env} {cmd}".strip()


def path_notes() -> list[str]:
    """What to tell the installer of a project whose files run ``skillmill`` from PATH."""
    found = shutil.which("skillmill")
    if found is None:
        return ["`skillmill` is not on PATH here: the agent will not find it. Install it as a tool from a "
                "checkout or its git URL (`pipx install SRC`, `uv tool install SRC` or `pip install --user SRC`; "
                "skillmill is not on PyPI), and so must each teammate."]
    if _in_virtualenv(Path(found)):
        return [f"`skillmill` on PATH is {found}, inside a virtual environment: the agent finds it only when "
                "started from a shell where that environment is active. Teammates (and you) are better served "
                "by `pipx install`, `uv tool install` or `pip install --user`."]
    return []


def _in_virtualenv(exe: Path) -> bool:
    return (exe.absolute().parent.parent / "pyvenv.cfg").is_file()


def _is_ours(command: str) -> bool:
    """Whether ``command`` is a hook command ``install`` wrote (``hook_command``): ``[VAR=value ...] <skillmill>
    hook AGENT`` or ``[VAR=value ...] <python> [-P] -m pipeline hook AGENT`` -- nothing else is replaced, however
    much it says "hook" or "skillmill" (``./ci-pipeline hook notify``, ``echo skillmill hook ran``)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        words = words[1:]
    if len(words) < 3 or words[-2] != "hook" or words[-1] not in HOOK_EVENTS:
        return False
    return spawn.runs_skillmill(words[:-2])


#: An agent's settings file larger than this is not one skillmill rewrites.
MAX_SETTINGS_BYTES = 8 << 20


@dataclass
class Change:
    file: Path
    what: str
    before: str | None
    after: str
    #: The folder the file must stay inside (the project, or the home folder): no link leading out is followed.
    root: Path = field(default_factory=Path.home)

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass
class Plan:
    agent: str
    scope: str
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        lines = [f"Plan: connect {self.agent} to skillmill ({self.scope})"]
        for change in self.changes:
            state = "create" if change.before is None else ("update" if change.changed else "unchanged")
            lines.append(f"  {state:<9} {change.file}: {change.what}")
        if not self.changes:
            lines.append("  nothing to change")
        lines += [f"Note: {note}" for note in self.notes]
        return "\n".join(lines)

    def contract(self, applied: bool) -> dict[str, Any]:
        return {"agent": self.agent, "scope": self.scope, "applied": applied, "notes": self.notes,
                "changes": [{"file": str(c.file), "what": c.what, "action": "create" if c.before is None else
                             ("update" if c.changed else "unchanged")} for c in self.changes]}

    def apply(self) -> None:
        for change in self.changes:
            if change.changed:
                if change.before is not None:
                    backup = change.file.with_name(change.file.name + ".skillmill-backup")
                    confined.write(change.root, backup, change.before, mode=0o600)
                confined.write(change.root, change.file, change.after, mode=0o600)
        self.changes = [c for c in self.changes if c.changed]


# -- JSON settings ------------------------------------------------------------------------------
#: Files an earlier plan of the same ``setup`` already changes, with their text after that change: the next
#: agent's plan edits that text, so two agents sharing a file (``.mcp.json``) make one change, not two.
PENDING: ContextVar[dict[Path, str] | None] = ContextVar("skillmill_install_pending", default=None)


def _read_existing(root: Path, file: Path) -> str | None:
    """The settings file's text, None when there is none; refused when it cannot be read as one (a FIFO,
    a device, a huge file, a link out of ``root``): skillmill will not replace what it could not read."""
    pending = PENDING.get()
    if pending is not None and file in pending:
        return pending[file]
    real = confined.resolve(root, file)
    if not os.path.lexists(real):
        return None
    data = confined.read(root, file, MAX_SETTINGS_BYTES + 1)
    if data is None or len(data) > MAX_SETTINGS_BYTES:
        raise UsageError(f"{file} is not a regular file of at most {MAX_SETTINGS_BYTES >> 20} MB; skillmill will not "
                         "rewrite it", hint="replace it with the agent's settings file, then run install again")
    return data.decode("utf-8", errors="replace")


def _read_json(root: Path, file: Path) -> tuple[str | None, dict[str, Any]]:
    text = _read_existing(root, file)
    if text is None:
        return None, {}
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise UsageError(f"{file} is not valid JSON ({exc}); skillmill will not rewrite it",
                         hint="fix the file, then run `skillmill install` again") from exc
    if not isinstance(data, dict):
        raise UsageError(f"{file} does not hold a JSON object", hint="fix the file, then run install again")
    return text, data


def _dump_json(data: dict[str, Any]) -> str:
    """The settings as JSON again; a number JSON cannot hold (``1e400`` read as infinity) is refused, never written
    back as ``Infinity``."""
    try:
        return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError as exc:
        raise UsageError(f"the agent's settings hold a number JSON cannot write back ({exc}); skillmill will not "
                         "rewrite them", hint="add the entries by hand (the README's install section shows them)") from exc


def _with_hooks(data: dict[str, Any], agent: str, events: tuple[str, ...], gemini: bool = False,
                portable: bool = False) -> dict[str, Any]:
    """Add (or update) our hook under each event; other hooks stay as they are."""
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError(f"'hooks' in the agent's settings is a {type(hooks).__name__}, not an object; skillmill "
                         "will not rewrite it", hint="fix the file (or add the hook by hand), then run install again")
    command = hook_command(agent, portable)
    for event in events:
        if not isinstance(hooks.get(event, []), list):  # a string, an object, null: not a list skillmill can add to
            raise UsageError(f"'hooks.{event}' in the agent's settings is not a list; skillmill will not rewrite it",
                             hint="fix the file (or add the hook by hand), then run install again")
        groups = [g for g in hooks.get(event, []) if isinstance(g, dict)]
        others = [g for g in hooks.get(event, []) if not isinstance(g, dict)]
        ours = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S * (1000 if gemini else 1)}
        if gemini:
            ours["name"] = SERVER
        placed = False
        for group in groups:
            handlers = group.get("hooks", [])
            for i, handler in enumerate(handlers):
                if isinstance(handler, dict) and _is_ours(str(handler.get("command", ""))):
                    handlers[i] = ours
                    placed = True
        if not placed:
            groups.append({"hooks": [ours]})
        hooks[event] = groups + others
    return data


def _with_server(data: dict[str, Any], key: str = "mcpServers", typed: bool = True,
                 portable: bool = False) -> dict[str, Any]:
    exe = executable(portable)
    entry: dict[str, Any] = {"command": exe[0], "args": [*exe[1:], "mcp"]}
    if typed:
        entry = {"type": "stdio", **entry}
    if _env(portable):
        entry["env"] = _env(portable)
    data.setdefault(key, {})[SERVER] = entry
    return data


def _json_change(root: Path, file: Path, what: str, edit: Any) -> Change:
    before, data = _read_json(root, file)
    original = copy.deepcopy(data)
    edited = edit(data)
    # Already as wanted: keep the user's file byte for byte (their indentation, key order).
    return Change(file, what, before, before if before is not None and edited == original else _dump_json(edited),
                  root)


# -- TOML (Codex) -------------------------------------------------------------------------------
def _toml_server_block(portable: bool = False) -> str:
    exe = executable(portable)
    lines = [f"[mcp_servers.{SERVER}]", f"command = {json.dumps(exe[0])}",
             f"args = [{', '.join(json.dumps(a) for a in [*exe[1:], 'mcp'])}]"]
    if _env(portable):
        lines.append(f"[mcp_servers.{SERVER}.env]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in _env(portable).items()]
    return "\n".join(lines) + "\n"


def _with_toml_server(text: str, portable: bool = False) -> str:
    """Replace our ``[mcp_servers.skillmill]`` tables (textually) or append them; the rest is untouched."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    skipping = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("["):
            header = stripped.strip("[]").strip()
            skipping = header == f"mcp_servers.{SERVER}" or header.startswith(f"mcp_servers.{SERVER}.")
        if not skipping:
            out.append(line)
    body = "".join(out).rstrip("\n")
    result = (body + "\n\n" if body else "") + _toml_server_block(portable)
    tomllib.loads(result)  # never write a file the agent cannot read
    return result


def _read_toml(root: Path, file: Path) -> str | None:
    """The agent's TOML file as it is (None when there is none yet). It is edited as text, table by table, so one
    that does not parse, or that holds a multi-line string (whose lines could read as tables), is not rewritten."""
    before = _read_existing(root, file)
    if before is not None:
        try:
            tomllib.loads(before)
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"{file} is not valid TOML ({exc}); skillmill will not rewrite it",
                             hint="fix the file, then run `skillmill install` again") from exc
        if '"""' in before or "'''" in before:
            raise UsageError(f"{file} holds a multi-line string; skillmill edits TOML as text and will not rewrite it",
                             hint="add the entries by hand (the README's install section shows them)")
    return before


def _toml_change(root: Path, file: Path, portable: bool = False) -> Change:
    before = _read_toml(root, file)
    return Change(file, f"MCP server [mcp_servers.{SERVER}]", before, _with_toml_server(before or "", portable), root)


# -- TOML [[hooks]] (Kimi CLI) ------------------------------------------------------------------
def _toml_hook_blocks(agent: str, events: tuple[str, ...], portable: bool = False) -> str:
    """One ``[[hooks]]`` table per event (Kimi CLI: ``event``, ``command``, ``timeout`` in seconds)."""
    command = json.dumps(hook_command(agent, portable))
    return "\n".join(f"[[hooks]]\nevent = {json.dumps(event)}\ncommand = {command}\ntimeout = {HOOK_TIMEOUT_S}\n"
                     for event in events)


def _with_toml_hooks(text: str, agent: str, events: tuple[str, ...], portable: bool = False) -> str:
    """Drop our ``[[hooks]]`` tables (textually: the rest of the file, its comments and secrets included, is
    kept as it is) and append them anew; a file already as wanted comes back unchanged."""
    blocks: list[list[str]] = [[]]
    for line in text.splitlines(keepends=True):
        if line.strip().startswith("["):
            blocks.append([])
        blocks[-1].append(line)

    def ours(block: list[str]) -> bool:
        if not block or not re.fullmatch(r"\[\[\s*hooks\s*\]\]\s*(?:#.*)?", block[0].strip()):
            return False
        try:
            table = tomllib.loads("".join(block[1:]))
        except tomllib.TOMLDecodeError:
            return False
        return isinstance(table.get("command"), str) and _is_ours(table["command"])

    body = "".join(line for block in blocks if not ours(block) for line in block).rstrip("\n")
    result = (body + "\n\n" if body else "") + _toml_hook_blocks(agent, events, portable)
    try:
        tomllib.loads(result)  # never write a file the agent cannot read
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"the agent's TOML settings do not read back after adding the hooks ({exc}); skillmill "
                         "will not write them", hint="add the [[hooks]] tables by hand (the README's install section)") \
            from exc
    return result


def _toml_hooks_change(root: Path, file: Path, agent: str, events: tuple[str, ...]) -> Change:
    before = _read_toml(root, file)
    what = f"hook `{SERVER} hook {agent}` on {' and '.join(events)} ([[hooks]])"
    return Change(file, what, before, _with_toml_hooks(before or "", agent, events), root)


# -- the plan -----------------------------------------------------------------------------------
def plan(agent: str, project: Path | None = None) -> Plan:
    base = project.expanduser().absolute() if project else Path.home()
    scope = f"project {base}" if project else "user-wide"
    portable = project is not None  # a project's files are committed: they run on teammates' machines
    if agent == "kimi":  # hooks in ~/.kimi/config.toml, the server in ~/.kimi/mcp.json; nothing in a project
        found = _mcp_plan(wiring.get(agent), base, scope, portable)
        if not portable:
            found.changes.insert(0, _toml_hooks_change(base, base / ".kimi" / "config.toml", agent,
                                                       HOOK_EVENTS[agent]))
        return found
    if agent not in HOOK_EVENTS:
        return _mcp_plan(wiring.get(agent), base, scope, portable)
    events = HOOK_EVENTS[agent]
    hooks_what = f"hook `{SERVER} hook {agent}` on {' and '.join(events)}"
    changes: list[Change] = []
    if agent == "claude-code":
        changes.append(_json_change(base, base / ".claude" / "settings.json", hooks_what,
                                    lambda d: _with_hooks(d, agent, events, portable=portable)))
        mcp_file = base / ".mcp.json" if project else base / ".claude.json"
        changes.append(_json_change(base, mcp_file, f"MCP server `{SERVER}` (mcpServers)",
                                    lambda d: _with_server(d, portable=portable)))
    elif agent == "codex":
        changes.append(_json_change(base, base / ".codex" / "hooks.json", hooks_what,
                                    lambda d: _with_hooks(d, agent, events, portable=portable)))
        changes.append(_toml_change(base, base / ".codex" / "config.toml", portable))
    elif agent in ("gemini", "qwen"):  # one settings.json holds hooks and MCP servers
        def edit(d: dict[str, Any]) -> dict[str, Any]:
            return _with_server(_with_hooks(d, agent, events, gemini=True, portable=portable), typed=False,
                                portable=portable)

        folder = ".gemini" if agent == "gemini" else ".qwen"
        changes.append(_json_change(base, base / folder / "settings.json", f"{hooks_what}; MCP server `{SERVER}`",
                                    edit))
    return Plan(agent, scope, changes, notes=path_notes() if portable else [])


# -- the other agents: the MCP server only (pipeline.agents.wiring) -----------------------------
def server_entry(shape: str, portable: bool = False) -> dict[str, Any]:
    """One stdio entry for the skillmill MCP server, in the shape an agent's file takes."""
    exe = [*executable(portable), "mcp"]
    env = _env(portable)
    if shape == "opencode":
        entry: dict[str, Any] = {"type": "local", "command": exe, "enabled": True}
        return {**entry, "environment": env} if env else entry
    entry = {"command": exe[0], "args": exe[1:]}
    if shape in ("claude", "vscode"):
        entry = {"type": "stdio", **entry}
    elif shape == "copilot":
        entry = {"type": "local", **entry}
    if env:
        entry["env"] = env
    if shape == "copilot":
        entry["tools"] = ["*"]
    return entry


def _snippet(mcp: wiring.McpFile, portable: bool) -> str:
    if mcp.fmt == "yaml":
        return "extensions:\n" + _goose_block("  ", portable)
    return json.dumps({mcp.key: {SERVER: server_entry(mcp.shape, portable)}}, indent=2)


def _by_hand(file: Path, why: str, mcp: wiring.McpFile, portable: bool) -> str:
    return f"{file}: {why}; add by hand:\n{_snippet(mcp, portable)}"


def _mcp_plan(agent: wiring.Agent, base: Path, scope: str, portable: bool) -> Plan:
    notes = [*agent.notes, *(agent.project_notes if portable else ())]
    mcp = agent.mcp_project if portable else agent.mcp_user
    changes: list[Change] = []
    if mcp is not None:
        file = base / mcp.path
        what = f"MCP server `{SERVER}` ({mcp.key})"
        if mcp.fmt == "yaml":
            change, note = _yaml_change(base, file, mcp, portable)
        else:
            change, note = _json_server_change(base, file, what, mcp, portable)
        changes += [change] if change else []
        notes += [note] if note else []
    if portable:
        notes += path_notes()
    return Plan(agent.name, scope, changes, notes)


def _json_server_change(root: Path, file: Path, what: str, mcp: wiring.McpFile,
                        portable: bool) -> tuple[Change | None, str | None]:
    commented = file.with_suffix(".jsonc")  # OpenCode and Amp read settings.jsonc / opencode.jsonc instead
    if not os.path.lexists(file) and os.path.lexists(commented):
        return None, _by_hand(commented, "the agent reads this JSONC file, which skillmill does not rewrite", mcp,
                              portable)
    try:
        before, data = _read_json(root, file)
    except UsageError as exc:
        if "not valid JSON" not in exc.message:
            raise
        return None, _by_hand(file, "not plain JSON (comments?), so skillmill does not rewrite it", mcp, portable)
    original = copy.deepcopy(data)
    servers = data.get(mcp.key)
    if servers is not None and not isinstance(servers, dict):
        return None, _by_hand(file, f"{mcp.key!r} is not an object", mcp, portable)
    data.setdefault(mcp.key, {})[SERVER] = server_entry(mcp.shape, portable)
    after = before if before is not None and data == original else _dump_json(data)
    return Change(file, what, before, after, root), None


# -- YAML (Goose) -------------------------------------------------------------------------------
GOOSE_TIMEOUT_S = 300  # Goose's own default for an extension


def _goose_entry(portable: bool) -> dict[str, Any]:
    exe = executable(portable)
    return {"enabled": True, "type": "stdio", "name": SERVER, "cmd": exe[0], "args": [*exe[1:], "mcp"],
            "envs": _env(portable), "timeout": GOOSE_TIMEOUT_S,
            "description": "Skills from this team's library (skillmill)"}


def _goose_block(indent: str, portable: bool) -> str:
    """Our extension as YAML lines at ``indent`` (scalars as JSON strings, which YAML reads the same)."""
    inner = indent + "  "
    lines = [f"{indent}{SERVER}:"]
    for key, value in _goose_entry(portable).items():
        lines.append(f"{inner}{key}: {json.dumps(value, ensure_ascii=False)}")
    return "\n".join(lines) + "\n"


_TOP_KEY = re.compile(r"^[^\s#-][^:]*:")
_EXTENSIONS = re.compile(r"^extensions:[ \t]*(#.*)?$")


def _with_goose(text: str, portable: bool) -> str | None:
    """``text`` with our extension added or replaced under ``extensions:`` (a block mapping), everything else
    as it was; None when the file has a shape this textual edit does not handle (a flow mapping, a list)."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    start = next((i for i, line in enumerate(lines) if _EXTENSIONS.match(line.rstrip("\r\n"))), None)
    if start is None:
        if any(line.startswith("extensions:") for line in lines):
            return None  # extensions: {} or another value on the same line
        body = "".join(lines).rstrip("\n")
        return (body + "\n" if body else "") + "extensions:\n" + _goose_block("  ", portable)
    end = next((i for i in range(start + 1, len(lines)) if _TOP_KEY.match(lines[i])), len(lines))
    block = lines[start + 1:end]
    children = [line for line in block if line.strip() and not line.lstrip().startswith("#")]
    indent = children[0][:len(children[0]) - len(children[0].lstrip(" "))] if children else "  "
    if not indent or (children and children[0][len(indent):].startswith("-")):
        return None  # a list of extensions, or something else than a block mapping
    head = re.compile(rf"{re.escape(indent)}['\"]?{SERVER}['\"]?:[ \t]*(#.*)?$")
    ours = next((i for i, line in enumerate(block) if head.match(line.rstrip("\r\n"))), None)
    if ours is not None:
        stop = next((i for i in range(ours + 1, len(block)) if block[i].strip()
                     and len(block[i]) - len(block[i].lstrip(" ")) <= len(indent)), len(block))
        block[ours:stop] = [_goose_block(indent, portable)]
    else:
        # after the last extension's last line: blank lines and comments at the margin stay before the next key
        last = max((i + 1 for i, line in enumerate(block) if line.strip() and line[0] == " "), default=0)
        block[last:last] = [_goose_block(indent, portable)]
    return "".join(lines[:start + 1] + block + lines[end:])


def _yaml_change(root: Path, file: Path, mcp: wiring.McpFile, portable: bool) -> tuple[Change | None, str | None]:
    import yaml

    what = f"MCP server `{SERVER}` (extensions, stdio)"
    before = _read_existing(root, file)
    try:
        original = yaml.safe_load(before) if before else {}
    except yaml.YAMLError as exc:
        raise UsageError(f"{file} is not valid YAML ({exc}); skillmill will not rewrite it",
                         hint="fix the file, then run `skillmill setup` again") from exc
    if not isinstance(original or {}, dict):
        return None, _by_hand(file, "not a YAML mapping", mcp, portable)
    original = original or {}
    wanted = copy.deepcopy(original)
    if wanted.get("extensions") is not None and not isinstance(wanted["extensions"], dict):
        return None, _by_hand(file, "its extensions are not a mapping", mcp, portable)
    wanted.setdefault("extensions", {})
    wanted["extensions"] = {**(wanted["extensions"] or {}), SERVER: _goose_entry(portable)}
    if before is not None and original == wanted:
        return Change(file, what, before, before, root), None
    after = _with_goose(before or "", portable)
    try:
        parsed = yaml.safe_load(after) if after is not None else None
    except yaml.YAMLError:
        parsed = None
    if after is None or parsed != wanted:  # never write a file the agent would read differently from what we meant
        return None, _by_hand(file, "skillmill could not edit this YAML safely", mcp, portable)
    return Change(file, what, before, after, root), None
