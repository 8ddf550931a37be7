"""The ``skillmill`` executable, with a fast path for the commands agents run at every prompt.

``skillmill recall`` and ``skillmill hook`` run inside an agent's turn, so their start-up
time is the user's waiting time. Importing the full command group pulls in every command's
models (pydantic, ~200 ms); the fast path imports only the one command module instead and
handles errors the same way the group does.
"""

from __future__ import annotations

import sys

FAST = {"recall": "pipeline.recall.cli", "hook": "pipeline.agents.cli"}


def main() -> None:
    args = sys.argv[1:]
    if args and args[0] in FAST:
        _fast(args[0], args[1:])
    from pipeline.cli import main as group

    group()


def _fast(name: str, args: list[str]) -> None:
    import importlib

    import click

    from pipeline import settings
    from pipeline.errors import SkillmillError, UsageError

    def fail(error: SkillmillError) -> None:  # as pipeline.cli._output.fail, without importing the group
        click.secho(f"Error: {error.message}", fg="red", err=True)
        if error.hint:
            click.echo(f"  hint: {error.hint}", err=True)

    settings.apply_offline_env()
    command = importlib.import_module(FAST[name]).command
    try:
        command.main(args, prog_name=f"skillmill {name}", standalone_mode=False)
    except UsageError as exc:
        fail(exc)
        sys.exit(2)
    except SkillmillError as exc:
        fail(exc)
        sys.exit(1)
    except SystemExit:
        raise
    except Exception as exc:
        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        if isinstance(exc, click.exceptions.Abort):
            sys.exit(1)
        from pipeline.cli._output import save_traceback

        log = save_traceback(exc)
        fail(SkillmillError(f"internal error: {type(exc).__name__}: {exc}",
                            hint=f"the traceback is in {log}; please report it"))
        sys.exit(1)
    sys.exit(0)
