"""Names, titles and task phrases for skills, derived from the task the person asked."""

from __future__ import annotations

import re

from pipeline.library.model import MAX_DESCRIPTION, MAX_NAME, SourceRef
from pipeline.trajectory import Trajectory

_STOP = {"a", "an", "the", "of", "to", "in", "on", "for", "with", "and", "or", "is", "are", "be", "it", "its",
         "this", "that", "when", "if", "as", "at", "by", "from", "into", "please", "can", "you", "we", "i",
         "my", "our", "me", "let", "lets", "should", "would", "could", "does", "do", "not", "no", "bug", "issue",
         "github", "fix", "some", "any", "so", "but", "was", "were", "has", "have", "will", "using", "use"}
_TAGS = re.compile(r"^\s*(\[[^\]]{1,20}\]:?\s*|#+\s*|(bug|feature|enh(ancement)?|rfc|wip)\s*:\s*)+", re.I)


def first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def task_title(trajectory: Trajectory) -> str:
    line = _TAGS.sub("", first_line(trajectory.task)).strip()
    if not line:
        return f"{trajectory.agent} session {trajectory.id[:8]}"
    return line if len(line) <= 100 else line[:97].rstrip() + "..."


def source_ref(trajectory: Trajectory) -> SourceRef:
    """How a skill cites the trajectory it was learned from (both distillers)."""
    return SourceRef(trajectory=trajectory.id, agent=trajectory.agent, outcome=trajectory.outcome.status,
                     task=task_title(trajectory))


def describe_task(trajectory: Trajectory) -> str:
    """The task's first sentence, short enough for a description."""
    text = _TAGS.sub("", first_line(trajectory.task))
    sentence = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0] if text else task_title(trajectory)
    sentence = sentence.rstrip(".")
    return sentence if len(sentence) <= 160 else sentence[:157].rstrip() + "..."


def slug(text: str, max_words: int = 6) -> str:
    words = [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP and len(w) > 1]
    return "-".join(words[:max_words])


def repo_slug(repo: str | None) -> str:
    return slug((repo or "").rsplit("/", 1)[-1], max_words=4)


def skill_name(trajectory: Trajectory, prefix: str | None = None) -> str:
    """``<prefix>-<repo>-<task words>``, valid as an Agent Skills name (<= 64 chars)."""
    repo = repo_slug(trajectory.repo)
    words = slug(task_title(trajectory)) or f"session-{trajectory.id[:8]}"
    parts = [p for p in (prefix, repo if repo and not words.startswith(repo) else None, words) if p]
    return clamp_name("-".join(parts))


def clamp_name(name: str) -> str:
    name = re.sub(r"-{2,}", "-", name).strip("-")
    if len(name) <= MAX_NAME:
        return name
    return name[:MAX_NAME].rsplit("-", 1)[0]


def bounded(text: str, limit: int = MAX_DESCRIPTION) -> str:
    """``text`` cut at a word boundary to fit ``limit`` characters (a description, a title)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 3]
    return (cut.rsplit(" ", 1)[0] if " " in cut[limit // 2:] else cut).rstrip(" ,;:") + "..."


def repo_label(repo: str, limit: int = 80) -> str:
    """A repository as titles and descriptions name it: a very long folder name is shortened."""
    return repo if len(repo) <= limit else repo[: limit - 3] + "..."
