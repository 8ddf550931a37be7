"""Folders made read-only or full for a test, with real mounts (root only; the tests skip otherwise).

Root ignores file modes (``chmod 0500`` does not stop it writing), so "read-only" is a read-only
mount: an empty tmpfs, or a folder bind-mounted onto itself and remounted read-only, contents
kept. "Full" is a small tmpfs filled to the last block. Every mount is undone at teardown.
"""

from __future__ import annotations

import contextlib
import errno
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


class Mounts:
    def __init__(self) -> None:
        self.done: list[Path] = []

    def _mount(self, *args: str) -> None:
        result = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            pytest.skip(f"cannot mount ({' '.join(args)}; needs root): {result.stderr.strip() or result.returncode}")

    def read_only(self, folder: Path) -> Path:
        """``folder`` (created if missing) read-only, with what it holds."""
        folder.mkdir(parents=True, exist_ok=True)
        self._mount("--bind", str(folder), str(folder))
        self.done.append(folder)
        self._mount("-o", "remount,bind,ro", str(folder))
        return folder

    def full(self, folder: Path, *, keep: bool = True) -> Path:
        """``folder`` on a small tmpfs, with what it held copied over (``keep``), then filled."""
        folder.mkdir(parents=True, exist_ok=True)
        saved = None
        if keep and any(folder.iterdir()):
            saved = folder.with_name(folder.name + ".saved")
            shutil.copytree(folder, saved)
        self._mount("-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", str(folder))
        self.done.append(folder)
        if saved is not None:
            shutil.copytree(saved, folder, dirs_exist_ok=True)
        fill(folder)
        return folder

    def undo(self) -> None:
        for folder in reversed(self.done):
            subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


def fill(disk: Path) -> None:
    """Write filler files until the disk is full (blocks, then the inodes a small file would take)."""
    with open(disk / ".filler", "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        try:
            while True:
                handle.write(b"\0" * 512)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    assert shutil.disk_usage(disk).free < 8192


@contextlib.contextmanager
def mounting() -> Iterator[Mounts]:
    """A test's mounts, all undone when the block ends."""
    made = Mounts()
    try:
        yield made
    finally:
        made.undo()
