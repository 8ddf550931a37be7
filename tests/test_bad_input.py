"""Bad input, for every registered format: a clear per-file report, the valid rest kept, bounded memory.

Each case starts from a real file of the format (tests/format_samples.py) and breaks it the way
files break on developers' machines: cut while being written, a corrupt or NUL-filled line, bad
bytes, a giant line, nesting, fields of the wrong type, no permission, symlink loops.
"""

from __future__ import annotations

import errno
import json
import os
import random
import re
import shutil
import tracemalloc
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.ingest import PARSER_FAILED, ingest_file, iter_files, reader
from pipeline.ingest.report import FileReport
from pipeline.trajectory import Trajectory
from tests.conftest import SAMPLES
from tests.format_samples import Sample, format_names, place, samples

FORMATS = format_names()
SESSION = SAMPLES / "claude_code/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"


@pytest.fixture
def sample(corpus: Path, request: pytest.FixtureRequest) -> Sample:
    found = samples(corpus).get(request.param)
    if found is None:
        pytest.skip(f"no real {request.param} file in the corpus to break")
    return found


def per_format(test):  # noqa: ANN001, ANN201
    return pytest.mark.parametrize("sample", FORMATS, indirect=True)(test)


def lines_of(sample: Sample) -> None:
    """Cases that break a file line by line say nothing about an SQLite store's pages."""
    if sample.store:
        pytest.skip("an SQLite store is pages, not lines: tests/test_sqlite_stores.py damages its pages")


def write(tmp_path: Path, sample: Sample, data: bytes) -> Path:
    return place(sample, tmp_path, data)


def check(report: FileReport, trajectories: list[Trajectory]) -> FileReport:
    """What every report must be, whatever the input."""
    FileReport.model_validate(report.model_dump())
    contract = report.contract()
    assert set(contract) == {"path", "format", "status", "errors", "trajectories"}
    assert not any(PARSER_FAILED in e.reason for e in report.errors), report.errors
    assert len(report.trajectories) == len(trajectories)
    if report.status == "ok":
        assert trajectories and not report.errors
    elif report.status == "partial":
        assert trajectories and report.errors
    else:
        assert not trajectories and report.errors and all(e.reason for e in report.errors)
    for t in trajectories:
        assert t.id == t.content_id()
    return report


def middle(sample: Sample) -> int:
    """Index of a non-empty line near the middle."""
    lines = sample.lines
    start = len(lines) // 2
    return next(i for i in list(range(start, len(lines))) + list(range(start)) if lines[i].strip())


def steps(trajectories: list[Trajectory]) -> int:
    return sum(len(t.steps) for t in trajectories)


# -- cut, corrupt, bad bytes -------------------------------------------------------------------
@per_format
def test_a_truncated_last_line(sample: Sample, tmp_path: Path) -> None:
    lines_of(sample)
    data = sample.data.rstrip(b"\n")
    cut = data[: len(data) - max(10, len(data.rsplit(b"\n", 1)[-1]) // 2)]
    report = check(*ingest_file(write(tmp_path, sample, cut)))
    if sample.kind == "jsonl":
        assert report.status == "partial"
        assert "truncated last line" in report.errors[-1].reason
        assert report.errors[-1].line == cut.count(b"\n") + 1
    elif sample.kind == "json":  # a cut document holds nothing whole; cut early, it may not be recognised
        assert report.status in ("failed", "skipped")
    else:
        assert report.status in ("ok", "partial") and report.trajectories


@per_format
def test_a_corrupt_line_in_the_middle(sample: Sample, tmp_path: Path) -> None:
    lines_of(sample)
    lines = sample.lines
    at = middle(sample)
    lines[at] = b'{"type": "user", "message": {"content": [bro'
    report, trajectories = ingest_file(write(tmp_path, sample, b"\n".join(lines)))
    check(report, trajectories)
    if sample.kind == "jsonl":
        assert report.status == "partial"
        assert [(e.line, e.reason.split(":")[0]) for e in report.errors] == [(at + 1, "invalid JSON")]
        assert 0 < steps(trajectories) < sample.steps + 1, "the lines around it are kept"
    elif sample.kind == "json":
        assert report.status in ("failed", "skipped")
    else:
        assert trajectories, "text around a garbled line is still read"


@per_format
def test_invalid_utf8_is_replaced_and_reported(sample: Sample, tmp_path: Path) -> None:
    lines_of(sample)
    lines = sample.lines
    at = middle(sample)
    if sample.kind == "text":  # in prose, not in a line whose markup carries meaning
        at = next(i for i in [*range(at, len(lines)), *range(at)] if re.match(rb"[A-Za-z]", lines[i]))
        cut = len(lines[at]) // 2
    else:  # inside a string value, where such bytes can be at all
        at = next(i for i in [*range(at, len(lines)), *range(at)] if re.search(rb'":\s*"', lines[i]))
        cut = re.search(rb'":\s*"', lines[at]).end()
    lines[at] = lines[at][:cut] + b"\xff\xfe\xc3" + lines[at][cut:]
    report, trajectories = ingest_file(write(tmp_path, sample, b"\n".join(lines)))
    check(report, trajectories)
    assert report.status == "partial"
    assert any("UTF-8" in e.reason for e in report.errors)
    if sample.kind != "json":
        assert [e.line for e in report.errors if "UTF-8" in e.reason] == [at + 1]
    assert steps(trajectories) == sample.steps, "the record is kept, the bytes replaced"


@per_format
def test_a_run_of_nul_bytes_is_dropped_and_reported(sample: Sample, tmp_path: Path) -> None:
    lines_of(sample)
    # What a crash leaves in a file being appended to: a hole of NULs, then more data.
    if sample.kind == "json":
        at = sample.data.index(b"{") + 1
        data = sample.data[:at] + b"\x00" * 65536 + sample.data[at:]
    else:
        lines = sample.lines
        at = middle(sample)
        lines[at] = b"\x00" * 65536 + lines[at]
        data = b"\n".join(lines)
    report, trajectories = ingest_file(write(tmp_path, sample, data))
    check(report, trajectories)
    assert report.status == "partial", f"{report.errors} (JSON documents: read them with reader.load_json)"
    assert any("65536 NUL bytes dropped" in e.reason for e in report.errors)
    assert steps(trajectories) == sample.steps


@per_format
def test_a_64_mib_line_is_skipped_in_bounded_memory(sample: Sample, tmp_path: Path) -> None:
    lines_of(sample)
    if sample.kind == "json":
        pytest.skip("a JSON document is one value: its size limit is tested separately")
    lines = sample.lines
    at = middle(sample)
    giant = b'{"type": "user", "message": {"content": "' + b"a" * (64 * 1024 * 1024) + b'"}}'
    path = write(tmp_path, sample, b"\n".join([*lines[:at], giant, *lines[at:]]))
    del giant
    tracemalloc.start()
    try:
        report, trajectories = ingest_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    check(report, trajectories)
    assert report.status == "partial"
    assert any(e.line == at + 1 and "longer than" in e.reason for e in report.errors)
    assert steps(trajectories) >= sample.steps, "the lines around it are kept"
    assert peak < 40 * 1024 * 1024, f"peak {peak} bytes: the line was not streamed past"


def test_a_json_document_over_the_size_limit_is_refused(corpus: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    documents = [s for s in samples(corpus).values() if s.kind == "json"]
    if not documents:
        pytest.skip("no JSON-document format registered")
    monkeypatch.setattr(reader, "MAX_JSON_BYTES", 1024)
    for sample in documents:
        report, trajectories = ingest_file(write(tmp_path, sample, sample.data))
        check(report, trajectories)
        assert report.status == "failed" and "larger than the 1024-byte limit" in report.errors[0].reason


# -- not trajectories at all ---------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".md", ".traj"])
@pytest.mark.parametrize("content", [b"", b"   \n\n\t \r\n", b"\x00" * 100_000], ids=["empty", "blank", "nul"])
def test_empty_whitespace_and_nul_files_are_skipped(tmp_path: Path, suffix: str, content: bytes) -> None:
    path = tmp_path / f"x{suffix}"
    path.write_bytes(content)
    report = check(*ingest_file(path))
    assert report.status == "skipped" and report.errors[0].reason.startswith("empty file")


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".md"])
def test_binary_junk_is_not_a_trajectory(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"junk{suffix}"
    path.write_bytes(random.Random(7).randbytes(200_000))
    report = check(*ingest_file(path))
    assert report.status == "skipped" and "not a trajectory" in report.errors[0].reason


@pytest.mark.parametrize(("name", "content"), [
    ("package.json", b'{"name": "x", "version": "1.0.0", "dependencies": {"a": "^1"}}'),
    ("numbers.json", b"[1, 2, 3]"),
    ("log.jsonl", b'{"level": "info", "msg": "started"}\n{"level": "error", "msg": "boom"}\n'),
    ("events.jsonl", b'{"type": "user", "text": "no session id"}\n{"type": "assistant"}\n'),
    ("README.md", b"# Title\n\n#### Usage\n\n> quoted  \n\ntext\n"),
    ("strings.json", b'"just a string"'),
])
def test_valid_json_of_an_unrelated_kind_is_skipped(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    report = check(*ingest_file(path))
    assert report.status == "skipped" and "not a trajectory" in report.errors[0].reason


# -- nesting and wrong types ---------------------------------------------------------------------
def nested(depth: int) -> bytes:
    return b'{"a": ' * depth + b"1" + b"}" * depth


@per_format
@pytest.mark.parametrize("depth", [900, 1_000_000])
def test_deep_nesting_fails_cleanly(sample: Sample, tmp_path: Path, depth: int) -> None:
    # 900 levels parse (orjson stops at 1024) and would break a recursive walker; a million do not parse.
    deep = nested(depth)
    if sample.kind == "json":
        first_value = sample.data.index(b":") + 1
        data = sample.data[:first_value] + deep + b", \"_x\":" + sample.data[first_value:]
        report, trajectories = ingest_file(write(tmp_path, sample, data))
        check(report, trajectories)
        return
    if sample.kind == "text":
        lines = sample.lines
        lines.insert(middle(sample), deep)
        check(*ingest_file(write(tmp_path, sample, b"\n".join(lines))))
        return
    lines = sample.lines
    at = middle(sample)
    record = orjson.loads(lines[at])
    for key in list(record)[:12]:  # every field in turn holds the nesting
        mutated = dict(record)
        mutated[key] = "@DEEP@"
        lines[at] = orjson.dumps(mutated).replace(b'"@DEEP@"', deep)
        report, trajectories = ingest_file(write(tmp_path, sample, b"\n".join(lines)))
        check(report, trajectories)
        if depth > 1024:
            assert report.status == "partial" and any(e.line == at + 1 for e in report.errors)


WRONG = [None, 0, -1, 1.5, True, "", "x", [], {}, [None], {"": None}, [[["deep"]]]]


def paths_in(value: object, prefix: tuple = (), depth: int = 3) -> list[tuple]:
    out = []
    if depth and isinstance(value, dict):
        for key, child in list(value.items())[:15]:
            out.append((*prefix, key))
            out.extend(paths_in(child, (*prefix, key), depth - 1))
    elif depth and isinstance(value, list):
        for index, child in list(enumerate(value))[:3]:
            out.append((*prefix, index))
            out.extend(paths_in(child, (*prefix, index), depth - 1))
    return out


def replaced(value: object, path: tuple, new: object) -> object:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)  # type: ignore[arg-type]
    copy[path[0]] = replaced(copy[path[0]], path[1:], new)
    return copy


@per_format
def test_fields_of_the_wrong_type_never_crash(sample: Sample, tmp_path: Path) -> None:
    if sample.kind == "text":
        pytest.skip("a text format has no typed fields")
    if sample.kind == "json":
        documents = [(None, orjson.loads(sample.data))]
    else:
        records = sample.records()
        documents = [(i, r) for i, r in enumerate(records[:6])]
    tried = 0
    for index, document in documents:
        for path in paths_in(document)[:60]:
            for value in WRONG:
                mutated = replaced(document, path, value)
                if index is None:
                    data = orjson.dumps(mutated)
                else:
                    records = sample.records()
                    records[index] = mutated
                    data = b"\n".join(orjson.dumps(r) for r in records)
                check(*ingest_file(write(tmp_path, sample, data)))
                tried += 1
    assert tried > 50


# -- the file system ----------------------------------------------------------------------------
@per_format
def test_an_unreadable_file_is_reported(sample: Sample, tmp_path: Path) -> None:
    path = write(tmp_path, sample, sample.data)
    path.chmod(0)
    try:
        if os.access(path, os.R_OK):
            pytest.skip("running as root: root reads a file whatever its mode")
        report = check(*ingest_file(path))
        assert report.status == "failed" and report.errors[0].reason == "cannot read: Permission denied"
    finally:
        path.chmod(0o644)


@per_format
def test_a_read_error_part_way_is_reported(sample: Sample, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A disk or network file system failing after the format was detected: EIO on the second open.
    path = write(tmp_path, sample, sample.data)
    opened = []
    real_open = Path.open

    def failing_open(self: Path, *args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        handle = real_open(self, *args, **kwargs)
        opened.append(self)
        if self == path and len(opened) > 1:
            handle.close()
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return handle

    monkeypatch.setattr(Path, "open", failing_open)
    report = check(*ingest_file(path))
    assert report.status == "failed"
    assert report.errors[-1].reason == "read failed part-way: Input/output error"


def test_symlink_loops_end_and_a_linked_file_is_read_once(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (root / "project").mkdir(parents=True)
    real = root / "project" / "session.jsonl"
    shutil.copy(SESSION, real)
    (root / "project" / "again.jsonl").symlink_to(real)  # the same file under another name
    (root / "project" / "up").symlink_to(root, target_is_directory=True)  # a directory loop
    (root / "a.jsonl").symlink_to(root / "b.jsonl")  # a file loop
    (root / "b.jsonl").symlink_to(root / "a.jsonl")
    (root / "gone.jsonl").symlink_to(root / "deleted.jsonl")
    files = list(iter_files([root, real, root / "project" / "again.jsonl"]))
    names = sorted(p.name for p in files)
    assert names == ["a.jsonl", "again.jsonl", "b.jsonl", "gone.jsonl"], "the session once, under its first name"
    reports = {p.name: check(*ingest_file(p)) for p in files}
    assert reports["again.jsonl"].status == "ok"
    assert reports["a.jsonl"].errors[0].reason == reports["b.jsonl"].errors[0].reason == "symlink loop"
    assert reports["gone.jsonl"].errors[0].reason.startswith("broken symlink")
    assert {r.status for name, r in reports.items() if name != "again.jsonl"} == {"failed"}


def test_a_directory_or_a_pipe_is_not_read(tmp_path: Path) -> None:
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    pipe = tmp_path / "pipe.jsonl"
    os.mkfifo(pipe)
    assert check(*ingest_file(folder)).errors[0].reason == "a directory, not a file"
    assert check(*ingest_file(pipe)).errors[0].reason.startswith("not a regular file")


def test_a_parser_bug_is_one_file_s_error_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.ingest.formats.claude_code import ClaudeCode

    def broken(self, path, report):  # noqa: ANN001, ANN202
        raise ZeroDivisionError("a bug")
        yield

    monkeypatch.setattr(ClaudeCode, "parse", broken)
    report, trajectories = ingest_file(SESSION)
    assert report.status == "failed" and not trajectories
    assert report.errors[0].reason.startswith(f"{PARSER_FAILED} claude-code parser: ZeroDivisionError")


# -- through the CLI -----------------------------------------------------------------------------
def test_ingest_cli_reports_per_file_and_exits_1_without_a_traceback(tmp_path: Path) -> None:
    shutil.copy(SESSION, tmp_path / "good.jsonl")
    lines = SESSION.read_bytes().split(b"\n")
    lines[4] = b"{not json"
    (tmp_path / "corrupt.jsonl").write_bytes(b"\n".join(lines))
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")
    result = CliRunner().invoke(main, ["ingest", "--json", str(tmp_path)])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    rows = {Path(r["path"]).name: r for r in map(json.loads, result.output.splitlines())}
    assert {name: r["status"] for name, r in rows.items()} == {
        "good.jsonl": "ok", "corrupt.jsonl": "partial", "empty.jsonl": "skipped", "loop.jsonl": "failed"}
    assert rows["corrupt.jsonl"]["errors"][0]["line"] == 5
    for row in rows.values():
        assert set(row) == {"path", "format", "status", "errors", "trajectories"}
        for t in row["trajectories"]:
            assert set(t) == {"id", "task", "steps", "tool_calls", "outcome"}


def test_a_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "no such file or directory" in result.output
