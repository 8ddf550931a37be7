"""Flags of the fast-path commands (``recall``, ``hook``): parsed by argparse, explained by click.

These commands run inside an agent's turn, so their flags are parsed with ``argparse``: importing
click costs as much as starting Python. Only when help is asked for, or argparse refuses the
arguments, is click imported: the same flags, declared to a click command, print the help or the
usage error exactly as every other skillmill command does (the ``Usage:`` line, did-you-mean,
exit 2). So ``recall --limt 3 "query"`` is ``No such option '--limt'``, never a search for ``3``.
"""

from __future__ import annotations

import argparse
import sys

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing at every prompt
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NoReturn

    import click


class NumberRange:
    """An argparse type: a number of ``kind`` within [low, high], as click's ``IntRange``/``FloatRange``."""

    def __init__(self, kind: type, low: float, high: float | None = None) -> None:
        self.kind, self.low, self.high = kind, low, high

    def __call__(self, value: str) -> float:
        try:
            number = self.kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a valid {self.kind.__name__}") from None
        if number < self.low or (self.high is not None and number > self.high):
            raise argparse.ArgumentTypeError(f"{number} is out of range")
        return number

    def click_type(self) -> click.ParamType:
        import click

        kind = click.IntRange if self.kind is int else click.FloatRange
        return kind(min=self.low, max=self.high)


class Refused(Exception):
    """What argparse would have printed before exiting: the arguments do not parse."""


class Parser(argparse.ArgumentParser):
    """``argparse`` for a fast-path command, answering ``-h`` and bad arguments the way click does.

    Declare flags with :meth:`add_argument` as usual; ``type`` is ``str``, a :class:`NumberRange`
    or ``choices``; flags are ``store_true``. ``help`` is shown by click, which adds the default
    and the range itself.
    """

    def __init__(self, prog: str, description: str) -> None:
        super().__init__(prog=prog, description=description, add_help=False, allow_abbrev=False)
        self.declared: list[argparse.Action] = []

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.declared.append(action)
        return action

    def error(self, message: str) -> NoReturn:  # argparse's single exit for every refusal
        raise Refused(message)

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        argv = list(sys.argv[1:] if args is None else args)
        try:
            return super().parse_args(argv, namespace)
        except Refused as refused:
            self.explain(argv, str(refused))

    def explain(self, argv: list[str], refusal: str) -> NoReturn:
        """Let click parse ``argv``: it prints the help (exit 0) or the usage error (exit 2)."""
        import click

        def accepted(**_: object) -> None:  # click took what argparse refused: argparse's reason, click's form
            raise click.UsageError(refusal, click.get_current_context())

        self.click_command(accepted).main(argv, prog_name=self.prog)
        raise AssertionError("click's main exits")  # standalone mode always ends in sys.exit

    def click_command(self, callback: Any = None) -> click.Command:
        """The same command declared to click: its name, help, arguments and options."""
        import click

        params: list[click.Parameter] = []
        for action in self.declared:
            kind = (click.Choice(action.choices) if action.choices
                    else action.type.click_type() if isinstance(action.type, NumberRange) else click.STRING)
            if not action.option_strings:
                params.append(click.Argument([action.dest], type=kind, required=action.nargs != "?",
                                             metavar=action.metavar))
            elif action.nargs == 0:  # store_true
                params.append(click.Option([*action.option_strings, action.dest], is_flag=True, help=action.help))
            else:
                params.append(click.Option([*action.option_strings, action.dest], type=kind, default=action.default,
                                           metavar=action.metavar, help=action.help,
                                           show_default=action.default is not None))
        return click.Command(self.prog.rsplit(" ", 1)[-1], callback=callback, params=params, help=self.description,
                             context_settings={"help_option_names": ["-h", "--help"]})
