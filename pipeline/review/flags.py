"""Risk flags: what a reviewer must look at before a skill reaches an agent.

A skill is text an agent will follow, distilled from transcripts nobody vetted. Four things
make that risky, and each is flagged where it occurs (``procedure 2 command``):

* ``dangerous-command``: piping a download into a shell, ``rm -rf``, force pushes, world-
  writable permissions, reading credentials, discarding local work, running as root;
* ``agent-instruction``: text addressed to an agent rather than describing a procedure
  ("ignore previous instructions", "you must", "do not tell the user") — prompt injection
  that a transcript can smuggle into a skill;
* ``secret-placeholder`` / ``possible-secret``: a redacted value (``[REDACTED:...]``) the skill
  depends on, or something that looks like a live credential;
* ``low-evidence``: learned from one trajectory that failed (or from none).

Flags never block a decision taken by name; they block batch approval.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from pipeline.library.model import Skill

DANGEROUS = "dangerous-command"
INSTRUCTION = "agent-instruction"
PLACEHOLDER = "secret-placeholder"
SECRET = "possible-secret"
LOW_EVIDENCE = "low-evidence"
CODES = (DANGEROUS, INSTRUCTION, PLACEHOLDER, SECRET, LOW_EVIDENCE)


@dataclass(frozen=True)
class Flag:
    code: str
    message: str
    where: str  # "description", "procedure 2 command", "notes", "sources"
    excerpt: str = ""  # the text that matched

    def contract(self) -> dict[str, str]:
        return asdict(self)


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I | re.M)


# One shell command segment: stops at a separator so `rm x; echo -rf` is not `rm -rf`.
_SEGMENT = r"[^;&|\n`]*"
_COMMAND_RULES: list[tuple[re.Pattern[str], str]] = [
    (_rx(r"\b(?:curl|wget|fetch)\b[^;&\n`]*\|\s*(?:sudo\s+)?(?:ba|z|k|da|fi)?sh\b"),
     "pipes a download straight into a shell"),
    (_rx(r"\b(?:ba|z)?sh\s+(?:-c\s+)?[\"']?\$?<?\(\s*(?:curl|wget)\b"), "runs a downloaded script"),
    (_rx(r"\beval\s+[\"']?\$\(\s*(?:curl|wget)\b"), "evaluates a downloaded script"),
    (_rx(r"\bbase64\s+(?:-d|--decode)\b[^;&\n`]*\|\s*(?:ba|z)?sh\b"), "runs an encoded script"),
    (_rx(rf"\bgit\s+push\b{_SEGMENT}(?:\s--force(?:-with-lease)?\b|\s-f\b|\s\+\S)"), "force-pushes"),
    (_rx(r"\bchmod\s+(?:-\w+\s+)*(?:0?777|[ugoa]*\+rwx|a=rwx)\b"), "makes files world-writable"),
    (_rx(r"\bgit\s+reset\s+--hard\b|\bgit\s+clean\s+-\w*f"), "discards local changes"),
    (_rx(r"\bsudo\s+\S"), "runs as root"),
    (_rx(r"\bmkfs(?:\.\w+)?\s|\bdd\s+[^\n]*\bof=/dev/|>\s*/dev/sd[a-z]"), "writes to a raw disk"),
    (_rx(r":\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:"), "a fork bomb"),
    (_rx(r"\bdrop\s+(?:table|database|schema)\b"), "drops database objects"),
    (_rx(r"~/\.ssh/|\bid_(?:rsa|ed25519|ecdsa|dsa)\b|\.aws/credentials|\.netrc\b|/etc/shadow\b"
         r"|\.docker/config\.json|\.kube/config|\.git-credentials|\.pypirc\b"),
     "reads credential files"),
    (_rx(r"\bgh\s+auth\s+token\b|\bgit\s+credential\s+fill\b|\bsecurity\s+find-(?:generic|internet)-password\b"
         r"|\baws\s+configure\s+get\b|\bgcloud\s+auth\s+print-access-token\b"),
     "reads credentials from a tool"),
    (_rx(r"\b(?:echo|printf|cat|curl|wget)\b[^;&\n`]*\$\{?\w*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY|"
         r"PRIVATE_KEY|ACCESS_KEY)\w*\}?"),
     "prints or sends a secret from the environment"),
    (_rx(r"\bcat\s+(?:\S*/)?\.env\b|\bprintenv\s*(?:$|[|>;&])|^\s*env\s*(?:$|[|>])"),
     "dumps environment secrets"),
]

_INSTRUCTION_RULES: list[tuple[re.Pattern[str], str]] = [
    (_rx(r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+|my\s+)?"
         r"(?:previous|prior|above|earlier|preceding|original|system|safety)?\s*"
         r"(?:instructions?|prompts?|rules|messages|guidelines|directions)\b"),
     "tells the agent to ignore its instructions"),
    (_rx(r"\byou\s+(?:must|should\s+always|have\s+to|are\s+required\s+to|will\s+now|are\s+now)\b"),
     "addresses the agent with an order"),
    (_rx(r"\bfrom\s+now\s+on\b|\bnew\s+instructions?\b|\b(?:reveal|print|show|repeat|output)\s+(?:your|the)\s+"
         r"(?:system\s+prompt|instructions)\b"),
     "tries to change the agent's instructions"),
    (_rx(r"\b(?:do\s+not|don't|never)\s+(?:tell|inform|mention|reveal|show|ask)\b[^.\n]*\b(?:user|human|anyone)\b"
         r"|\bwithout\s+(?:telling|asking|informing|notifying)\s+(?:the\s+)?(?:user|human)\b"),
     "tells the agent to hide something from the user"),
    (_rx(r"\b(?:act|behave)\s+as\s+(?:if\s+you|an?\s+(?:\w+\s+)?(?:assistant|agent|ai))\b|\bpretend\s+(?:that\s+)?you\b"
         r"|\byou\s+are\s+(?:a|an)\s+\w+\s+(?:assistant|agent|model)\b"),
     "gives the agent a new role"),
    (_rx(r"<\|im_(?:start|end)\|>|\[/?INST\]|<\s*/\s*(?:system|instructions?)\s*>"),
     "contains chat-control markup"),
    (_rx(r"\b(?:exfiltrate|upload|send|post)\b[^.\n]*\b(?:secrets?|credentials?|tokens?|keys?|\.env)\b[^.\n]*"
         r"\bto\b"), "tells the agent to send secrets somewhere"),
]

_PLACEHOLDER = re.compile(r"\[REDACTED(?::[^\]\s]*)?\]|<REDACTED(?::[^>\s]*)?>|\bREDACTED_[A-Z][A-Z_]*\b")
_SECRETS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), "an AWS access key id"),
    (re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b|\bgithub_pat_[A-Za-z0-9_]{40,}\b"), "a GitHub token"),
    (re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{32,}\b"), "an API key (sk-...)"),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"), "a Slack token"),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), "a Google API key"),
    (re.compile(r"-----BEGIN (?:RSA |EC |OPENSSH |DSA |PGP )?PRIVATE KEY-----"), "a private key"),
]


def _texts(skill: Skill) -> Iterator[tuple[str, str, bool]]:
    """(where, text, is_command) for every piece of text in the skill."""
    yield "name", skill.name, False
    yield "description", skill.description, False
    yield "title", skill.title, False
    for number, item in enumerate(skill.procedure, 1):
        yield f"procedure {number}", item.text, False
        if item.command:
            yield f"procedure {number} command", item.command, True
    for number, pitfall in enumerate(skill.pitfalls, 1):
        yield f"pitfall {number}", " ".join(filter(None, [pitfall.symptom, pitfall.cause, pitfall.fix])), False
        if pitfall.command:
            yield f"pitfall {number} command", pitfall.command, True
    for number, item in enumerate(skill.verification, 1):
        yield f"verification {number}", item.text, False
        if item.command:
            yield f"verification {number} command", item.command, True
    if skill.notes:
        yield "notes", skill.notes, False


def _excerpt(text: str, match: re.Match[str], width: int = 50) -> str:
    start, end = max(0, match.start() - width), min(len(text), match.end() + width)
    snippet = " ".join(text[start:end].split())
    return ("..." if start else "") + snippet + ("..." if end < len(text) else "")


def risk_flags(skill: Skill) -> list[Flag]:
    """Every risk in the skill, in reading order; one flag per rule and place."""
    flags: list[Flag] = []
    for where, text, is_command in _texts(skill):
        if not text:
            continue
        # Commands also hide in prose (`...` spans), so command rules run on every text.
        for pattern, message in _COMMAND_RULES:
            if match := pattern.search(text):
                flags.append(Flag(DANGEROUS, message, where, _excerpt(text, match)))
        if rm := _rm_recursive_force(text):
            flags.append(Flag(DANGEROUS, "deletes recursively without asking (rm -rf)", where, rm))
        if not is_command:
            for pattern, message in _INSTRUCTION_RULES:
                if match := pattern.search(text):
                    flags.append(Flag(INSTRUCTION, message, where, _excerpt(text, match)))
        if match := _PLACEHOLDER.search(text):
            flags.append(Flag(PLACEHOLDER, "depends on a redacted secret", where, _excerpt(text, match)))
        for pattern, message in _SECRETS:
            if match := pattern.search(text):
                flags.append(Flag(SECRET, f"looks like {message}", where, _excerpt(text, match, 12)))
    if skill.generated:
        sources = skill.trajectory_ids()
        if not sources:
            flags.append(Flag(LOW_EVIDENCE, "no source trajectory", "sources"))
        elif len(sources) == 1 and skill.outcome == "failed":
            flags.append(Flag(LOW_EVIDENCE, "one trajectory, and it failed", "sources", sources[0]))
    return flags


_RM = re.compile(r"\brm\s+([^;&|\n`]*)")


def _rm_recursive_force(text: str) -> str | None:
    """The ``rm`` segment when it is both recursive and forced (``-rf``, ``-fR``, ``-r -f``, long options)."""
    for match in _RM.finditer(text):
        args = match.group(1).split()
        short = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
        recursive = "r" in short.lower() or "--recursive" in args
        force = "f" in short or "--force" in args
        if recursive and force:
            return " ".join(match.group(0).split())[:120]
    return None


def flag_codes(flags: list[Flag]) -> list[str]:
    """Distinct codes in a stable order (the ``flags`` field of ``review list --json``)."""
    present = {f.code for f in flags}
    return [code for code in CODES if code in present]
