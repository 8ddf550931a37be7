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
from pipeline.errors import SkillmillError


def fail(error: SkillmillError) -> None:
    """Print an error; redacted, since messages can quote what a parser or a flow choked on."""
    click.secho(f"Error: {_redact(error.message)}", fg="red", err=True)
    if error.hint:
        click.echo(f"  hint: {_redact(error.hint)}", err=True)


def save_traceback(exc: BaseException) -> Path:
    import traceback

    from pipeline import settings

    path = settings.home() / "logs" / "last-error.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_redact("".join(traceback.format_exception(exc))), encoding="utf-8")
    return path


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


@contextlib.contextmanager
def progress_bar(enabled: bool = True) -> Iterator[None]:
    """A progress bar on stderr while library code reports stages (only on a terminal)."""
    if not enabled or not sys.stderr.isatty():
        yield
        return
    reporter = _RichReporter()
    with reporter.progress, progress.reporting(reporter):
        yield
