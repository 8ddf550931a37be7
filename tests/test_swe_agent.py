"""SWE-agent .traj files: the 27 real ones in ../shared/trajectories/swe_agent (1.x and 0.7)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from pipeline.distill import distill
from pipeline.distill.analysis import analyze
from pipeline.ingest import ingest_file, iter_files
from pipeline.ingest.formats._common import exit_code_from_output
from pipeline.trajectory import Outcome, StepKind

ROOT = "swe_agent"
FC = ("demonstrations/replay__marshmallow-code__marshmallow-1867__function_calling_replace__install-1/"
      "marshmallow-code__marshmallow-1867.traj")
PYDICOM = ("tests_test_data/gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1/"
           "pydicom__pydicom-1458.traj")
TEST_REPO = ("tests_test_data/gpt4__swe-agent-test-repo__default_from_url__t-0.00__p-0.95__c-3.00__install-1/"
             "6e44b9__sweagenttestrepo-1c2844.traj")


def real_files(corpus: Path) -> list[Path]:
    return sorted((corpus / ROOT).rglob("*.traj"))


def raw_actions(data: dict) -> list[str]:
    """What the agent did, straight from the JSON: trajectory actions, or history calls when it is empty."""
    steps = [s["action"].strip() for s in data.get("trajectory") or [] if s["action"].strip()]
    if steps:
        return steps
    return [item.get("action", "").strip() for item in data.get("history", [])
            if item.get("role") == "assistant" and not item.get("is_demo")
            for _ in (item.get("tool_calls") or [None])]


def test_directory_walking_finds_every_traj_file(corpus: Path) -> None:
    walked = [p for p in iter_files([corpus / ROOT]) if p.suffix == ".traj"]
    assert sorted(walked) == real_files(corpus) and len(walked) == 27


def test_every_real_file_is_ok_with_all_its_actions_paired(corpus: Path) -> None:
    files = real_files(corpus)
    read = 0
    for path in files:
        report, trajectories = ingest_file(path)
        assert (report.status, report.format) == ("ok", "swe-agent"), (path, report.errors)
        [t] = trajectories
        data = json.loads(path.read_text())
        actions = raw_actions(data)
        calls = t.tool_calls()
        assert len(calls) == len(actions), path
        for call, action in zip(calls, actions, strict=True):
            shown = call.command if call.tool == "bash" else call.text
            assert shown.strip() == action or call.tool == "str_replace_editor", (path, shown, action)
            result = t.result_of(call)
            assert result is not None and result.call_index == call.index and result.index > call.index
            if result.exit_code is not None:  # SWE-agent records none: only what the output states is read
                marker = re.search(r"///PROCESS-DONE:(\d+):PROCESS-DONE///\s*$", result.text)
                stated = int(marker[1]) if marker else exit_code_from_output(result.text)
                assert call.tool == "bash" and result.exit_code == stated, (path, call.command)
                read += 1
        assert t.task and t.session_id
    assert read == 23  # 3 tracebacks that end the output, 20 outputs ending on SWE-ReX's marker


def test_observations_are_the_results_of_their_actions(corpus: Path) -> None:
    path = corpus / ROOT / PYDICOM
    _, [t] = ingest_file(path)
    data = json.loads(path.read_text())
    for call, step in zip(t.tool_calls(), data["trajectory"], strict=True):
        result = t.result_of(call)
        if call.tool != "submit":
            assert result.text == step["observation"][: len(result.text)].replace("\r\n", "\n")


def test_header_task_model_repo(corpus: Path) -> None:
    _, [fc] = ingest_file(corpus / ROOT / FC)
    config = json.loads((corpus / ROOT / FC).read_text())["replay_config"]
    assert fc.task == config["problem_statement"]["text"].strip()
    assert fc.model == "gpt-4o" and fc.repo == "marshmallow-code/marshmallow" and fc.cwd == "/testbed"
    assert fc.session_id == "marshmallow-code__marshmallow-1867"

    _, [pydicom] = ingest_file(corpus / ROOT / PYDICOM)
    assert pydicom.task.startswith("Pixel Representation attribute should be optional for pixel data handler")
    assert "INSTRUCTIONS:" not in pydicom.task and "DEMONSTRATION" not in pydicom.steps[0].text
    assert pydicom.model == "gpt4"  # no replay_config in this older file: the run directory names the model
    assert pydicom.repo == "pydicom/pydicom" and pydicom.cwd == "/pydicom__pydicom"

    _, [test_repo] = ingest_file(corpus / ROOT / TEST_REPO)
    assert test_repo.repo == "SWE-agent/test-repo"  # from replay_config.env.repo.github_url

    replayed = corpus / ROOT / ("demonstrations/replay__marshmallow-code__marshmallow-1867__function_calling_replace"
                                "_from_source/marshmallow-code__marshmallow-1867.traj")
    _, [replay] = ingest_file(replayed)
    assert replay.model is None  # "replay" is SWE-agent's scripted pseudo-model, no LLM wrote it

    _, [ctf] = ingest_file(corpus / ROOT / "demonstrations/ctf/crypto/BabyEncryption.traj")
    assert ctf.task.startswith('The CTF challenge is a cryptography problem named "BabyEncryption"')


def test_special_commands_are_file_tools_and_the_rest_is_bash(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / ROOT / PYDICOM)
    tools = [c.tool for c in t.tool_calls()]
    assert tools == ["create", "edit", "bash", "find_file", "open", "edit", "edit", "edit", "edit", "bash", "bash",
                     "submit"]
    edits = [c for c in t.tool_calls() if c.tool == "edit"]
    assert edits[0].paths == ["/pydicom__pydicom/reproduce_bug.py"]
    assert {p for e in edits[1:] for p in e.paths} == {"/pydicom__pydicom/pydicom/pixel_data_handlers/numpy_handler.py"}


def test_errors_only_where_the_observation_is_certain(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / ROOT / PYDICOM)
    flags = [(c.tool, t.result_of(c).exit_code, t.result_of(c).is_error) for c in t.tool_calls()]
    assert flags == [("create", None, False), ("edit", None, False),
                     ("bash", 1, True),  # `python reproduce_bug.py` ends on an uncaught ValueError
                     ("find_file", None, None), ("open", None, False),
                     ("edit", None, True), ("edit", None, True), ("edit", None, True),  # the linter rejected these
                     ("edit", None, False),
                     ("bash", None, None), ("bash", None, None),  # its output says neither way
                     ("submit", None, None)]


def test_search_replace_edits_carry_their_diff(corpus: Path) -> None:
    path = corpus / ROOT / FC
    _, [t] = ingest_file(path)
    history = json.loads(path.read_text())["history"]
    asked = [json.loads(c["function"]["arguments"]) for h in history for c in h.get("tool_calls") or []
             if c["function"]["name"] == "edit"]
    edits = [c for c in t.tool_calls() if c.tool == "edit"]
    assert len(edits) == len(asked) == 2
    for edit, args in zip(edits, asked, strict=True):
        assert edit.paths == ["/testbed/src/marshmallow/fields.py"]
        assert f"-{args['search']}" in edit.diff and f"+{args['replace'].splitlines()[0]}" in edit.diff


def test_the_submission_is_the_result_of_submit(corpus: Path) -> None:
    path = corpus / ROOT / FC
    _, [t] = ingest_file(path)
    submission = json.loads(path.read_text())["info"]["submission"]
    [submit] = [c for c in t.tool_calls() if c.tool == "submit"]
    assert t.result_of(submit).text == submission.replace("\r\n", "\n")
    assert list(analyze(t).submitted) == ["src/marshmallow/fields.py"]


def test_history_only_file_pairs_calls_by_id(corpus: Path) -> None:
    path = corpus / ROOT / "demonstrations/function_calling_simple.traj"
    report, [t] = ingest_file(path)
    history = json.loads(path.read_text())["history"]
    ids = [c["id"] for h in history for c in h.get("tool_calls") or []]
    answered = [h["tool_call_ids"][0] for h in history if h["role"] == "tool"]
    assert [c.call_id for c in t.tool_calls()] == ids
    assert [r.call_id for r in t.steps if r.kind is StepKind.TOOL_RESULT] == answered
    for call in t.tool_calls():
        assert t.result_of(call).call_id == call.call_id
    assert not any("(Current directory:" in s.text for s in t.steps)  # the prompt state line is cut
    assert t.cwd == "/SWE-agent__test-repo" and t.repo == "SWE-agent/test-repo"
    assert "diff --git a/tests/missing_colon.py" in t.result_of(t.tool_calls()[-1]).text


def test_predictions_file_is_skipped_with_its_reason(corpus: Path) -> None:
    [preds] = (corpus / ROOT).rglob("all_preds.jsonl")
    report, trajectories = ingest_file(preds)
    assert report.status == "skipped" and not trajectories
    assert "predictions" in report.errors[0].reason and "not a trajectory" in report.errors[0].reason


def test_detection_is_by_content_not_name(corpus: Path, tmp_path: Path) -> None:
    renamed = tmp_path / "session.json"
    shutil.copy(corpus / ROOT / PYDICOM, renamed)
    report, [t] = ingest_file(renamed)
    assert report.format == "swe-agent" and len(t.tool_calls()) == 12


def test_an_autosubmission_without_submit_gets_one(corpus: Path, tmp_path: Path) -> None:
    data = json.loads((corpus / ROOT / PYDICOM).read_text())
    data["trajectory"] = [s for s in data["trajectory"] if not s["action"].startswith("submit")]
    data["info"]["exit_status"] = "submitted (exit_cost)"
    path = tmp_path / "x.traj"
    path.write_text(json.dumps(data))
    report, [t] = ingest_file(path)
    assert report.status == "ok"
    submit = t.tool_calls()[-1]
    assert submit.tool == "submit" and "exit_cost" in submit.text
    assert t.result_of(submit).text == data["info"]["submission"]
    assert t.steps[-1].meta and "submitted (exit_cost)" in t.steps[-1].text


@pytest.mark.parametrize(("mutate", "status", "reason"), [
    (lambda d: d.update(trajectory="oops"), "partial", "'trajectory' is a str"),
    (lambda d: d["trajectory"].insert(2, ["not", "a", "step"]), "partial", "step 2 is a list"),
    (lambda d: d["trajectory"][3].update(action=42), "partial", "'action' is a int"),
    (lambda d: d.update(info=[1, 2]), "partial", "'info' is a list"),
    (lambda d: d.update(trajectory=[], history=[]), "failed", "no steps"),
])
def test_wrong_field_types_are_reported_not_fatal(corpus: Path, tmp_path: Path, mutate, status: str,
                                                  reason: str) -> None:
    data = json.loads((corpus / ROOT / PYDICOM).read_text())
    mutate(data)
    path = tmp_path / "bad.traj"
    path.write_text(json.dumps(data))
    report, trajectories = ingest_file(path)
    assert report.status == status, report.errors
    assert any(reason in e.reason for e in report.errors), report.errors
    assert bool(trajectories) == (status == "partial")


def test_a_truncated_traj_fails_cleanly(corpus: Path, tmp_path: Path) -> None:
    path = tmp_path / "cut.traj"
    path.write_bytes((corpus / ROOT / PYDICOM).read_bytes()[:20000])
    report, trajectories = ingest_file(path)
    assert (report.format, report.status, trajectories) == ("swe-agent", "failed", [])
    assert re.match("invalid JSON", report.errors[0].reason)


def test_the_distiller_understands_swe_agent_commands(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / ROOT / PYDICOM)
    purposes = [e.purpose.value for e in analyze(t).events]
    assert purposes == ["edit", "edit", "run", "explore", "explore", "edit", "edit", "edit", "edit", "run", "edit",
                        "submit"]
    # Unlabelled and never checked by a project test: no verdict (unverified is not failed).
    assert t.outcome.status == "unknown" and t.outcome.source == "heuristic"
    # Had a harness labelled it resolved: no skill of its own, and one fact -- the file it searched for
    # (find_file, open) and then edited. Not its scratch script, whose run is no project command, nor
    # the editor's refusals ("Your proposed edit has introduced new syntax error").
    t.outcome = Outcome(status="resolved", source="label", evidence="SWE-bench report (test)")
    distilled = distill(t)
    assert distilled.skills == [] and distilled.reason is None
    [fact] = distilled.facts
    assert (fact.kind, fact.paths, fact.repo, fact.outcome) == (
        "location", ["pydicom/pixel_data_handlers/numpy_handler.py"], "pydicom/pydicom", "resolved")
    assert not re.search(r"reproduce_bug|syntax error", str(fact.model_dump()))


def test_unchecked_runs_give_no_command_only_where_they_worked(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / ROOT / TEST_REPO)
    distilled = distill(t)
    assert not distilled.skills
    assert t.outcome.status == "unknown" and "without any project test" in t.outcome.evidence
    # "python3 tests/missing_colon.py" printed 8.2, but SWE-agent records no exit code: no command fact, and
    # no verdict; what stays is the file it found and edited. A reason is given only for a session with no fact.
    assert [(f.kind, f.paths, f.outcome) for f in distilled.facts] == [("location", ["tests/missing_colon.py"], "unknown")]
    assert distilled.reason is None


def test_preds_json_is_skipped_too(corpus: Path, tmp_path: Path) -> None:
    [preds] = (corpus / ROOT).rglob("all_preds.jsonl")
    rows = [json.loads(line) for line in preds.read_text().splitlines() if line.strip()]
    path = tmp_path / "preds.json"
    path.write_text(json.dumps({row["instance_id"]: row for row in rows}))
    report, _ = ingest_file(path)
    assert report.status == "skipped" and "preds.json" in report.errors[0].reason
