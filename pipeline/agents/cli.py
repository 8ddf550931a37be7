"""``skillmill hook AGENT``: answer an agent's session-start / prompt hook with fitting skills.

Started by the agent at every prompt, through the executable's fast path (``pipeline.entry``):
flags are parsed with ``argparse`` (help and usage errors are click's: ``pipeline.fastargs``), and
nothing here imports click or the command group. The group registers this same parser
(``pipeline.cli.fast.click_command``).
"""

from __future__ import annotations

from pipeline.fastargs import NumberRange, Parser

AGENTS = ("claude-code", "codex", "gemini", "qwen", "kimi")
DESCRIPTION = """Answer an agent's hook with the skills that fit, as additional context.

AGENT is the agent calling: claude-code, codex, gemini, qwen (Qwen Code) or kimi (Kimi CLI). Its hook JSON comes on
stdin (SessionStart, UserPromptSubmit, BeforeAgent). Never fails the agent: errors print nothing."""


def parser() -> Parser:
    p = Parser("skillmill hook", DESCRIPTION)
    p.add_argument("agent", choices=AGENTS, metavar="AGENT")
    p.add_argument("--timeout", type=NumberRange(float, 0.1, 60), default=2.0, metavar="SECONDS",
                   help="Seconds to answer in; past them print nothing and exit 0.")
    p.add_argument("--budget", type=NumberRange(int, 1), default=2000, metavar="TOKENS",
                   help="Token budget of the context added.")
    p.add_argument("--min-score", type=NumberRange(float, 0, 1), default=None, metavar="S",
                   help="Add only skills whose fit score (0-1) is at least S; stricter than recall's, "
                        "as the hook speaks unasked.  [default: $SKILLMILL_HOOK_MIN_SCORE or 0.3]")
    return p


def main(argv: list[str]) -> None:
    args = parser().parse_args(argv)
    from pipeline.agents.hook import run

    run(args.agent, timeout=args.timeout, budget=args.budget, min_score=args.min_score)
