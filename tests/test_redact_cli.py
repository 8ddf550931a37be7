"""``skillmill redact``: what would be redacted in a file, shown masked, for users checking their logs."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from pipeline.cli import main
from tests.conftest import SAMPLES
from tests.planted import KINDS, SOURCES, Planter


def _planted(tmp_path: Path, corpus: Path) -> tuple[Planter, Path]:
    planter = Planter(seed=12)
    method, relative = SOURCES["claude-code"]
    return planter, method(planter, corpus / relative, tmp_path / "session.jsonl")


def _leaked(planter: Planter, text: str) -> list[str]:
    return sorted({s.kind for s in planter.secrets() for f in s.fragments() if f in text})


def test_a_report_lists_kinds_and_lines_and_never_a_value(tmp_path: Path, corpus: Path) -> None:
    planter, path = _planted(tmp_path, corpus)
    result = CliRunner().invoke(main, ["redact", str(path)], catch_exceptions=False)
    assert result.exit_code == 1
    assert _leaked(planter, result.output) == []
    header = result.output.splitlines()[0]
    assert header.startswith(f"{path}: ") and "to redact" in header
    for kind in KINDS:
        assert f" {kind} " in result.output
    assert "sk-p\u2026(openai-api-key, " in result.output  # a masked preview: recognisable, not usable


def test_json_findings_point_at_the_value_in_the_file(tmp_path: Path, corpus: Path) -> None:
    planter, path = _planted(tmp_path, corpus)
    result = CliRunner().invoke(main, ["redact", "--json", str(path)], catch_exceptions=False)
    assert result.exit_code == 1 and _leaked(planter, result.output) == []
    report = json.loads(result.output)
    assert set(report) == {"path", "bytes", "skipped", "redactions", "counts", "findings"}
    assert report["bytes"] == path.stat().st_size and report["redactions"] == len(report["findings"])
    assert set(report["counts"]) == set(KINDS)
    lines = path.read_text(encoding="utf-8").splitlines()
    planted = {s.value for s in planter.secrets() if s.kind != "private-key"}
    for finding in report["findings"]:
        assert set(finding) == {"kind", "line", "column", "length", "preview"}
        start = finding["column"] - 1
        value = lines[finding["line"] - 1][start:start + finding["length"]]
        if finding["kind"] != "private-key":  # JSON-escaped in the file: spans several \n
            assert value in planted or json.loads(f'"{value}"') in planted, finding["kind"]


def test_redacted_prints_the_file_with_placeholders(tmp_path: Path, corpus: Path) -> None:
    planter, path = _planted(tmp_path, corpus)
    result = CliRunner().invoke(main, ["redact", "--redacted", str(path)], catch_exceptions=False)
    assert result.exit_code == 0 and _leaked(planter, result.output) == []
    original = path.read_text(encoding="utf-8").splitlines()
    redacted = result.output.splitlines()
    assert len(redacted) == len(original)
    assert all(json.loads(line) for line in redacted)  # still valid JSONL
    changed = [after for before, after in zip(original, redacted, strict=True) if before != after]
    assert changed and all("[REDACTED:" in line for line in changed)


def test_a_clean_folder_exits_0_and_says_so() -> None:
    result = CliRunner().invoke(main, ["redact", str(SAMPLES / "mini_swe_agent")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.output.count("nothing to redact") == len(list((SAMPLES / "mini_swe_agent").iterdir()))


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["redact", str(tmp_path / "missing.log")])
    assert result.exit_code == 2 and "no such file or directory" in result.output
    (tmp_path / "x.log").write_text("ok")
    result = CliRunner().invoke(main, ["redact", "--json", "--redacted", str(tmp_path / "x.log")])
    assert result.exit_code == 2 and "do not go together" in result.output
