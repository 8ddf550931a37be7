"""Check any file for secrets: what would be redacted, where, shown masked.

``skillmill redact FILE`` is built on :func:`scan_file`. Files are read in line-aligned
chunks of a few MB, so a GB-sized log costs bounded memory; a private-key block that
starts near the end of a chunk is completed from the next lines before scanning.
The values found are never returned: only kind, position, length and a masked preview.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pipeline.redact.engine import Finding, Redactor, current

CHUNK_BYTES = 4 * 1024 * 1024
#: A key block still open at the end of a chunk is completed with up to this much more text.
_BLOCK_SLACK = 64 * 1024
_PREVIEW = 160
_BINARY_PROBE = 8192


@dataclass(frozen=True)
class Hit:
    """One secret in a file: never its value."""

    kind: str
    line: int
    column: int
    length: int
    preview: str

    def contract(self) -> dict[str, object]:
        return {"kind": self.kind, "line": self.line, "column": self.column, "length": self.length,
                "preview": self.preview}


@dataclass
class FileScan:
    path: str
    bytes: int = 0
    hits: list[Hit] = field(default_factory=list)
    skipped: str | None = None

    @property
    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(h.kind for h in self.hits).items(), key=lambda kv: (-kv[1], kv[0])))

    def contract(self) -> dict[str, object]:
        """The JSON object ``skillmill redact --json`` prints per file."""
        return {"path": self.path, "bytes": self.bytes, "skipped": self.skipped, "redactions": len(self.hits),
                "counts": self.counts, "findings": [h.contract() for h in self.hits]}


def mask(value: str, kind: str) -> str:
    """``sk-p…(openai-api-key, 164 chars)``: enough to recognise it, never enough to use it."""
    shown = value[:min(4, len(value) // 4)]
    if value.startswith("-----BEGIN") and value.count("-----") >= 2:
        shown = "-----" + value.split("-----")[1] + "-----"  # the key type is not the secret
    return f"{shown}\u2026({kind}, {len(value)} chars)"


def chunks(handle: IO[bytes]) -> Iterator[str]:
    """Line-aligned text chunks of about ``CHUNK_BYTES``."""
    while True:
        data = handle.read(CHUNK_BYTES)
        if not data:
            return
        if not data.endswith(b"\n"):
            data += handle.readline()
        text = data.decode("utf-8", errors="replace")
        if "-----BEGIN" in text[-_BLOCK_SLACK:] and "-----END" not in text[text.rfind("-----BEGIN"):]:
            extra = handle.read(_BLOCK_SLACK)
            extra += handle.readline()
            text += extra.decode("utf-8", errors="replace")
        yield text


def scan_file(path: Path, redactor: Redactor | None = None) -> FileScan:
    """Every finding in ``path``, with 1-based line and column and a masked preview of its line."""
    redactor = redactor or current()
    result = FileScan(path=str(path))
    with path.open("rb") as handle:
        if b"\0" in handle.read(_BINARY_PROBE):
            result.skipped = "binary file"
            result.bytes = path.stat().st_size
            return result
        handle.seek(0)
        first_line = 1
        for text in chunks(handle):
            result.bytes += len(text.encode("utf-8", errors="replace"))
            findings = redactor.find(text)
            if findings:
                result.hits.extend(_hits(text, findings, first_line))
            first_line += text.count("\n")
    return result


def redacted_chunks(path: Path, redactor: Redactor | None = None) -> Iterator[str]:
    """The file with every secret replaced by its placeholder, chunk by chunk."""
    redactor = redactor or current()
    with path.open("rb") as handle:
        for text in chunks(handle):
            yield redactor.redact(text)[0]


def _hits(text: str, findings: list[Finding], first_line: int) -> Iterator[Hit]:
    starts = [0]
    position = text.find("\n")
    while position >= 0:
        starts.append(position + 1)
        position = text.find("\n", position + 1)
    for finding in findings:
        index = bisect.bisect_right(starts, finding.start) - 1
        line_start = starts[index]
        line_end = starts[index + 1] - 1 if index + 1 < len(starts) else len(text)
        yield Hit(kind=finding.kind, line=first_line + index, column=finding.start - line_start + 1,
                  length=finding.end - finding.start,
                  preview=_preview(text, findings, finding, line_start, max(line_end, finding.end)))


def _preview(text: str, findings: list[Finding], finding: Finding, start: int, end: int) -> str:
    """The line around ``finding``, every secret on it masked (not only this one)."""
    window_start = max(start, finding.start - 60)
    window_end = min(end, finding.end + 60)
    inside = [f for f in findings if f.start < window_end and f.end > window_start]
    pieces: list[str] = []
    position = window_start
    for f in inside:
        pieces.append(text[position:max(position, f.start)])
        pieces.append(mask(text[f.start:f.end], f.kind))
        position = max(position, f.end)
    pieces.append(text[position:window_end])
    line = "".join(pieces).replace("\n", "\u23ce").replace("\t", " ")
    prefix = "\u2026" if window_start > start else ""
    suffix = "\u2026" if window_end < end else ""
    return prefix + line[:_PREVIEW * 2] + suffix


__all__ = ["FileScan", "Hit", "mask", "redacted_chunks", "scan_file"]
