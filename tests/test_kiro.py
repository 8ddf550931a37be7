"""Kiro CLI / Amazon Q Developer CLI conversations saved with ``/save``.

The corpus' one Kiro file is a hand-written sample; tests/fixtures/kiro/SOURCE.md says what the fixture is written
from. Counts are taken from the raw document, not from the reader.
"""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.ingest import ingest_file
from pipeline.ingest.reader import Probe
from pipeline.plugins import registered_formats
from tests.conftest import TRAJECTORIES

SAVED = Path(__file__).parent / "fixtures" / "kiro" / "tinycalc-conversation.json"
SAMPLE = next(p for p in (TRAJECTORIES / "kiro").rglob("*.json"))


def uses(document: dict) -> list[str]:
    return [u["id"] for turn in document["history"] for kind, body in turn["assistant"].items() if kind == "ToolUse"
            for u in body["tool_uses"]]


def test_a_saved_conversation_is_one_trajectory() -> None:
    document = json.loads(SAVED.read_text())
    report, [t] = ingest_file(SAVED)
    assert (report.status, report.format) == ("ok", "kiro-cli")
    assert [c.call_id for c in t.tool_calls()] == uses(document) and len(uses(document)) == 5
    assert [c.tool for c in t.tool_calls()] == ["fs_read", "fs_write", "execute_bash", "fs_write", "execute_bash"]
    first, last = (c for c in t.tool_calls() if c.tool == "execute_bash")
    assert (t.result_of(first).exit_code, t.result_of(first).is_error) == (1, True)
    assert (t.result_of(last).exit_code, t.result_of(last).is_error) == (0, False)
    assert "+        sys.exit(2)" in t.tool_calls()[1].diff.splitlines()
    assert t.tool_calls()[0].paths == ["/home/dev/tinycalc/tinycalc/cli.py"]  # fs_read's operations
    assert (t.session_id, t.cwd, t.repo) == (document["conversation_id"], "/home/dev/tinycalc", "tinycalc")
    assert t.task == document["history"][0]["user"]["content"]["Prompt"]["prompt"]
    assert t.steps[-1].text == "divide prints the error to stderr and exits 2; both tests pass."


def test_the_hand_written_sample_with_flattened_variants_reads_too() -> None:
    document = json.loads(SAMPLE.read_text())
    report, [t] = ingest_file(SAMPLE)
    assert (report.status, report.format) == ("ok", "kiro-cli")
    assert [c.call_id for c in t.tool_calls()] == uses(document)
    assert t.result_of(t.tool_calls()[0]).text == "README.md\nsrc/\ntests/\n"
    assert t.task == document["history"][0]["user"]["content"]["Prompt"]


def test_it_is_claimed_by_kiro_only() -> None:
    for path in (SAVED, SAMPLE):
        assert [f.name for f in registered_formats() if f.sniff(Probe.read(path))] == ["kiro-cli"]


def test_a_refused_edit_is_the_harness_not_the_project(tmp_path: Path) -> None:
    document = json.loads(SAVED.read_text())
    [result] = document["history"][2]["user"]["content"]["ToolUseResults"]["tool_use_results"]
    result.update(status="Error", content=[{"Text": 'no occurrences of "    return a / b\\n" were found'}])
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(document))
    _, [t] = ingest_file(path)
    edit, run = t.tool_calls()[1], t.tool_calls()[2]
    assert t.result_of(edit).protocol_error and not t.result_of(run).protocol_error
