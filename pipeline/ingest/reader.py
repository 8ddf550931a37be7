"""Bounded, forgiving readers: a bad line is reported and skipped, never fatal.

Lines are read with a length cap, so a 64 MiB line or a file of NULs costs bounded memory.
orjson parses iteratively (no recursion) and stops at 1024 levels, so deeply nested JSON
fails cleanly instead of blowing the stack. NUL runs (what a crash leaves in a file being
appended to) are dropped and reported; the JSON around them is kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from pipeline.ingest.fields import Fields, scan_fields
from pipeline.ingest.report import FileReport

#: Longest JSONL line we parse; longer ones are skipped in chunks and reported.
MAX_LINE_BYTES = 16 * 1024 * 1024
#: Longest text line (Markdown histories) we keep; the rest of such a line is dropped and reported.
MAX_TEXT_LINE_BYTES = 1024 * 1024
#: Largest single-document JSON file we load whole.
MAX_JSON_BYTES = 256 * 1024 * 1024
#: Bytes read from the start of a file to detect its format.
PROBE_BYTES = 64 * 1024
#: How far past NUL bytes detection looks for content before giving up.
MAX_PROBE_SCAN = 16 * 1024 * 1024
_CHUNK = 1024 * 1024
#: Text is decoded this much at a time: big enough to be fast, small enough that the lines of
#: one block (as Python strings, several times the bytes) stay a small, fixed cost.
_TEXT_CHUNK = 256 * 1024
_NUL = b"\x00"
_FIRST_KEY = re.compile(rb'\s*(?:\[\s*)?\{\s*"((?:[^"\\]|\\.){1,200}?)"\s*:')


def _loads(raw: bytes, report: FileReport | None, line: int | None) -> Any:
    """orjson.loads, but invalid UTF-8 inside otherwise good JSON keeps the record, with the bytes replaced.

    The replacement is reported when there is a ``report``; detection (``Probe``) passes none, so
    it sees the same document the parser will read, bad bytes or not.
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "utf-8" not in str(exc).lower():
            raise
    if report is not None:
        report.error("invalid UTF-8 bytes replaced with U+FFFD", line)
    return orjson.loads(raw.decode("utf-8", errors="replace").encode())


def iter_jsonl(path: Path, report: FileReport, *, checkpoint: Checkpoint | None = None) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, record)`` for every line that parses; report the others.

    With a ``checkpoint`` (incremental reads, see ``pipeline.ingest.watermark``), reading starts
    at ``checkpoint.offset`` with line numbers after ``checkpoint.line``, and the checkpoint
    advances past every *complete* line: a last line without its newline may still be being
    written, so the next read starts again before it.
    """
    with path.open("rb") as handle:
        number = checkpoint.line if checkpoint else 0
        if checkpoint and checkpoint.offset:
            handle.seek(checkpoint.offset)
        while True:
            raw = handle.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            number += 1
            if checkpoint is not None and raw.endswith(b"\n"):
                checkpoint.offset, checkpoint.line = handle.tell(), number
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                skipped = len(raw) + _skip_to_newline(handle)
                if checkpoint is not None:
                    end = handle.seek(handle.tell() - 1)
                    if handle.read(1) == b"\n":  # skipped up to its end, not one still being written
                        checkpoint.offset, checkpoint.line = end + 1, number
                report.error(f"line of {skipped} bytes is longer than the {MAX_LINE_BYTES}-byte limit; skipped",
                             number)
                continue
            stripped = raw.strip()
            if _NUL in stripped:
                stripped = _drop_nuls(stripped, report, number)
            if not stripped:
                continue
            try:
                yield number, _loads(stripped, report, number)
            except orjson.JSONDecodeError as exc:
                truncated = not raw.endswith(b"\n")
                reason = "truncated last line (file still being written?)" if truncated else f"invalid JSON: {exc}"
                report.error(reason, number)


def _drop_nuls(raw: bytes, report: FileReport, line: int | None) -> bytes:
    """NUL bytes are never valid in JSON text (not even inside strings), so removing them loses nothing.

    The count is of NULs alone: whitespace stripped with them (a document's final newline) is not one.
    """
    report.error(f"{raw.count(_NUL)} NUL bytes dropped", line)
    return raw.replace(_NUL, b"").strip()


def iter_text_lines(path: Path, report: FileReport,
                    max_line: int = MAX_TEXT_LINE_BYTES) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` of a text file without the line ending, streaming.

    A line longer than ``max_line`` keeps its head and is reported; invalid UTF-8 is
    replaced and reported; NUL bytes are dropped and reported. Nothing here raises for
    bad content. Whole lines are decoded 256 KiB at a time; only a block holding
    something wrong is taken line by line.
    """
    with path.open("rb") as handle:
        number = 0
        pending = b""
        while True:
            chunk = handle.read(_TEXT_CHUNK)
            data = pending + chunk if pending else chunk
            if not chunk:
                if data:  # a last line without its newline
                    yield number + 1, _text_line(data, report, number + 1, max_line)
                return
            cut = data.rfind(b"\n")
            if cut < 0:
                pending = data
                if len(data) > max_line:  # one line past the limit: keep its start, skip the rest
                    number += 1
                    dropped = len(data) - max_line + _skip_to_newline(handle)
                    yield number, _text_line(data[:max_line], report, number, max_line, dropped)
                    pending = b""
                continue
            block, pending = data[:cut], data[cut + 1:]
            lines = _clean_lines(block, max_line)
            if lines is None:
                for raw in block.split(b"\n"):
                    number += 1
                    yield number, _text_line(raw, report, number, max_line)
                continue
            for line in lines:
                number += 1
                yield number, line


def _clean_lines(block: bytes, max_line: int) -> list[str] | None:
    """The lines of a block with nothing to report, or None."""
    if _NUL in block:
        return None
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = text.split("\n")
    if "\r" in text:
        lines = [line.rstrip("\r") for line in lines]
    if len(block) > max_line and max(map(len, lines)) > max_line // 4:  # (UTF-8: up to 4 bytes a character)
        return None
    return lines


def _text_line(raw: bytes, report: FileReport, number: int, max_line: int, dropped: int = 0) -> str:
    if len(raw) > max_line:
        raw, dropped = raw[:max_line], dropped + len(raw) - max_line
    if dropped:
        report.error(f"line of {len(raw) + dropped} bytes is longer than the {max_line}-byte limit; "
                     "only its start was read", number)
    if _NUL in raw:
        kept = raw.replace(_NUL, b"")
        report.error(f"{len(raw) - len(kept)} NUL bytes dropped", number)
        raw = kept
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        report.error("invalid UTF-8 bytes replaced with U+FFFD", number)
    return text.rstrip("\r")


def _skip_to_newline(handle: Any) -> int:
    skipped = 0
    while True:
        chunk = handle.readline(_CHUNK)
        skipped += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            return skipped


def load_json(path: Path, report: FileReport) -> Any | None:
    """Load a single-document JSON file; None (with the reason reported) when it cannot be."""
    size = path.stat().st_size
    if size > MAX_JSON_BYTES:
        report.error(f"file of {size} bytes is larger than the {MAX_JSON_BYTES}-byte limit for JSON documents")
        return None
    data = path.read_bytes()
    if _NUL in data:
        data = _drop_nuls(data, report, None)
    try:
        return _loads(data, report, None)
    except orjson.JSONDecodeError as exc:
        report.error(f"invalid JSON: {exc}")
        return None


@dataclass
class Checkpoint:
    """How far an incremental read got: bytes and lines consumed, and the parser's state there.

    ``state`` is opaque to everyone but the format that wrote it (``TrajectoryFormat.resume``).
    """

    offset: int = 0
    line: int = 0
    state: bytes | None = None


@dataclass
class Probe:
    """The start of a file, for content-based format detection."""

    path: Path
    head: bytes
    records: list[Any] = field(default_factory=list)
    document: Any = None
    #: ``head`` is all the file holds.
    whole: bool = False
    #: Where reading stopped in the file, and what was read past ``head`` (NUL bytes dropped).
    _offset: int = field(default=0, repr=False)
    _spill: bytes = field(default=b"", repr=False)

    @cached_property
    def text(self) -> str:
        return self.head.decode("utf-8", errors="replace")

    @property
    def first_char(self) -> str:
        stripped = self.head.lstrip()
        return chr(stripped[0]) if stripped else ""

    @cached_property
    def first_key(self) -> str | None:
        """The first key of the file's first JSON object (the document's, a list's first element's)."""
        found = _FIRST_KEY.match(self.head)
        if found is None:
            return None
        try:
            key = orjson.loads(b'"' + found.group(1) + b'"')
        except orjson.JSONDecodeError:
            return None
        return key if isinstance(key, str) else None

    @cached_property
    def fields(self) -> Fields:
        """The fields of the file's first JSON object, wherever in the file they fall.

        The document's own (or its first element's, for a list; a JSONL file's first line's), read
        past values of any size up to ``fields.MAX_SCAN_BYTES``: reads past the head only when that
        object is longer than it, once per file whichever sniffs ask. Sniffs ask after a cheap cue
        (``first_key``), so files of no format pay nothing.
        """
        return scan_fields(self.head, self.more)

    def more(self, size: int) -> bytes:
        """Up to ``size`` more bytes of the file after what was read, NUL bytes dropped; b"" at its end."""
        if self._spill:
            data, self._spill = self._spill, b""
            return data
        if self.whole or self._offset < 0:
            return b""
        data = b""
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                budget = MAX_PROBE_SCAN
                while not data and budget > 0:
                    raw = handle.read(size)
                    if not raw:
                        self._offset = -1  # the end
                        break
                    self._offset += len(raw)
                    budget -= len(raw)
                    data = raw.replace(_NUL, b"") if _NUL in raw else raw
        except OSError:
            self._offset = -1
        return data

    @classmethod
    def read(cls, path: Path) -> Probe:
        """The first ``PROBE_BYTES`` that are not NUL (a crash can leave a hole of them anywhere)."""
        spill = b""
        with path.open("rb") as handle:
            head = handle.read(PROBE_BYTES)
            whole = len(head) < PROBE_BYTES
            if _NUL in head:
                head = head.replace(_NUL, b"")
                budget = MAX_PROBE_SCAN
                while len(head) < PROBE_BYTES and not whole and budget > 0:
                    chunk = handle.read(_CHUNK)
                    whole, budget = len(chunk) < _CHUNK, budget - len(chunk)
                    head += chunk.replace(_NUL, b"")
                if not whole:
                    head, spill = head[:PROBE_BYTES], head[PROBE_BYTES:]
            offset = handle.tell()
        probe = cls(path=path, head=head, whole=whole, _offset=offset, _spill=spill)
        if head.lstrip()[:1] == b"{" or head.lstrip()[:1] == b"[":
            probe.records = _first_records(head)
            if whole:
                # A document is all there is to judge the file by, so invalid UTF-8 in one of its
                # strings must not hide it: parse it the way load_json will, bytes replaced.
                try:
                    probe.document = _loads(head, None, None)
                except orjson.JSONDecodeError:
                    probe.document = None
        return probe


def _first_records(head: bytes, limit: int = 8) -> list[Any]:
    records: list[Any] = []
    for line in head.split(b"\n")[:limit]:
        line = line.replace(_NUL, b"").strip()
        if not line:
            continue
        try:
            records.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue  # damaged (bad JSON or bad UTF-8): the sniff judges the file by its clean lines
    return records
