"""What a rule reports: a finding, the rule it breaks, and the review code it counts under.

Rule ids are what the distillers write into ``metadata.flags`` (``curl-pipe-shell``,
``rm-rf`` ...); codes are what review shows and ``review list --json`` prints in ``flags``
(``dangerous-command``, ``agent-instruction`` ...). Every rule belongs to one code.
"""

from __future__ import annotations

from dataclasses import dataclass

DANGEROUS = "dangerous-command"
INSTRUCTION = "agent-instruction"
PLACEHOLDER = "secret-placeholder"
SECRET = "possible-secret"
LOW_EVIDENCE = "low-evidence"
CODES = (DANGEROUS, INSTRUCTION, PLACEHOLDER, SECRET, LOW_EVIDENCE)

#: rule id -> (code, what the rule is about). Ids are stable: skill files keep them.
RULES: dict[str, tuple[str, str]] = {
    "curl-pipe-shell": (DANGEROUS, "runs a script downloaded from the network"),
    "encoded-script": (DANGEROUS, "runs an encoded script"),
    "exfiltration": (DANGEROUS, "sends local data (environment, credentials, files) to the network"),
    "credential-access": (DANGEROUS, "reads credentials or secrets"),
    "destructive-delete": (DANGEROUS, "deletes a home, root, system or parent folder"),
    "rm-rf": (DANGEROUS, "deletes recursively without asking"),
    "persistence": (DANGEROUS, "changes what runs later: ~/.ssh, shell startup files, git hooks and config, cron"),
    "package-source": (DANGEROUS, "installs packages from somewhere other than the default index"),
    "disable-tests": (DANGEROUS, "disables, skips or deletes tests"),
    "force-push": (DANGEROUS, "force-pushes"),
    "discard-changes": (DANGEROUS, "discards local changes"),
    "world-writable": (DANGEROUS, "makes files world-writable"),
    "root": (DANGEROUS, "runs as root"),
    "raw-disk": (DANGEROUS, "writes to a raw disk"),
    "fork-bomb": (DANGEROUS, "a fork bomb"),
    "drop-database": (DANGEROUS, "drops database objects"),
    INSTRUCTION: (INSTRUCTION, "text addressed to an AI agent rather than describing a procedure"),
    PLACEHOLDER: (PLACEHOLDER, "depends on a redacted secret"),
    SECRET: (SECRET, "looks like a live credential"),
}


@dataclass(frozen=True)
class Finding:
    """One thing a rule found in one text."""

    rule: str  # a key of RULES
    message: str  # what it does, for a reviewer: "pipes a download straight into a shell"
    excerpt: str = ""  # the command or the words that matched

    @property
    def code(self) -> str:
        return RULES.get(self.rule, (DANGEROUS, ""))[0]


def code_of(rule: str) -> str:
    """The review code of a rule id; an id this version does not know counts as a dangerous command."""
    return RULES.get(rule, (DANGEROUS, ""))[0]


def unique(findings: list[Finding]) -> list[Finding]:
    """The findings without repeats (same rule and message), in order."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for finding in findings:
        key = (finding.rule, finding.message)
        if key not in seen:
            seen.add(key)
            kept.append(finding)
    return kept
