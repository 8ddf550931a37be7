"""One real file per registered format, found in the corpus by content, for the bad-input tests.

Formats registered later (plugins, other engineers' parsers) get a sample the same way, so the
bad-input and property tests cover them without being edited.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import orjson

from pipeline.ingest import ingest_file, iter_files
from pipeline.plugins import registered_formats


@dataclass(frozen=True)
class Sample:
    format: str
    path: Path
    kind: str  # "jsonl", "json" or "text"
    data: bytes
    trajectories: int
    steps: int

    @property
    def lines(self) -> list[bytes]:
        return self.data.split(b"\n")

    def records(self) -> list[dict]:
        return [orjson.loads(line) for line in self.lines if line.strip()]


def format_names() -> list[str]:
    return [f.name for f in registered_formats()]


def kind_of(data: bytes) -> str:
    try:
        orjson.loads(data)
        return "json"
    except orjson.JSONDecodeError:
        pass
    lines = [line for line in data.split(b"\n") if line.strip()]
    try:
        if lines and all(isinstance(orjson.loads(line), dict) for line in lines):
            return "jsonl"
    except orjson.JSONDecodeError:
        pass
    return "text"


@cache
def samples(corpus: Path) -> dict[str, Sample]:
    """format name -> the smallest real (not synthetic) file it reads ``ok`` with at least 8 lines."""
    found: dict[str, list[tuple[bool, int, Path]]] = {}
    for path in iter_files([corpus]):
        report, trajectories = ingest_file(path)
        if report.status == "ok" and trajectories and report.format:
            data = path.read_bytes()
            if data.count(b"\n") >= 8 or kind_of(data) == "json":
                found.setdefault(report.format, []).append(("synthetic" in str(path), len(data), path))
    chosen: dict[str, Sample] = {}
    for name, candidates in found.items():
        _, _, path = min(candidates)
        data = path.read_bytes()
        _, trajectories = ingest_file(path)
        chosen[name] = Sample(name, path, kind_of(data), data, len(trajectories),
                              sum(len(t.steps) for t in trajectories))
    return chosen
