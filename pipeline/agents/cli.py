"""``skillmill hook AGENT``: answer an agent's session-start / prompt hook with fitting skills.

Started by the agent at every prompt, through the executable's fast path (``pipeline.entry``),
so it lives outside ``pipeline/cli/`` (whose import builds the whole command group).
"""

from __future__ import annotations

import click


@click.command("hook")
@click.argument("agent", type=click.Choice(["claude-code", "codex", "gemini"]))
@click.option("--timeout", default=2.0, show_default=True, type=click.FloatRange(0.1, 60),
              help="Seconds to answer in; past them print nothing and exit 0.")
@click.option("--budget", default=2000, show_default=True, type=click.IntRange(1, None),
              help="Token budget of the context added.")
def command(agent: str, timeout: float, budget: int) -> None:
    """Read the agent's hook JSON on stdin (SessionStart, UserPromptSubmit, BeforeAgent) and print
    the fitting skills as additional context. Never fails the agent: errors print nothing."""
    from pipeline.agents.hook import run

    run(agent, timeout=timeout, budget=budget)
