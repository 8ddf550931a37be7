"""Per-file watermarks: real sessions copied to tmp_path and appended to line by line."""

from __future__ import annotations

import os
import shutil
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.index.state import StateDB
from pipeline.ingest import ingest_file
from pipeline.ingest import tables as ingest_tables
from pipeline.ingest.watermark import Decision, Mode, Watermark, check, read, reader_key
from pipeline.trajectory import StepKind

KEY = reader_key("test")
CC = "claude_code/codemie-code"


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def same_as_whole(got, path: Path) -> None:
    """An incremental read gives exactly what parsing the file whole gives."""
    _, [whole] = ingest_file(path)
    [trajectory] = got
    assert trajectory.id == whole.id
    assert trajectory.model_dump(exclude={"source_path"}) == whole.model_dump(exclude={"source_path"})


@pytest.mark.parametrize("name", [f"{CC}/session-3fe1b6bc.jsonl",
                                  f"{CC}/incremental-subagents/turn-2/subagents/agent-a485154.jsonl"])
def test_a_session_appended_line_by_line_is_read_incrementally_and_comes_out_whole(
        corpus: Path, tmp_path: Path, name: str) -> None:
    lines = lines_of(corpus / name)
    live = tmp_path / "session.jsonl"
    live.write_bytes(lines[0])
    first = read(live, None, reader=KEY)
    assert first.mode is Mode.NEW and first.watermark is not None
    previous, modes = first.watermark, []
    for number, line in enumerate(lines[1:], start=2):
        with live.open("ab") as handle:
            handle.write(line)
        reading = read(live, previous, reader=KEY)
        modes.append(reading.mode)
        previous = reading.watermark
        assert previous is not None and previous.offset == live.stat().st_size and previous.line == number
        if number in (len(lines) // 3, len(lines)):
            same_as_whole(reading.trajectories, live)
    assert set(modes) <= {Mode.APPENDED, Mode.NEW, Mode.REREAD}
    assert modes.count(Mode.APPENDED) >= len(lines) - 3  # a file whose first line is no trajectory yet is re-probed
    calls = reading.trajectories[0].tool_calls()
    assert calls and all(c.result_index is not None for c in calls[:-1]), "calls pair across read boundaries"


def test_a_half_written_last_line_is_read_again_once_complete(corpus: Path, tmp_path: Path) -> None:
    lines = lines_of(corpus / CC / "-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl")
    live = tmp_path / "s.jsonl"
    live.write_bytes(b"".join(lines[:10]) + lines[10][:40])
    reading = read(live, None, reader=KEY)
    assert reading.report.status == "partial" and "truncated" in reading.report.errors[0].reason
    assert reading.watermark.offset == len(b"".join(lines[:10])) and reading.watermark.line == 10
    with live.open("ab") as handle:
        handle.write(lines[10][40:] + b"".join(lines[11:]))
    reading = read(live, reading.watermark, reader=KEY)
    assert reading.mode is Mode.APPENDED and reading.report.status == "ok"
    same_as_whole(reading.trajectories, live)


def test_a_complete_last_line_without_newline_is_not_counted_twice(corpus: Path, tmp_path: Path) -> None:
    lines = lines_of(corpus / CC / "session-9eda1058.jsonl")
    live = tmp_path / "s.jsonl"
    live.write_bytes(b"".join(lines[:20]) + lines[20].rstrip(b"\n"))  # parses, but may still grow
    reading = read(live, None, reader=KEY)
    assert reading.report.status == "ok" and reading.watermark.line == 20
    with live.open("ab") as handle:
        handle.write(b"\n" + b"".join(lines[21:]))
    reading = read(live, reading.watermark, reader=KEY)
    assert reading.mode is Mode.APPENDED
    same_as_whole(reading.trajectories, live)


def test_unchanged_touched_rewritten_and_shrunk_files(corpus: Path, tmp_path: Path) -> None:
    live = tmp_path / "s.jsonl"
    shutil.copy2(corpus / CC / "session-9eda1058.jsonl", live)
    mark = read(live, None, reader=KEY).watermark
    assert check(live, mark, reader=KEY).decision is Decision.UNCHANGED

    os.utime(live, ns=(mark.mtime_ns + 10**9, mark.mtime_ns + 10**9))  # touched, same bytes
    assert check(live, mark, reader=KEY).decision is Decision.READ
    touched = read(live, mark, reader=KEY)
    assert touched.mode is Mode.UNCHANGED and touched.report is None
    assert touched.watermark.mtime_ns == live.stat().st_mtime_ns and touched.watermark.digest == mark.digest

    data = bytearray(live.read_bytes())
    data[data.index(b'"sessionId"') + 14] ^= 1  # one byte of an already-read line changes
    live.write_bytes(bytes(data) + b"\n")
    rewritten = read(live, touched.watermark, reader=KEY)
    assert rewritten.mode is Mode.REWRITTEN and rewritten.watermark.digest != mark.digest

    live.write_bytes(b"".join(lines_of(live)[:5]))
    assert read(live, rewritten.watermark, reader=KEY).mode is Mode.REREAD  # shrunk: read whole


def test_a_format_that_cannot_resume_is_read_whole_when_it_grows(corpus: Path, tmp_path: Path) -> None:
    live = tmp_path / "run.traj.json"
    source = (corpus / "mini_swe_agent/swebench_verified_gemini-3-pro/resolved/django__django-16255.traj.json")
    data = source.read_bytes()
    live.write_bytes(data)
    mark = read(live, None, reader=KEY).watermark
    assert mark.format == "mini-swe-agent" and mark.state is None and mark.offset == len(data)
    live.write_bytes(data + b"\n\n")  # grown (an editor added a newline): cannot resume a JSON document
    reading = read(live, mark, reader=KEY)
    assert reading.mode is Mode.REREAD and len(reading.trajectories) == 1


def test_another_reader_or_a_broken_state_means_reading_whole(corpus: Path, tmp_path: Path) -> None:
    lines = lines_of(corpus / CC / "session-9eda1058.jsonl")
    live = tmp_path / "s.jsonl"
    live.write_bytes(b"".join(lines[:20]))
    mark = read(live, None, reader=KEY).watermark
    assert check(live, mark, reader="other code").decision is Decision.READ
    with live.open("ab") as handle:
        handle.write(b"".join(lines[20:]))
    assert read(live, mark, reader="other code").mode is Mode.REREAD
    broken = mark.model_copy(update={"state": zlib.compress(b"not a pickle")})
    reading = read(live, broken, reader=KEY)
    assert reading.mode is Mode.REREAD
    same_as_whole(reading.trajectories, live)


def test_a_recently_changed_file_is_deferred_and_read_later(corpus: Path, tmp_path: Path) -> None:
    live = tmp_path / "s.jsonl"
    shutil.copy(corpus / CC / "session-9eda1058.jsonl", live)  # mtime: now
    deferred = check(live, None, reader=KEY, defer_s=300)
    assert deferred.decision is Decision.DEFERRED and deferred.age_s < 300
    later = live.stat().st_mtime + 301
    assert check(live, None, reader=KEY, defer_s=300, now=later).decision is Decision.READ
    future = live.stat().st_mtime + 86400 * 365
    os.utime(live, (future, future))  # copied from a machine whose clock is a year ahead: not "being written"
    assert check(live, None, reader=KEY, defer_s=300).decision is Decision.READ


def test_watermarks_and_lineage_round_trip_through_the_state_db(corpus: Path, tmp_path: Path) -> None:
    live = tmp_path / "s.jsonl"
    shutil.copy2(corpus / CC / "session-9eda1058.jsonl", live)
    reading = read(live, None, reader=KEY)
    with StateDB() as state:
        ingest_tables.save_watermarks(state, [reading.watermark])
        ingest_tables.save_watermarks(state, [reading.watermark])  # saving again replaces, never duplicates
        [(path, stored)] = ingest_tables.watermarks(state, [str(live), "/nowhere"]).items()
        assert stored == reading.watermark.model_copy(update={"state": None, "read_at": stored.read_at})
        assert ingest_tables.parser_state(state, path) == reading.watermark.state
        assert ingest_tables.supersede(state, [("a1", "a2"), ("a2", "a3"), ("b1", "b1")], path, "file appended") == 2
        assert ingest_tables.ancestors(state, ["a3", "a2", "b1"]) == {"a3": {"a1", "a2"}, "a2": {"a1"}, "b1": set()}
        assert ingest_tables.superseded(state, ["a1", "a2", "a3"]) == {"a1", "a2"}


def test_watermark_model_keeps_the_consumed_prefix_digest(corpus: Path, tmp_path: Path) -> None:
    import hashlib

    live = tmp_path / "s.jsonl"
    shutil.copy2(corpus / CC / "session-9eda1058.jsonl", live)
    mark: Watermark = read(live, None, reader=KEY).watermark
    assert mark.digest == hashlib.sha256(live.read_bytes()[: mark.offset]).hexdigest()
    [trajectory] = read(live, None, reader=KEY).trajectories
    assert mark.trajectories == [trajectory.id]
    assert trajectory.steps[0].kind is StepKind.USER


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=4))
def test_any_split_of_a_growing_file_reads_like_the_whole(corpus: Path, tmp_path: Path, cuts: list[float]) -> None:
    """The file grows in chunks cut at arbitrary bytes (mid-line too); the last read equals a whole parse."""
    data = (corpus / CC / "incremental-subagents/turn-2.jsonl").read_bytes()
    live = tmp_path / "grow.jsonl"
    live.write_bytes(b"")
    previous = None
    for end in sorted({int(c * len(data)) for c in cuts} - {len(data)}) + [len(data)]:
        live.write_bytes(data[:end])
        reading = read(live, previous, reader=KEY)
        previous = reading.watermark or previous
    assert reading.mode in (Mode.APPENDED, Mode.NEW, Mode.REREAD)
    same_as_whole(reading.trajectories, live)


def test_an_overlong_line_is_skipped_once_and_reading_resumes_after_it(corpus: Path, tmp_path: Path) -> None:
    from pipeline.ingest.reader import MAX_LINE_BYTES

    lines = lines_of(corpus / CC / "session-9eda1058.jsonl")
    live = tmp_path / "s.jsonl"
    live.write_bytes(b"".join(lines[:10]) + b'{"type": "user", "junk": "' + b"x" * (MAX_LINE_BYTES + 10) + b'"}\n')
    first = read(live, None, reader=KEY)
    assert "longer than" in first.report.errors[0].reason and first.watermark.line == 11
    with live.open("ab") as handle:
        handle.write(b"".join(lines[10:]))
    reading = read(live, first.watermark, reader=KEY)
    assert reading.mode is Mode.APPENDED and reading.report.errors == []
    assert len(reading.trajectories[0].steps) == len(ingest_file(live)[1][0].steps)
