"""``install`` and ``export`` for the agents beyond Claude Code, Codex and Gemini CLI.

Each agent's file, key and entry shape are the ones its docs name (``pipeline.agents.wiring``);
the tests run in a temporary HOME and never touch the real one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from pipeline.agents import export, install, wiring
from pipeline.cli import main


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "fakehome"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("PATH", str(tmp_path / "nobin"))  # no `skillmill` found: the `python -m pipeline` fallback
    return folder


def command_of(entry: dict) -> list[str]:
    return entry["command"] if isinstance(entry["command"], list) else [entry["command"], *entry["args"]]


#: agent -> (user file under HOME, key, fields the entry must carry beyond its command)
USER_FILES = {
    "opencode": (".config/opencode/opencode.json", "mcp", {"type": "local", "enabled": True}),
    "cursor": (".cursor/mcp.json", "mcpServers", {}),
    "copilot": (".copilot/mcp-config.json", "mcpServers", {"type": "local", "tools": ["*"]}),
    "vscode": (".config/Code/User/mcp.json", "servers", {"type": "stdio"}),
    "qwen": (".qwen/settings.json", "mcpServers", {}),
    "kimi": (".kimi/mcp.json", "mcpServers", {}),
    "amp": (".config/amp/settings.json", "amp.mcpServers", {}),
}


@pytest.mark.parametrize("agent", sorted(USER_FILES))
def test_install_writes_the_server_where_the_agents_docs_say_and_keeps_the_rest(home: Path, agent: str) -> None:
    rel, key, fields = USER_FILES[agent]
    file = home / rel
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({"theme": "dark", key: {"other": {"command": "other-server"}}}, indent=4))
    code, out = cli("install", "--agent", agent)
    assert code == 0 and ("no hook" in out) == (agent not in ("qwen", "kimi")), out  # why an agent gets none
    data = json.loads(file.read_text())
    assert data["theme"] == "dark" and data[key]["other"] == {"command": "other-server"}
    entry = data[key]["skillmill"]
    assert command_of(entry)[-3:] == ["-m", "pipeline", "mcp"]
    assert {k: entry[k] for k in fields} == fields
    assert entry.get("environment" if agent == "opencode" else "env") == {"SKILLMILL_HOME": str(home.parent / "home")}
    written = file.read_text()
    code, out = cli("install", "--agent", agent)
    assert code == 0 and "Already installed" in out and file.read_text() == written
    assert (file.with_name(file.name + ".skillmill-backup")).is_file()


def test_a_project_gets_the_bare_command_and_claude_code_and_copilot_share_one_entry(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    for agent in ("copilot", "claude-code", "copilot"):  # either order: neither undoes the other's entry
        assert cli("install", "--agent", agent, "--project", str(project))[0] == 0
    text = (project / ".mcp.json").read_text()
    assert json.loads(text)["mcpServers"]["skillmill"] == {"type": "stdio", "command": "skillmill", "args": ["mcp"]}
    assert cli("install", "--agent", "claude-code", "--project", str(project))[1].count("unchanged") == 2
    for agent, rel, key in (("opencode", "opencode.json", "mcp"), ("cursor", ".cursor/mcp.json", "mcpServers"),
                            ("vscode", ".vscode/mcp.json", "servers"), ("qwen", ".qwen/settings.json", "mcpServers"),
                            ("amp", ".amp/settings.json", "amp.mcpServers")):
        assert cli("install", "--agent", agent, "--project", str(project))[0] == 0
        entry = json.loads((project / rel).read_text())[key]["skillmill"]
        assert command_of(entry) == ["skillmill", "mcp"] and "env" not in entry and "environment" not in entry
    for agent in ("kimi", "goose"):  # these read MCP servers from the home folder only
        code, out = cli("install", "--agent", agent, "--project", str(project), "--json")
        plan = json.loads(out)
        assert code == 0 and plan["changes"] == [] and any("home folder only" in n or "user config only" in n
                                                           for n in plan["notes"])
    assert "Nothing to write here" in cli("install", "--agent", "goose", "--project", str(project))[1]
    assert not any(home.iterdir()), "--project never touches the home folder"


def test_a_json_file_with_comments_is_left_alone_with_the_snippet_to_add(home: Path) -> None:
    file = home / ".config/Code/User/mcp.json"
    file.parent.mkdir(parents=True)
    mine = '{\n  // my servers\n  "servers": {}\n}\n'
    file.write_text(mine)
    code, out = cli("install", "--agent", "vscode")
    assert code == 0 and "add by hand" in out and '"servers"' in out and file.read_text() == mine
    jsonc = home / ".config/opencode/opencode.jsonc"
    jsonc.parent.mkdir(parents=True)
    jsonc.write_text('{ /* mine */ }\n')
    plan = json.loads(cli("install", "--agent", "opencode", "--json")[1])
    assert plan["changes"] == [] and any("opencode.jsonc" in n and '"type": "local"' in n for n in plan["notes"])
    assert not (home / ".config/opencode/opencode.json").exists()
    amp = home / ".config/amp/settings.jsonc"  # Amp reads settings.json or settings.jsonc
    amp.parent.mkdir(parents=True)
    amp.write_text('{"amp.showCosts": false, // mine\n}\n')
    plan = json.loads(cli("install", "--agent", "amp", "--json")[1])
    assert plan["changes"] == [] and any("settings.jsonc" in n and '"amp.mcpServers"' in n for n in plan["notes"])


GOOSE = """\
# goose settings
GOOSE_PROVIDER: anthropic
extensions:
  developer:
    bundled: true
    enabled: true
    name: developer
    timeout: 300
    type: builtin

  github:   # the team's
    args:
    - -y
    - '@modelcontextprotocol/server-github'
    cmd: npx
    enabled: false
    envs: {}
    name: github
    type: stdio
# the model
GOOSE_MODEL: claude-sonnet-4
"""


def test_goose_gets_an_extension_in_its_yaml_edited_as_text(home: Path) -> None:
    config = home / ".config/goose/config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(GOOSE)
    assert cli("install", "--agent", "goose")[0] == 0
    text = config.read_text()
    data, before = yaml.safe_load(text), yaml.safe_load(GOOSE)
    ours = data["extensions"].pop("skillmill")
    assert data == before, "every other setting reads back the same"
    assert ours["type"] == "stdio" and ours["enabled"] is True and ours["args"][-1] == "mcp" and ours["timeout"] == 300
    assert text.startswith(GOOSE[:GOOSE.index("# the model")]), "the user's lines, comments and order kept"
    assert text.endswith("# the model\nGOOSE_MODEL: claude-sonnet-4\n")
    assert "Already installed" in cli("install", "--agent", "goose")[1] and config.read_text() == text
    # An outdated entry of ours (another executable) is replaced in place, not added twice.
    config.write_text(text.replace(ours["cmd"], "/old/skillmill"))
    assert cli("install", "--agent", "goose")[0] == 0 and config.read_text() == text


@pytest.mark.parametrize("content", ["extensions: {}\n", "extensions:\n- name: old\n", "extensions:\n  a: 1\n"
                                     "  skillmill: {cmd: x}\n  b: 2\n"])
def test_goose_yaml_that_a_textual_edit_cannot_keep_is_left_alone(home: Path, content: str) -> None:
    config = home / ".config/goose/config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(content)
    code, out = cli("install", "--agent", "goose")
    if content.startswith("extensions:\n  a"):  # a flow mapping as one extension's value: replaced as a block
        assert code == 0 and yaml.safe_load(config.read_text())["extensions"]["b"] == 2
        return
    assert code == 0 and "add by hand" in out and "extensions:\n  skillmill:" in out and config.read_text() == content


def test_goose_broken_yaml_is_refused_and_kept(home: Path) -> None:
    config = home / ".config/goose/config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("extensions: [unclosed\n")
    code, out = cli("install", "--agent", "goose")
    assert code == 2 and config.read_text() == "extensions: [unclosed\n"


def test_export_fills_each_agents_own_skills_folder(home: Path, tmp_path: Path) -> None:
    from pipeline.library import Library
    from tests.test_skill_file import sample_skills

    library = Library(tmp_path / "lib")
    skill = sample_skills()[0].model_copy(update={"status": "approved", "repo": None})
    library.save(skill)
    expected_user = {"opencode": ".config/opencode/skills", "cursor": ".cursor/skills", "copilot": ".copilot/skills",
                     "vscode": ".copilot/skills", "qwen": ".qwen/skills", "kimi": ".kimi/skills",
                     "goose": ".agents/skills", "amp": ".config/agents/skills"}
    expected_project = {"opencode": ".opencode/skills", "cursor": ".cursor/skills", "copilot": ".github/skills",
                        "vscode": ".github/skills", "qwen": ".qwen/skills", "goose": ".agents/skills",
                        "amp": ".agents/skills"}
    for agent, rel in expected_user.items():
        report = json.loads(cli("export", "--agent", agent, "--library", str(library.root), "--json")[1])
        assert report["target"] == str(home / rel) and (home / rel / skill.name / "SKILL.md").is_file()
    project = tmp_path / "proj"
    for agent, rel in expected_project.items():
        report = export.export(agent, project, library.root, repo=None)
        assert report.target == str(project / rel) and (project / rel / skill.name / export.MARKER).is_file()
    code, out = cli("export", "--agent", "kimi", "--project", str(project), "--library", str(library.root))
    assert code == 2 and "home folder only" in out


def test_every_agent_in_the_table_is_known_to_install_and_export() -> None:
    for name, agent in wiring.agents().items():
        assert name in export.USER_FOLDERS
        assert (name in install.HOOK_EVENTS) != bool(agent.notes), "an agent without our hook says why"


def test_qwen_code_gets_the_hook_beside_its_server_in_one_settings_file(home: Path) -> None:
    """Qwen Code's hooks take Claude Code's shape, in settings.json with the MCP servers; a command hook's
    timeout is in milliseconds (QwenLM/qwen-code docs/users/features/hooks.md)."""
    file = home / ".qwen" / "settings.json"
    file.parent.mkdir(parents=True)
    file.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "write_file", "hooks": [
        {"type": "command", "command": "./check.sh"}]}]}}))
    code, out = cli("install", "--agent", "qwen")
    assert code == 0, out
    data = json.loads(file.read_text())
    assert data["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "./check.sh"  # the user's own hook stays
    assert set(data["hooks"]) == {"PreToolUse", "SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"}
    [ours] = data["hooks"]["UserPromptSubmit"][0]["hooks"]
    assert ours["command"].split()[-2:] == ["hook", "qwen"] and ours["timeout"] == 10_000
    assert command_of(data["mcpServers"]["skillmill"])[-1] == "mcp"
    written = file.read_text()
    assert cli("install", "--agent", "qwen")[0] == 0 and file.read_text() == written


def test_kimi_cli_gets_its_hooks_as_toml_tables_and_the_rest_of_its_config_stays(home: Path) -> None:
    """Kimi CLI's hooks are ``[[hooks]]`` tables in ~/.kimi/config.toml (docs/en/customization/hooks.md), the file
    that also holds its providers' keys: it is edited as text, kept byte for byte outside our tables."""
    import tomllib

    config = home / ".kimi" / "config.toml"
    config.parent.mkdir(parents=True)
    mine = ('# my providers\ndefault_model = "kimi-k2"\n\n[providers.moonshot]\napi_key = "sk-mine"\n\n'
            '[[hooks]]\nevent = "PreToolUse"\nmatcher = "Shell"\ncommand = ".kimi/hooks/check.sh"\n')
    config.write_text(mine)
    code, out = cli("install", "--agent", "kimi")
    assert code == 0 and "no hook" not in out, out
    text = config.read_text()
    assert text.startswith(mine.rstrip("\n"))
    hooks = tomllib.loads(text)["hooks"]
    assert hooks[0]["command"] == ".kimi/hooks/check.sh"
    ours = hooks[1:]
    assert [h["event"] for h in ours] == ["SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"]
    assert all(h["command"].split()[-2:] == ["hook", "kimi"] and h["timeout"] == 10 for h in ours)
    assert "skillmill" in json.loads((home / ".kimi" / "mcp.json").read_text())["mcpServers"]
    assert cli("install", "--agent", "kimi")[0] == 0 and config.read_text() == text  # a second run changes nothing
    config.write_text("not = [toml")
    assert cli("install", "--agent", "kimi")[0] == 2 and config.read_text() == "not = [toml"


def test_a_users_own_hooks_stay_however_they_read(home: Path) -> None:
    """Round 5's M2: only a command install wrote is replaced; one that merely says 'hook' and 'skillmill' stays."""
    import tomllib

    config = home / ".kimi" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[[hooks]]\nevent = "Stop"\ncommand = "./ci-pipeline hook notify"\n')
    qwen = home / ".qwen" / "settings.json"
    qwen.parent.mkdir(parents=True)
    theirs = {"type": "command", "command": "notify-send done; echo skillmill hook ran"}
    qwen.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [theirs]}]}}))
    for agent in ("kimi", "qwen"):
        assert cli("install", "--agent", agent)[0] == 0
        assert cli("install", "--agent", agent)[0] == 0  # twice: still one of ours, theirs kept
    hooks = tomllib.loads(config.read_text())["hooks"]
    assert [h["command"] for h in hooks if h["event"] == "Stop"][0] == "./ci-pipeline hook notify"
    assert sum(h["command"].endswith("hook kimi") for h in hooks) == 4
    stop = json.loads(qwen.read_text())["hooks"]["Stop"]
    assert theirs in [h for group in stop for h in group["hooks"]]
    assert sum(h["command"].endswith("hook qwen") for group in stop for h in group["hooks"]) == 1


@pytest.mark.parametrize("agent,rel,text", [
    ("kimi", ".kimi/config.toml", 'note = """\n[[hooks]]\ncommand = "x hook kimi"\n"""\n'),  # a string, not a table
    ("qwen", ".qwen/settings.json", '{"maxTokens": 1e400}'),  # read as infinity: JSON cannot write it back
    ("qwen", ".qwen/settings.json", '{"hooks": []}'),
])
def test_a_settings_file_install_cannot_rewrite_faithfully_is_left_alone(home: Path, agent: str, rel: str,
                                                                          text: str) -> None:
    file = home / rel
    file.parent.mkdir(parents=True)
    file.write_text(text)
    code, out = cli("install", "--agent", agent)
    assert code == 2 and file.read_text() == text, out


@pytest.mark.parametrize("value", ['"./notify.sh"', '{"command": "./notify.sh"}', "null"])
def test_a_hook_event_that_is_not_a_list_is_left_alone(home: Path, value: str) -> None:
    """Round 6's M3: a string was split into characters, an object into its keys, null crashed."""
    file = home / ".qwen" / "settings.json"
    file.parent.mkdir(parents=True)
    text = '{"hooks": {"Stop": ' + value + "}}"
    file.write_text(text)
    code, out = cli("install", "--agent", "qwen")
    assert code == 2 and file.read_text() == text and "not a list" in out


def test_a_commented_hooks_header_is_still_one_of_ours(home: Path) -> None:
    """Round 6's L4: ``[[hooks]] # skillmill`` after a hand edit: a second install does not add duplicates."""
    import tomllib

    assert cli("install", "--agent", "kimi")[0] == 0
    config = home / ".kimi" / "config.toml"
    config.write_text(config.read_text().replace("[[hooks]]\n", "[[hooks]]  # added by skillmill\n"))
    assert cli("install", "--agent", "kimi")[0] == 0
    assert len(tomllib.loads(config.read_text())["hooks"]) == 4
