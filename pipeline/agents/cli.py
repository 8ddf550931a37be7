"""``skillmill hook AGENT``: answer an agent's session-start / prompt hook with fitting skills.

Started by the agent at every prompt, through the executable's fast path (``pipeline.entry``):
flags are parsed with ``argparse``, and nothing here imports click or the command group. The
group registers this same parser (``pipeline.entry.click_command``).
"""

from __future__ import annotations

import argparse

from pipeline.entry import number_range

AGENTS = ("claude-code", "codex", "gemini")
DESCRIPTION = """Read the agent's hook JSON on stdin (SessionStart, UserPromptSubmit, BeforeAgent) and print
the fitting skills as additional context. Never fails the agent: errors print nothing."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="skillmill hook", description=DESCRIPTION, allow_abbrev=False,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("agent", choices=AGENTS, metavar="AGENT", help="The agent calling: claude-code, codex or gemini.")
    p.add_argument("--timeout", type=number_range(float, 0.1, 60), default=2.0, metavar="SECONDS",
                   help="Seconds to answer in; past them print nothing and exit 0.  [default: 2.0; 0.1<=x<=60]")
    p.add_argument("--budget", type=number_range(int, 1), default=2000, metavar="TOKENS",
                   help="Token budget of the context added.  [default: 2000; x>=1]")
    return p


def main(argv: list[str]) -> None:
    args = parser().parse_args(argv)
    from pipeline.agents.hook import run

    run(args.agent, timeout=args.timeout, budget=args.budget)
