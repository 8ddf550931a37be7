"""Property tests: real SWE-agent, OpenHands and ATIF files with fields replaced by random JSON,
and random JSON handed straight to each parser. Nothing may raise; every problem is in the report."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.ingest import ingest_file
from pipeline.ingest.formats.atif import Atif
from pipeline.ingest.formats.openhands import OpenHands
from pipeline.ingest.formats.swe_agent import SweAgent
from pipeline.ingest.report import FileReport
from pipeline.trajectory import StepKind
from tests.conftest import TRAJECTORIES

REAL = [
    ("swe_agent/demonstrations/function_calling_simple.traj", "swe-agent"),
    ("swe_agent/legacy_v0.7.0/human_thought__swe-bench-HumanEvalFix-python__lcb__t-0.00__p-0.95__c-4.00__install-0/"
     "humanevalfix-python-0.traj", "swe-agent"),
    ("openhands/runtime_replay_trajs/wrong_initial_state.json", "openhands"),
    ("openhands/resolver/resolver_output.jsonl", "openhands"),
    ("atif/openagents_third_party/tbench-regex-log/trajectory.json", "atif"),
    ("atif/openagents_third_party/qa-runner-login-trace/trajectory.json", "atif"),
]
PARSERS = [SweAgent(), OpenHands(), Atif()]

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8)
SETTINGS = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "40")), deadline=None, suppress_health_check=list(HealthCheck))


def json_paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in children:
        found.extend(json_paths(child, (*prefix, key)))
    return found


def replace(node: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    node[path[0]] = replace(node[path[0]], path[1:], value)
    return node


def load(name: str) -> tuple[Any, bool]:
    text = (TRAJECTORIES / name).read_text()
    if name.endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines() if line.strip()], True
    return json.loads(text), False


def check(path: Path) -> None:
    report, trajectories = ingest_file(path)
    assert report.status in ("ok", "partial", "failed", "skipped")
    json.dumps(report.contract())  # the --json contract always serializes
    for trajectory in trajectories:
        for step in trajectory.steps:
            if step.kind is StepKind.TOOL_RESULT and step.call_index is not None:
                assert trajectory.steps[step.call_index].result_index == step.index


@pytest.mark.skipif(TRAJECTORIES is None, reason="the shared trajectory corpus is not here")
@pytest.mark.parametrize(("name", "fmt"), REAL)
@SETTINGS
@given(data=st.data())
def test_real_files_with_random_fields_never_crash(name: str, fmt: str, data: st.DataObject) -> None:
    document, lines = load(name)
    paths = json_paths(document)
    for _ in range(data.draw(st.integers(1, 3))):
        depth = data.draw(st.integers(0, 5))  # shallow fields change the shape most: draw those often
        target = data.draw(st.sampled_from([p for p in paths if len(p) <= depth] or paths))
        try:
            document = replace(document, target, data.draw(JSON))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier replacement removed this path
        paths = json_paths(document)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / Path(name).name
        if lines and isinstance(document, list):
            path.write_text("\n".join(json.dumps(row) for row in document) + "\n")
        else:
            path.write_text(json.dumps(document))
        check(path)


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.name)
@SETTINGS
@given(document=JSON)
def test_any_json_handed_to_a_parser_is_reported_not_raised(parser: Any, document: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        for text in (json.dumps(document), json.dumps(document) + "\n" + json.dumps([document])):
            path = Path(folder) / "input.json"
            path.write_text(text)
            report = FileReport(path=str(path))
            trajectories = list(parser.parse(path, report))
            assert trajectories or report.errors


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.name)
@SETTINGS
@given(raw=st.binary(max_size=300))
def test_random_bytes_are_reported_not_raised(parser: Any, raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input.traj"
        path.write_bytes(raw)
        report = FileReport(path=str(path))
        trajectories = list(parser.parse(path, report))
        assert trajectories or report.errors or not raw.strip()
