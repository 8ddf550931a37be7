"""``skillmill recall`` (parsed and run by ``pipeline.recall.cli``, which the fast entry point calls directly)."""

from pipeline.cli.fast import click_command
from pipeline.recall.cli import main, parser

command = click_command("recall", parser, main)

__all__ = ["command"]
