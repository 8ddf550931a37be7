"""OpenHands V0 event streams: exported trajectories, eval and resolver output.jsonl rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.distill import consolidate, distill
from pipeline.distill.analysis import analyze
from pipeline.ingest import ingest_file
from pipeline.trajectory import StepKind

ROOT = "openhands"
EVAL = "eval_output/multi_swe_bench_output.jsonl"
RESOLVER = "resolver/resolver_output.jsonl"
EXPORTED = ["basic", "basic_gui_mode", "basic_interactions", "wrong_initial_state"]
#: Actions that are conversation or bookkeeping; every other action acts on the environment.
NOT_TOOLS = {"message", "system", "think", "finish", "reject", "recall", "change_agent_state", "condensation"}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def tool_actions(events: list[dict]) -> list[dict]:
    return [e for e in events if "action" in e and e["action"] not in NOT_TOOLS]


def run_exit_codes(events: list[dict]) -> list[int]:
    codes = []
    for e in events:
        if e.get("observation") == "run":
            code = e["extras"]["metadata"]["exit_code"] if "extras" in e else e["exit_code"]
            if code >= 0:
                codes.append(code)
    return codes


@pytest.mark.parametrize("name", EXPORTED)
def test_exported_trajectories_are_ok_with_all_their_calls(corpus: Path, name: str) -> None:
    path = corpus / ROOT / "runtime_replay_trajs" / f"{name}.json"
    report, [t] = ingest_file(path)
    assert (report.status, report.format) == ("ok", "openhands"), report.errors
    events = json.loads(path.read_text())
    actions = tool_actions(events)
    calls = t.tool_calls()
    assert len(calls) == len(actions)
    by_cause = {e["cause"]: e for e in events if "observation" in e and "cause" in e}
    for call, action in zip(calls, actions, strict=True):
        assert call.call_id == action["tool_call_metadata"]["tool_call_id"]
        observation = by_cause[action["id"]]
        result = t.result_of(call)
        assert result.call_index == call.index and result.text.startswith(observation["content"])
    assert t.task == events[next(i for i, e in enumerate(events) if e.get("source") == "user"
                                 and e.get("action") == "message")]["args"]["content"]
    assert [s.exit_code for s in t.steps if s.kind is StepKind.TOOL_RESULT and s.exit_code is not None] == \
        run_exit_codes(events)


def test_exported_header_and_edits(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / ROOT / "runtime_replay_trajs/basic_gui_mode.json")
    assert t.model == "claude-3-5-sonnet-20241022" and t.cwd == "/workspace"
    edits = [c for c in t.tool_calls() if c.tool == "str_replace_editor"]
    assert [c.text for c in edits] == ["create /workspace/todo-app/index.html", "create /workspace/todo-app/app.js"]
    assert all(c.diff and c.diff.startswith("--- /workspace/todo-app/") for c in edits)
    server = next(c for c in t.tool_calls() if "http.server" in (c.command or ""))
    result = t.result_of(server)  # exit code -1: still serving when the timeout hit, so no exit code
    assert result.exit_code is None and result.is_error is None and "no new output after 30 seconds" in result.text


def test_reads_are_exploration_edits_are_edits(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / ROOT / "runtime_replay_trajs/wrong_initial_state.json")
    purposes = [(e.call.tool, e.purpose.value) for e in analyze(t).events]
    assert purposes == [("str_replace_editor", "explore"), ("execute_bash", "edit"), ("str_replace_editor", "explore")]


def test_eval_output_gives_one_trajectory_per_row(corpus: Path) -> None:
    path = corpus / ROOT / EVAL
    report, trajectories = ingest_file(path)
    assert (report.status, report.format) == ("ok", "openhands"), report.errors
    raw = rows(path)
    assert [t.session_id for t in trajectories] == [r["instance_id"] for r in raw]
    for t, row in zip(trajectories, raw, strict=True):
        actions = tool_actions(row["history"])
        calls = t.tool_calls()
        # every action, then the harness's patch as the result of one final submit
        assert len(calls) == len(actions) + 1
        assert [c.call_id for c in calls[:-1]] == [a["tool_call_metadata"]["tool_call_id"] for a in actions]
        assert calls[-1].tool == "submit" and t.result_of(calls[-1]).text == row["test_result"]["git_patch"]
        assert all(t.result_of(c) is not None for c in calls)
        codes = [t.result_of(c).exit_code for c in calls if c.tool == "execute_bash"]
        assert [c for c in codes if c is not None] == run_exit_codes(row["history"])
        assert t.model == row["metadata"]["llm_config"]["model"]
        assert t.repo == row["instance"]["repo"] == "ponylang/ponyc"
        assert t.task == row["instance"]["problem_statement"].strip()
        assert t.cwd == "/workspace/ponylang__ponyc__0.1"
        assert analyze(t).submitted  # the distiller sees the final change
    assert "maximum iteration" in trajectories[2].steps[-1].text and trajectories[2].steps[-1].meta


def test_eval_error_observations_and_editor_errors(corpus: Path) -> None:
    _, trajectories = ingest_file(corpus / ROOT / EVAL)
    t = trajectories[1]
    # a malformed call the runtime refused: no action event, so context rather than a tool call
    assert any(s.meta and s.text.startswith("[error] Parameter 'command'") for s in t.steps)
    rejected = [c for c in t.tool_calls() if t.result_of(c).text.startswith("ERROR:")]
    assert rejected and all(t.result_of(c).is_error for c in rejected)
    finish = next(s for s in reversed(t.steps) if s.kind is StepKind.ASSISTANT)
    assert finish.text.startswith("[finish: task_completed=false]")


def test_resolver_rows_carry_the_success_label(corpus: Path) -> None:
    path = corpus / ROOT / RESOLVER
    report, trajectories = ingest_file(path)
    assert (report.status, report.format) == ("ok", "openhands"), report.errors
    raw = rows(path)
    assert len(trajectories) == len(raw) == 2
    for t, row in zip(trajectories, raw, strict=True):
        assert (t.outcome.status, t.outcome.source) == ("resolved", "label") and row["success"] is True
        assert t.repo == "neubig/pr-viewer" and t.session_id == f"neubig/pr-viewer#{row['issue']['number']}"
        assert t.task.startswith(row["issue"]["title"])
        actions = tool_actions(row["history"])
        calls = t.tool_calls()
        assert len(calls) == len(actions) + 1 and calls[-1].tool == "submit"
        for call, action in zip(calls[:-1], actions, strict=True):  # older schema: no ids, pairs by order
            assert t.result_of(call).index == call.index + 1
            assert (call.command or call.text) == (action.get("command") or action.get("code"))
        assert [t.result_of(c).exit_code for c in calls if c.command] == run_exit_codes(row["history"])
        assert t.steps[0].kind is StepKind.USER and t.steps[0].text == row["history"][0]["content"]
    dark = trajectories[1]
    edits = [c for c in dark.tool_calls() if c.tool == "edit_file_by_replace"]
    assert edits and {p for c in edits for p in c.paths} == {"/workspace/src/App.css", "/workspace/src/App.tsx",
                                                               "/workspace/src/PullRequestViewer.tsx"}
    rejected = [e for e in rows(corpus / ROOT / RESOLVER)[1]["history"] if e.get("observation") == "run_ipython"
                and e["content"].startswith(("[Your proposed edit has introduced", "[No exact match found"))]
    assert [dark.result_of(c).is_error for c in edits].count(True) == len(rejected) == 11
    assert [dark.result_of(c).is_error for c in edits].count(False) == len(edits) - 11  # "[File: ..." shown back
    assert dark.cwd == "/workspace"


def test_resolver_failure_and_a_wrongly_typed_label(corpus: Path, tmp_path: Path) -> None:
    raw = rows(corpus / ROOT / RESOLVER)
    raw[0]["success"] = False
    raw[1]["success"] = "yes"
    path = tmp_path / "output.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in raw) + "\n")
    report, [failed, unlabelled] = ingest_file(path)
    assert (failed.outcome.status, failed.outcome.source) == ("failed", "label")
    assert unlabelled.outcome.source == "heuristic"
    assert report.status == "partial" and report.errors[0].line == 2 and "not a boolean" in report.errors[0].reason


def test_swe_bench_evaluated_rows_are_labels(corpus: Path, tmp_path: Path) -> None:
    raw = rows(corpus / ROOT / EVAL)
    raw[0]["test_result"]["report"] = {"resolved": True, "error_eval": False}
    raw[1]["test_result"]["report"] = {"resolved": False, "error_eval": False}
    raw[2]["test_result"]["report"] = {"resolved": False, "error_eval": True}  # the evaluation itself broke
    path = tmp_path / "output.swebench_eval.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in raw) + "\n")
    _, trajectories = ingest_file(path)
    assert [(t.outcome.status, t.outcome.source) for t in trajectories][:2] == [("resolved", "label"),
                                                                                 ("failed", "label")]
    assert trajectories[2].outcome.source == "heuristic"


def test_bad_rows_are_reported_and_the_rest_kept(corpus: Path, tmp_path: Path) -> None:
    lines = (corpus / ROOT / EVAL).read_text().splitlines()
    broken = json.loads(lines[1])
    broken["history"] = "not a list"
    weird = json.loads(lines[2])
    weird["history"][5] = ["an", "array"]
    weird["history"][7]["args"] = None
    path = tmp_path / "output.jsonl"
    path.write_text("\n".join([lines[0], json.dumps(broken), json.dumps(weird), "[1, 2]", lines[0][:5000]]))
    report, trajectories = ingest_file(path)
    assert report.status == "partial" and len(trajectories) == 2
    reasons = [(e.line, e.reason) for e in report.errors]
    assert reasons[0][0] == 2 and "'history' is a str" in reasons[0][1]
    assert any(line == 3 and "event 5 is a list" in reason for line, reason in reasons)
    assert any(line == 4 and "one run per line" in reason for line, reason in reasons)
    assert reasons[-1] == (5, "truncated last line (file still being written?)")


def test_a_truncated_exported_list_fails_cleanly(corpus: Path, tmp_path: Path) -> None:
    path = tmp_path / "trajectory.json"
    path.write_bytes((corpus / ROOT / "runtime_replay_trajs/basic_gui_mode.json").read_bytes()[:9000])
    report, trajectories = ingest_file(path)
    assert (report.format, report.status, trajectories) == ("openhands", "failed", [])
    assert report.errors[0].reason.startswith("invalid JSON")


def test_the_distiller_learns_from_a_labelled_resolver_run(corpus: Path) -> None:
    _, [_, dark] = ingest_file(corpus / ROOT / RESOLVER)
    assert dark.outcome.status == "resolved" and dark.outcome.source == "label" and dark.repo == "neubig/pr-viewer"
    distilled = distill(dark)
    assert distilled.skills == [] and distilled.reason is None
    # Where the work happened: the files of the submitted patch, relative to /workspace (every edit of
    # src/App.tsx was refused, so it is not one).
    assert [(f.kind, f.paths, f.outcome) for f in distilled.facts] == [
        ("location", ["src/App.css"], "resolved"), ("location", ["src/PullRequestViewer.tsx"], "resolved")]
    # The editor's refusals ("No exact match found") are the harness's, never a lesson.
    assert not any("No exact match found" in str(f.model_dump()) for f in distilled.facts)
    # One task's files are that task's history: a manual needs a place several sessions worked in.
    assert consolidate(dark.repo, distilled.facts) is None


def test_a_chat_without_tools_gives_nothing_and_says_so(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / ROOT / "runtime_replay_trajs/basic_interactions.json")
    assert distill(t).reason == "no tool activity"
