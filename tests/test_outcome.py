"""Outcome inference on real trajectories: which evidence decides, and that it says so."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from pipeline.ingest import ingest_file, iter_files
from pipeline.ingest.outcome import exit_status_outcome
from pipeline.ingest.verification import analyze, is_test_path, reaction

SWE = "mini_swe_agent/swebench_verified_gemini-3-pro"
CC = "claude_code"


def hidden(corpus: Path, tmp_path: Path, name: str):  # type: ignore[no-untyped-def]
    """A mini-swe-agent run copied without its report.json: only the trajectory can speak."""
    [source] = (corpus / SWE).glob(f"*/{name}.traj.json")
    shutil.copy(source, tmp_path / source.name)
    report, [trajectory] = ingest_file(tmp_path / source.name)
    assert report.status == "ok" and trajectory.outcome.source == "heuristic"
    return trajectory


def test_the_label_beside_a_run_wins(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / SWE / "unresolved/django__django-10999.traj.json")
    assert t.outcome.source == "label" and t.outcome.status == "failed"


def test_a_passing_project_check_after_the_last_change_resolves(corpus: Path, tmp_path: Path) -> None:
    t = hidden(corpus, tmp_path, "django__django-16255")
    assert t.outcome.status == "resolved"
    assert t.outcome.evidence.startswith("the last check after the last change passed")
    check = t.steps[t.outcome.step]
    assert check.command == "python3 tests/runtests.py sitemaps_tests"
    v = analyze(t)
    assert v.files == {"django/contrib/sitemaps/__init__.py"} and check.index > v.last_change


def test_the_agents_own_scripts_are_not_project_checks(corpus: Path, tmp_path: Path) -> None:
    t = hidden(corpus, tmp_path, "pytest-dev__pytest-7205")
    v = analyze(t)
    commands = [c.call.command for c in v.checks]
    assert "python3 -m pytest testing/test_setuponly.py" in commands
    assert not any("reproduce_issue.py" in c or "test_types.py" in c for c in commands)  # created, then removed


def test_a_throwaway_test_module_named_by_label_is_not_a_project_check(corpus: Path, tmp_path: Path) -> None:
    t = hidden(corpus, tmp_path, "django__django-10999")  # tests/utils_tests/test_dateparse_negative_duration.py
    commands = [c.call.command for c in analyze(t).checks]
    assert commands == ["python3 tests/runtests.py utils_tests.test_dateparse",
                        "python3 tests/runtests.py utils_tests.test_duration"]


def test_a_script_the_agent_wrote_to_patch_the_code_is_a_change(corpus: Path, tmp_path: Path) -> None:
    t = hidden(corpus, tmp_path, "scikit-learn__scikit-learn-26194")
    v = analyze(t)
    [change] = v.change_steps
    assert "apply_fix.py" in t.steps[change].command and "sklearn/metrics/_ranking.py" in t.steps[change].command
    assert t.outcome.step is not None and t.outcome.step > change


def test_rewriting_existing_tests_leaves_a_submission_unknown_never_resolved(corpus: Path, tmp_path: Path) -> None:
    t = hidden(corpus, tmp_path, "matplotlib__matplotlib-21568")
    assert t.outcome.status == "unknown"  # its checks passed, against expectations it chose: no verdict
    assert "rewrites existing tests (lib/matplotlib/tests/test_dates.py)" in t.outcome.evidence
    added_only = hidden(corpus, tmp_path, "scikit-learn__scikit-learn-12585")  # adds a test, changes none
    assert analyze(added_only).rewritten_tests == [] and added_only.outcome.status == "resolved"


def test_a_submission_no_project_check_covered_is_unknown_not_failed(corpus: Path, tmp_path: Path) -> None:
    t = hidden(corpus, tmp_path, "pylint-dev__pylint-7277")
    assert t.outcome.status == "unknown"
    assert t.outcome.evidence.startswith("submitted without any project test or build covering the change")
    assert "only its own scripts ran after the last change" in t.outcome.evidence


def test_a_check_that_failed_before_the_last_edit_is_no_verdict(corpus: Path, tmp_path: Path) -> None:
    t = hidden(corpus, tmp_path, "psf__requests-1766")  # resolved by its label
    assert t.outcome.status == "unknown"
    assert "its project checks failed after the change (`python3 test_requests.py`), none ran after its last edit" \
        in t.outcome.evidence


def test_failed_by_heuristic_means_a_project_check_failed_after_the_last_change(corpus: Path) -> None:
    _, found = ingest_file(corpus / CC / "claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
    [t] = [t for t in found if t.outcome.status == "failed"]
    assert t.outcome.evidence == "the last check after the last change failed: `npm run build`"
    check = t.steps[t.outcome.step]
    assert t.result_of(check).exit_code == 1 and check.index > analyze(t).last_change


def test_an_empty_submission_is_no_verdict_and_a_tests_only_fix_is_not_test_rewriting(corpus: Path) -> None:
    _, [empty] = ingest_file(corpus / "mini_swe_agent/tests_test_data/local.traj.json")
    assert empty.outcome.status == "unknown" and "submitted nothing" in empty.outcome.evidence
    _, [fixture] = ingest_file(corpus / "mini_swe_agent/tests_test_data/github_issue.traj.json")
    assert analyze(fixture).rewritten_tests == [] and fixture.outcome.status == "resolved"


def test_an_exit_status_that_stopped_the_agent_is_a_failure(corpus: Path, tmp_path: Path) -> None:
    data = json.loads((corpus / SWE / "resolved/django__django-16255.traj.json").read_text())
    data["info"]["exit_status"] = "LimitsExceeded"
    (tmp_path / "run.traj.json").write_text(json.dumps(data))
    _, [t] = ingest_file(tmp_path / "run.traj.json")
    assert t.outcome.status == "failed" and t.outcome.evidence == "the agent was stopped: exit status LimitsExceeded"
    assert exit_status_outcome("Submitted") is None and exit_status_outcome(None) is None
    assert exit_status_outcome("exit_cost").status == "failed"  # SWE-agent's cost limit


def test_the_persons_last_reaction_decides_when_nothing_changed_after_it(corpus: Path, tmp_path: Path) -> None:
    # The orchestrator session, up to the person's "Thanks! Please update CLAUDE.md ..." (after it,
    # the agent writes CLAUDE.md: a change the reaction does not cover, so the whole file stays unknown).
    source = corpus / CC / "claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    lines = source.read_bytes().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if b'"content":"Thanks! Please update CLAUDE.md' in line)
    (tmp_path / "s.jsonl").write_bytes(b"".join(lines[: cut + 1]))
    for path, expected in ((tmp_path / "s.jsonl", "resolved"), (source, "unknown")):
        _, found = ingest_file(path)
        [t] = [t for t in found if t.parent_session_id is None]  # the main session, not its subagents
        assert t.outcome.status == expected, path
    _, found = ingest_file(tmp_path / "s.jsonl")
    [t] = [t for t in found if t.parent_session_id is None]
    assert "Thanks!" in t.outcome.evidence
    assert t.steps[t.outcome.step].text.startswith("Thanks! Please update CLAUDE.md")


def test_a_complaint_followed_by_more_edits_is_not_the_verdict(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / CC / "codemie-code/session-3fe1b6bc.jsonl")
    v = analyze(t)
    [(complaint, verdict)] = v.reactions
    assert verdict == "negative" and complaint.text.startswith("TODO is not acceptable")
    assert v.last_change > complaint.index and t.outcome.status == "unknown"


def test_a_complaint_as_the_last_word_fails_the_session(corpus: Path, tmp_path: Path) -> None:
    source = corpus / CC / "codemie-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"
    lines = source.read_text().splitlines()
    _, [before] = ingest_file(source)
    assert before.outcome.status == "unknown"  # edits, no check, no reaction: a person was there
    first = next(e for e in map(json.loads, lines) if e["type"] == "user")  # the person's first message
    complaint = {**first, "uuid": "a8f5f167-0000-4000-8000-000000000001", "parentUuid": json.loads(lines[-1])["uuid"],
                 "timestamp": "2025-12-10T19:45:00.000Z",
                 "message": {"role": "user", "content": "it doesn't work, hello.py prints nothing"}}
    (tmp_path / "s.jsonl").write_text("\n".join([*lines, json.dumps(complaint)]) + "\n")
    _, [t] = ingest_file(tmp_path / "s.jsonl")
    assert t.outcome.status == "failed" and "it doesn't work" in t.outcome.evidence


@pytest.mark.parametrize(("path", "test"), [
    ("tests/model_fields/tests.py", True), ("lib/matplotlib/tests/test_dates.py", True), ("src/app.test.ts", True),
    ("pkg/server_test.go", True), ("conftest.py", True), ("src/_pytest/capture.py", False),
    ("sklearn/metrics/_ranking.py", False)])
def test_test_paths(path: str, test: bool) -> None:
    assert is_test_path(path) is test


@pytest.mark.parametrize(("text", "verdict"), [
    ("Thanks! Please update CLAUDE.md for current changes", "positive"), ("perfect, that works", "positive"),
    ("LGTM", "positive"), ("it doesn't work, hello.py prints nothing", "negative"),
    ("still failing on CI", "negative"), ("TODO is not acceptable, implementation must be full.", "negative"),
    ("no, it's not phase 1 there bunch of pahses completed", "negative"),
    ("great, but keep in mind that new file will be at the same folder", None),
    ("No tests exist yet, add them", None), ("now add a --json flag", None), ("works on linux but not on mac", None)])
def test_reactions_are_read_from_the_opening_of_a_message(text: str, verdict: str | None) -> None:
    assert reaction(text) == verdict


MARSHMALLOW = "marshmallow-code__marshmallow-1867"


def test_swe_agent_replays_that_fix_the_bug_are_not_failed(corpus: Path) -> None:
    """The marshmallow-1867 replays fix the bug and show it (344 -> 345); SWE-agent records no exit
    codes and no project test ran, so no verdict -- never "failed", which taught a wrong lesson."""
    replays = sorted((corpus / "swe_agent").glob(f"*/replay__{MARSHMALLOW}_*/**/{MARSHMALLOW}.traj"))
    assert len(replays) == 11  # 8 demonstrations and 3 legacy v0.7.0 runs replaying the same fix
    for path in replays:
        _, [t] = ingest_file(path)
        assert t.outcome.status == "unknown", path
        assert t.outcome.evidence == ("submitted without any project test or build covering the change: only "
                                      "scripts whose result is not recorded ran after the last change (1)"), path
        after = [c for c in t.tool_calls() if c.index > analyze(t).last_change]
        assert [c.command or c.text for c in after] == ["python reproduce.py", "rm reproduce.py", "submit"]
        shown = t.result_of(after[0])
        assert shown.text.strip() == "345" and shown.exit_code is None  # fixed, and shown; no status to read


def test_heuristic_failures_in_the_corpus_are_all_real(corpus: Path) -> None:
    """Every heuristic "failed" in the corpus is a real failure: here, always a project check that
    failed after the last change (a person's complaint or a run stopped by a limit would be too).

    Aider's history is read one trajectory per request: the launch that wrote the YAML config test is
    two requests now, in each of which that test (`-k test_yaml_config_file_loading`) failed after the
    last change to the code."""
    failed = []
    for path in iter_files([corpus]):
        _, found = ingest_file(path)
        failed += [t for t in found if t.outcome.status == "failed" and t.outcome.source == "heuristic"]
    assert Counter(t.source_format for t in failed) == {"aider": 5, "openhands": 2, "claude-code": 1}
    for t in failed:
        assert t.outcome.evidence.startswith("the last check "), t.outcome.evidence
        check = t.steps[t.outcome.step]
        assert t.result_of(check).exit_code not in (None, 0)
