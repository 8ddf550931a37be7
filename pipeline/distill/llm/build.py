"""A grounded draft becomes the same ``Skill`` the zero-LLM distiller writes."""

from __future__ import annotations

import re

from pipeline.distill.abstraction import Abstractor
from pipeline.distill.llm.grounding import Grounded
from pipeline.distill.naming import clamp_name, describe_task, skill_name, slug, source_ref, task_title
from pipeline.library.model import MAX_DESCRIPTION, Evidence, Item, Pitfall, Skill
from pipeline.trajectory import Trajectory

_CONFIDENCE = {("resolved", "label"): 0.8, ("resolved", "heuristic"): 0.6, ("unknown", "heuristic"): 0.45,
               ("unknown", "none"): 0.4, ("failed", "label"): 0.35, ("failed", "heuristic"): 0.35}


def to_skill(grounded: Grounded, trajectory: Trajectory, model: str, removed: int = 0) -> Skill:
    d = grounded.draft
    t = trajectory
    abstract = Abstractor(t.cwd)

    def ev(steps: list[int]) -> list[Evidence]:
        return [Evidence(trajectory=t.id, steps=sorted(set(steps)))] if steps else []

    def text(value: str | None) -> str:
        return abstract(" ".join(_printable(value or "").split()))

    def command(value: str | None) -> str | None:
        value = _printable(value or "").strip()
        return abstract(value) if value else None

    procedure = [Item(text=_sentence(text(s.text) or "Run the command below.", s.files, abstract),
                      command=command(s.command), evidence=ev(e))
                 for s, e in zip(d.procedure, grounded.procedure, strict=True)]
    verification = [Item(text=text(s.text) or "Run the check below; it must pass.", command=command(s.command),
                         evidence=ev(e))
                    for s, e in zip(d.verification, grounded.verification, strict=True)]
    pitfalls = []
    for p, e in zip(d.pitfalls, grounded.pitfalls, strict=True):
        symptom = text(p.symptom)
        if p.error and _norm(p.error) not in _norm(symptom):
            symptom = f"{symptom.rstrip('.:')}: `{text(p.error)}`"
        pitfalls.append(Pitfall(symptom=symptom or "An error", cause=text(p.cause) or None,
                                fix=text(p.fix) or "See the command below.",
                                command=command(p.command), evidence=ev(e)))
    notes = ""
    if d.did_not_work:
        lines = ["Approaches that did not work:"]
        for a, e in zip(d.did_not_work, grounded.did_not_work, strict=True):
            where = f" (steps {', '.join(map(str, e))})" if e else ""
            lines.append(f"- {text(a.approach)} — {text(a.why)}{where}")
        notes = "\n".join(lines)
    kind = "pitfall" if d.kind == "pitfall" or not (procedure or verification) else "procedure"
    confidence = _CONFIDENCE.get((t.outcome.status, t.outcome.source), 0.4)
    confidence += 0.1 if verification and t.outcome.status != "failed" else 0.0
    confidence -= min(0.2, 0.05 * removed)
    name = clamp_name(slug(d.name, max_words=8)) or skill_name(t, prefix="pitfalls" if kind == "pitfall" else None)
    return Skill(
        name=name,
        title=text(d.title) or task_title(t),
        description=_description(text(d.when_to_use) or describe_task(t), t.repo),
        kind=kind,
        confidence=max(0.05, min(confidence, 0.95)),
        outcome=t.outcome.status,
        repo=t.repo,
        sources=[source_ref(t)],
        procedure=procedure,
        pitfalls=pitfalls,
        verification=verification,
        notes=notes,
        extra_metadata={"distiller": "llm", "model": model},
    )


def _sentence(text: str, files: list[str], abstract: Abstractor) -> str:
    """A step names its files when its text does not already."""
    missing = [abstract.path(f) for f in files if abstract.path(f) not in text and f not in text]
    if not missing:
        return text
    return f"{text.rstrip('.')} ({', '.join(f'`{f}`' for f in missing[:4])})."


def _description(when: str, repo: str | None) -> str:
    text = when if re.match(r"(?i)^use when\b", when) else f"Use when {when[:1].lower()}{when[1:]}"
    if repo and repo not in text:
        text = f"{text.rstrip('.')} (in {repo})."
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 3] + "..."


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _printable(text: str) -> str:
    """Without terminal escapes and control characters: YAML frontmatter cannot hold them."""
    return _CONTROL.sub("", _ANSI.sub("", text))


def _norm(text: str) -> str:
    return " ".join(text.split())
