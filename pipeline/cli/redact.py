"""``skillmill redact``: what would be redacted in a file, for users checking their own logs."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from pipeline.cli._output import emit_json, progress_bar
from pipeline.errors import UsageError
from pipeline.terminal import visible

EXIT_CLEAN = 0
EXIT_FOUND = 1


@click.command("redact")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True,
              help='One JSON object per file: {"path", "bytes", "skipped", "redactions", "counts", "findings"}.')
@click.option("--redacted", "print_redacted", is_flag=True,
              help="Print the file(s) with every secret replaced by its placeholder instead of a report.")
def command(paths: tuple[Path, ...], as_json: bool, print_redacted: bool) -> None:
    """Show the secrets skillmill would redact in PATHS (files, or folders walked recursively).

    Each finding has its kind, line, column and a masked preview -- never the full value.
    The same detectors run on every trajectory skillmill reads, with the extra patterns and
    allow-list of [redaction] in $SKILLMILL_HOME/skillmill.toml. Exit 0 when nothing was
    found, 1 when something was, 2 for usage errors.
    """
    from pipeline import progress
    from pipeline.redact import current
    from pipeline.redact.scan import redacted_chunks, scan_file

    if as_json and print_redacted:
        raise UsageError("--json and --redacted do not go together", hint="pick the report or the redacted text")
    files = list(_files(paths))
    redactor = current()
    if print_redacted:
        for path in files:
            for chunk in redacted_chunks(path, redactor):
                click.echo(chunk, nl=False)
        sys.exit(EXIT_CLEAN)
    found = False
    with progress_bar(not as_json), progress.stage("scan", len(files)) as bar:
        for path in files:
            result = scan_file(path, redactor)
            found = found or bool(result.hits)
            if as_json:
                emit_json(result.contract())
            else:
                _print(result)
            bar.advance()
    sys.exit(EXIT_FOUND if found else EXIT_CLEAN)


def _files(paths: tuple[Path, ...]) -> Iterator[Path]:
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise UsageError(f"no such file or directory: {', '.join(missing)}", hint="pass files or folders to check")
    for path in paths:
        if path.is_dir():
            for folder, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d != ".git")
                for name in sorted(names):
                    if (Path(folder) / name).is_file():
                        yield Path(folder) / name
        else:
            yield path


def _print(result) -> None:  # type: ignore[no-untyped-def]
    if result.skipped:
        click.echo(f"{result.path}: skipped ({result.skipped})")
        return
    if not result.hits:
        click.echo(f"{result.path}: nothing to redact ({result.bytes} bytes)")
        return
    kinds = ", ".join(f"{kind} {count}" for kind, count in result.counts.items())
    click.secho(f"{result.path}: {len(result.hits)} to redact ({kinds})", fg="yellow")
    for hit in result.hits:
        click.echo(visible(f"  {hit.line}:{hit.column}  {hit.kind:<26} {hit.preview}"))
