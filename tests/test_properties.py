"""Property tests: random bytes, random JSON and mutated real files at every registered parser.

Whatever the input, ``ingest_file`` returns a valid ``FileReport`` and never raises, and no
parser hits an unexpected exception (which ``ingest_file`` would report as an internal error).
Formats registered later are covered through their real files in the corpus.
"""

from __future__ import annotations

import atexit
import logging
import shutil
import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.ingest import PARSER_FAILED, ingest_file
from pipeline.ingest.report import FileReport
from pipeline.plugins import registered_formats
from tests.conftest import TRAJECTORIES
from tests.format_samples import Sample, format_names, place, samples

SUFFIXES = sorted({s for f in registered_formats() for s in f.suffixes} | {".json", ".jsonl", ".traj"})
SCRATCH = Path(tempfile.mkdtemp(prefix="skillmill-properties-"))
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)
SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

keys = st.one_of(st.sampled_from(["type", "role", "content", "message", "uuid", "parentUuid", "sessionId",
                                  "messages", "info", "id", "timestamp", "tool_use_id", "input", "text",
                                  "name", "cwd", "payload", "history", "steps", "schema_version"]),
                 st.text(max_size=8))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False),
                    st.text(max_size=30))
json_values = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=5), st.dictionaries(keys, children, max_size=6)), max_leaves=40)
json_objects = st.dictionaries(keys, json_values, max_size=8)
#: Lighter records for whole random JSONL files (a dozen of the above is slow to generate).
small_values = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=3), st.dictionaries(keys, children, max_size=3)), max_leaves=6)
small_objects = st.dictionaries(keys, small_values, max_size=6)


class _Errors(logging.Handler):
    """Errors ingest logs without putting them in a report (a format's sniff raising)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage())


LOGGED = _Errors()
logging.getLogger("pipeline.ingest").addHandler(LOGGED)


def ingest_bytes(data: bytes, suffix: str, sample: Sample | None = None) -> FileReport:
    path = place(sample, SCRATCH, data) if sample else SCRATCH / f"input{suffix}"
    path.write_bytes(data)
    LOGGED.seen.clear()
    report, trajectories = ingest_file(path)
    assert_valid(report, trajectories)
    assert not LOGGED.seen, LOGGED.seen
    return report


def assert_valid(report: FileReport, trajectories: list) -> None:
    FileReport.model_validate(report.model_dump())
    assert report.status in ("ok", "partial", "failed", "skipped")
    assert not any(PARSER_FAILED in e.reason for e in report.errors), report.errors
    assert len(report.trajectories) == len(trajectories)
    assert (report.status in ("ok", "partial")) == bool(trajectories)
    assert (report.status == "ok") == (bool(trajectories) and not report.errors)
    for trajectory in trajectories:
        assert trajectory.id == trajectory.content_id()
        assert [s.index for s in trajectory.steps] == list(range(len(trajectory.steps)))


@SETTINGS
@given(data=st.binary(max_size=4096), suffix=st.sampled_from(SUFFIXES))
def test_random_bytes(data: bytes, suffix: str) -> None:
    ingest_bytes(data, suffix)


@SETTINGS
@given(document=json_values, suffix=st.sampled_from(SUFFIXES))
def test_random_json_documents(document: object, suffix: str) -> None:
    ingest_bytes(orjson.dumps(document), suffix)


@SETTINGS
@given(records=st.lists(small_objects, max_size=10), suffix=st.sampled_from(SUFFIXES))
def test_random_jsonl(records: list[dict], suffix: str) -> None:
    ingest_bytes(b"\n".join(orjson.dumps(r) for r in records), suffix)


# -- real files, mutated: past the format's detection, into the parser ----------------------------
def sample_or_skip(name: str):  # noqa: ANN201
    if TRAJECTORIES is None:
        pytest.skip("the shared trajectory corpus is not here (set SKILLMILL_SHARED)")
    found = samples(TRAJECTORIES).get(name)
    if found is None:
        pytest.skip(f"no real {name} file in the corpus")
    return found


def paths_in(value: object, prefix: tuple = ()) -> list[tuple]:
    out: list[tuple] = []
    stack = [(value, prefix)]
    while stack and len(out) < 3000:
        node, path = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            out.append((*path, key))
            stack.append((child, (*path, key)))
    return out


def a_path(data: st.DataObject, value: object) -> tuple | None:
    """A place in the value, half the time a top-level field (where headers live)."""
    paths = paths_in(value)
    if not paths:
        return None
    top = [p for p in paths if len(p) == 1]
    return data.draw(st.sampled_from(top) if top and data.draw(st.booleans()) else st.sampled_from(paths))


def replaced(value: object, path: tuple, new: object) -> object:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)  # type: ignore[arg-type]
    copy[path[0]] = replaced(copy[path[0]], path[1:], new)
    return copy


@pytest.mark.parametrize("name", format_names())
@SETTINGS
@given(data=st.data())
def test_real_files_with_random_values_in_random_places(name: str, data: st.DataObject) -> None:
    sample = sample_or_skip(name)
    suffix = "".join(sample.path.suffixes[-2:])
    if sample.kind == "json":
        document = orjson.loads(sample.data)
        for _ in range(data.draw(st.integers(1, 3))):
            path = a_path(data, document)
            if path:
                document = replaced(document, path, data.draw(json_values))
        ingest_bytes(orjson.dumps(document), suffix, sample)
    elif sample.kind == "jsonl":
        records = sample.records()
        for _ in range(data.draw(st.integers(1, 4))):
            # the first records more often: they set a session's header fields
            index = data.draw(st.one_of(st.integers(0, min(3, len(records) - 1)), st.integers(0, len(records) - 1)))
            path = a_path(data, records[index])
            if path and data.draw(st.booleans()):
                records[index] = replaced(records[index], path, data.draw(json_values))
            else:  # a random line among the real ones
                records.insert(index, data.draw(json_objects))
        ingest_bytes(b"\n".join(orjson.dumps(r) for r in records), suffix, sample)
    else:
        lines = sample.lines
        for _ in range(data.draw(st.integers(1, 6))):
            index = data.draw(st.integers(0, len(lines)))
            noise = data.draw(st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode),
                                        st.sampled_from([b"#### ", b"> ", b"<<<<<<< SEARCH", b"=======",
                                                         b">>>>>>> REPLACE", b"```", b"# aider chat started at x",
                                                         b"#### /run", b"#### /test", b"> Applied edit to "])))
            lines.insert(index, noise)
        ingest_bytes(b"\n".join(lines), suffix, sample)


@pytest.mark.parametrize("name", format_names())
@SETTINGS
@given(cut=st.floats(0, 1), junk=st.binary(max_size=64))
def test_real_files_cut_anywhere(name: str, cut: float, junk: bytes) -> None:
    sample = sample_or_skip(name)
    ingest_bytes(sample.data[: int(len(sample.data) * cut)] + junk, "".join(sample.path.suffixes[-2:]), sample)
