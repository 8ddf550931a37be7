"""ATIF v1.5+ per-step ``extra``: the exit code and failure of a call where Harbor's converters put them.

Harbor's Codex converter (``harbor/agents/installed/codex.py``) writes a step of one call with
``extra{tool_metadata{exit_code, ...}, status}`` and a step of several calls with
``extra{tool_call_details{<call id>: {metadata, status}}}``; no such file is in ../shared/trajectories,
so the real ATIF-v1.7 ``atif/openagents_third_party/qa-runner-login-trace/trajectory.json`` (6 steps of
one call each) is given those fields the way that converter writes them.
"""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.ingest import ingest_file

QA = "atif/openagents_third_party/qa-runner-login-trace/trajectory.json"


def load(corpus: Path) -> dict:
    return json.loads((corpus / QA).read_text())


def calls_of(data: dict) -> list[dict]:
    return [c for s in data["steps"] for c in s.get("tool_calls") or []]


def test_step_extra_gives_exit_codes_and_failures(corpus: Path, tmp_path: Path) -> None:
    data = load(corpus)
    assert len(calls_of(data)) == 6  # jq '[.steps[].tool_calls[]?] | length'
    data["schema_version"] = "ATIF-v1.5"
    steps = [s for s in data["steps"] if s.get("tool_calls")]
    steps[0]["extra"] = {"tool_metadata": {"exit_code": 2, "duration_seconds": 0.4}, "api_call_id": "api_call_1"}
    steps[1]["extra"] = {"status": "failed", "codex_turn_id": "t-1"}
    steps[2]["extra"] = {"status": "failed"}
    steps[2]["observation"]["results"][0]["extra"] = {"is_error": False}  # the result's own word wins
    # two calls in one step, as the converter bundles the calls of one model request
    third, fourth = steps[3], steps[4]
    third["tool_calls"] += fourth.pop("tool_calls")
    third["observation"]["results"] += fourth.pop("observation")["results"]
    first_id, second_id = (c["tool_call_id"] for c in third["tool_calls"])
    third["extra"] = {"tool_call_details": {first_id: {"metadata": {"exit_code": 0}, "status": "completed"},
                                            second_id: {"metadata": {"exit_code": 1}}}}
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(data))
    report, [t] = ingest_file(path)
    assert (report.status, report.format) == ("ok", "atif")
    assert [c.call_id for c in t.tool_calls()] == [c["tool_call_id"] for c in calls_of(data)]
    facts = [(t.result_of(c).exit_code, t.result_of(c).is_error) for c in t.tool_calls()]
    assert facts == [(2, True), (None, True), (None, False), (0, False), (1, True), (None, None)]


def test_without_step_extra_nothing_is_invented(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / QA)
    assert [(t.result_of(c).exit_code, t.result_of(c).is_error) for c in t.tool_calls()] == [(None, None)] * 6
