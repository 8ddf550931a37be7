"""Risk flags for the reviewer: commands in a skill that can do damage if an agent runs them.

Whatever distilled the skill (a model or the zero-LLM distiller), its commands came from a
session and are about to be handed to other agents. The flags do not block anything; they
are written into the skill as ``metadata.flags`` (comma-separated, sorted), where review
(``skillmill review list --flagged``) shows them and batch approval refuses them.

Kinds: ``curl-pipe-shell`` (a download piped into a shell), ``rm-rf`` (recursive forced
delete), ``credential-access`` (reading keys, tokens, password stores), ``force-push``,
``secret-placeholder`` (a redacted secret that the step depends on).
"""

from __future__ import annotations

import re

from pipeline.library.model import Skill

FLAGS_KEY = "flags"

_RULES: dict[str, re.Pattern[str]] = {
    "curl-pipe-shell": re.compile(
        r"\b(curl|wget|fetch|iwr|Invoke-WebRequest)\b[^\n|;]*\|\s*(sudo\s+(-\S+\s+)*)?(ba|z|da|k)?sh\b|"
        r"\b(ba|z)?sh\s+(-c\s+)?[\"']?\$\((curl|wget)\b|\b(ba|z)?sh\s+<\(\s*(curl|wget)\b|"
        r"\b(curl|wget)\b[^\n|;]*\|\s*(sudo\s+)?python3?\b|\biex\s*\(.*DownloadString", re.I),
    "rm-rf": re.compile(
        r"\brm\s+(-[a-zA-Z]*[rR][a-zA-Z]*f[a-zA-Z]*|-[a-zA-Z]*f[a-zA-Z]*[rR][a-zA-Z]*|(-[rR]|--recursive)\s+"
        r"(-f|--force)|(-f|--force)\s+(-[rR]|--recursive))\b|\bRemove-Item\b[^\n]*-Recurse[^\n]*-Force", re.I),
    "credential-access": re.compile(
        r"\.ssh/(id_[a-z0-9]+|authorized_keys)|\.aws/credentials|\.netrc\b|\.npmrc\b|\.pypirc\b|"
        r"\.docker/config\.json|\.git-credentials|\.kube/config|\.config/gh/hosts\.yml|"
        r"\b(cat|less|more|head|tail|source|grep|cp|scp)\s+[^\n|;]*\.env(\.\w+)?\b|"
        r"\bprintenv\b|^\s*env\s*$|\bsecurity\s+find-(generic|internet)-password|\bgh\s+auth\s+token\b|"
        r"\bgcloud\s+auth\s+print-(access|identity)-token|\baws\s+configure\s+get\b|"
        r"\b(echo|printf)\s+[^\n]*\$\{?\w*(API_KEY|TOKEN|SECRET|PASSWORD)\w*", re.I | re.M),
    "force-push": re.compile(r"\bgit\s+push\b[^\n;&|]*(\s-f\b|\s--force\b|\s--force-with-lease\b|\s\+[\w./-]+)"),
    "secret-placeholder": re.compile(r"\[REDACTED:[\w.-]+\]"),
}


def risks(text: str) -> set[str]:
    return {kind for kind, rule in _RULES.items() if rule.search(text or "")}


def skill_text(skill: Skill) -> list[str]:
    parts: list[str] = [skill.description, skill.title, skill.notes]
    for item in [*skill.procedure, *skill.verification]:
        parts += [item.text, item.command or ""]
    for pitfall in skill.pitfalls:
        parts += [pitfall.symptom, pitfall.cause or "", pitfall.fix, pitfall.command or ""]
    return parts


def flags(skill: Skill) -> list[str]:
    found: set[str] = set()
    for text in skill_text(skill):
        found |= risks(text)
    return sorted(found)


def flag(skill: Skill) -> Skill:
    """The skill with ``metadata.flags`` set to what it holds now (removed when nothing is risky)."""
    found = flags(skill)
    meta = dict(skill.extra_metadata)
    if found:
        meta[FLAGS_KEY] = ",".join(found)
    else:
        meta.pop(FLAGS_KEY, None)
    return skill if meta == skill.extra_metadata else skill.model_copy(update={"extra_metadata": meta})
