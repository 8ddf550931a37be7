"""Progress reporting that library code can call and the CLI can display.

Library code and flow tasks call :func:`stage` / :meth:`Stage.advance`; by default nothing
is shown. The CLI installs a reporter (a rich progress bar on stderr) around long work.
Tasks run in threads of the same process, so a process-wide reporter reaches them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Protocol


class Reporter(Protocol):
    def start(self, name: str, total: int | None) -> object: ...
    def advance(self, handle: object, amount: int = 1) -> None: ...
    def finish(self, handle: object) -> None: ...


class _Silent:
    def start(self, name: str, total: int | None) -> object:
        return None

    def advance(self, handle: object, amount: int = 1) -> None:
        return None

    def finish(self, handle: object) -> None:
        return None


_reporter: Reporter = _Silent()
_lock = threading.Lock()


class Stage:
    def __init__(self, name: str, total: int | None) -> None:
        self._handle = _reporter.start(name, total)

    def advance(self, amount: int = 1) -> None:
        with _lock:
            _reporter.advance(self._handle, amount)

    def finish(self) -> None:
        _reporter.finish(self._handle)


@contextlib.contextmanager
def stage(name: str, total: int | None = None) -> Iterator[Stage]:
    current = Stage(name, total)
    try:
        yield current
    finally:
        current.finish()


@contextlib.contextmanager
def reporting(reporter: Reporter) -> Iterator[None]:
    global _reporter
    previous, _reporter = _reporter, reporter
    try:
        yield
    finally:
        _reporter = previous
