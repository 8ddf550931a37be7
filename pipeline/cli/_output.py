"""Shared CLI output: results on stdout, diagnostics and progress on stderr."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import orjson

from pipeline import progress
from pipeline.errors import SkillmillError, plain
from pipeline.terminal import visible


def fail(error: SkillmillError) -> None:
    """Print an error; redacted and ``visible``, since messages can quote what a parser or a flow choked on.
    Never with a pydantic documentation link, whatever the message quotes."""
    click.secho(f"Error: {visible(_redact(plain(error.message)))}", fg="red", err=True)
    if error.hint:
        click.echo(f"  hint: {visible(_redact(plain(error.hint)))}", err=True)


def traceback_path() -> Path:
    from pipeline import settings

    return settings.home() / "logs" / "last-error.txt"


def save_traceback(exc: BaseException) -> Path:
    import traceback

    from pipeline import private

    path = traceback_path()
    private.write_text(path, _redact("".join(traceback.format_exception(exc))))
    return path


def internal_error(exc: BaseException) -> None:
    """Say that skillmill failed (a bug), keeping the traceback in a file when the file can be written.

    Reporting never fails in its turn: a home or logs folder that is read-only, full or missing
    (no home directory at all) costs the file, said in the hint, not a second traceback.
    """
    try:
        hint = f"the traceback is in {save_traceback(exc)}; please report it"
    except Exception as problem:  # noqa: BLE001 -- one error must not become two
        reason = problem.strerror if isinstance(problem, OSError) and problem.strerror else str(problem)
        try:
            where = f" to {traceback_path().parent}"
        except Exception:  # noqa: BLE001 -- no home to name
            where = ""
        hint = f"the traceback could not be saved{where} ({reason}); please report the message above"
    fail(SkillmillError(f"internal error: {type(exc).__name__}: {exc}", hint=hint))


def environment_error(exc: BaseException) -> SkillmillError | None:
    """A full disk or a folder that may not be written, as one line naming it (``errors.environment_error``)."""
    from pipeline.errors import environment_error

    return environment_error(exc)


def _redact(text: str) -> str:
    try:
        from pipeline.redact import redact

        return redact(text)
    except Exception:  # a broken config must not hide the original error: the built-in detectors still run
        try:
            from pipeline.redact.engine import Redactor

            return Redactor().redact(text)[0]
        except Exception:  # keep only its first line
            return text.splitlines()[0][:200] if text else text


def emit_json(data: Any) -> None:
    click.echo(orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS).decode())


class _RichReporter:
    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description:<8}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(),
                                 console=Console(stderr=True), transient=True)

    def start(self, name: str, total: int | None) -> object:
        return self.progress.add_task(name, total=total)

    def advance(self, handle: object, amount: int = 1) -> None:
        self.progress.advance(handle, amount)  # type: ignore[arg-type]

    def finish(self, handle: object) -> None:
        self.progress.remove_task(handle)  # type: ignore[arg-type]


class _LineReporter:
    """Plain lines on stderr for logs (cron, CI): each stage's start, every 10 %, and its end with the time."""

    def __init__(self) -> None:
        import time

        self.clock = time.monotonic

    def start(self, name: str, total: int | None) -> object:
        self._say(f"{name}: started" + (f" ({total})" if total is not None else ""))
        return {"name": name, "total": total, "done": 0, "shown": 0, "t0": self.clock()}

    def advance(self, handle: object, amount: int = 1) -> None:
        h: dict = handle  # type: ignore[assignment]
        h["done"] += amount
        if h["total"] and (step := h["done"] * 10 // h["total"]) > h["shown"] and h["done"] < h["total"]:
            h["shown"] = step
            self._say(f"{h['name']}: {h['done']}/{h['total']}")

    def finish(self, handle: object) -> None:
        h: dict = handle  # type: ignore[assignment]
        count = f"{h['done']}/{h['total']} " if h["total"] is not None else ""
        self._say(f"{h['name']}: done {count}in {self.clock() - h['t0']:.1f} s")

    @staticmethod
    def _say(text: str) -> None:
        click.echo(f"skillmill: {text}", err=True)


@contextlib.contextmanager
def progress_bar(enabled: bool | str = True) -> Iterator[None]:
    """Progress on stderr while library code reports stages.

    ``enabled``: True/"auto" a bar on a terminal (nothing otherwise), "lines" plain lines, False/"none" nothing.
    """
    mode = {True: "auto", False: "none"}.get(enabled, enabled)  # type: ignore[call-overload]
    if mode == "lines":
        with progress.reporting(_LineReporter()):
            yield
        return
    if mode != "auto" or not sys.stderr.isatty():
        yield
        return
    reporter = _RichReporter()
    with reporter.progress, progress.reporting(reporter):
        yield
