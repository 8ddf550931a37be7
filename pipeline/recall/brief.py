"""Pack recall results into a token budget: the brief an agent reads at task start.

Every listed skill costs its name, description, fit (the calibrated score) and path; then the full bodies of the best
skills are added, in rank order, while they fit. The best skill is always listed when anything
was relevant, even if its line alone is over the budget. ``truncated`` says that the budget
left matching skills out of the list.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from pipeline.recall.search import Hit
from pipeline.recall.text import estimate_tokens, lean

DEFAULT_BUDGET = 2000
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n.*?\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)


class Packed:
    """The brief: the hits listed, the bodies included, whether the budget cut the list, its tokens."""

    def __init__(self, query: str, hits: list[Hit], bodies: dict[str, str] | None = None, truncated: bool = False,
                 tokens: int = 0) -> None:
        self.query, self.hits, self.truncated, self.tokens = query, hits, truncated, tokens
        self.bodies = bodies if bodies is not None else {}

    def contract(self) -> dict[str, object]:
        """``skillmill recall --json``: ``{"query", "results", "truncated"}``."""
        return {"query": self.query, "results": [h.contract() for h in self.hits], "truncated": self.truncated}

    def markdown(self) -> str:
        if not self.hits:
            return f"No skill in the library fits: {self.query}\n"
        lines = [_header(self.query)]
        lines += [_entry(h) for h in self.hits]
        if self.truncated:
            lines.append("_More skills matched than fit the token budget; ask with a larger `--budget` to see them._\n")
        for hit in self.hits:
            if hit.path in self.bodies:
                lines.append(_body_section(hit, self.bodies[hit.path]))
        return "".join(lines)


def _header(query: str) -> str:
    return f"## Skills for: {' '.join(query.split())[:300]}\n\n"


def _entry(hit: Hit) -> str:
    """One listed skill; its fit is recall's calibrated score (how sure it is that the skill fits)."""
    return f"- **{hit.name}** ({hit.status}) — {hit.description} (fit {hit.score:.2f})\n  `{hit.path}/SKILL.md`\n"


def _body_section(hit: Hit, body: str) -> str:
    return f"\n### {hit.name}\n\n{body.strip()}\n"


def skill_body(path: str) -> str | None:
    """The SKILL.md body an agent would read: no frontmatter, provenance comments or Sources list."""
    try:
        text = (Path(path) / "SKILL.md").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return lean(_FRONTMATTER.sub("", text, count=1)).strip()


def pack(query: str, hits: list[Hit], budget: int = DEFAULT_BUDGET,
         read_body: Callable[[str], str | None] = skill_body) -> Packed:
    packed = Packed(query=query, hits=[])
    if not hits:
        return packed
    used = estimate_tokens(_header(query))
    for hit in hits:
        cost = estimate_tokens(_entry(hit))
        if packed.hits and used + cost > budget:
            packed.truncated = True
            break
        if not packed.hits and used + cost > budget:  # the best one is always listed, shortened to fit
            room = max(80, (budget - used) * 4 - len(hit.name) - len(hit.path) - 40)
            if len(hit.description) > room:
                hit = Hit(hit.name, hit.path, hit.score, hit.description[: room - 3].rstrip() + "...", hit.status)
                cost = estimate_tokens(_entry(hit))
        packed.hits.append(hit)
        used += cost
    for hit in packed.hits:
        body = read_body(hit.path)
        if not body:
            continue
        cost = estimate_tokens(_body_section(hit, body))
        if used + cost > budget:
            break
        packed.bodies[hit.path] = body
        used += cost
    packed.tokens = used
    return packed


def brief(query: str, hits: list[Hit], budget: int = DEFAULT_BUDGET) -> str:
    """The Markdown an agent reads: each skill's name, when to use it, where it lives, best bodies."""
    return pack(query, hits, budget).markdown()
