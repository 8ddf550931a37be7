"""Whose voice a user turn is in: skillmill's own, an agent's harness, or the person's.

An agent records the context a hook added (Qwen Code and Kimi CLI as a part or message of the next user
turn), so skillmill's own words come back in the sessions it reads; and every agent writes text of its own
into user turns -- the output of a command the person ran in shell mode (Gemini CLI's and Qwen Code's ``!``,
Claude Code's ``<bash-stdout>``, Codex's ``<user_shell_command>``), its opening context, reminders. None of it
is the person's request, and some of it is what a checkout printed (a README ``cat`` in shell mode): a user turn
that opens with one of these is the CLI's (``meta``) and never the task or the person's last instruction. One
table for every reader (``TrajectoryBuilder.user`` applies it), so a reader cannot forget an opener another knows.
"""

from __future__ import annotations

import re

SKILLS_HEADER = "Skills from this team's library that fit the task (skillmill)."
HANDOFF_HEADER = "Handoff (skillmill):"
_HEADERS = (SKILLS_HEADER, HANDOFF_HEADER)
#: Wrappers agents put around a hook's context before the header (Kimi CLI, Qwen Code, Claude Code).
_WRAPPERS = ("<system-reminder>", "<system>", "<qwen:user-prompt-submit-context>", "<user-prompt-submit-hook>")


def is_ours(text: str) -> bool:
    """True when ``text`` is (or opens with) the context skillmill's hook gave."""
    head = text.lstrip()[:200]
    for wrapper in _WRAPPERS:
        if head.startswith(wrapper):
            head = head[len(wrapper):].lstrip()
            break
    return head.startswith(_HEADERS)


#: What agents' harnesses write at the start of a user turn, by agent (each from the agent's own source or files).
HARNESS_OPENERS: dict[str, tuple[str, ...]] = {
    "claude-code": ("<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>",
                    "<system-reminder>", "<command-message>", "Caveat: The messages below were generated",
                    "<user-prompt-submit-hook>", "<bash-stdout>", "<bash-input>", "<bash-stderr>",
                    "<bash-notification>", "<task-notification>", "[Request interrupted by user",
                    "This session is being continued from a previous conversation", "Stop hook feedback:"),
    "codex": ("# AGENTS.md instructions", "<INSTRUCTIONS>", "<environment_context>", "<user_instructions>",
              "<permissions instructions>", "<collaboration_mode>", "<skills_instructions>", "<turn_aborted>",
              "<user_shell_command>", "<developer_instructions>", "<personality_spec>", "<apps_instructions>",
              "<user_action>", "<skill>", "<subagent_notification>", "<hook_prompt",
              # /review's prompts (review_prompts.rs): a commit's subject, a branch's or a PR's title is the checkout's
              "Review the current code changes (staged, unstaged, and untracked files)",
              "Review the code changes against the base branch", "Review the code changes introduced by commit",
              "Review pull request #"),
    # shell mode (``!ls``): useShellCommandProcessor's addShellCommandToGeminiHistory; Qwen Code forked it
    "gemini-cli": ("I ran the following shell command:", "This is the Gemini CLI. We are setting up the context",
                   "<session_context>"),
    "qwen-code": ("<qwen:user-prompt-submit-context>", "This is the Qwen Code. We are setting up the context"),
    "openhands": ("Your previous response was blocked by the model's content filter",),
    # a background task's end (kimi_cli/notifications/llm.py build_notification_message): the CLI's, with a tail of
    # what the task printed
    "kimi-cli": ("<notification ",),
}
_HARNESS = re.compile(r"\A\s*(?:" + "|".join(re.escape(o) for os in HARNESS_OPENERS.values() for o in os) + ")")


def is_harness(text: str) -> bool:
    """True when ``text`` opens with what an agent's harness writes into a user turn (or with skillmill's context)."""
    return bool(_HARNESS.match(text[:400])) or is_ours(text)
