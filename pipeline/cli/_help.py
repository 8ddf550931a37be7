"""Command lists in help: grouped by workflow, each command's summary whole.

click lists a group's commands alphabetically under one heading, each summary cut to what fits
in ~45 characters ("Measure how well skillmill does, beside a..."). Here a group lists its
commands in sections, each with the first sentence of its help, wrapped rather than cut.
"""

from __future__ import annotations

import sys

import click

#: ``-h`` as well as ``--help``, on the group and (inherited) every command under it.
CONTEXT = {"help_option_names": ["-h", "--help"]}


def summary(command: click.Command) -> str:
    """The first sentence of a command's help (or its ``short_help``), never shortened."""
    return command.get_short_help_str(limit=sys.maxsize)


class Group(click.Group):
    """A group whose help lists its commands by section, with whole summaries.

    ``sections`` maps a heading to command names in the order shown; commands in no section are
    listed under "Commands" (the only heading of a group without sections) or "Other".
    """

    sections: dict[str, tuple[str, ...]] = {}

    def sectioned(self, ctx: click.Context) -> list[tuple[str, list[str]]]:
        """``(heading, command names)`` as help lists them; hidden commands left out."""
        shown = [n for n in self.list_commands(ctx) if (c := self.get_command(ctx, n)) is not None and not c.hidden]
        sections = [(heading, [n for n in names if n in shown]) for heading, names in self.sections.items()]
        placed = {n for _, names in sections for n in names}
        sections.append(("Other" if self.sections else "Commands", [n for n in shown if n not in placed]))
        return [(heading, names) for heading, names in sections if names]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections = self.sectioned(ctx)
        width = max((len(n) for _, names in sections for n in names), default=0)  # one column for all sections
        for heading, names in sections:
            with formatter.section(heading):
                formatter.write_dl([(n.ljust(width), summary(self.get_command(ctx, n)))  # type: ignore[arg-type]
                                    for n in names])
