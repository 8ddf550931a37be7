"""A skill's Markdown as the review page shows it: rendered, and still nothing but text from the skill.

Skills quote sessions nobody vetted, so no HTML from a skill may reach the page. markdown-it
(CommonMark, already installed with rich) parses with HTML off: a ``<script>``, an ``<img
onerror>`` or a comment is text, escaped like every other character. Links are shown as their
text and address, never as links (no ``javascript:`` can be clicked); images as their
description and address. Headings move down under the page's own (``## Where things are`` is
a section of the skill, like its Commands).

Provenance comments (``<!-- from <trajectory>:<steps> -->``) are not text: they leave the
rendered Markdown and become the evidence of the block they end, which the page folds under it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup, escape

from pipeline.library.markdown import PROVENANCE, provenance
from pipeline.library.model import Evidence

#: Where a block's evidence goes in the rendered HTML. markdown-it turns every NUL of its input
#: into U+FFFD, so a NUL in its output can only be one of these.
_MARK = "\x00"


def _link_open(renderer: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
    return ""


def _link_close(renderer: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
    """After the link's text, its address as text (an autolink's text is its address already)."""
    opening = next((t for t in reversed(tokens[:idx]) if t.type == "link_open"), None)
    href = str(opening.attrGet("href") or "") if opening is not None else ""
    if not href or (opening is not None and opening.markup == "autolink"):
        return ""
    return f' <span class="url">({escape(href)})</span>'


def _image(renderer: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    alt = "".join(child.content for child in token.children or [])
    return f'<span class="url">[image: {escape(alt)}] ({escape(str(token.attrGet("src") or ""))})</span>'


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False})
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("link_close", _link_close)
    md.add_render_rule("image", _image)
    return md


_MD = _parser()


def inline(text: str) -> Markup:
    """One line of a skill (an item's text, a fix): code spans and emphasis, the rest as text."""
    return Markup(_MD.renderInline(PROVENANCE.sub("", text)))


@dataclass
class Piece:
    """Rendered HTML, then the evidence of the block it ends (empty after the last block)."""

    html: Markup
    evidence: list[Evidence] = field(default_factory=list)


def blocks(text: str) -> list[Piece]:
    """Free Markdown (a skill's notes): rendered, each block followed by the evidence its provenance cited."""
    lines = text.split("\n")
    cited: dict[int, list[Evidence]] = {}
    for number, line in enumerate(lines):
        evidence = provenance(line)
        if evidence:
            lines[number] = PROVENANCE.sub("", line)
            cited[number] = evidence
    found: list[list[Evidence]] = []
    out: list[Token] = []
    pending: list[Evidence] = []  # an inline's evidence goes after its paragraph or heading closes

    def mark(evidence: list[Evidence]) -> None:
        marker = Token("html_block", "", 0)
        marker.content = f"{_MARK}{len(found)}{_MARK}"
        found.append(evidence)
        out.append(marker)

    for token in _MD.parse("\n".join(lines)):
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, max(3, int(token.tag[1]) + 1))}"
        out.append(token)
        if pending and token.nesting == -1:
            mark(pending)
            pending = []
        if token.type in ("inline", "fence", "code_block") and token.map:
            evidence = _merged([e for number in range(*token.map) for e in cited.get(number, [])])
            if evidence and token.type == "inline":
                pending = evidence
            elif evidence:
                mark(evidence)
    if pending:
        mark(pending)
    html = _MD.renderer.render(out, _MD.options, {})
    parts = html.split(_MARK)
    pieces = [Piece(Markup(parts[0]))]
    for index in range(1, len(parts) - 1, 2):
        pieces[-1].evidence = found[int(parts[index])]
        pieces.append(Piece(Markup(parts[index + 1])))
    return pieces


def _merged(evidence: list[Evidence]) -> list[Evidence]:
    """One entry per trajectory, steps in order (a paragraph over several cited lines)."""
    steps: dict[str, list[int]] = {}
    for e in evidence:
        steps.setdefault(e.trajectory, [])
        steps[e.trajectory] += [s for s in e.steps if s not in steps[e.trajectory]]
    return [Evidence(trajectory=t, steps=s) for t, s in steps.items()]
