"""``skillmill setup``: find the agents on the machine, show one plan, apply it after a yes.

Every test runs in a temporary HOME with fake agent folders (and a PATH holding only fake
executables): the real home is never read or written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.agents import wiring
from pipeline.cli import main


def cli(*args: str, input: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with Cursor's, Copilot CLI's, Goose's and Claude Code's folders, and `opencode` on PATH."""
    home = tmp_path / "fakehome"
    for folder in (".cursor", ".copilot", ".config/goose", ".claude"):
        (home / folder).mkdir(parents=True)
    (home / ".config/goose/config.yaml").write_text("GOOSE_PROVIDER: openai\n")
    (home / ".cursor/mcp.json").write_text('{"mcpServers": {"mine": {"command": "mine"}}}')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "opencode").write_text("#!/bin/sh\n")
    (bin_dir / "opencode").chmod(0o755)
    (bin_dir / "qwen").write_text("not executable\n")  # a file that is not a program finds nothing
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", str(bin_dir))
    return home


FOUND = ["claude-code", "opencode", "cursor", "copilot", "goose"]


def files(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file()}


def test_setup_finds_the_agents_here_and_without_a_yes_only_shows_the_plan(machine: Path) -> None:
    assert wiring.present() == FOUND
    before = files(machine)
    code, out = cli("setup")  # not a terminal and no --yes: the plan, exit 0, nothing written
    assert code == 0 and "Not applied" in out and files(machine) == before
    assert "agents found: Claude Code, OpenCode, Cursor, GitHub Copilot CLI, Goose" in out
    for rel in (".claude/settings.json", ".claude.json", ".config/opencode/opencode.json", ".copilot/mcp-config.json"):
        assert f"create    {machine / rel}:" in out
    for rel in (".cursor/mcp.json", ".config/goose/config.yaml"):
        assert f"update    {machine / rel}:" in out
    assert "Note (goose): no hook" in out and "Qwen" not in out
    code, out = cli("setup", "--dry-run", "--yes")
    assert code == 0 and "Dry run: nothing was changed." in out and files(machine) == before


def test_setup_yes_applies_once_and_a_second_run_changes_nothing(machine: Path) -> None:
    code, out = cli("setup", "--yes")
    assert code == 0 and out.rstrip().endswith("Done.")
    after = files(machine)
    assert json.loads(after[".cursor/mcp.json"])["mcpServers"]["mine"] == {"command": "mine"}
    assert "skillmill" in json.loads(after[".config/opencode/opencode.json"])["mcp"]
    assert "SessionStart" in json.loads(after[".claude/settings.json"])["hooks"]
    assert "  skillmill:\n" in after[".config/goose/config.yaml"].decode()
    code, out = cli("setup", "--yes")
    assert code == 0 and "nothing to change" in out and "Done." not in out and files(machine) == after


def test_setup_asks_in_a_terminal_and_applies_only_on_yes(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.cli import agents

    monkeypatch.setattr(agents, "_interactive", lambda: True)
    before = files(machine)
    code, out = cli("setup", input="\n")  # the default is No
    assert code == 0 and "Apply this plan? [y/N]" in out and "Not applied." in out and files(machine) == before
    code, out = cli("setup", input="y\n")
    assert code == 0 and "Done." in out and files(machine) != before
    code, out = cli("setup", input="y\n")
    assert "nothing to change" in out and "Apply this plan?" not in out, "nothing to ask when nothing changes"


def test_setup_json_holds_each_agents_install_plan(machine: Path) -> None:
    code, out = cli("setup", "--json")
    data = json.loads(out)
    assert code == 0 and data["applied"] is False and data["agents"] == FOUND and sorted(data["plans"]) == sorted(FOUND)
    for agent in FOUND:
        alone = json.loads(cli("install", "--agent", agent, "--dry-run", "--json")[1])
        assert data["plans"][agent] == {**alone, "applied": False}, agent
    assert not (machine / ".claude.json").exists()
    data = json.loads(cli("setup", "--json", "--yes")[1])
    assert data["applied"] is True and (machine / ".claude.json").is_file()
    data = json.loads(cli("setup", "--json", "--yes")[1])
    assert {c["action"] for c in data["changes"]} == {"unchanged"}


def test_setup_of_a_project_makes_one_change_per_file_shared_by_two_agents(machine: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    data = json.loads(cli("setup", "--project", str(project), "--json")[1])
    mcp = str(project / ".mcp.json")
    assert [c["file"] for c in data["changes"]].count(mcp) == 1  # Claude Code's and Copilot CLI's portable file
    for agent in ("claude-code", "copilot"):
        assert {"file": mcp, "what": "MCP server `skillmill` (mcpServers)", "action": "create"} in \
            data["plans"][agent]["changes"]
    assert data["plans"]["goose"]["changes"] == [] and any("user config only" in n for n in data["plans"]["goose"]["notes"])
    code, out = cli("setup", "--project", str(project), "--yes")
    assert code == 0 and "Done." in out
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["skillmill"]
    assert entry == {"type": "stdio", "command": "skillmill", "args": ["mcp"]}, "the bare command, for teammates"
    assert (project / ".mcp.json.skillmill-backup").exists() is False, "a new file has nothing to back up"
    assert "nothing to change" in cli("setup", "--project", str(project), "--yes")[1]
    assert not (machine / ".claude.json").exists(), "--project never touches the home folder"


def test_setup_with_no_agent_found_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    monkeypatch.setenv("PATH", str(tmp_path / "nobin"))
    code, out = cli("setup", "--yes")
    assert code == 0 and "agents found: none" in out and "no agent found" in out and "install --agent" in out
    assert not (tmp_path / "empty-home").exists()


def test_one_agents_broken_file_leaves_it_out_and_the_others_go_ahead(machine: Path) -> None:
    settings = machine / ".claude/settings.json"
    settings.write_text("{not json")
    code, out = cli("setup", "--yes")
    assert code == 0 and "Note (claude-code): left out:" in out and "not valid JSON" in out and "Done." in out
    assert settings.read_text() == "{not json" and (machine / ".copilot/mcp-config.json").is_file()
    assert not (machine / ".claude.json").exists(), "none of a left-out agent's files is half-written"
