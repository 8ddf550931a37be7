"""mini-swe-agent trajectories: 29 labelled SWE-bench Verified runs and the two test files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline.ingest import ingest_file
from pipeline.trajectory import StepKind

RUN = "mini_swe_agent/swebench_verified_gemini-3-pro"


def labelled(corpus: Path) -> list[Path]:
    return sorted((corpus / RUN).glob("*/*.traj.json"))


def test_all_29_labelled_runs_parse_with_their_labels(corpus: Path) -> None:
    files = labelled(corpus)
    assert len(files) == 29
    for path in files:
        report, [t] = ingest_file(path)
        assert report.status == "ok" and report.format == "mini-swe-agent", (path, report.errors)
        expected = "resolved" if path.parent.name == "resolved" else "failed"
        assert (t.outcome.status, t.outcome.source) == (expected, "label")
        data = json.loads(path.read_text())
        # one tool call per assistant message that carried a bash block, each with its exit code
        observed = [int(m) for msg in data["messages"] if msg["role"] == "user"
                    for m in re.findall(r"<returncode>(-?\d+)</returncode>", msg["content"])]
        codes = [s.exit_code for s in t.steps if s.kind is StepKind.TOOL_RESULT and s.exit_code is not None]
        assert codes[: len(observed)] == observed
        assert len(t.tool_calls()) >= len(observed)


def test_header_and_task(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / RUN / "resolved/django__django-16255.traj.json")
    assert t.repo == "django/django" and t.session_id == "django__django-16255"
    assert t.model == "google/gemini-3-pro-preview" and t.agent_version == "1.15.0" and t.cwd == "/testbed"
    assert t.task.startswith("Sitemaps without items raise ValueError on callable lastmod.")
    assert "<pr_description>" not in t.task
    first = t.tool_calls()[0]
    assert first.command == "ls -R django/contrib/sitemaps" and t.result_of(first).exit_code == 0


@pytest.mark.parametrize("name", ["github_issue.traj.json", "local.traj.json"])
def test_bare_list_form(corpus: Path, name: str) -> None:
    report, [t] = ingest_file(corpus / "mini_swe_agent/tests_test_data" / name)
    assert report.status == "ok"
    assert t.tool_calls() and all(c.tool == "bash" for c in t.tool_calls())
    assert t.outcome.source == "heuristic"


def test_missing_colon_issue_exit_codes(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "mini_swe_agent/tests_test_data/github_issue.traj.json")
    first = t.tool_calls()[0]
    assert first.command.startswith("cat ") and t.result_of(first).exit_code == 1
