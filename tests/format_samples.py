"""One real file per registered format, found in the corpus by content, for the bad-input tests.

Formats registered later (plugins, other engineers' parsers) get a sample the same way, so the
bad-input and property tests cover them without being edited.
"""

from __future__ import annotations

import shutil
import tempfile
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
    #: For formats spread over several files (a storage tree): the corpus folder to copy around it.
    context: Path | None = None
    relative: Path | None = None

    @property
    def store(self) -> bool:
        """An SQLite store: pages, not lines (its damage is tested in tests/test_sqlite_stores.py)."""
        return self.data.startswith(b"SQLite format 3\x00")

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
        steps = sum(len(t.steps) for t in trajectories)
        relative = path.relative_to(corpus)
        context = None if _self_contained(path, steps) else corpus / relative.parts[0]
        chosen[name] = Sample(name, path, kind_of(data), data, len(trajectories), steps, context,
                              relative.relative_to(relative.parts[0]) if context else None)
    return chosen


def _self_contained(path: Path, steps: int) -> bool:
    """Does the file read the same alone as in its folder?"""
    with tempfile.TemporaryDirectory() as folder:
        alone = Path(folder) / path.name
        shutil.copy(path, alone)
        return sum(len(t.steps) for t in ingest_file(alone)[1]) == steps


def place(sample: Sample, folder: Path, data: bytes) -> Path:
    """Write ``data`` where the sample lies, with its context around it when it needs one."""
    if sample.context is None or sample.relative is None:
        path = folder / f"broken{''.join(sample.path.suffixes[-2:])}"
    else:
        root = folder / f"context-{sample.format}"
        if not root.exists():
            shutil.copytree(sample.context, root, copy_function=shutil.copyfile)
            for inner in [root, *root.rglob("*")]:  # the corpus is read-only
                inner.chmod(0o755 if inner.is_dir() else 0o644)
        path = root / sample.relative
    path.write_bytes(data)
    return path
