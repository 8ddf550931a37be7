"""Handoffs: where the last agent stopped in a checkout, for the next session there (any agent).

A session that ends unfinished leaves a short brief: the task in the user's words and their last
instruction; where it stopped (the last run of each check, whether it ever passed afterwards, the
files it changed -- and, when served, whether they are still uncommitted); what is open (the agent's
own todo or plan items not done, a question it asked that nobody answered); and what was tried and
did not work. The next session in the same checkout gets it at its start, once.

* ``build``   -- the brief, from a parsed trajectory (the distiller's analysis of its tool calls);
* ``store``   -- the briefs on disk (``$SKILLMILL_HOME/handoffs/``, owner-only), served, claimed,
  superseded, expired, dropped; standard library only: the hook reads it at session start;
* ``capture`` -- what a session-end hook hands to a background process of ours: parse, redact, store
  the trajectory as a run does (no Prefect, no distillation), then write its brief.

A handoff is this user's working state, not a skill: it needs no review, and it is never exported,
written into a repository or shared with a team.
"""

#: Defaults of ``[handoff]`` in skillmill.toml (``pipeline.config.HandoffConfig`` states them too).
ENABLED = True
EXPIRE_DAYS = 7.0
#: At most this many briefs at a session's start, each about this many tokens (4 characters a token).
MAX_SERVED = 2
MAX_TOKENS = 400
