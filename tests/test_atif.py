"""ATIF trajectories: the three third-party files in ../shared/trajectories/atif and Harbor's layout.

Harbor's own trials (trajectory + result.json + reward.txt) are not in the corpus (no license), so the
label tests build that layout around a real ATIF file with a result.json / reward.txt written here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline.ingest import ingest_file, iter_files
from pipeline.trajectory import StepKind

ROOT = "atif/openagents_third_party"
QA = "qa-runner-login-trace/trajectory.json"  # ATIF-v1.7
MECHACODER = "mechacoder/session-2025-12-05T07-45-57-649Z-x8251x.atif.json"  # ATIF-v1.4
TBENCH = "tbench-regex-log/trajectory.json"  # "1.4", non-conformant


def raw_calls(data: dict) -> list[dict]:
    calls = [c for s in data["steps"] for c in s.get("tool_calls") or []]
    return calls + [c for sub in data.get("subagent_trajectories") or [] for c in raw_calls(sub)]


@pytest.mark.parametrize("name", [QA, MECHACODER, TBENCH])
def test_every_real_file_is_ok_with_all_its_tool_calls(corpus: Path, name: str) -> None:
    path = corpus / ROOT / name
    report, [t] = ingest_file(path)
    assert (report.status, report.format, report.errors) == ("ok", "atif", [])
    data = json.loads(path.read_text())
    calls = raw_calls(data)
    assert [c.call_id for c in t.tool_calls()] == [c.get("tool_call_id") or c.get("id") for c in calls]
    assert [c.tool for c in t.tool_calls()] == [c.get("function_name") or c.get("name") for c in calls]
    for call in t.tool_calls():
        result = t.result_of(call)
        assert result is not None and result.call_id == call.call_id and result.index == call.index + 1
    assert t.session_id == data["session_id"] and t.agent == data["agent"]["name"]


def test_results_join_their_calls_by_source_call_id(corpus: Path) -> None:
    path = corpus / ROOT / QA
    _, [t] = ingest_file(path)
    data = json.loads(path.read_text())
    contents = {r["source_call_id"]: r["content"] for s in data["steps"] for r in (s.get("observation") or {}).get(
        "results", [])}
    for call in t.tool_calls():
        assert t.result_of(call).text == contents[call.call_id]
    assert t.model == "openagents/khala" and t.agent_version == "0.1.0"
    assert t.task == data["steps"][0]["message"]


def test_non_conformant_file_pairs_results_written_as_system_steps(corpus: Path) -> None:
    path = corpus / ROOT / TBENCH
    _, [t] = ingest_file(path)
    data = json.loads(path.read_text())
    results = {s["message"].removeprefix("Tool result for "): s["observation"] for s in data["steps"]
               if s["message"].startswith("Tool result for ")}
    for call in t.tool_calls():
        observation = results[call.call_id]
        result = t.result_of(call)
        assert result.text == observation["content"]
        assert result.is_error is (not observation["result"]["success"])
    assert t.model == data["agent"]["model"]  # agent.model instead of model_name
    sudo = next(c for c in t.tool_calls() if c.command and c.command.startswith("sudo"))
    assert t.result_of(sudo).exit_code == 1  # Claude Code's "Exit code 1" line
    write = t.tool_calls()[0]
    assert write.tool == "Write" and write.paths == ["/app/regex.txt"] and write.diff.startswith("--- a/app/regex.txt")
    assert not any(s.text.startswith("Tool result for") for s in t.steps)


def test_results_without_a_call_are_context(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / ROOT / MECHACODER)
    assert t.tool_calls() == [] and t.model == "x-ai/grok-4.1-fast:free"
    runs = [s for s in t.steps if s.text.startswith("$ bun run")]
    assert len(runs) == 3 and all(s.kind is StepKind.USER and s.meta for s in runs)
    assert t.task is None  # an orchestrator log: no person asked anything


def test_the_companion_metrics_file_is_not_a_trajectory(corpus: Path) -> None:
    report, trajectories = ingest_file(corpus / ROOT / "tbench-regex-log/metrics.json")
    assert report.status == "skipped" and not trajectories


def harbor_trial(corpus: Path, tmp_path: Path, name: str = QA) -> Path:
    trajectory = tmp_path / "job" / "login__abc123" / "agent" / "trajectory.json"
    trajectory.parent.mkdir(parents=True)
    shutil.copy(corpus / ROOT / name, trajectory)
    return trajectory


def result_json(reward: object) -> str:
    return json.dumps({"task_name": "login", "trial_name": "login__abc123",
                       "agent_info": {"name": "openagents-qa-runner", "version": "0.1.0"},
                       "verifier_result": None if reward is None else {"rewards": {"reward": reward}},
                       "exception_info": None})


@pytest.mark.parametrize(("reward", "status"), [(1.0, "resolved"), (1, "resolved"), (0.0, "failed"), (0.5, "failed")])
def test_harbor_result_json_is_the_label(corpus: Path, tmp_path: Path, reward: float, status: str) -> None:
    trajectory = harbor_trial(corpus, tmp_path)
    (trajectory.parent.parent / "result.json").write_text(result_json(reward))
    report, [t] = ingest_file(trajectory)
    assert report.status == "ok"
    assert (t.outcome.status, t.outcome.source) == (status, "label")
    assert "result.json" in t.outcome.evidence and f"reward {reward:g}" in t.outcome.evidence


def test_harbor_reward_txt_when_there_is_no_result(corpus: Path, tmp_path: Path) -> None:
    trajectory = harbor_trial(corpus, tmp_path, TBENCH)
    trial = trajectory.parent.parent
    (trial / "result.json").write_text(result_json(None))  # the verifier never ran
    (trial / "verifier").mkdir()
    (trial / "verifier" / "reward.txt").write_text("0\n")
    _, [t] = ingest_file(trajectory)
    assert (t.outcome.status, t.outcome.source) == ("failed", "label") and "reward.txt" in t.outcome.evidence
    (trial / "verifier" / "reward.txt").unlink()
    _, [t] = ingest_file(trajectory)
    assert t.outcome.source == "heuristic"  # extra.success in the trajectory is not a verdict


def test_walking_a_harbor_job_reads_the_trajectory_and_names_result_json(corpus: Path, tmp_path: Path) -> None:
    trajectory = harbor_trial(corpus, tmp_path)
    (trajectory.parent.parent / "result.json").write_text(result_json(1.0))
    reports = {p.name: ingest_file(p)[0] for p in iter_files([tmp_path / "job"])}
    assert reports["trajectory.json"].status == "ok"
    assert reports["result.json"].status == "skipped"
    assert "Harbor trial result" in reports["result.json"].errors[0].reason


def test_embedded_subagents_are_trajectories_linked_to_their_parent(corpus: Path, tmp_path: Path) -> None:
    parent = json.loads((corpus / ROOT / QA).read_text())
    child = json.loads((corpus / ROOT / TBENCH).read_text())
    grandchild = json.loads((corpus / ROOT / MECHACODER).read_text())
    child["subagent_trajectories"] = [grandchild]
    parent["subagent_trajectories"] = [child]
    parent["schema_version"] = "ATIF-v1.8"
    path = tmp_path / "nested.json"
    path.write_text(json.dumps(parent))
    report, trajectories = ingest_file(path)
    assert report.status == "ok", report.errors
    assert [t.session_id for t in trajectories] == [parent["session_id"], child["session_id"],
                                                    grandchild["session_id"]]
    assert [t.parent_session_id for t in trajectories] == [None, parent["session_id"], child["session_id"]]
    assert sum(len(t.tool_calls()) for t in trajectories) == len(raw_calls(parent)) == 11


@pytest.mark.parametrize("version", ["ATIF-v1.0", "ATIF-v1.2", "ATIF-v1.5", "ATIF-v1.8"])
def test_every_version_is_detected_by_content(corpus: Path, tmp_path: Path, version: str) -> None:
    data = json.loads((corpus / ROOT / QA).read_text())
    data["schema_version"] = version
    path = tmp_path / "anything.data"
    path.write_text(json.dumps(data, indent=2))
    report, [t] = ingest_file(path)
    assert report.format == "atif" and len(t.tool_calls()) == 6


def test_results_listed_without_ids_pair_in_call_order(corpus: Path, tmp_path: Path) -> None:
    data = json.loads((corpus / ROOT / QA).read_text())
    for step in data["steps"]:
        for result in (step.get("observation") or {}).get("results", []):
            del result["source_call_id"]
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(data))
    _, [t] = ingest_file(path)
    assert all(t.result_of(c).text.startswith(("ok:", "verification_class")) for c in t.tool_calls())


def test_a_repeated_call_is_read_once(corpus: Path, tmp_path: Path) -> None:
    """Harbor's OpenHands conversion writes a call again in the step holding its result."""
    data = json.loads((corpus / ROOT / QA).read_text())
    step = data["steps"][1]
    data["steps"].insert(2, {"step_id": 99, "source": "agent", "message": "", "tool_calls": step["tool_calls"]})
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(data))
    report, [t] = ingest_file(path)
    assert report.status == "ok" and len(t.tool_calls()) == 6


@pytest.mark.parametrize(("mutate", "status", "reason"), [
    (lambda d: d.update(steps={"1": "x"}), "failed", "'steps' list"),
    (lambda d: d["steps"].insert(1, "a string step"), "partial", "step 1 is a str"),
    (lambda d: d["steps"][1].update(tool_calls="Bash"), "ok", None),  # no call to read: nothing lost
    (lambda d: d["steps"][1].update(message=["text", {"type": "image"}]), "ok", None),
    (lambda d: d.update(subagent_trajectories={"a": 1}), "partial", "'subagent_trajectories' is a dict"),
    (lambda d: d.update(subagent_trajectories=[{"steps": 3}]), "partial", "'steps' is a int"),
])
def test_wrong_field_types_are_reported_not_fatal(corpus: Path, tmp_path: Path, mutate, status: str,
                                                  reason: str | None) -> None:
    data = json.loads((corpus / ROOT / QA).read_text())
    mutate(data)
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(data))
    report, _ = ingest_file(path)
    assert report.status == status, report.errors
    if reason:
        assert any(reason in e.reason for e in report.errors), report.errors


def test_a_truncated_file_fails_cleanly(corpus: Path, tmp_path: Path) -> None:
    path = tmp_path / "trajectory.json"
    path.write_bytes((corpus / ROOT / QA).read_bytes()[:3000])
    report, trajectories = ingest_file(path)
    assert (report.format, report.status, trajectories) == ("atif", "failed", [])
    assert report.errors[0].reason.startswith("invalid JSON")
