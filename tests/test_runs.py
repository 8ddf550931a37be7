"""Run reports: each run's report as a Prefect markdown artifact, in the ``runs`` table, and in ``skillmill runs``.

Runs go through the real CLI and flow under the session's Prefect test server; the artifact is
read back through the Prefect client, as the UI reads it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from uuid import UUID

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.index.state import StateDB
from pipeline.runs import ARTIFACT_KEY, RunReport
from pipeline.runs.report import snapshot_path
from tests.conftest import SAMPLES
from tests.fake_llm import FakeLLM, answer

pytestmark = pytest.mark.usefixtures("prefect_server")


def run(*args: str) -> dict:
    result = CliRunner().invoke(main, ["run", "--json", *args], catch_exceptions=False)
    return json.loads(result.output.strip().splitlines()[-1])


def runs(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["runs", "--json", *args], catch_exceptions=False)
    return result.exit_code, json.loads(result.output)


def artifacts_of(run_id: str) -> list:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterKey,
        FlowRunFilter,
        FlowRunFilterId,
    )

    with get_client(sync_client=True) as client:
        return client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[ARTIFACT_KEY])),
                                     flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[UUID(run_id)])))


def expected_table_row(summary: dict) -> str:
    t, s = summary["trajectories"], summary["skills"]
    return (f"| {t['seen']} | {t['new']} | {t['deferred']} | {t['failed']} | {s['proposed']} | {s['updated']} "
            f"| {s['unchanged']} |")


def test_each_run_publishes_its_report_to_prefect_duckdb_and_runs(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    shutil.copytree(SAMPLES, inputs)
    library = tmp_path / "skills"
    first = run(str(inputs), "--library", str(library))
    (inputs / "broken.traj.json").write_text('{"info": {"mini_version": "1"}, "messages": [')
    second = run(str(inputs), "--library", str(library))
    assert first["exit_code"] == 0 and second["exit_code"] == 1 and second["errors"]

    code, listed = runs()
    assert code == 0 and listed["source"] == "state" and listed["note"] is None
    assert [r["id"] for r in listed["runs"]] == [second["run_id"], first["run_id"]]  # newest first
    for report, summary in zip(listed["runs"], [second, first], strict=True):
        assert report["trajectories"] == summary["trajectories"]
        assert report["skills"] == summary["skills"] and report["llm"] == summary["llm"]
        assert report["duration_s"] == summary["duration_s"] and report["library"] == str(library)
        # the server apart from the work: here the test's (PREFECT_API_URL), so none was started
        assert report["server"] == summary["server"] == "configured" and report["server_s"] == summary["server_s"] == 0
        assert report["wall_s"] == summary["wall_s"] >= summary["duration_s"]
        assert report["exit_code"] == summary["exit_code"]
        assert report["errors"] == [{k: e.get(k) for k in ("path", "line", "reason")} for e in summary["errors"]]
    assert [r["status"] for r in listed["runs"]] == ["partial", "ok"]
    assert [r["id"] for r in runs("--limit", "1")[1]["runs"]] == [second["run_id"]]

    with StateDB() as state:  # the table is the record the report is read from
        rows = state.con.execute("SELECT id, exit_code FROM runs ORDER BY started_at").fetchall()
    assert rows == [(first["run_id"], 0), (second["run_id"], 1)]

    for summary in (first, second):
        found = artifacts_of(summary["run_id"])
        assert len(found) == 1
        artifact = found[0]
        assert artifact.type == "markdown" and str(artifact.flow_run_id) == summary["run_id"]
        assert expected_table_row(summary) in artifact.data
        assert f"Errors ({len(summary['errors'])})" in artifact.data
        assert artifact.description.startswith("skillmill run ok" if summary is first else "skillmill run partial")
    assert "broken.traj.json" in artifacts_of(second["run_id"])[0].data

    text = CliRunner().invoke(main, ["runs"]).output
    header, newest, older = text.splitlines()[:3]
    assert header.split()[:6] == ["started", "status", "took", "server", "total", "seen"]
    assert newest.split()[2] == "partial" and older.split()[2] == "ok"
    assert newest.split()[3:8] == [f"{second['duration_s']:.1f}", "s", "up", f"{second['wall_s']:.1f}", "s"]
    assert f"  ! {second['errors'][0]['path']}" in text  # the latest run's errors, below the table


def test_the_report_counts_model_requests_tokens_and_cost(stand_in: FakeLLM, tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    shutil.copytree(SAMPLES / "mini_swe_agent", inputs)
    stand_in.responder = lambda body: answer({"drafts": [], "nothing_reusable": "not the session under test"})
    summary = run(str(inputs), "--library", str(tmp_path / "skills"))
    assert summary["llm"]["requests"] == len(stand_in.requests) > 0
    _, listed = runs()
    assert listed["runs"][0]["llm"] == summary["llm"] and listed["runs"][0]["model"] == "openai/stand-in"
    data = artifacts_of(summary["run_id"])[0].data
    llm = summary["llm"]
    assert (f"| {llm['requests']} | {llm['input_tokens']:,} | {llm['output_tokens']:,} | ${llm['cost_usd']:.4f} |"
            in data)
    assert "model `openai/stand-in`" in data


HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])  # read-write: DuckDB then keeps every other process out
print("holding", flush=True)
time.sleep(120)
"""


def hold_the_database(path: Path) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
    return holder


def test_while_a_run_holds_the_database_runs_shows_the_snapshot_and_says_so(tmp_path: Path) -> None:
    summary = run(str(SAMPLES / "claude_code"), "--library", str(tmp_path / "skills"))
    db = StateDB().path
    assert snapshot_path().is_file()
    holder = hold_the_database(db)
    try:
        result = CliRunner().invoke(main, ["runs", "--json"])
        assert result.exit_code == 0
        listed = json.loads(result.stdout)
        assert listed["source"] == "snapshot" and listed["runs"][0]["id"] == summary["run_id"]
        assert listed["runs"][0]["trajectories"] == summary["trajectories"]
        assert f"is writing {db} right now" in listed["note"] and str(snapshot_path()) in listed["note"]
        text = CliRunner().invoke(main, ["runs"])
        assert text.exit_code == 0 and "note: a skillmill run" in text.output and "Traceback" not in text.output

        snapshot_path().unlink()  # nothing to fall back on: say so, exit 1, still no traceback
        result = CliRunner().invoke(main, ["runs", "--json"])
        assert result.exit_code == 1
        listed = json.loads(result.stdout)
        assert listed["runs"] == [] and listed["source"] is None and "try again when it finishes" in listed["note"]
    finally:
        holder.kill()
        holder.wait()


def test_no_database_yet_is_not_an_error() -> None:
    result = CliRunner().invoke(main, ["runs"])
    assert result.exit_code == 0 and "No runs recorded yet" in result.output
    assert "no runs yet: there is no state database" in result.output


def test_an_unfinished_row_and_markup_in_errors_do_not_break_the_report() -> None:
    unfinished = RunReport.from_row(("r1", None, None, None, None))
    assert unfinished.status == "unfinished" and "exit code ?" in unfinished.markdown()
    summary = {"trajectories": {"seen": 2, "new": 1, "failed": 1, "deferred": 0}, "duration_s": 0.5,
               "errors": [{"path": "/x/a|b.jsonl", "line": 3, "reason": "bad | table *row* <script>"}]}
    report = RunReport.from_row(("r2", None, None, 1, json.dumps(summary)))
    markdown = report.markdown()
    assert report.status == "partial" and report.trajectories.failed == 1
    assert "- `/x/a|b.jsonl:3` bad \\| table \\*row\\* &lt;script>" in markdown


def test_the_snapshot_is_replaced_atomically(isolated_home: Path) -> None:
    from pipeline.runs.report import write_snapshot

    reports = [RunReport.from_row((f"r{i}", None, None, 0, "{}")) for i in range(3)]
    path = write_snapshot(reports)
    assert [r["id"] for r in json.loads(path.read_text())["runs"]] == ["r0", "r1", "r2"]
    write_snapshot(reports[:1])
    assert [r["id"] for r in json.loads(path.read_text())["runs"]] == ["r0"]
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left behind


def test_the_server_start_is_reported_apart_from_the_work(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 15: "took 5.5 s" described a 54 s command. Old rows (no server, no total) still show."""
    from pipeline.cli.run import took_line
    from pipeline.cli.runs import _print
    from pipeline.runs import RunHistory

    summary = {"duration_s": 5.5, "server": "started", "server_s": 47.0, "wall_s": 54.1}
    report = RunReport.from_row(("r3", None, None, 0, json.dumps(summary)))
    assert report.took() == "5.5 s (+ 47.0 s starting the Prefect server; 54.1 s in all)"
    assert "took 5.5 s (+ 47.0 s starting the Prefect server; 54.1 s in all), exit code 0" in report.markdown()
    assert took_line(summary) == "Took 5.5 s (+ 47.0 s starting the local Prefect server; 54.1 s in all)"
    reused = {"duration_s": 5.5, "server": "reused", "server_s": 0.02, "wall_s": 8.0}
    assert took_line(reused) == "Took 5.5 s (the local Prefect server was up; 8.0 s in all)"
    old = RunReport.from_row(("r0", None, None, 0, json.dumps({"duration_s": 1.4})))
    assert old.took() == "1.4 s" and took_line({"duration_s": 1.4}) == "Took 1.4 s"

    _print(RunHistory(runs=[report, RunReport.from_row(("r4", None, None, 0, json.dumps(reused))), old]))
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert rows[0][:6] == ["started", "status", "took", "server", "total", "seen"]
    assert [r[2:7] for r in rows[1:]] == [["5.5", "s", "+47.0", "s", "54.1"], ["5.5", "s", "up", "8.0", "s"],
                                          ["1.4", "s", "-", "-", "0"]]
