"""An independent audit of a skill library: per rule of issue 13, the skills that break it.

It shares no code with the distiller (``pipeline/distill``): it reads the SKILL.md files itself
(``skills.py``), reads what happened in the cited sessions itself (``sessions.py``, from the
trajectories the ingest stage builds), and judges with its own rules (``rules.py``) and the
lessons file's semantics (``lessons.py``)::

    from benchmarks.audit import audit, load_sessions
    sessions = load_sessions([Path("../shared/trajectories")])
    report = audit(Path("library"), sessions)
    report.offenders("protocol")  # {skill name: [Finding, ...]}

It uses only the ingest API the baseline (fc61df2) has too -- ``ingest_file``, ``iter_files`` and
the ``Trajectory``/``Step`` fields of then (no ``Step.protocol_error``) -- so that
``audit_run.py`` can audit each library with the ``pipeline`` that wrote it, whose ingest
produced the trajectory ids the library cites.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.audit import lessons as lessons_mod
from benchmarks.audit.rules import RULES, Context, Finding, Rule
from benchmarks.audit.sessions import Session
from benchmarks.audit.skills import AuditedSkill, read_library, strip_provenance

__all__ = ["RULES", "Finding", "Report", "Rule", "audit", "load_sessions", "manual_body", "served_text", "summary"]


def load_sessions(paths: Iterable[Path]) -> dict[str, Session]:
    """Every trajectory in these files or folders, by id (read by the ingest stage, not the distiller)."""
    from pipeline.ingest import ingest_file, iter_files

    sessions: dict[str, Session] = {}
    for file in iter_files(list(paths)):
        _, trajectories = ingest_file(file)
        for trajectory in trajectories:
            sessions[trajectory.id] = Session(trajectory)
    return sessions


@dataclass
class Report:
    library: Path
    skills: list[AuditedSkill]
    findings: list[Finding]
    lessons: list[lessons_mod.Verdict] = field(default_factory=list)
    missing_sources: set[str] = field(default_factory=set)  # cited ids not in the corpus

    def offenders(self, rule: str) -> dict[str, list[Finding]]:
        found: dict[str, list[Finding]] = {}
        for finding in self.findings:
            if finding.rule == rule:
                found.setdefault(finding.skill, []).append(finding)
        return found

    def count(self, rule: str) -> int:
        """Skills that break the rule (a skill with three offending lines counts once)."""
        return len(self.offenders(rule))

    @property
    def candidates(self) -> list[AuditedSkill]:
        return [s for s in self.skills if s.status == "candidate"]

    @property
    def manuals(self) -> list[AuditedSkill]:
        return [s for s in self.skills if s.kind == "repo"]

    def lessons_found(self) -> int:
        return sum(v.found for v in self.lessons)


def audit(library: Path, sessions: dict[str, Session], lessons: Path | None = None,
          rules: list[Rule] | None = None) -> Report:
    skills = read_library(library)
    ctx = Context(sessions=sessions, skills=skills)
    findings = [f for skill in skills for rule in rules or RULES for f in rule.detect(skill, ctx)]
    report = Report(library, skills, findings,
                    missing_sources={i for s in skills for i in s.sources if i not in sessions})
    if lessons is not None:
        report.lessons = lessons_mod.check_all(lessons_mod.load(lessons), skills)
    return report


def manual_body(skill: AuditedSkill) -> str:
    """A manual's body as an agent pays for it: provenance comments and the Sources block left out."""
    body = skill.path.read_text(encoding="utf-8", errors="replace")
    body = re.sub(r"\A---.*?\n---[ \t]*\n", "", body, count=1, flags=re.S)
    body = re.sub(r"^## Sources\n.*?(?=^## |\Z)", "", body, flags=re.S | re.M)
    return strip_provenance(body).strip()


_METADATA = re.compile(r"^metadata:[^\n]*\n(?:[ \t]+[^\n]*\n|[ \t]*\n)*", re.M)


def served_text(skill: AuditedSkill) -> str:
    """The skill as an agent is given it, by the auditor's own stripping: frontmatter without its
    ``metadata`` block, body without provenance comments and the Sources block.

    For a distiller without ``pipeline.library.markdown.served`` (the baseline); ``audit_run.py``
    uses that function where the version has it.
    """
    raw = skill.path.read_text(encoding="utf-8", errors="replace")
    match = re.match(r"\A---[ \t]*\n(.*?\n)---[ \t]*\n", raw, flags=re.S)
    head = f"---\n{_METADATA.sub('', match.group(1))}---\n\n" if match else ""
    return head + manual_body(skill) + "\n"


def summary(report: Report, served: Callable[[AuditedSkill], str] = served_text) -> dict:
    """A report as JSON-able data, per skill: what ``benchmarks/skill_quality.py`` tabulates.

    Every skill with its status, kind, sources and findings; a manual (kind ``repo``) also with
    its body as ``manual_body`` gives it and its text as ``served`` gives it; the lessons' verdicts
    and the cited ids not among the sessions.
    """
    skills = []
    for skill in report.skills:
        entry: dict = {"name": skill.name, "status": skill.status, "kind": skill.kind, "sources": skill.sources,
                       "findings": [{"rule": f.rule, "line": f.line, "reason": f.reason}
                                    for f in report.findings if f.skill == skill.name]}
        if skill.kind == "repo":
            entry.update(body=manual_body(skill), served=served(skill))
        skills.append(entry)
    return {
        "library": str(report.library),
        "skills": skills,
        "lessons": [{"id": v.lesson.id, "found": v.found, "why": v.why} for v in report.lessons],
        "missing_sources": sorted(report.missing_sources),
    }
