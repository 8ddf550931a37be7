"""The model's notes become the repository facts the heuristics give: grounded, real, not twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.distill.analysis import analyze
from pipeline.distill.facts import repo_facts
from pipeline.distill.llm.extract import assemble, jobs
from pipeline.distill.llm.schema import Extraction
from pipeline.ingest import ingest_file
from tests.plant import plant_checkout

CODEMIE = "claude_code/codemie-code/session-196820da.jsonl"
MATPLOTLIB = "mini_swe_agent/swebench_verified_gemini-3-pro/unresolved/matplotlib__matplotlib-21568.traj.json"
PONYC = "openhands/eval_output/multi_swe_bench_output.jsonl"
DVIPNG = "RuntimeError: Failed to process string with tex because dvipng could not be found"
NOT_TOLD = "we don't control claude code process - it's 3rd party tool that codemie cli is calling"


@pytest.fixture(scope="module")
def matplotlib(corpus: Path):
    return ingest_file(corpus / MATPLOTLIB)[1][0]


def test_a_correction_gets_the_fields_and_context_the_heuristics_give_theirs(corpus: Path, tmp_path: Path) -> None:
    [t] = ingest_file(plant_checkout(tmp_path, corpus / CODEMIE, "codemie-code"))[1]
    told = Extraction(corrections=[{"quote": NOT_TOLD}, {"quote": "don't produce code, design solution first",
                                                         "step": 103}])
    assembled = assemble(t, [told], "openai/x")
    [theirs] = [f for f in repo_facts(analyze(t)) if f.kind == "correction"]
    assert theirs.text == "don't produce code, design solution first"  # the heuristics' own: kept, not doubled
    mine = [f for f in assembled.facts if f.kind == "correction"]
    assert [f.text for f in mine] == [theirs.text, NOT_TOLD]
    added = mine[1]
    assert added.steps[0] == 101 and added.template == NOT_TOLD.lower()  # found without a step number
    same = ("trajectory", "repo", "agent", "outcome", "task", "when", "paths", "symptom")
    assert {k: getattr(added, k) for k in same} == {k: getattr(theirs, k) for k in same}
    assert added.repo == "codemie-code" and added.when == "2026-01-08"
    assert assembled.reason == "model: no skill draft, only notes for the manual" and assembled.report.removed == []


def test_a_session_without_a_repository_gives_no_facts(corpus: Path) -> None:
    [t] = ingest_file(corpus / CODEMIE)[1]
    assert t.repo is None
    assembled = assemble(t, [Extraction(corrections=[{"quote": NOT_TOLD, "step": 101}])], "openai/x")
    assert assembled.facts == [] and assembled.report.checked == 0


def test_commands_and_fixes_are_the_runs_that_show_them_working(matplotlib) -> None:
    heuristic = repo_facts(analyze(matplotlib))
    notes = Extraction(
        fixes=[{"error": DVIPNG, "command": "apt-get install -y dvipng", "steps": [23]},  # part of what ran
               {"error": DVIPNG, "command": 'which latex || echo "latex not found"', "steps": [5]}],  # before it
        commands=[{"purpose": "lint", "command": "pytest lib/matplotlib/tests/test_dates.py", "steps": [59]},
                  {"purpose": "install", "command": "python reproduce_issue.py", "steps": [26]}])
    assembled = assemble(matplotlib, [notes], "openai/x")
    # the heuristics saw the same fix and the same test run (its purpose is the classifier's): nothing twice
    assert assembled.facts == heuristic
    assert assembled.report.removed == [
        'fix 2: the command `which latex || echo "latex not found"` never ran after the error',
        "command 2: the command `python reproduce_issue.py` is a one-off (a scratch script or a temporary path), "
        "not the repository's"]


def test_a_command_no_run_shows_working_is_left_out(corpus: Path) -> None:
    t = next(t for t in ingest_file(corpus / PONYC)[1] if t.id == "6079eab6c962d4e1")
    notes = Extraction(commands=[{"purpose": "build", "command": "cd build/build_release && cmake -B . -S .",
                                  "steps": [124]}])  # CMake Error at CMakeLists.txt:27 (find_package)
    assembled = assemble(t, [notes], "openai/x")
    assert assembled.facts == repo_facts(analyze(t))
    assert assembled.report.removed == ["command 1: no run of the command `cd build/build_release && cmake -B . "
                                        "-S .` shows it working"]


def test_a_short_request_of_a_launch_is_not_sent_yet_its_correction_reaches_the_manual(corpus: Path) -> None:
    """aider's "don't use --no-git in those tests" is a request of two edits in a launch: the heuristics read
    it for the user's correction, but it is not worth a request of its own (~8 KB of prompt for two calls)."""
    found = ingest_file(corpus / "aider/aider-repo/tests_fixtures_chat-history.md")[1]
    t = next(t for t in found if t.session_id == "2024-08-06T08:55:14#1.2")
    assert t.parent_session_id and len(t.tool_calls()) == 2
    assert jobs(t, "openai/x") == []
    assembled = assemble(t, [], "openai/x")
    assert assembled.reason == "not sent to the model: too short to generalize (2 tool calls)"
    assert [f.text for f in assembled.facts if f.kind == "correction"] == ["don't use --no-git in those tests"]
