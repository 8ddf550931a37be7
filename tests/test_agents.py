"""Agents: the MCP server over stdio (SDK client), the Claude Code hook, install and export."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.agents import export as export_module
from pipeline.cli import main
from pipeline.library import Library
from pipeline.recall.text import lean
from tests.conftest import ROOT

RUFF = "github-awesome-copilot/ruff-recursive-fix"
TEAM = [RUFF, "wshobson-agents/python-code-style", "getsentry-skills/create-branch", "github-awesome-copilot/git-commit"]


def cli(*args: str, input: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture
def indexed(skills_corpus: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "team"
    for name in TEAM:
        shutil.copytree(skills_corpus / name, folder / name)
    assert cli("index", "--skills", str(folder))[0] == 0
    return folder


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


# -- MCP ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_mcp_server_over_stdio_with_the_sdk_client(indexed: Path) -> None:
    from mcp import Client, StdioServerParameters

    from pipeline.recall import feedback

    async def session() -> dict[str, object]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "pipeline", "mcp"], env=env())
        async with Client(params) as client:
            tools = await client.list_tools()
            brief = await client.call_tool("recall_skills", {"task": "fix E501 line too long reported by ruff",
                                                             "budget": 400})
            skill = await client.call_tool("get_skill", {"name": "ruff-recursive-fix"})
            missing = await client.call_tool("get_skill", {"name": "no-such-skill"})
            verdict = await client.call_tool("skill_feedback", {"name": "ruff-recursive-fix", "verdict": "helpful",
                                                                "note": "fixed it"})
            bad = await client.call_tool("skill_feedback", {"name": "ruff-recursive-fix", "verdict": "meh"})
            return {"tools": {t.name for t in tools.tools}, "brief": brief.content[0].text,
                    "skill": skill.content[0].text, "missing": missing.content[0].text,
                    "verdict": verdict.content[0].text, "bad": bad.is_error}

    out = asyncio.run(session())
    assert out["tools"] == {"recall_skills", "get_skill", "skill_feedback", "handoff"}
    assert "**ruff-recursive-fix** (approved)" in out["brief"]
    assert (indexed / RUFF / "SKILL.md").read_text() in out["skill"]
    assert "No approved skill" in out["missing"]
    assert "Recorded helpful" in out["verdict"] and out["bad"] is True
    events = feedback.events()
    assert [(e["skill"], e["verdict"], e["note"], e["path"]) for e in events] == [
        ("ruff-recursive-fix", "helpful", "fixed it", str(indexed / RUFF))]



def test_mcp_recall_skills_reads_a_20_mb_task_as_the_hook_does(indexed: Path, corpus: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent that pastes a whole log into the task: the hook reads its first 4000 characters, and so does MCP.

    The task is a real 2.6 MB Claude Code session, repeated to 20 MB after the question; before the
    cap, tokenizing all of it took 9-45 s of the server's time.
    """
    from pipeline.agents.mcp_server import build_server
    from pipeline.recall import lexical

    cap = 4000  # what the hook reads of a prompt (pipeline.recall.search.MAX_TASK_CHARS)

    session = (corpus / "claude_code/codemie-code/session-624a4a58.jsonl").read_text(encoding="utf-8")
    task = "fix E501 line too long reported by ruff\n" + session * (20_000_000 // len(session) + 1)
    assert len(task) > 20_000_000
    read: list[int] = []
    real = lexical.query_terms
    monkeypatch.setattr(lexical, "query_terms", lambda snap, text: read.append(len(text)) or real(snap, text))
    server = build_server()
    started = time.monotonic()
    result = asyncio.run(server.call_tool("recall_skills", {"task": task, "budget": 400}))
    took = time.monotonic() - started
    assert read and max(read) <= 3 * cap, f"recall read {max(read):,} characters of the task"
    assert took < 5, f"{took:.1f} s"  # about 0.05 s; the uncapped task took 9-45 s
    head = asyncio.run(server.call_tool("recall_skills", {"task": task[:cap], "budget": 400}))
    assert result.content[0].text == head.content[0].text  # type: ignore[union-attr]
    question = asyncio.run(server.call_tool("recall_skills", {"task": task[:40], "budget": 400}))
    assert "**ruff-recursive-fix** (approved)" in question.content[0].text  # type: ignore[union-attr]


# -- the hook -----------------------------------------------------------------------------------
def claude_payload(event: str, cwd: Path, **extra: str) -> str:
    """What Claude Code writes on a hook's stdin (fields of its hooks reference)."""
    base = {"session_id": "0b5e7a52-6f0e-4d1c-9a53-2f2f3c9f7e11", "transcript_path": str(cwd / "t.jsonl"),
            "cwd": str(cwd), "hook_event_name": event, "permission_mode": "default"}
    return json.dumps({**base, **extra})


def run_hook(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipeline", "hook", "claude-code", *args], input=stdin,
                          capture_output=True, text=True, env=env(), timeout=60, check=False)


@pytest.mark.slow
def test_hook_answers_user_prompt_submit_with_additional_context(indexed: Path, tmp_path: Path) -> None:
    payload = claude_payload("UserPromptSubmit", tmp_path, prompt="ruff reports E501 line too long everywhere")
    proc = run_hook(payload)
    assert proc.returncode == 0 and proc.stderr == ""
    out = json.loads(proc.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "ruff-recursive-fix" in out["hookSpecificOutput"]["additionalContext"]
    assert run_hook(payload).stdout == "", "a skill already given in this session is not repeated"
    nothing = claude_payload("UserPromptSubmit", tmp_path, prompt="qwxzv plkjh")
    assert run_hook(nothing).stdout == ""


@pytest.mark.slow
def test_hook_session_start_gives_the_repository_skills(skills_corpus: Path, tmp_path: Path) -> None:
    repo = tmp_path / "checkout"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:acme/widgets.git\n')
    skills = repo / ".claude" / "skills" / "working-in-widgets"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text("---\nname: working-in-widgets\ndescription: How to build and test the "
                                     "widgets repository (make test, the fixtures it needs).\n---\n\n# Widgets\n")
    assert cli("index", "--skills", str(repo / ".claude" / "skills"))[0] == 0
    proc = run_hook(claude_payload("SessionStart", repo / "src" if (repo / "src").mkdir() is None else repo,
                                   source="startup"))
    out = json.loads(proc.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "working-in-widgets" in out["hookSpecificOutput"]["additionalContext"]
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    assert run_hook(claude_payload("SessionStart", elsewhere, source="startup")).stdout == ""


def test_hook_never_blocks_the_agent(tmp_path: Path) -> None:
    slow = ("import sys, time; import pipeline.agents.hook as h\n"
            "h.respond = lambda *a, **k: (time.sleep(5), '{\"x\": 1}')[1]\n"
            "h.run('claude-code', timeout=0.3)\nprint('unreachable')")
    proc = subprocess.run([sys.executable, "-c", slow], input="{}", capture_output=True, text=True, env=env(),
                          timeout=30, check=False)
    assert (proc.returncode, proc.stdout) == (0, "")
    for stdin in ("not json", "[]", claude_payload("UserPromptSubmit", tmp_path, prompt="anything")):  # no index
        proc = run_hook(stdin)
        assert (proc.returncode, proc.stdout) == (0, "")


# -- install ------------------------------------------------------------------------------------
def test_install_merges_into_existing_settings_and_is_idempotent(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    project = tmp_path / "proj"
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    mine = {"model": "opus", "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "date"}]}],
                                       "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
                                                                                     "command": "audit.sh"}]}]}}
    settings.write_text(json.dumps(mine, indent=4))
    code, out = cli("install", "--agent", "claude-code", "--project", str(project), "--dry-run")
    assert code == 0 and "update" in out and "create" in out and json.loads(settings.read_text()) == mine
    assert not (project / ".mcp.json").exists()
    code, out = cli("install", "--agent", "claude-code", "--project", str(project))
    assert code == 0
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["hooks"]["PreToolUse"] == mine["hooks"]["PreToolUse"]
    commands = [h["command"] for g in data["hooks"]["UserPromptSubmit"] for h in g["hooks"]]
    # A project's files are committed: they run `skillmill` from each teammate's PATH, with none of the
    # installer's own paths (its virtualenv, its SKILLMILL_HOME) in them.
    assert commands == ["date", "skillmill hook claude-code"]
    assert any(h["command"] == "skillmill hook claude-code" for g in data["hooks"]["SessionStart"] for h in g["hooks"])
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["skillmill"]
    assert server == {"type": "stdio", "command": "skillmill", "args": ["mcp"]}
    for file in (settings, project / ".mcp.json"):
        text = file.read_text()
        assert sys.executable not in text and os.environ["SKILLMILL_HOME"] not in text and ".venv" not in text
    before = settings.read_text()
    code, out = cli("install", "--agent", "claude-code", "--project", str(project))
    assert "Already installed" in out and settings.read_text() == before
    assert not (tmp_path / "home").exists(), "--project never touches user-level settings"


def test_install_project_says_when_skillmill_is_not_on_path(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, out = cli("install", "--agent", "codex", "--project", str(tmp_path / "proj"), "--dry-run")
    assert code == 0 and "not on PATH" in out and "pipx install" in out
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "skillmill").write_text("#!/bin/sh\n")
    (venv / "bin" / "skillmill").chmod(0o755)
    monkeypatch.setenv("PATH", str(venv / "bin"))
    code, out = cli("install", "--agent", "codex", "--project", str(tmp_path / "proj"))
    assert code == 0 and "inside a virtual environment" in out
    hooks = json.loads((tmp_path / "proj" / ".codex" / "hooks.json").read_text())
    assert hooks["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] == "skillmill hook codex"
    assert 'command = "skillmill"' in (tmp_path / "proj" / ".codex" / "config.toml").read_text()
    # user-wide files stay on this machine: this installation's executable, by absolute path
    code, out = cli("install", "--agent", "codex")
    user = json.loads((tmp_path / "home" / ".codex" / "hooks.json").read_text())
    assert f"{venv / 'bin' / 'skillmill'} hook codex" in user["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]


def test_install_codex_and_gemini_keep_the_users_config(tmp_path: Path, monkeypatch) -> None:
    import tomllib

    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('# my settings\nmodel = "gpt-5"\n\n[mcp_servers.other]\ncommand = "other"\n')
    assert cli("install", "--agent", "codex")[0] == 0
    text = config.read_text()
    parsed = tomllib.loads(text)
    assert text.startswith("# my settings\nmodel = \"gpt-5\"") and parsed["mcp_servers"]["other"] == {"command": "other"}
    assert parsed["mcp_servers"]["skillmill"]["args"][-1] == "mcp"
    assert cli("install", "--agent", "codex")[0] == 0 and config.read_text() == text
    hooks = json.loads((home / ".codex" / "hooks.json").read_text())
    assert "UserPromptSubmit" in hooks["hooks"]
    gemini = home / ".gemini" / "settings.json"
    gemini.parent.mkdir(parents=True)
    gemini.write_text('{"theme": "dark"}')
    assert cli("install", "--agent", "gemini")[0] == 0
    data = json.loads(gemini.read_text())
    assert data["theme"] == "dark" and "skillmill" in data["mcpServers"] and "BeforeAgent" in data["hooks"]
    gemini.write_text("{not json")
    code, _ = cli("install", "--agent", "gemini")
    assert code == 2 and gemini.read_text() == "{not json"


# -- export -------------------------------------------------------------------------------------
def test_export_writes_approved_skills_and_never_touches_a_persons_own(tmp_path: Path) -> None:
    from tests.test_skill_file import sample_skills

    library = Library(tmp_path / "lib")
    skills = sample_skills()
    approved = [s.model_copy(update={"status": "approved"}) for s in skills[:2]]
    for skill in [*approved, *skills[2:]]:
        library.save(skill)
    project = tmp_path / "proj"
    own = project / ".claude" / "skills" / approved[1].name  # a person's skill that happens to share a name
    own.mkdir(parents=True)
    (own / "SKILL.md").write_text("---\nname: mine\ndescription: mine\n---\n")
    args = ["export", "--agent", "claude-code", "--project", str(project), "--library", str(library.root), "--json"]
    report = json.loads(cli(*args)[1])
    assert report["created"] == [approved[0].name] and report["skipped"][0]["name"] == approved[1].name
    exported = project / ".claude" / "skills" / approved[0].name
    served = (exported / "SKILL.md").read_text()
    assert served == lean((library.get(approved[0].name).file).read_text())  # agents get the lean text
    assert "<!-- from" not in served and "## Sources" not in served and "generator:" not in served
    assert (exported / export_module.MARKER).is_file() and (own / "SKILL.md").read_text().startswith("---\nname: mine")
    assert json.loads(cli(*args)[1])["unchanged"] == [approved[0].name]
    library.save(approved[0].model_copy(update={"status": "deprecated"}))  # no longer approved: removed
    report = json.loads(cli(*args)[1])
    assert report["removed"] == [approved[0].name] and not exported.exists() and own.exists()
    codex = json.loads(cli("export", "--agent", "codex", "--project", str(project), "--library",
                           str(library.root), "--json")[1])
    assert codex["target"] == str(project / ".agents" / "skills")


def test_export_leaves_a_hand_edited_managed_skill_alone(tmp_path: Path) -> None:
    from tests.test_skill_file import sample_skills

    library = Library(tmp_path / "lib")
    skill = sample_skills()[0].model_copy(update={"status": "approved"})
    library.save(skill)
    report = export_module.export("gemini", tmp_path / "p", library.root)
    folder = tmp_path / "p" / ".gemini" / "skills" / skill.name
    assert report.created == [skill.name]
    (folder / "SKILL.md").write_text((folder / "SKILL.md").read_text() + "\nMy own note.\n")
    library.save(skill.model_copy(update={"description": "Changed upstream."}))
    report = export_module.export("gemini", tmp_path / "p", library.root)
    assert report.updated == [] and "edited" in report.skipped[0]["reason"]
    assert "My own note." in (folder / "SKILL.md").read_text()


@pytest.mark.usefixtures("indexed")  # feedback is on skills the index holds
def test_feedback_cli_records_and_lists_worst_first() -> None:
    assert cli("feedback", "add", "ruff-recursive-fix", "helpful")[0] == 0
    assert cli("feedback", "add", "git-commit", "stale", "--note", "uses the old footer")[0] == 0
    assert cli("feedback", "add", "git-commit", "meh")[0] == 2
    code, out = cli("feedback", "list", "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["skill"] for r in rows] == ["git-commit", "ruff-recursive-fix"]
    assert rows[0]["verdicts"] == {"stale": 1} and rows[0]["last_note"] == "uses the old footer"


def test_export_gives_a_project_its_own_repositorys_skills_and_decisions_update_every_copy(tmp_path: Path) -> None:
    from pipeline.review.decisions import Review
    from tests.test_skill_file import sample_skills

    library = Library(tmp_path / "lib")
    django, flask = (s.model_copy(update={"status": "approved"}) for s in sample_skills()[:2])
    general = flask.model_copy(update={"name": "tidy-commits", "repo": None})
    for skill in (django, flask, general):
        library.save(skill)
    project = tmp_path / "django-checkout"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "config").write_text('[remote "origin"]\n\turl = https://github.com/django/django.git\n')
    args = ["export", "--agent", "claude-code", "--project", str(project), "--library", str(library.root), "--json"]
    report = json.loads(cli(*args)[1])
    assert report["repo"] == "django/django" and report["created"] == ["tidy-commits", "working-in-django"]
    folder = project / ".claude" / "skills"
    assert sorted(p.name for p in folder.iterdir()) == ["tidy-commits", "working-in-django"]
    assert json.loads(cli(*args[:-1], "--repo", "pallets/flask", "--dry-run", "--json")[1])["created"] == [
        "working-in-flask"]
    everything = json.loads(cli("export", "--agent", "codex", "--project", str(project), "--library",
                                str(library.root), "--all-repos", "--json")[1])
    assert len(everything["created"]) == 3
    # A review decision reaches every exported copy at once, not at the next manual export.
    Review(library, "tester").deprecate("tidy-commits", "superseded by the team's commit guide")
    assert not (folder / "tidy-commits").exists() and (folder / "working-in-django").is_dir()
    assert not (project / ".agents" / "skills" / "tidy-commits").exists()
    assert (project / ".agents" / "skills" / "working-in-flask").is_dir()


def test_an_approval_reaches_exported_folders_at_once(tmp_path: Path) -> None:
    from pipeline.review.decisions import Review
    from tests.test_skill_file import sample_skills

    library = Library(tmp_path / "lib")
    approved, candidate = sample_skills()[0].model_copy(update={"status": "approved"}), sample_skills()[1]
    assert candidate.status == "candidate"
    for skill in (approved, candidate):
        library.save(skill.model_copy(update={"repo": None}))
    project = tmp_path / "proj"
    code, out = cli("export", "--agent", "claude-code", "--project", str(project), "--library", str(library.root),
                    "--json")
    folder = project / ".claude" / "skills"
    assert json.loads(out)["created"] == [approved.name] and not (folder / candidate.name).exists()
    Review(library, "tester").approve(candidate.name)
    assert (folder / candidate.name / "SKILL.md").is_file(), "approved in review: in the agent's folder at once"
    assert (folder / approved.name / "SKILL.md").is_file()
