"""Skill <-> SKILL.md. ``parse(render(skill)) == skill`` for every valid Skill.

Layout (what agents read, what ``skills-ref validate`` accepts)::

    ---
    name: <name>
    description: "<when to use it>"
    metadata:
      generator: "skillmill"
      status: "candidate"
      ...                      (custom fields: strings, under metadata)
    ---

    # <title>

    ## Procedure
    1. <text> <!-- from <trajectory>:<step>,<step> -->
       ```bash
       <command>
       ```

    ## Pitfalls
    - **Symptom:** <symptom> <!-- from ... -->
      **Cause:** <cause>
      **Fix:** <fix>
      ```bash
      <command>
      ```

    ## Verification
    - <text> <!-- from ... -->

    ## Notes
    <free Markdown, kept verbatim>

    ## Sources
    - `<trajectory id>` <agent>, <outcome>: <task>

Provenance sits in HTML comments: invisible when rendered, a few tokens when read raw.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from pipeline.errors import SkillFileError, validation_summary
from pipeline.library.model import MAX_DESCRIPTION, OWNED_METADATA, Evidence, Item, Pitfall, Skill, SourceRef

GENERATOR = "skillmill"
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_EVIDENCE = re.compile(r"\s*<!-- from ((?:[\w./-]+:[\d,]*\s*)+)-->\s*$")
_SECTIONS = {"procedure": "Procedure", "pitfalls": "Pitfalls", "verification": "Verification",
             "notes": "Notes", "sources": "Sources"}
#: A repository manual names its sections for what they hold; both names read back.
_KIND_SECTIONS = {"repo": {"procedure": "Commands", "pitfalls": "Environment"}}
_HEADING_FIELD = {**{v: k for k, v in _SECTIONS.items()},
                  **{v: k for names in _KIND_SECTIONS.values() for k, v in names.items()}}
_COMMENT = re.compile(r"\s*<!-- from [^>]*-->")
#: A provenance comment anywhere in a line (free Markdown carries them at the end of its items).
PROVENANCE = re.compile(r"[ \t]*<!-- from ((?:[\w./-]+:[\d,]*\s*)+)-->")
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufffe\uffff\ud800-\udfff]")
_PLAIN_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
#: libyaml's safe loader when PyYAML was built with it: ~10x faster, same safe subset.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# -- render -------------------------------------------------------------------------------
def _quote(value: str) -> str:
    # JSON strings are valid YAML double-quoted scalars; "---" would end the frontmatter early
    # for parsers that split on it, so it never appears inside a value. The model already made
    # control characters visible; what YAML still refuses or folds is escaped here all the same.
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}",
                            json.dumps(re.sub(r"-{3,}", "\u2014", value), ensure_ascii=False))


def _key(key: str) -> str:
    """A metadata key: bare when it is a plain word, quoted otherwise."""
    return key if _PLAIN_KEY.fullmatch(key) and yaml.load(key, Loader=_LOADER) == key else _quote(key)


def _evidence(evidence: list[Evidence]) -> str:
    if not evidence:
        return ""
    refs = " ".join(f"{e.trajectory}:{','.join(str(s) for s in e.steps)}" for e in evidence)
    return f" <!-- from {refs} -->"


def _code(command: str, indent: str) -> list[str]:
    # A fence longer than any backtick run inside, so nothing in the command can close it early.
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", command)), default=0))
    return [f"{indent}{fence}bash", *(f"{indent}{line}" if line else "" for line in command.split("\n")),
            f"{indent}{fence}"]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def frontmatter(skill: Skill) -> dict[str, Any]:
    """The frontmatter as data (what ``render`` writes between the ``---`` lines)."""
    meta: dict[str, str] = dict(skill.extra_metadata)
    if skill.generated:
        meta.update({
            "generator": GENERATOR,
            "status": skill.status,
            "kind": skill.kind,
            "version": str(skill.version),
            "confidence": f"{skill.confidence:.2f}",
            "outcome": skill.outcome,
            "sources": ",".join(skill.trajectory_ids()),
        })
        if skill.repo:
            meta["repo"] = skill.repo
    data: dict[str, Any] = {"name": skill.name, "description": skill.description}
    for key, value in (("license", skill.license), ("compatibility", skill.compatibility),
                       ("allowed-tools", skill.allowed_tools)):
        if value is not None:
            data[key] = value
    if meta:
        data["metadata"] = meta
    return data


def served(skill: Skill) -> str:
    """What an agent is given: the skill without provenance comments, the Sources list and metadata.

    Review shows everything; an agent needs the instructions, and every token counts there.
    """
    lean = skill.model_copy(update={"sources": [], "extra_metadata": {}, "generated": False})
    text = render(lean.model_copy(update={"notes": _COMMENT.sub("", skill.notes)}), headings=skill)
    return _COMMENT.sub("", text)


def render(skill: Skill, *, headings: Skill | None = None) -> str:
    names = {**_SECTIONS, **_KIND_SECTIONS.get((headings or skill).kind, {})}
    generated = (headings or skill).generated
    data = frontmatter(skill)
    lines = ["---"]
    for key, value in data.items():
        if key == "metadata":
            lines.append("metadata:")
            lines.extend(f"  {_key(k)}: {_quote(v)}" for k, v in value.items())
        elif key == "name":  # plain unless YAML would read it as something else ("0", "true", "null")
            lines.append(f"name: {value}" if yaml.safe_load(value) == value else f"name: {_quote(value)}")
        else:
            lines.append(f"{key}: {_quote(_one_line(value))}")
    lines += ["---", ""]
    if skill.title:
        lines += [f"# {_one_line(skill.title)}", ""]
    if skill.procedure:
        lines.append(f"## {names['procedure']}")
        for number, item in enumerate(skill.procedure, 1):
            lines.append(f"{number}. {_one_line(item.text)}{_evidence(item.evidence)}")
            if item.command:
                lines.extend(_code(item.command, "   "))
        lines.append("")
    if skill.pitfalls:
        lines.append(f"## {names['pitfalls']}")
        for pitfall in skill.pitfalls:
            lines.append(f"- **Symptom:** {_one_line(pitfall.symptom)}{_evidence(pitfall.evidence)}")
            if pitfall.cause:
                lines.append(f"  **Cause:** {_one_line(pitfall.cause)}")
            lines.append(f"  **Fix:** {_one_line(pitfall.fix)}")
            if pitfall.command:
                lines.extend(_code(pitfall.command, "  "))
        lines.append("")
    if skill.verification:
        lines.append("## Verification")
        for item in skill.verification:
            lines.append(f"- {_one_line(item.text)}{_evidence(item.evidence)}")
            if item.command:
                lines.extend(_code(item.command, "  "))
        lines.append("")
    if skill.notes.strip():
        if generated and not skill.notes.startswith("## "):  # notes that open with their own heading need none
            lines.append("## Notes")
        lines += [skill.notes.strip("\n"), ""]
    if skill.sources:
        lines.append("## Sources")
        for source in skill.sources:
            task = f": {_one_line(source.task)}" if source.task else ""
            lines.append(f"- `{source.trajectory}` {source.agent}, {source.outcome}{task}")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


# -- parse --------------------------------------------------------------------------------
def split_frontmatter(text: str, path: str | None = None) -> tuple[dict[str, Any], str]:
    match = _FRONTMATTER.match(text)
    if not match:
        raise SkillFileError("SKILL.md must start with YAML frontmatter between '---' lines", path=path,
                             hint="add 'name' and 'description' in a '---' block at the top")
    try:
        data = yaml.load(match.group(1), Loader=_LOADER) or {}
    except yaml.YAMLError as exc:
        raise SkillFileError(f"invalid YAML in the frontmatter: {exc}", path=path) from exc
    if not isinstance(data, dict):
        raise SkillFileError("the frontmatter must be a YAML mapping", path=path)
    return data, text[match.end():]


def parse(text: str, path: str | None = None) -> Skill:
    """Read SKILL.md text. Skills not written by skillmill keep their body in ``notes``."""
    data, body = split_frontmatter(text, path)
    raw_meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    meta = {str(k): "" if v is None else str(v) for k, v in raw_meta.items()}
    generated = meta.get("generator") == GENERATOR
    fields: dict[str, Any] = {
        "name": "" if data.get("name") is None else str(data["name"]),
        "description": _one_line(str(data.get("description") or "")),
        "license": _opt(data.get("license")),
        "compatibility": _opt(data.get("compatibility")),
        "allowed_tools": _opt(data.get("allowed-tools")),
        "generated": generated,
    }
    if generated:
        fields.update(
            status=meta.get("status", "candidate"), kind=meta.get("kind", "procedure"),
            version=_int(meta.get("version"), 1), confidence=_float(meta.get("confidence"), 0.5),
            outcome=meta.get("outcome", "unknown"), repo=meta.get("repo") or None,
            extra_metadata={k: v for k, v in meta.items() if k not in OWNED_METADATA},
        )
        fields.update(_parse_body(body))
        ids = [s for s in meta.get("sources", "").split(",") if s]
        known = {s.trajectory for s in fields.get("sources", [])}
        fields.setdefault("sources", [])
        fields["sources"] += [SourceRef(trajectory=i) for i in ids if i not in known]
    else:
        # Skills written elsewhere are indexed as they are; an over-long description is cut, not refused.
        if len(fields["description"]) > MAX_DESCRIPTION:
            fields["description"] = fields["description"][: MAX_DESCRIPTION - 3].rstrip() + "..."
        fields.update(status="approved", kind="reference", extra_metadata=meta,
                      title=_first_heading(body), notes=body.strip("\n"))
    try:
        return Skill(**fields)
    except ValueError as exc:
        raise SkillFileError(f"not a valid skill: {validation_summary(exc)}", path=path,
                             hint="names are lowercase letters, digits and single hyphens (<= 64 chars); "
                                  "descriptions are 1-1024 characters") from exc


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _float(value: str | None, default: float) -> float:
    try:
        return min(1.0, max(0.0, float(value))) if value is not None else default
    except ValueError:
        return default


def _first_heading(body: str) -> str:
    match = re.search(r"^#\s+(.+)$", body, re.M)
    return match.group(1).strip() if match else ""


def _take_evidence(line: str) -> tuple[str, list[Evidence]]:
    match = _EVIDENCE.search(line)
    if not match:
        return line.rstrip(), []
    return line[: match.start()].rstrip(), [_ref(ref) for ref in match.group(1).split()]


def provenance(text: str) -> list[Evidence]:
    """What the provenance comments in free Markdown (a skill's notes) cite, in order."""
    return [_ref(ref) for found in PROVENANCE.finditer(text) for ref in found.group(1).split()]


def _ref(ref: str) -> Evidence:
    """``<trajectory>:<step>,<step>``; a step number no trajectory can have (past 18 digits, where
    ``int`` of a hand-edited 5,000-digit one would raise) names no step."""
    trajectory, _, steps = ref.partition(":")
    return Evidence(trajectory=trajectory, steps=[int(s) for s in steps.split(",") if s and len(s) <= 18])


def _parse_body(body: str) -> dict[str, Any]:
    lines = body.split("\n")
    out: dict[str, Any] = {"title": "", "procedure": [], "pitfalls": [], "verification": [], "sources": []}
    notes: list[str] = []
    section = None
    i = 0
    while i < len(lines):
        line = lines[i]
        heading = re.match(r"^(#{1,2})\s+(.*)$", line)
        if heading and heading.group(1) == "#" and not out["title"] and section is None:
            out["title"] = heading.group(2).strip()
            i += 1
            continue
        if heading and heading.group(1) == "##":
            name = heading.group(2).strip()
            section = _HEADING_FIELD.get(name)
            if section is None:
                notes.append(line)
                section = "notes"
            i += 1
            continue
        if section in ("procedure", "verification"):
            marker = re.match(r"^(?:\d+\.|-)\s+(.*)$", line)
            if marker:
                text, evidence = _take_evidence(marker.group(1))
                command, i = _read_code(lines, i + 1)
                out[section].append(Item(text=text, command=command, evidence=evidence))
                continue
        elif section == "pitfalls":
            marker = re.match(r"^-\s+\*\*Symptom:\*\*\s+(.*)$", line)
            if marker:
                i = _read_pitfall(lines, i, marker.group(1), out["pitfalls"])
                continue
        elif section == "sources":
            marker = re.match(r"^-\s+`([\w-]+)`\s+([^,]*),\s+(\w+)(?::\s+(.*))?$", line)
            if marker:
                out["sources"].append(SourceRef(trajectory=marker.group(1), agent=marker.group(2).strip(),
                                                outcome=marker.group(3), task=(marker.group(4) or "").strip()))
                i += 1
                continue
        elif section == "notes" or (section is None and line.strip()):
            notes.append(line)
            section = section or "notes"
        i += 1
    out["notes"] = "\n".join(notes).strip("\n")
    return out


def _read_code(lines: list[str], i: int) -> tuple[str | None, int]:
    """A fenced block indented under an item, if one follows."""
    if i >= len(lines):
        return None, i
    opening = re.match(r"^(\s*)(`{3,}|~{3,})bash\s*$", lines[i])
    if not opening:
        return None, i
    indent, fence = opening.group(1), opening.group(2)
    body: list[str] = []
    i += 1
    while i < len(lines) and lines[i].strip() != fence:
        body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
        i += 1
    return "\n".join(body), i + 1


def _read_pitfall(lines: list[str], i: int, first: str, into: list[Pitfall]) -> int:
    symptom, evidence = _take_evidence(first)
    cause = fix = None
    i += 1
    while i < len(lines):
        cause_match = re.match(r"^\s+\*\*Cause:\*\*\s+(.*)$", lines[i])
        fix_match = re.match(r"^\s+\*\*Fix:\*\*\s+(.*)$", lines[i])
        if cause_match:
            cause = cause_match.group(1).strip()
        elif fix_match:
            fix = fix_match.group(1).strip()
        else:
            break
        i += 1
    command, i = _read_code(lines, i)
    into.append(Pitfall(symptom=symptom, cause=cause, fix=fix or "", command=command, evidence=evidence))
    return i
