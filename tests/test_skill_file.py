"""Skill <-> SKILL.md: round trip, Agent Skills validity, atomic writes, external skills."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skills_ref.validator import validate

from pipeline import stages
from pipeline.distill import RepoFact, consolidate, distill
from pipeline.distill.lessons import generalize
from pipeline.ingest import ingest_file
from pipeline.library import Library, Skill, markdown
from pipeline.library.model import Evidence, Item, Pitfall, SourceRef
from tests.conftest import SAMPLES


def sample_skills() -> list[Skill]:
    """The drafts a run over ``samples/`` writes, by name, in memory (no state database, not flagged).

    The zero-LLM distiller gives facts per session; a run files them by repository (``owner/x`` and
    a checkout folder ``x`` are one repository, labelled with the longer name, as
    ``distill.write.consolidate_repos`` does) and writes one ``working-in-<repo>`` manual each, plus a
    lesson only where one recurs across tasks. Today: the django, flask, matplotlib, sympy and
    aider (monochromatic...) manuals.
    """
    skills: list[Skill] = []
    facts: list[RepoFact] = []
    for path in stages.discover([SAMPLES]):
        for trajectory in ingest_file(path)[1]:
            result = distill(trajectory)
            skills.extend(result.skills)
            facts.extend(result.facts)
    by_repo: dict[str, list[RepoFact]] = defaultdict(list)
    labels: dict[str, str] = {}
    for fact in facts:
        name = fact.repo.rsplit("/", 1)[-1].lower()
        by_repo[name].append(fact)
        labels[name] = max(labels.get(name, fact.repo), fact.repo, key=lambda r: (r.count("/"), r))
    skills += [s for name, group in by_repo.items() if (s := consolidate(labels[name], group)) is not None]
    skills += generalize(f for f in facts if f.kind in ("pair", "fix"))
    return sorted(skills, key=lambda s: s.name)


def test_distilled_skills_round_trip_and_validate(tmp_path: Path) -> None:
    skills = sample_skills()
    assert len(skills) >= 3
    library = Library(tmp_path / "lib")
    for skill in skills:
        assert markdown.parse(markdown.render(skill)) == skill
        assert library.save(skill) == "created"
        stored = library.get(skill.name)
        assert stored is not None and stored.skill == skill
        assert validate(stored.path) == [], stored.path
        assert stored.path.parent.name == "_candidates", "new skills wait for review"


_line = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(str.strip)
_cmd = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
               min_size=1, max_size=60).filter(lambda s: s.strip() == s and "~~~~" not in s)
_evidence = st.lists(st.builds(Evidence, trajectory=st.from_regex(r"[0-9a-f]{16}", fullmatch=True),
                               steps=st.lists(st.integers(0, 500), max_size=4)), max_size=2)


@settings(max_examples=150, deadline=None)
@given(
    name=st.from_regex(r"[a-z0-9]{1,10}(-[a-z0-9]{1,10}){0,3}", fullmatch=True),
    description=_line, title=_line,
    procedure=st.lists(st.builds(Item, text=_line, command=st.none() | _cmd, evidence=_evidence), max_size=3),
    pitfalls=st.lists(st.builds(Pitfall, symptom=_line, cause=st.none() | _line, fix=_line,
                                command=st.none() | _cmd, evidence=_evidence), max_size=2),
    sources=st.lists(st.builds(SourceRef, trajectory=st.from_regex(r"[0-9a-f]{16}", fullmatch=True),
                               agent=st.from_regex(r"[a-z-]{1,12}", fullmatch=True),
                               outcome=st.sampled_from(["resolved", "failed", "unknown"]), task=_line), max_size=2),
    confidence=st.floats(0, 1),
)
def test_any_skill_round_trips(name, description, title, procedure, pitfalls, sources, confidence) -> None:
    skill = Skill(name=name, description=description, title=title, procedure=procedure, pitfalls=pitfalls,
                  sources=sources, confidence=confidence)
    assert markdown.parse(markdown.render(skill)) == skill


def test_writes_are_atomic_and_rewrites_of_the_same_content_are_skipped(tmp_path: Path) -> None:
    skill = sample_skills()[0]
    library = Library(tmp_path)
    assert library.save(skill) == "created"
    file = library.get(skill.name).file
    mtime = file.stat().st_mtime_ns
    assert library.save(skill) == "unchanged" and file.stat().st_mtime_ns == mtime
    assert library.save(skill.model_copy(update={"confidence": 0.11})) == "updated"
    leftovers = [p for p in tmp_path.rglob("*") if p.name.startswith(".")]
    assert leftovers == []


def test_approving_moves_the_folder_where_agents_look(tmp_path: Path) -> None:
    skill = sample_skills()[0]
    library = Library(tmp_path)
    library.save(skill)
    library.save(skill.model_copy(update={"status": "approved"}))
    assert (tmp_path / skill.name / "SKILL.md").is_file()
    assert not (tmp_path / "_candidates" / skill.name).exists()
    assert [s.skill.status for s in library] == ["approved"]


def test_real_public_skills_parse_as_approved_references(skills_corpus: Path) -> None:
    files = sorted(skills_corpus.glob("*/*/SKILL.md"))
    assert len(files) > 300
    for file in files:
        skill = markdown.parse(file.read_text(encoding="utf-8"), str(file))
        assert skill.status == "approved" and not skill.generated and skill.name


@pytest.mark.parametrize("text", ["no frontmatter", "---\nname: [unclosed\n---\n", "---\nname: Bad Name\ndescription: x\n---\n"])
def test_malformed_skill_files_raise_a_clear_error(text: str) -> None:
    from pipeline.errors import SkillFileError

    with pytest.raises(SkillFileError):
        markdown.parse(text)
