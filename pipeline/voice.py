"""What skillmill says to agents in its own voice: the headers of the hook's context.

An agent records the context a hook added (Qwen Code and Kimi CLI as a part or message of the next user
turn), so skillmill's own words come back in the sessions it reads. They are not the person's request:
a step that opens with one of these headers is the CLI's (``meta``) and never the task.
"""

from __future__ import annotations

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
