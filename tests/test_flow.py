"""The nightly flow end to end, under a Prefect test server, on the sample sessions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from skills_ref.validator import validate

from pipeline.cli import main
from pipeline.index.state import StateDB
from pipeline.library import Library
from tests.conftest import SAMPLES

pytestmark = pytest.mark.usefixtures("prefect_server")

MANUALS = ["working-in-django", "working-in-flask", "working-in-matplotlib",
           "working-in-monochromatic2025may24-pnpmtest", "working-in-sympy"]


def run(*args: str) -> tuple[int, str, dict]:
    result = CliRunner().invoke(main, ["run", "--json", *args], catch_exceptions=False)
    summary = json.loads(result.output.strip().splitlines()[-1])
    return result.exit_code, result.output, summary


def test_samples_become_valid_candidate_skills_and_a_rerun_changes_nothing(tmp_path: Path) -> None:
    library = tmp_path / "skills"
    code, output, summary = run(str(SAMPLES), "--library", str(library))
    assert code == 0, output
    # 7 mini-swe-agent runs, 2 Claude Code sessions (one holds 2 inline subagent runs, each its own
    # trajectory) and an aider history of 25 requests (one trajectory per request).
    assert summary["trajectories"] == {"seen": 36, "new": 36, "failed": 0, "deferred": 0}
    # One manual per repository, none per session.
    assert summary["written"] == MANUALS and summary["skills"]["proposed"] == 5 and summary["errors"] == []
    # The Claude Code sessions ran in a placeholder folder (/path/to/Demo): no repository, nothing to file.
    placeholder = [n for n in summary["nothing_reusable"] if "no repository known" in n["reason"]]
    assert len(placeholder) == 4
    stored = list(Library(library))
    assert {s.skill.name for s in stored} == set(summary["written"])
    for entry in stored:
        assert entry.skill.status == "candidate" and validate(entry.path) == []
    mtimes = {p: p.stat().st_mtime_ns for p in library.rglob("SKILL.md")}

    code, _, again = run(str(SAMPLES), "--library", str(library))
    assert code == 0
    assert again["trajectories"]["new"] == 0 and again["skills"] == {"proposed": 0, "updated": 0, "unchanged": 0}
    assert {p: p.stat().st_mtime_ns for p in library.rglob("SKILL.md")} == mtimes

    with StateDB() as state:
        assert state.count("trajectories") == 36
        assert state.count("steps") > 300
        assert state.count("runs") == 2
        links = state.con.execute("SELECT count(*) FROM skill_sources").fetchone()[0]
        assert links >= len(stored)


def test_recall_after_a_run_serves_only_approved_skills(tmp_path: Path) -> None:
    library = tmp_path / "skills"
    run(str(SAMPLES), "--library", str(library))
    runner = CliRunner()
    query = "how do I run the tests in this repository"  # what every manual answers, each for its repository
    approved_only = json.loads(runner.invoke(main, ["recall", "--json", query]).output)
    assert approved_only == {"query": query, "results": [], "truncated": False}
    with_candidates = json.loads(runner.invoke(main, ["recall", "--json", "--include-candidates", query]).output)
    assert with_candidates["results"]
    for hit in with_candidates["results"]:
        assert set(hit) == {"name", "path", "score", "description", "status"}
        assert Path(hit["path"], "SKILL.md").is_file()
    brief = runner.invoke(main, ["recall", "--include-candidates", "--limit", "2", query]).output
    listed = [line for line in brief.splitlines() if line.startswith("- **") and "** (candidate) — " in line]
    assert brief.startswith("## Skills for:") and len(listed) == 2  # then the best bodies that fit the budget


def test_a_partly_bad_input_exits_1_and_keeps_the_rest(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    shutil.copytree(SAMPLES / "mini_swe_agent", inputs)
    (inputs / "broken.traj.json").write_text('{"info": {"mini_version": "1"}, "messages": [')
    code, output, summary = run(str(inputs), "--library", str(tmp_path / "skills"))
    assert code == 1
    assert summary["files"]["failed"] == 1 and summary["trajectories"]["seen"] == 7  # the 7 readable runs
    assert summary["errors"][0]["path"].endswith("broken.traj.json")
    assert "Traceback" not in output


def test_the_flow_is_callable_as_a_library(tmp_path: Path) -> None:
    from flows.nightly import nightly

    summary = nightly(paths=[str(SAMPLES / "claude_code")], library=str(tmp_path / "lib"))
    assert summary["exit_code"] == 0 and summary["trajectories"]["seen"] == 4  # 2 sessions + 2 subagent runs
    assert summary["server"] is None and summary["wall_s"] is None  # not `skillmill run`: no start-up to report


def test_nothing_reusable_is_counted_by_reason_and_listed_with_file_and_task_under_v(tmp_path: Path) -> None:
    """Issue 15: "Nothing reusable in 736 trajectories" then 736 lines; now counts, and the list with -v."""
    library = tmp_path / "skills"
    code, output, summary = run(str(SAMPLES), "--library", str(library))
    items = summary["nothing_reusable"]
    assert code == 0 and items
    counts: dict[str, int] = {}
    for item in items:
        counts[item["reason"]] = counts.get(item["reason"], 0) + 1
        assert Path(item["path"]).is_file() and Path(item["path"]).is_relative_to(SAMPLES) and item["task"]
    lines = output.splitlines()
    start = lines.index(f"Nothing reusable in {len(items)} trajectories (-v lists them, with file and task):")
    width = len(str(max(counts.values())))
    expected = [f"  {n:>{width}}  {reason}" for reason, n in sorted(counts.items(), key=lambda p: (-p[1], p[0]))]
    assert lines[start + 1:start + 1 + len(counts)] == expected
    assert not any(item["trajectory"] in output.rsplit("\n", 2)[0] for item in items)  # no ids but in the JSON

    shutil.rmtree(library)
    shutil.rmtree(tmp_path / "home")
    code, output, again = run(str(SAMPLES), "--library", str(library), "-v")
    lines = output.splitlines()
    start = lines.index(f"Nothing reusable in {len(items)} trajectories:")
    assert lines[start + 1:start + 1 + len(items)] == [
        f"  {i['trajectory']}  {i['reason']}  {i['path']}  {i['task']}" for i in again["nothing_reusable"]]
