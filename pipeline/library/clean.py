"""Text from sessions made safe to write into SKILL.md: no value can create structure there.

Every string a skill holds came, directly or not, from a session nobody vetted. The skill model
runs its fields through these functions when a skill is made, so whatever a distiller puts in:

* control and invisible characters (NUL, ESC, DEL, C1, bidi overrides, zero-width and Unicode
  tag characters, lone surrogates) are escaped as visible text (``\\x1b``, ``\\u202e``): a
  reviewer sees that something was there, a terminal does not execute it, and YAML reads the
  frontmatter back;
* a one-line field stays one line, and cannot end in what reads as a provenance comment;
* a free-Markdown field cannot open a section the parser owns (``## Sources``) or leave a code
  fence open that would swallow the sections after it.

``markdown.render`` then only has to choose fences longer than any run inside a command.
"""

from __future__ import annotations

import re

#: Characters escaped wherever they appear: C0 controls but tab and newline, DEL, C1, the bidi
#: controls, zero-width and word-joiner characters, the BOM, interlinear annotations, Unicode tag
#: characters ("ASCII smuggling"), the line/paragraph separators, lone surrogates and the two
#: BMP noncharacters YAML refuses.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f"
    "\ufeff\ufff9-\ufffb\ufffe\uffff\ud800-\udfff\U000e0000-\U000e007f]")
#: A section heading the skill parser owns; in free text it would start that section.
_SECTION = re.compile(r"^(##[ \t]+(?:Procedure|Pitfalls|Verification|Notes|Sources|Commands|Environment)[ \t]*)$",
                      re.M)
_FENCE_LINE = re.compile(r"^[ \t]*(`{3,}|~{3,})", re.M)
_COMMENT = "<!--"


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` with every control and invisible character written as a visible escape."""
    return _INVISIBLE.sub(_escape, text)


def one_line(text: str) -> str:
    """A single-line field: visible characters, whitespace collapsed, no frontmatter end, no comment."""
    text = " ".join(visible(text.replace("\r\n", " ").replace("\r", " ").replace("\t", " ")).split())
    # "---" would end YAML frontmatter for parsers that split on it; "<!--" would start what the
    # parser reads as the item's provenance.
    return re.sub(r"-{3,}", "\u2014", text).replace(_COMMENT, "&lt;!--")


def multi_line(text: str) -> str:
    """A multi-line value (a command): visible characters, ``\\n`` line ends only."""
    return visible(text.replace("\r\n", "\n").replace("\r", "\n"))


def markdown_block(text: str) -> str:
    """Free Markdown kept under ``## Notes``: no owned section heading, no fence left open."""
    text = _SECTION.sub(r"\\\1", multi_line(text)).strip("\n")
    if not text.strip():
        return ""
    if len(_FENCE_LINE.findall(text)) % 2:
        fence = _FENCE_LINE.findall(text)[-1]
        text += "\n" + fence
    return text


def token(text: str, default: str) -> str:
    """An identifier written bare in the file (a trajectory id): word characters and hyphens only."""
    return re.sub(r"(?:[^\w-]|-)+", "-", text) or default
