"""Which existing skills a draft may overlap: TF-IDF cosine over the skills' text.

The library is the truth and small (hundreds of skills), so the pool is held in memory and
updated as consolidation writes: a draft also meets the skills written earlier in the same
run, which the published recall index (built at the end of a run) would not hold yet. Only
candidates go to the model; a draft that resembles nothing is new without a request.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from pipeline.distill.risk import skill_text
from pipeline.library.model import Skill

#: Cosine similarity from which a skill is shown to the model as a possible match.
THRESHOLD = 0.2
LIMIT = 3
_STOP = frozenset(["a", "an", "the", "of", "to", "in", "on", "for", "with", "and", "or", "is", "are", "be", "it", "its", "this", "that", "when", "if", "as", "at", "by", "from", "into", "use", "used", "using", "run", "runs", "then", "than", "after", "before", "not", "no", "do", "does", "you", "your", "we", "our", "can", "should", "must", "may", "will", "skill", "step", "steps", "file", "files", "code", "test", "tests"])


def tokens(text: str) -> list[str]:
    words = re.findall(r"[a-z0-9_]+", text.lower())
    return [w for w in words if len(w) > 1 and w not in _STOP]


def text_of(skill: Skill) -> str:
    return " ".join([skill.name.replace("-", " "), *skill_text(skill), skill.repo or ""])


@dataclass
class Match:
    name: str
    score: float


class Pool:
    """The skills a draft can be merged into, by name."""

    def __init__(self, skills: list[Skill]) -> None:
        self.skills: dict[str, Skill] = {}
        self._vectors: dict[str, Counter[str]] = {}
        for skill in skills:
            self.put(skill)

    def put(self, skill: Skill) -> None:
        self.skills[skill.name] = skill
        self._vectors[skill.name] = Counter(tokens(text_of(skill)))

    def matches(self, draft: Skill, limit: int = LIMIT, threshold: float = THRESHOLD) -> list[Match]:
        query = Counter(tokens(text_of(draft)))
        if not query:
            return []
        documents = len(self._vectors) + 1
        frequency: Counter[str] = Counter()
        for vector in self._vectors.values():
            frequency.update(vector.keys())
        frequency.update(query.keys())

        def weigh(vector: Counter[str]) -> dict[str, float]:
            return {t: (1 + math.log(c)) * math.log(1 + documents / frequency[t]) for t, c in vector.items()}

        q = weigh(query)
        q_norm = math.sqrt(sum(v * v for v in q.values()))
        found: list[Match] = []
        for name, vector in self._vectors.items():
            other = self.skills[name]
            if draft.repo and other.repo and draft.repo != other.repo:
                continue
            d = weigh(vector)
            norm = math.sqrt(sum(v * v for v in d.values()))
            if not norm or not q_norm:
                continue
            score = sum(q[t] * d.get(t, 0.0) for t in q) / (q_norm * norm)
            if score >= threshold:
                found.append(Match(name, round(score, 3)))
        found.sort(key=lambda m: (-m.score, m.name))
        return found[:limit]
