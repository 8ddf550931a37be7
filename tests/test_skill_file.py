"""Skill <-> SKILL.md: round trip, Agent Skills validity, atomic writes, external skills."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skills_ref.validator import validate

from pipeline.distill import RepoFact, consolidate, distill
from pipeline.distill.lessons import generalize
from pipeline.ingest import ingest_file, iter_files
from pipeline.library import Library, Skill, markdown
from pipeline.library.model import Evidence, Item, Pitfall, SourceRef
from tests.conftest import SAMPLES


def sample_skills() -> list[Skill]:
    """What a run over ``samples/`` drafts, by name: each session's facts consolidated into one
    ``working-in-<repo>`` manual per repository (pooled by the name's last part, as a run pools
    them), and any lesson that recurs across tasks. No session gives a skill of its own."""
    facts: dict[str, list[RepoFact]] = defaultdict(list)
    for path in iter_files([SAMPLES]):
        for trajectory in ingest_file(path)[1]:
            for fact in distill(trajectory).facts:
                facts[fact.repo.rsplit("/", 1)[-1].lower()].append(fact)
    drafts = [consolidate(max({f.repo for f in found}, key=lambda r: (r.count("/"), r)), found)
              for _, found in sorted(facts.items())]
    drafts += generalize(f for found in facts.values() for f in found if f.kind in ("pair", "fix"))
    return sorted((s for s in drafts if s is not None), key=lambda s: s.name)


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
