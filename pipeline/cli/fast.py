"""Fast-path commands (``recall``, ``hook``) as click commands of the group.

The executable (``pipeline.entry``) runs them without the group; here they are declared to the
group with the same parser, so ``skillmill --help`` lists them and both paths take the same flags.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable


def click_command(name: str, parser: Callable[[], argparse.ArgumentParser],
                  run: Callable[[list[str]], None]) -> object:
    """A click command for the group that hands its arguments to a fast-path command's parser.

    Errors propagate to the group (which prints them); ``-h`` and bad flags are answered by the
    parser (``pipeline.fastargs``), exactly as on the fast path.
    """
    import click

    @click.command(name, help=parser().description, add_help_option=False,
                   context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                                     "allow_interspersed_args": False})
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def command(args: tuple[str, ...]) -> None:
        run(list(args))

    return command
