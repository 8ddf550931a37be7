"""Discovery: default locations, [sources] in the config, ignore_paths, `skillmill sources`."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline import config
from pipeline.cli import main
from pipeline.ingest import iter_files, sources
from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.sources import Ignore, configured_sources, discover, location_root
from pipeline.plugins import registered_formats

SESSION = "claude_code/codemie-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"


class _Elsewhere(TrajectoryFormat):
    """Stands in for the formats other plugins add: a home location that is missing, a repo-local one."""

    name, agent, description = "elsewhere", "elsewhere", "test format"
    locations = ("${ELSEWHERE_HOME:-~/.elsewhere}/sessions/YYYY/MM/rollout-*.jsonl",
                 "<repo>/.elsewhere.history.md", "<output dir>/<instance>.json")
    suffixes = (".md",)

    def sniff(self, probe):  # type: ignore[no-untyped-def]
        return False

    def parse(self, path, report):  # type: ignore[no-untyped-def]
        return iter(())


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> Path:
    """A fake $HOME holding one Claude Code project, and a config file to write into."""
    fake = tmp_path / "user"
    project = fake / ".claude/projects/-work-app"
    project.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(fake))
    monkeypatch.delenv("ELSEWHERE_HOME", raising=False)
    monkeypatch.setattr(sources, "registered_formats", lambda: (*registered_formats(), _Elsewhere()))
    isolated_home.mkdir(parents=True, exist_ok=True)
    return fake


def write_config(isolated_home: Path, text: str) -> None:
    (isolated_home / "skillmill.toml").write_text(text)


@pytest.mark.parametrize(("location", "expected"), [
    ("~/.claude/projects/*/*.jsonl", ("home", "~/.claude/projects")),
    ("${ELSEWHERE_HOME:-~/.elsewhere}/sessions/YYYY/MM/DD/rollout-*.jsonl", ("home", "~/.elsewhere/sessions")),
    ("~/.local/share/opencode/storage/session/<projectID>/<id>.json", ("home", "~/.local/share/opencode/storage/session")),
    ("<repo>/.aider.chat.history.md", ("repo", ".aider.chat.history.md")),
    ("trajectories/<user>/<run>/<instance_id>.traj", None),  # relative to where a tool ran: not guessable
    ("<output dir>/<instance>/<instance>.traj.json", None),
    ("$UNSET_SKILLMILL_VAR/sessions/*.jsonl", None),
])
def test_location_roots(home: Path, location: str, expected: tuple[str, str] | None) -> None:
    root = location_root(location)
    if expected is None:
        assert root is None
    else:
        assert root == (expected[0], Path(expected[1]).expanduser() if expected[1].startswith("~") else Path(expected[1]))


def test_an_environment_variable_moves_a_default_location(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ELSEWHERE_HOME", str(home / "custom"))
    assert location_root(_Elsewhere.locations[0]) == ("home", home / "custom/sessions")


def test_defaults_are_listed_whether_they_exist_or_not(home: Path, corpus: Path) -> None:
    shutil.copy2(corpus / SESSION, home / ".claude/projects/-work-app/s.jsonl")
    listed = {str(s.path): s for s in configured_sources(config.load())}
    claude = listed[str(home / ".claude/projects")]
    assert claude.exists and claude.formats == ["claude-code"] and claude.origin == "default"
    from pipeline.ingest.formats.claude_code import ClaudeCode

    assert claude.locations == list(ClaudeCode.locations)  # sessions and subagent files share the folder
    elsewhere = listed[str(home / ".elsewhere/sessions")]
    assert not elsewhere.exists and elsewhere.origin == "default"
    assert discover(config.load()) == [home / ".claude/projects/-work-app/s.jsonl"]


def test_config_adds_paths_and_repos_and_can_turn_defaults_off(home: Path, isolated_home: Path,
                                                                tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".elsewhere.history.md").write_text("# history\n")
    logs = tmp_path / "logs"
    write_config(isolated_home, f'[sources]\npaths = ["{logs}"]\nrepos = ["{repo}"]\ndefaults = false\n')
    listed = [s for s in configured_sources(config.load()) if "elsewhere" in s.formats or not s.formats]
    assert [(s.path, s.origin.split(" ")[0], s.exists) for s in listed] == [
        (repo / ".elsewhere.history.md", "sources.repos", True), (logs, "sources.paths", False)]
    others = [s for s in configured_sources(config.load()) if s not in listed]
    assert all(repo in s.path.parents for s in others), "with defaults off, only repo-local locations remain"
    assert "skillmill.toml" in listed[0].origin
    assert discover(config.load()) == [repo / ".elsewhere.history.md"]


def test_ignored_folders_are_never_entered_nor_their_agent_project_folders(home: Path, isolated_home: Path,
                                                                           tmp_path: Path, corpus: Path) -> None:
    secret = tmp_path / "work" / "secret"
    slug = re.sub(r"[^A-Za-z0-9-]", "-", str(secret))  # how Claude Code names a project's folder
    gemini = hashlib.sha256(str(secret).encode()).hexdigest()
    for folder in (home / ".claude/projects" / slug, home / ".claude/projects" / f"{slug}-sub",
                   home / ".gemini/tmp" / gemini, secret):
        folder.mkdir(parents=True)
        shutil.copy2(corpus / SESSION, folder / "s.jsonl")
    shutil.copy2(corpus / SESSION, home / ".claude/projects/-work-app/kept.jsonl")
    write_config(isolated_home, f'[sources]\nignore_paths = ["{secret}"]\n')
    ignore = Ignore(config.load().sources.ignore_paths)
    assert ignore.covers(home / ".claude/projects" / slug / "s.jsonl")
    assert ignore.covers(home / ".gemini/tmp" / gemini) and ignore.covers(secret / "s.jsonl")
    assert not ignore.covers(home / ".claude/projects/-work-app")
    assert ignore.covers_cwd(str(secret / "pkg")) and not ignore.covers_cwd(str(tmp_path / "work"))
    assert list(iter_files([home, secret], ignore=ignore)) == [home / ".claude/projects/-work-app/kept.jsonl"]
    assert discover(config.load()) == [home / ".claude/projects/-work-app/kept.jsonl"]


def test_skillmill_sources_lists_each_source_with_its_origin(home: Path, isolated_home: Path, corpus: Path,
                                                             tmp_path: Path) -> None:
    shutil.copy2(corpus / SESSION, home / ".claude/projects/-work-app/s.jsonl")
    write_config(isolated_home, f'[sources]\nignore_paths = ["{tmp_path / "secret"}"]\n')
    result = CliRunner().invoke(main, ["sources", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = {row["path"]: row for row in json.loads(result.output)}
    claude = rows[str(home / ".claude/projects")]
    assert claude == {"path": str(home / ".claude/projects"), "exists": True, "files": 1, "origin": "default",
                      "formats": ["claude-code"], "locations": list(claude["locations"]), "ignored": False}
    assert rows[str(home / ".elsewhere/sessions")]["exists"] is False
    assert rows[str(home / ".elsewhere/sessions")]["files"] == 0
    ignored = rows[str(tmp_path / "secret")]
    assert ignored["ignored"] is True and ignored["origin"].startswith("sources.ignore_paths (file ")
    text = CliRunner().invoke(main, ["sources"], catch_exceptions=False).output
    assert "missing" in text and "1 files" in text and "from default" in text


def test_a_missing_path_named_on_the_command_line_is_still_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "no such file or directory" in result.output


def test_sessions_run_in_an_ignored_folder_are_dropped_and_named_files_there_not_read(
        corpus: Path, tmp_path: Path) -> None:
    from pipeline import stages

    session = tmp_path / "s.jsonl"
    shutil.copy2(corpus / SESSION, session)  # its cwd is /tmp/private
    reading = stages.read(session, None, reader="k", ignore=Ignore(["/tmp/private"]))
    assert reading.trajectories == [] and reading.report.status == "skipped"
    assert "ignore_paths" in reading.report.errors[0].reason and reading.watermark.trajectories == []
    kept = stages.read(session, None, reader="k", ignore=Ignore([tmp_path / "elsewhere"]))
    assert len(kept.trajectories) == 1
    named = stages.read(session, None, reader="k", ignore=Ignore([tmp_path]))
    assert named.report.status == "skipped" and named.watermark is None and named.trajectories == []
