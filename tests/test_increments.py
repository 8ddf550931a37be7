"""Nightly runs read only what is new: discovery, deferral, grown sessions superseding old versions."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.index.state import StateDB
from pipeline.ingest import ingest_file
from pipeline.ingest import tables as ingest_tables
from pipeline.library import Library

pytestmark = pytest.mark.usefixtures("prefect_server")

ORCHESTRATOR = "claude_code/claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
SMALL = "claude_code/codemie-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"
MANUAL = "working-in-todo-board"


def run(*args: str) -> tuple[int, str, dict]:
    result = CliRunner().invoke(main, ["run", "--json", *args], catch_exceptions=False)
    return result.exit_code, result.output, json.loads(result.output.strip().splitlines()[-1])


def in_a_named_checkout(session: Path) -> list[bytes]:
    """The session's lines as if run in ``/home/dev/todo-board``.

    The corpus anonymised the project folder to ``/path/to/Demo``, a placeholder that names no
    repository, so the session would give no manual at all; a real checkout has a name.
    """
    return [line.replace(b"/path/to/Demo", b"/home/dev/todo-board")
            for line in session.read_bytes().splitlines(keepends=True)]


def test_a_grown_session_is_read_from_where_it_stopped_and_supersedes_its_old_version(
        corpus: Path, tmp_path: Path) -> None:
    # The orchestrator session: a main session and its inline subagent runs (each a trajectory).
    lines = in_a_named_checkout(corpus / ORCHESTRATOR)
    folder, library = tmp_path / "projects", tmp_path / "skills"
    folder.mkdir()
    live = folder / "session.jsonl"
    live.write_bytes(b"".join(lines[:250]))
    before = {t.session_id: t.id for t in ingest_file(live)[1]}
    code, output, first = run(str(folder), "--library", str(library))
    assert code == 0, output
    assert first["increments"]["new"] == 1 and first["trajectories"]["new"] == len(before)
    assert first["written"] == [MANUAL], "the first half already gives its repository's manual"

    code, _, again = run(str(folder), "--library", str(library))
    assert again["files"]["unchanged"] == 1 and again["files"]["seen"] == 0 and again["trajectories"]["seen"] == 0

    with live.open("ab") as handle:
        for line in lines[250:]:
            handle.write(line)
    after = {t.session_id: t.id for t in ingest_file(live)[1]}
    grown_sessions = {s for s in before if after[s] != before[s]}
    assert grown_sessions, "the main session (at least) went on after line 250"
    code, output, grown = run(str(folder), "--library", str(library))
    assert code == 0, output
    assert grown["increments"] == {"new": 0, "appended": 1, "reread": 0, "superseded": len(grown_sessions)}
    assert grown["trajectories"]["new"] == len(set(after.values()) - set(before.values()))

    with StateDB() as state:
        lineage = dict(state.con.execute("SELECT trajectory_id, superseded_by FROM trajectory_lineage").fetchall())
        assert lineage == {before[s]: after[s] for s in grown_sessions}
        distilled = {r[0] for r in state.con.execute("SELECT trajectory_id FROM distillations").fetchall()}
        assert set(before.values()) | set(after.values()) <= distilled, "the old versions' history is kept"
        steps = dict(state.con.execute("SELECT id, steps FROM trajectories").fetchall())
        assert all(steps[new] > steps[old] for old, new in lineage.items())
        (mark,) = ingest_tables.watermarks(state, [str(live)]).values()
        assert mark.offset == live.stat().st_size and sorted(mark.trajectories) == sorted(after.values())
    current = set(after.values())
    for entry in Library(library).entries():
        skill = entry.skill
        assert set(skill.trajectory_ids()) <= current, f"{skill.name} still cites a superseded version"
    for name in first["written"]:  # a grown session's skill is updated in place, never forked
        skill = Library(library).get(name).skill
        if set(skill.trajectory_ids()) & {after[s] for s in grown_sessions}:
            assert skill.version == 2, name
    assert not any(name.endswith(tuple(f"-{after[s][:6]}" for s in grown_sessions))
                   for name in grown["written"]), "no second skill for the same session"


def test_a_copy_of_a_stored_session_is_not_stored_again(corpus: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        folder.mkdir()
        shutil.copy2(corpus / SMALL, folder / "s.jsonl")
    run(str(first), "--library", str(tmp_path / "skills"))
    _, _, summary = run(str(second), "--library", str(tmp_path / "skills"))
    assert summary["trajectories"]["seen"] == 1 and summary["trajectories"]["new"] == 0
    with StateDB() as state:
        assert state.count("trajectories") == 1 and state.count("file_watermarks") == 2


def test_run_with_no_paths_discovers_defers_active_sessions_and_skips_ignored_ones(
        corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> None:
    home = tmp_path / "user"
    projects = home / ".claude/projects"
    (projects / "-work-app").mkdir(parents=True)
    (projects / "-work-secret").mkdir()
    shutil.copy(corpus / SMALL, projects / "-work-app/done.jsonl")
    shutil.copy(corpus / ORCHESTRATOR, projects / "-work-app/active.jsonl")  # written just now
    shutil.copy(corpus / ORCHESTRATOR, projects / "-work-secret/private.jsonl")
    day_ago = time.time() - 86_400  # not the corpus files' own mtimes: a fresh checkout has new ones
    for quiet in ("-work-app/done.jsonl", "-work-secret/private.jsonl"):
        os.utime(projects / quiet, (day_ago, day_ago))
    monkeypatch.setenv("HOME", str(home))
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "skillmill.toml").write_text('[sources]\nignore_paths = ["/work/secret"]\n')
    library = str(tmp_path / "skills")

    code, output, summary = run("--library", library)
    assert code == 0, output
    assert summary["trajectories"] == {"seen": 1, "new": 1, "failed": 0, "deferred": 1}
    assert [d["path"] for d in summary["deferred"]] == [str(projects / "-work-app/active.jsonl")]
    assert "Still being written" in output and "active.jsonl" in output

    old = (projects / "-work-app/done.jsonl").stat().st_mtime
    os.utime(projects / "-work-app/active.jsonl", (old, old))  # the session has been quiet since
    code, _, summary = run("--library", library)
    sessions = len(ingest_file(projects / "-work-app/active.jsonl")[1])  # the main one and its subagents
    assert summary["trajectories"]["deferred"] == 0 and summary["trajectories"]["new"] == sessions
    assert summary["files"]["unchanged"] == 1
    with StateDB() as state:
        paths = {r[0] for r in state.con.execute("SELECT source_path FROM trajectories").fetchall()}
    assert paths == {str(projects / "-work-app/done.jsonl"), str(projects / "-work-app/active.jsonl")}


def test_a_manual_drafted_from_a_cut_short_session_is_rebuilt_from_the_whole_one(
        corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session no longer gives a candidate of its own (issue 13), so there is no stale ``pitfalls-`` draft
    of a failed first half to withdraw. What a grown session leaves behind now is its old version's facts
    in its repository's manual. Cut at line 290, the orchestrator's subagent ``sidechain-0d692b0f`` has run
    ``npx tsc --noEmit --skipLibCheck`` once, and the manual cites that version. Whole, the subagent goes
    on: the manual is rebuilt in place from the new version, the old one's facts no longer count (they
    would add a second session to a line), and it reads as a run over the whole session alone writes it."""
    from pipeline.cli import main as cli

    lines = in_a_named_checkout(corpus / ORCHESTRATOR)
    folder, library = tmp_path / "projects", tmp_path / "skills"
    folder.mkdir()
    live = folder / "session.jsonl"
    live.write_bytes(b"".join(lines[:290]))
    cut = {t.session_id: t.id for t in ingest_file(live)[1]}
    code, output, first = run(str(folder), "--library", str(library))
    assert code == 0, output
    assert first["written"] == [MANUAL]
    subagent = next(s for s in cut if s.startswith("sidechain-0d692b0f"))
    assert cut[subagent] in Library(library).get(MANUAL).skill.trajectory_ids(), "drafted from the cut version"

    live.write_bytes(b"".join(lines))
    whole = {t.session_id: t.id for t in ingest_file(live)[1]}
    assert whole[subagent] != cut[subagent]
    code, output, grown = run(str(folder), "--library", str(library))
    assert code == 0, output
    assert grown["increments"]["superseded"] >= 1 and grown["written"] == [MANUAL]
    assert grown["withdrawn"] == [], "the manual is the repository's, not the old version's: rebuilt, not withdrawn"
    queue = json.loads(CliRunner().invoke(cli, ["review", "list", "--json", "--library", str(library)]).output)
    assert [(i["name"], i["version"]) for i in queue] == [(MANUAL, 2)], "one candidate, updated in place"
    skill = Library(library).get(MANUAL).skill
    cited = set(skill.trajectory_ids()) | {e.trajectory for i in [*skill.procedure, *skill.pitfalls]
                                           for e in i.evidence}
    assert whole[subagent] in cited and cut[subagent] not in cited
    assert cited <= set(whole.values()), "nothing of a superseded version is cited"
    assert Library(library).history.versions(MANUAL) == [1, 2], "the cut version's text is kept for `review restore`"

    # The superseded version's facts no longer count: the manual is the one the whole session alone gives.
    monkeypatch.setenv("SKILLMILL_HOME", str(tmp_path / "fresh-home"))
    fresh_folder, fresh_library = tmp_path / "fresh", tmp_path / "fresh-skills"
    fresh_folder.mkdir()
    (fresh_folder / "session.jsonl").write_bytes(b"".join(lines))
    code, output, fresh = run(str(fresh_folder), "--library", str(fresh_library))
    assert code == 0 and fresh["written"] == [MANUAL], output
    assert Library(fresh_library).get(MANUAL).skill == skill.model_copy(update={"version": 1})
