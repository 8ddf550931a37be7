"""``skillmill recall`` (parsed and run by ``pipeline.recall.cli``, which the fast entry point calls directly)."""

from pipeline.agents import repair
from pipeline.cli.fast import click_command
from pipeline.recall.cli import main, parser


def run(argv: list[str]) -> None:
    """As the fast path runs it: a review decision killed before its publish is finished first."""
    main(argv, repair=repair.repair_or_warn)


command = click_command("recall", parser, run)

__all__ = ["command"]
