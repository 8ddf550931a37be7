"""Files from other public repositories that detection missed, each built by reshaping a real corpus file.

Detection reads a bounded head of a file, so it must not depend on where a key falls in it: a
mini-swe-agent run writes ``info`` (the whole submitted patch) before ``messages``; an OpenHands
export's first event holds the whole system prompt before its ``"action"``. A file that names its
format (``"schema_version": "ATIF-v1.x"``) is that format whatever cues of others it carries, and an
aider history with no messages is skipped, not failed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.ingest import detect, ingest_file
from pipeline.ingest.fields import MAX_SCAN_BYTES, scan_fields
from pipeline.ingest.reader import PROBE_BYTES, Probe

MINI = "mini_swe_agent/swebench_verified_gemini-3-pro/resolved/django__django-16255.traj.json"
OPENHANDS = "openhands/runtime_replay_trajs/basic.json"
ATIF = "atif/openagents_third_party/mechacoder/session-2025-12-05T07-45-57-649Z-x8251x.atif.json"
AIDER = "aider/Aquaticat-Monochromatic/.aider.chat.history.md"


def steps(path: Path) -> tuple[str | None, str, int, list[str]]:
    report, trajectories = ingest_file(path)
    return report.format, report.status, sum(len(t.steps) for t in trajectories), [t.task or "" for t in trajectories]


def big_patch(size: int) -> str:
    """A submission that adds a generated file of about ``size`` bytes (what a run that vendors data submits)."""
    lines = [f"+row {i}: a line of the generated fixture file, as a real patch would add it" for i in
             range(size // 76 + 1)]
    return ("diff --git a/tests/fixtures/big.csv b/tests/fixtures/big.csv\nnew file mode 100644\n"
            f"--- /dev/null\n+++ b/tests/fixtures/big.csv\n@@ -0,0 +1,{len(lines)} @@\n" + "\n".join(lines) + "\n")


# -- mini-swe-agent: info (a 0.9 MB submission) before messages ------------------------------------------
@pytest.mark.parametrize("order", [
    ("info", "messages", "trajectory_format", "instance_id"),  # 1.x and 2.2.x
    ("trajectory_format", "instance_id", "info", "messages"),
    ("messages", "info", "instance_id", "trajectory_format"),
], ids=["info-first", "version-first", "messages-first"])
@pytest.mark.parametrize("indent", [2, None], ids=["indented", "one-line"])
def test_a_mini_swe_agent_run_with_a_big_patch_is_read_whatever_the_key_order(
        corpus: Path, tmp_path: Path, order: tuple[str, ...], indent: int | None) -> None:
    original = corpus / MINI
    run = json.loads(original.read_text())
    run["info"]["submission"] += big_patch(900_000)
    path = tmp_path / original.name
    path.write_text(json.dumps({key: run[key] for key in order}, indent=indent))
    assert path.stat().st_size > 900_000
    assert steps(path) == steps(original)[:1] + ("ok",) + steps(original)[2:]


def test_without_trajectory_format_the_version_in_info_names_the_run(corpus: Path, tmp_path: Path) -> None:
    run = json.loads((corpus / MINI).read_text())
    run["info"]["submission"] += big_patch(900_000)
    del run["trajectory_format"]
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(run, indent=2))  # info holds mini_version after the submission
    assert steps(path)[:2] == ("mini-swe-agent", "ok")


# -- OpenHands: an export whose first event is the 13 KB system prompt ----------------------------------
def test_an_openhands_export_that_begins_with_the_system_prompt(corpus: Path, tmp_path: Path) -> None:
    original = corpus / OPENHANDS
    events = json.loads(original.read_text())
    for event in events:  # the system event takes id 0, as in current exports
        event["id"] += 1
        if isinstance(event.get("cause"), int):
            event["cause"] += 1
    prompt = ("You are OpenHands agent, a helpful AI assistant that can interact with a computer to solve tasks.\n"
              "<ROLE>\nYour primary role is to assist users by executing commands, modifying code, and solving "
              "technical problems effectively.\n</ROLE>\n") * 60
    assert len(prompt) > 13_000
    system = {"id": 0, "timestamp": events[0]["timestamp"], "source": "agent", "message": prompt,
              "action": "system", "args": {"content": prompt, "tools": [], "openhands_version": "0.39.2",
                                           "agent_class": "CodeActAgent"}}
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps([system, *events], indent=2))
    assert path.read_text().index('"action"') > 13_000
    assert steps(path) == steps(original)


# -- ATIF naming itself beats OpenHands' cues --------------------------------------------------------------
@pytest.mark.parametrize("indent", [2, None], ids=["indented", "one-line"])
def test_an_atif_file_converted_from_openhands_is_atif(corpus: Path, tmp_path: Path, indent: int | None) -> None:
    original = corpus / ATIF
    trajectory = json.loads(original.read_text())
    trajectory["agent"].setdefault("extra", {})["agent_class"] = "CodeActAgent"  # Harbor's OpenHands-to-ATIF
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(trajectory, indent=indent))
    assert steps(path) == steps(original)
    assert steps(original)[:2] == ("atif", "ok")


def test_only_a_top_level_schema_version_names_a_file(tmp_path: Path) -> None:
    """An OpenHands row quoting an ATIF document in a nested field stays OpenHands' to judge."""
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps({"instance_id": "x", "metadata": {"schema_version": "ATIF-v1.2"}, "history": []}))
    probe = Probe.read(path)
    assert detect(probe) is None or detect(probe).name != "atif"


# -- aider: a history with only its header ------------------------------------------------------------
def test_an_aider_history_without_messages_is_skipped_with_its_reason(corpus: Path, tmp_path: Path) -> None:
    text = (corpus / AIDER).read_text()
    header = text[: text.index("\n#### ") + 1]  # up to the first typed message: launches left at once
    assert "# aider chat started at" in header and "> Aider v" in header
    folder = tmp_path / "repo"
    folder.mkdir()
    path = folder / ".aider.chat.history.md"
    path.write_text(header)
    report, trajectories = ingest_file(path)
    assert (report.format, report.status, trajectories) == ("aider", "skipped", [])
    launches = header.count("# aider chat started at")
    assert report.errors[0].reason.startswith(f"aider history without messages: {launches} launches")

    result = CliRunner().invoke(main, ["ingest", "--json", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["status"] == "skipped"


# -- the scan behind it: bounded, and only when a cue asks ------------------------------------------------
def test_detection_reads_past_the_head_only_for_a_cue_and_within_its_budget(tmp_path: Path) -> None:
    unrelated = tmp_path / "data.json"
    unrelated.write_text(json.dumps({"name": "x", "rows": ["y" * 100] * 20_000}))
    probe = Probe.read(unrelated)
    assert detect(probe) is None
    assert "fields" not in probe.__dict__, "no sniff scanned a file no format's keys start"

    endless = tmp_path / "run.traj.json"  # a submission bigger than the budget: the scan stops there
    endless.write_text(json.dumps({"info": {"submission": "x" * (MAX_SCAN_BYTES + PROBE_BYTES * 4)},
                                   "messages": [], "trajectory_format": "mini-swe-agent-1"}))
    probe = Probe.read(endless)
    assert detect(probe) is None
    assert not probe.fields.complete and list(probe.fields.items) == []
    assert 0 < probe._offset <= MAX_SCAN_BYTES + PROBE_BYTES


@pytest.mark.parametrize(("document", "expected"), [
    (b'{"a": "x\\"}{[", "b": [1, {"c": 2}], "d": {"e": {"f": 1}, "g": "h"}, "i": null}',
     {"a": ("string", 'x"}{['), "b": ("array", None), "d": ("object", None), "i": ("scalar", "null")}),
    (b'[{"source": "agent", "message": "' + b"p" * 200_000 + b'", "action": "system"}, {"x": 1}]',
     {"source": ("string", "agent"), "message": ("string", None), "action": ("string", "system")}),
    (b'{"a": 1, "b": ', {"a": ("scalar", "1")}),
    (b'{"a": 1 "b": 2}', {"a": ("scalar", "1")}),
    (b'{"a": ' + b"[" * 2000 + b"]" * 2000 + b', "b": 1}', {}),
    (b'"just a string"', {}),
])
def test_fields_of_the_first_object(document: bytes, expected: dict) -> None:
    rest = [document[1000:]]
    fields = scan_fields(document[:1000], lambda size: rest.pop() if rest else b"")
    assert {key: (f.kind, f.text) for key, f in fields.items.items()} == expected
    if "d" in expected:
        assert fields.get("d").keys == ("e", "g")
