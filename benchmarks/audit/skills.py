"""Read a library's SKILL.md files into what the auditor judges: fields, sections, items, citations.

A light reader of its own, not ``pipeline.library.markdown``: the auditor must keep working when the
distiller under test changes what it writes (new sections, other item shapes), and must not share
code with what it measures. It knows only the file format every skill has:

* YAML frontmatter between ``---`` lines (``name``, ``description``, ``metadata``);
* ``# title``, then ``## Section`` blocks;
* list items (``- `` or ``1. ``) with indented continuation lines and fenced code blocks;
* provenance comments ``<!-- from <trajectory>:<step>,<step> [<trajectory>:...] -->``, which
  are read as citations and stripped from every text the rules judge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

PROVENANCE = re.compile(r"\s*<!--\s*from\s+(.*?)-->", re.S)
_CITATION = re.compile(r"([0-9a-f]{16}):([\d,]*)")
_TRAJECTORY_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{16}(?![0-9a-f])")
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_ITEM = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def strip_provenance(text: str) -> str:
    return PROVENANCE.sub("", text)


def citations(text: str) -> dict[str, list[int]]:
    """``{trajectory id: [step, ...]}`` from the provenance comments in ``text``."""
    found: dict[str, list[int]] = {}
    for comment in PROVENANCE.findall(text):
        for trajectory, steps in _CITATION.findall(comment):
            found.setdefault(trajectory, []).extend(int(s) for s in steps.split(",") if s)
    return found


@dataclass
class Item:
    """One list item (or one paragraph) of a section: its prose, its code blocks, what it cites."""

    section: str  # lower-case section title; "" before the first section
    text: str  # the item's prose lines joined by newlines, list marker and provenance stripped
    code: list[str] = field(default_factory=list)  # fenced blocks, dedented
    cites: dict[str, list[int]] = field(default_factory=dict)
    bullet: bool = False  # a list item ("- " or "1. "), not a paragraph

    @property
    def first_line(self) -> str:
        return self.text.split("\n", 1)[0]

    def full(self) -> str:
        """Prose and code together (what a string test of the item looks at)."""
        return "\n".join([self.text, *self.code])

    def quote(self) -> str:
        """The item as a reader sees it, on one line (for reports)."""
        text = " ".join(self.text.split())
        code = " | ".join(" ".join(c.split()) for c in self.code)
        return f"{text} [code: {code}]" if code else text


@dataclass
class AuditedSkill:
    name: str
    path: Path
    status: str  # candidate | approved
    description: str
    metadata: dict[str, str]
    title: str
    items: list[Item]
    sources: list[str]  # trajectory ids: metadata.sources, the Sources list and every citation
    body: str  # the text after the frontmatter, provenance comments stripped

    @property
    def kind(self) -> str:
        return self.metadata.get("kind", "")

    @property
    def repo(self) -> str:
        return self.metadata.get("repo", "")

    def judged_items(self) -> list[Item]:
        """Every item except the Sources list (which names trajectories by design)."""
        return [i for i in self.items if i.section != "sources"]

    def text_without_sources(self) -> str:
        """Name, description, title and body without the Sources section: what a loading agent reads."""
        parts = [self.name, self.description, self.title]
        parts += [i.text + ("\n" + "\n".join(i.code) if i.code else "") for i in self.judged_items()]
        return "\n".join(parts)


def read_skill(path: Path, status: str) -> AuditedSkill:
    raw = path.read_text(encoding="utf-8", errors="replace")
    match = _FRONTMATTER.match(raw)
    data: dict = {}
    body = raw
    if match:
        try:
            loaded = yaml.load(match.group(1), Loader=_LOADER)
        except yaml.YAMLError:
            loaded = None
        data = loaded if isinstance(loaded, dict) else {}
        body = raw[match.end():]
    meta_raw = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    metadata = {str(k): "" if v is None else str(v) for k, v in meta_raw.items()}
    title, items = _body(body)
    sources: list[str] = []
    for trajectory in re.split(r"[,\s]+", metadata.get("sources", "")):
        if _TRAJECTORY_ID.fullmatch(trajectory):
            sources.append(trajectory)
    for item in items:
        if item.section == "sources":
            sources += _TRAJECTORY_ID.findall(item.text)
        sources += list(item.cites)
    return AuditedSkill(
        name=str(data.get("name") or path.parent.name),
        path=path,
        status=status,
        description=" ".join(str(data.get("description") or "").split()),
        metadata=metadata,
        title=title,
        items=items,
        sources=list(dict.fromkeys(sources)),
        body=strip_provenance(body),
    )


def _body(body: str) -> tuple[str, list[Item]]:
    title = ""
    section = ""
    items: list[Item] = []
    current: Item | None = None
    in_list = False  # the open item is a list item (else a paragraph)
    blank = False  # the previous line was blank
    prose: list[str] = []
    fence: str | None = None
    fence_indent = 0
    code: list[str] = []

    def close() -> None:
        nonlocal current, prose
        if current is not None:
            joined = "\n".join(prose)
            current.cites = citations(joined)
            current.text = strip_provenance(joined).strip()
            items.append(current)
        current, prose = None, []

    for line in body.splitlines():
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                if current is None:
                    current, in_list = Item(section, ""), False
                current.code.append("\n".join(code))
                fence, code = None, []
            else:
                code.append(line[fence_indent:] if not line[:fence_indent].strip() else line.lstrip())
            continue
        opened = _FENCE.match(line)
        if opened:
            fence, fence_indent, code = opened.group(2), len(opened.group(1)), []
            blank = False
            continue
        if line.startswith("# ") and not title and not section:
            title = strip_provenance(line[2:]).strip()
            continue
        if line.startswith("## "):
            close()
            section = strip_provenance(line[3:]).strip().lower()
            continue
        if not line.strip():
            if current is not None and not in_list:
                close()  # a paragraph ends at a blank line; a list item at the next item or heading
            blank = True
            continue
        if _ITEM.match(line):
            close()
            current, in_list = Item(section, "", bullet=True), True
            prose = [_ITEM.sub("", line, count=1)]
        elif current is None or (in_list and blank and not line.startswith((" ", "\t"))):
            close()
            current, in_list = Item(section, ""), False
            prose = [line.strip()]
        else:
            prose.append(line.strip())
        blank = False
    if fence is not None:
        if current is None:
            current = Item(section, "")
        current.code.append("\n".join(code))
    close()
    return title, items


def read_library(root: Path) -> list[AuditedSkill]:
    """Candidates (``_candidates/<name>``) and approved skills (``<name>``); other folders are left out."""
    skills = []
    for file in sorted((root / "_candidates").glob("*/SKILL.md")):
        skills.append(read_skill(file, "candidate"))
    for file in sorted(root.glob("*/SKILL.md")):
        if not file.parent.name.startswith(("_", ".")):
            skills.append(read_skill(file, "approved"))
    return skills
