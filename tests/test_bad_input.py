"""Bad input is reported with path, line and reason; the valid rest is still read."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from pipeline.cli import main
from pipeline.ingest import ingest_file
from tests.conftest import SAMPLES

SESSION = SAMPLES / "claude_code/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"


def corrupt(tmp_path: Path, line_number: int, replacement: bytes) -> Path:
    lines = SESSION.read_bytes().split(b"\n")
    lines[line_number - 1] = replacement
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"\n".join(lines))
    return path


def test_a_corrupt_line_in_the_middle_is_reported_and_the_rest_kept(tmp_path: Path) -> None:
    _, [whole] = ingest_file(SESSION)
    report, [partial] = ingest_file(corrupt(tmp_path, 20, b'{"type": "user", "message": {"content": [bro'))
    assert report.status == "partial"
    assert [(e.line, e.reason.split(":")[0]) for e in report.errors] == [(20, "invalid JSON")]
    assert 0 < len(whole.steps) - len(partial.steps) <= 3


def test_a_truncated_last_line_is_named_as_such(tmp_path: Path) -> None:
    data = SESSION.read_bytes().rstrip(b"\n")
    path = tmp_path / "live.jsonl"
    path.write_bytes(data[:-40])
    report, trajectories = ingest_file(path)
    assert report.status == "partial" and trajectories
    assert "truncated last line" in report.errors[-1].reason


def test_invalid_utf8_is_replaced_and_reported(tmp_path: Path) -> None:
    lines = SESSION.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b"CLAUDE", b"CLA\xff\xfeUDE", 1)
    path = tmp_path / "bytes.jsonl"
    path.write_bytes(b"\n".join(lines))
    report, [t] = ingest_file(path)
    assert report.status == "partial"
    assert any("UTF-8" in e.reason and e.line == 3 for e in report.errors)


def test_empty_and_junk_files_are_skipped_with_a_reason(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("   \n\n")
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(bytes(range(256)) * 40)
    unrelated = tmp_path / "package.json"
    unrelated.write_text('{"name": "x", "version": "1.0.0"}')
    for path, reason in ((empty, "empty"), (junk, "not a trajectory"), (unrelated, "not a trajectory")):
        report, trajectories = ingest_file(path)
        assert report.status == "skipped" and not trajectories
        assert reason in report.errors[0].reason


def test_a_mini_swe_agent_file_cut_in_half_fails_cleanly(tmp_path: Path) -> None:
    source = SAMPLES / "mini_swe_agent/django__django-16255.traj.json"
    path = tmp_path / "cut.traj.json"
    path.write_bytes(source.read_bytes()[:30000])
    report, trajectories = ingest_file(path)
    assert report.status == "failed" and not trajectories
    assert "invalid JSON" in report.errors[0].reason


def test_ingest_cli_reports_per_file_and_exits_1_without_a_traceback(tmp_path: Path) -> None:
    shutil.copy(SESSION, tmp_path / "good.jsonl")
    corrupt(tmp_path, 5, b"{not json")
    result = CliRunner().invoke(main, ["ingest", "--json", str(tmp_path)])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    import json

    rows = [json.loads(line) for line in result.output.splitlines()]
    assert {r["status"] for r in rows} == {"ok", "partial"}
    for row in rows:
        assert set(row) == {"path", "format", "status", "errors", "trajectories"}
        for t in row["trajectories"]:
            assert set(t) == {"id", "task", "steps", "tool_calls", "outcome"}


def test_a_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "no such file or directory" in result.output
