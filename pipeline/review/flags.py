"""Risk flags: what a reviewer must look at before a skill reaches an agent.

A skill is text an agent will follow, distilled from transcripts nobody vetted. The rules
live in ``pipeline.safety`` (one rule set, shared with the distillers' ``metadata.flags``);
each flag is reported where it occurs (``procedure 2 command``) under one of these codes:

* ``dangerous-command``: a command line read as a shell reads it -- downloads fed to a shell
  or an interpreter, the environment or credential files sent to the network, deleting home
  or root, writes to ``~/.ssh``, shell startup files, git hooks/config or cron, installs from
  another package index, edits that disable tests, force pushes, ``sudo`` ...;
* ``agent-instruction``: text addressed to an AI agent rather than describing a procedure
  ("ignore previous instructions", "IMPORTANT for every coding assistant reading this") --
  prompt injection that a transcript can smuggle into a skill;
* ``secret-placeholder`` / ``possible-secret``: a redacted value (``[REDACTED:...]``) the skill
  depends on, or something that looks like a live credential;
* ``low-evidence``: learned from one trajectory that failed (or from none).

``metadata.flags`` in the file counts too: a flag recorded by the distiller (or by another
version) stays a flag even when the text no longer shows it. Flags never block a decision
taken by name; they block batch approval.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from pipeline.distill.risk import FLAGS_KEY, findings, places
from pipeline.library.model import Skill
from pipeline.safety.findings import (
    CODES,
    DANGEROUS,
    INSTRUCTION,
    LOW_EVIDENCE,
    PLACEHOLDER,
    RULES,
    SECRET,
    code_of,
)

__all__ = ["CODES", "DANGEROUS", "INSTRUCTION", "LOW_EVIDENCE", "PLACEHOLDER", "SECRET", "Flag", "flag_codes",
           "recorded_flags", "risk_flags"]


@dataclass(frozen=True)
class Flag:
    code: str
    message: str
    where: str  # "description", "procedure 2 command", "notes", "sources", "metadata.flags"
    excerpt: str = ""  # the text that matched
    rule: str = ""  # the rule id (what ``metadata.flags`` holds): "curl-pipe-shell", "exfiltration" ...

    def contract(self) -> dict[str, str]:
        return asdict(self)


def risk_flags(skill: Skill) -> list[Flag]:
    """Every risk in the skill, in reading order; one flag per rule, message and place."""
    flags = [Flag(f.code, f.message, where, f.excerpt, f.rule) for where, f in findings(skill)]
    flags += _prose_passwords(skill)
    flags += recorded_flags(skill, {f.rule for f in flags})
    if skill.generated:
        sources = skill.trajectory_ids()
        if not sources:
            flags.append(Flag(LOW_EVIDENCE, "no source trajectory", "sources"))
        elif len(sources) == 1 and skill.outcome == "failed":
            flags.append(Flag(LOW_EVIDENCE, "one trajectory, and it failed", "sources", sources[0]))
    return flags


def _prose_passwords(skill: Skill) -> list[Flag]:
    """A password stated in words ("the staging password is tulip", "пароль от базы: ..."): too plain a
    value for the redactor to replace safely, so a person reads it before any agent does."""
    from pipeline.redact import prose_password

    flags = []
    for place in places(skill):
        if place.text and not place.command and (match := prose_password(place.text)):
            start, end = max(0, match.start() - 20), min(len(place.text), match.end() + 12)
            flags.append(Flag(SECRET, "states a password in prose", place.where,
                              " ".join(place.text[start:end].split()), "prose-password"))
    return flags


def recorded_flags(skill: Skill, found: set[str] | None = None) -> list[Flag]:
    """The ``metadata.flags`` of the file that the text does not show (any more): kept as flags."""
    found = found or set()
    recorded = [r.strip() for r in skill.extra_metadata.get(FLAGS_KEY, "").split(",") if r.strip()]
    flags = []
    for rule in dict.fromkeys(recorded):
        if rule in found:
            continue
        about = RULES[rule][1] if rule in RULES else "a flag this version does not know"
        flags.append(Flag(code_of(rule), f"recorded in the file as {rule} ({about}); the text no longer shows it -- "
                          f"read the skill, then remove `{rule}` from `metadata.flags` if it is safe",
                          "metadata.flags", rule, rule))
    return flags


def flag_codes(flags: list[Flag]) -> list[str]:
    """Distinct codes in a stable order (the ``flags`` field of ``review list --json``)."""
    present = {f.code for f in flags}
    return [code for code in CODES if code in present]
