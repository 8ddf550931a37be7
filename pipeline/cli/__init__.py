"""The ``skillmill`` command. Each command is a thin wrapper over a library call.

Commands live in one module each and register on the group below; heavy imports
(prefect, litellm) happen inside the commands that need them, so ``recall`` starts fast.
"""

from __future__ import annotations

import os
import sys

import click

from pipeline import __version__, settings
from pipeline.cli import _help, _output
from pipeline.errors import SkillmillError, UsageError


class SkillmillGroup(_help.Group):
    """Turns skillmill's own errors into a message, a hint and an exit code; never a traceback."""

    sections = {  # by workflow, in the order a new user meets them
        "Run": ("run", "scan", "ingest", "redact", "formats", "sources"),
        "Review": ("review", "show", "feedback", "sync"),
        "Recall": ("recall", "index", "eval"),
        "Agents": ("setup", "install", "hook", "handoff", "mcp", "export", "recall-server"),
        "Operate": ("runs", "schedule", "config"),
    }

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.ClickException, click.exceptions.Abort, SystemExit):
            raise
        except BrokenPipeError:  # the reader went away (``skillmill ... | head``): not an error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(0)
        except Exception as exc:
            if (setup := _output.environment_error(exc)) is not None:  # a full disk or a read-only
                _output.fail(setup)  # folder, however deep it was met: one line naming it, exit 2
                sys.exit(setup.exit_code)
            if isinstance(exc, UsageError):
                _output.fail(exc)
                sys.exit(2)
            if isinstance(exc, SkillmillError):
                _output.fail(exc)
                sys.exit(getattr(exc, "exit_code", 1))  # e.g. 75 for "another run is in progress"
            _output.internal_error(exc)  # a bug: the traceback goes to a file, not on the user's screen
            sys.exit(1)


@click.group(cls=SkillmillGroup, context_settings=_help.CONTEXT)
@click.version_option(__version__, prog_name="skillmill")
def main() -> None:
    """Distill coding-agent sessions into reviewed Agent Skills, and recall them at task start.

    \b
    State lives in $SKILLMILL_HOME (default ~/.skillmill); the skill library in
    $SKILLMILL_LIBRARY (default $SKILLMILL_HOME/skills). New skills are candidates:
    nothing reaches an agent until a person approves it.
    """
    settings.apply_offline_env()


def _register() -> None:
    from pipeline.cli import agents as agent_commands
    from pipeline.cli import config as config_command
    from pipeline.cli import eval as eval_command
    from pipeline.cli import feedback as feedback_command
    from pipeline.cli import formats, handoff, ingest, recall, redact, review, run, scan, sources
    from pipeline.cli import index as index_command
    from pipeline.cli import runs as runs_command
    from pipeline.cli import schedule as schedule_command
    from pipeline.cli import show as show_command
    from pipeline.cli import sync as sync_command

    for module in (run, scan, ingest, recall, formats, sources, review, redact, index_command, eval_command,
                   feedback_command, config_command, runs_command, schedule_command, show_command, sync_command):
        main.add_command(module.command)
    for command in (*agent_commands.COMMANDS, *handoff.COMMANDS):
        main.add_command(command)


_register()
