"""Issue 24.1: a session's repository is the checkout it ran in, as this machine knows it.

When the session's working folder exists here, its git remote names the repository before any guess
from the session's text; a folder with ``.git`` is a checkout wherever it is (``/tmp`` too);
``[sources] repos_map`` maps moved or anonymised folders; ``skillmill show ID`` says why a session has
no repository and what would give it one. Real sessions of the corpus, copied into real checkouts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.ingest import ingest_file
from pipeline.ingest.identity import Locator, on_disk, why_unknown
from tests.conftest import ROOT

AIDER = "aider/Aquaticat-Monochromatic/.aider.chat.history.md"


def checkout(folder: Path, remote: str | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    if remote:
        subprocess.run(["git", "-C", str(folder), "remote", "add", "origin", remote], check=True)
    return folder


def claude_session(corpus: Path, cwd: Path, target: Path) -> Path:
    """A real Claude Code session whose records say it ran in ``cwd``."""
    source = corpus / "claude_code/claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
    original = "/path/to/Demo"
    target.write_text(source.read_text().replace(json.dumps(original)[1:-1], str(cwd)))
    return target


def test_an_aider_history_inside_a_checkout_is_that_checkouts_repository(corpus: Path, tmp_path: Path) -> None:
    """The trial's case: a history in a checkout of Aquaticat/Monochromatic was filed as
    monochromatic2025may24-pnpmtest (a local Windows folder the text mentions)."""
    repo = checkout(tmp_path / "monochromatic", "git@github.com:Aquaticat/Monochromatic.git")
    shutil.copy(corpus / AIDER, repo / ".aider.chat.history.md")
    _, found = ingest_file(repo / ".aider.chat.history.md")
    here = [t for t in found if t.cwd == str(repo)]
    assert here and {t.repo for t in here} == {"Aquaticat/Monochromatic"}
    _, before = ingest_file(corpus / AIDER)  # the same file where no checkout is: what its text says
    assert "Aquaticat/Monochromatic" not in {t.repo for t in before}


@pytest.mark.parametrize("remote", ["https://github.com/acme/widgets.git", None])
def test_a_checkout_under_tmp_is_a_checkout(corpus: Path, tmp_path: Path, remote: str | None) -> None:
    repo = checkout(tmp_path / "widgets", remote)  # pytest's tmp_path is under /tmp
    assert str(repo).startswith(("/tmp/", "/var/folders/", "/private/"))
    (repo / "src").mkdir()
    _, [t] = ingest_file(claude_session(corpus, repo / "src", tmp_path / "session.jsonl"))
    assert t.repo == ("acme/widgets" if remote else "widgets")


def test_a_gone_or_placeholder_folder_is_left_to_the_sessions_own_evidence(tmp_path: Path) -> None:
    assert on_disk(str(tmp_path / "gone")) is None
    assert on_disk(None) is None and on_disk("relative/path") is None
    placeholder = checkout(tmp_path / "repo", None)  # 'repo' names nothing
    assert on_disk(str(placeholder)) is None
    assert on_disk("/") is None


def test_repos_map_names_moved_and_anonymised_folders(corpus: Path, tmp_path: Path) -> None:
    session = claude_session(corpus, Path("/home/user/scratch/api-7f3e/server"), tmp_path / "s.jsonl")
    for key in ("/home/user/scratch/api-*", "/home/user/scratch/api-7f3e", str(tmp_path)):  # glob, folder, file's
        _, [t] = ingest_file(session, locator=Locator({key: "acme/api"}))
        assert t.repo == "acme/api", key
    _, [t] = ingest_file(session, locator=Locator({"/home/user/other": "acme/other"}))
    assert t.repo != "acme/other"


def test_a_remapped_session_is_another_trajectory(corpus: Path, tmp_path: Path) -> None:
    """The id hashes the repository: a session filed elsewhere is distilled again there."""
    session = claude_session(corpus, Path("/home/user/p"), tmp_path / "s.jsonl")
    _, [plain] = ingest_file(session)
    _, [mapped] = ingest_file(session, locator=Locator({"/home/user/p": "acme/p"}))
    assert plain.id != mapped.id and mapped.session_id == plain.session_id


def test_why_unknown_says_what_would_give_a_repository(tmp_path: Path) -> None:
    reason, fix = why_unknown("/tmp/tmpab12cd34", None)
    assert "temporary folder that is gone" in reason and "repos_map" in fix and "/tmp/tmpab12cd34" in fix
    reason, _ = why_unknown("/Users/me/repo", None)
    assert "says nothing" in reason
    reason, fix = why_unknown(None, "/logs/aider/.aider.chat.history.md")
    assert "no working folder" in reason and '"/logs/aider"' in fix
    (tmp_path / "notes").mkdir()
    assert "no git checkout" in why_unknown(str(tmp_path / "notes"), None)[0]


def test_run_files_sessions_by_the_map_and_show_says_why_when_none(corpus: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "skillmill.toml").write_text('[sources]\nrepos_map = { "/home/user/p*" = "acme/p" }\n')
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    claude_session(corpus, Path("/home/user/p1"), sessions / "mapped.jsonl")
    claude_session(corpus, Path("/tmp/tmpzz99yy88"), sessions / "lost.jsonl")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SKILLMILL_HOME": str(home), "HOME": str(tmp_path),
           "SKILLMILL_SERVER_IDLE_MINUTES": "0", "SKILLMILL_WARM": "0"}

    def skillmill(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True, env=env,
                              cwd=ROOT, timeout=600)

    done = skillmill("run", str(sessions), "--json", "--library", str(tmp_path / "lib"))
    assert done.returncode == 0, done.stderr
    import duckdb

    with duckdb.connect(str(home / "skillmill.duckdb"), read_only=True) as con:
        rows = dict(con.execute("SELECT cwd, id FROM trajectories").fetchall())
        repos = dict(con.execute("SELECT cwd, repo FROM trajectories").fetchall())
    assert repos["/home/user/p1"] == "acme/p" and repos["/tmp/tmpzz99yy88"] is None
    shown = skillmill("show", rows["/tmp/tmpzz99yy88"])
    assert "why: it ran in /tmp/tmpzz99yy88, a temporary folder that is gone" in shown.stdout, shown.stdout
    assert "repos_map" in shown.stdout
    as_json = json.loads(skillmill("show", rows["/tmp/tmpzz99yy88"], "--json").stdout)
    assert as_json["repo_unknown"]["fix"].startswith("map its folder")
    assert json.loads(skillmill("show", rows["/home/user/p1"], "--json").stdout)["repo_unknown"] is None


def test_a_session_file_deep_inside_another_checkout_is_not_its_session(corpus: Path, tmp_path: Path) -> None:
    """skillmill's own clone holds samples/aider/<x>/.aider.chat.history.md: those are Monochromatic's."""
    clone = checkout(tmp_path / "skillmill", "https://github.com/example/skillmill.git")
    (clone / "samples" / "aider" / "mono").mkdir(parents=True)
    shutil.copy(corpus / AIDER, clone / "samples" / "aider" / "mono" / ".aider.chat.history.md")
    _, found = ingest_file(clone / "samples" / "aider" / "mono" / ".aider.chat.history.md")
    assert found and "example/skillmill" not in {t.repo for t in found}


@pytest.mark.parametrize("a, b, same", [
    ("acme/hang", "acme/hang", True), ("Acme/Hang", "acme/hang/", True), ("acme/hang", "hang", True),
    ("hang", "acme/hang", True), ("evil/hang", "acme/hang", False), ("acme/hang", "acme/hangs", False),
    (None, "hang", False), ("", "", False),
])
def test_two_owners_repositories_of_one_name_are_not_one(a: str | None, b: str, same: bool) -> None:
    """The second attack: a checkout whose remote is evil/hang marked acme/hang's skill stale for every checkout."""
    from pipeline.checkout import same_repository
    from pipeline.recall.text import repo_matches
    from pipeline.scan.stale import same_repo

    assert same_repository(a, b) is same and repo_matches(a, b) is same and same_repo(a, b) is same
