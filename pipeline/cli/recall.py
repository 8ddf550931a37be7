"""``skillmill recall`` (defined in ``pipeline.recall.cli`` so the fast entry point can skip the group)."""

from pipeline.recall.cli import command

__all__ = ["command"]
