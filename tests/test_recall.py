"""The recall index: built from skill files, published atomically, approved-only by default."""

from __future__ import annotations

from pathlib import Path

from pipeline.library import markdown
from pipeline.recall import RecallIndex, recall
from pipeline.recall.index import IndexedSkill, keywords, publish


def index_corpus(skills_corpus: Path, target: Path, limit: int | None = None) -> int:
    entries = []
    for file in sorted(skills_corpus.glob("*/*/SKILL.md"))[:limit]:
        entries.append(IndexedSkill(markdown.parse(file.read_text(encoding="utf-8")), file.parent))
    return publish(entries, target)


def test_recall_finds_the_matching_public_skill(skills_corpus: Path, tmp_path: Path) -> None:
    target = tmp_path / "recall.duckdb"
    assert index_corpus(skills_corpus, target) > 300
    hits = recall("fix E501 line too long reported by ruff", path=target)
    assert hits and hits[0].name == "ruff-recursive-fix"
    assert all(h.status == "approved" for h in hits)
    assert recall("qwxzv plkjh", path=target) == []


def test_candidates_only_with_include_candidates(tmp_path: Path) -> None:
    from tests.test_skill_file import sample_skills

    skills = sample_skills()
    target = tmp_path / "recall.duckdb"
    publish([IndexedSkill(s, tmp_path / s.name) for s in skills], target)
    query = "django sitemaps ValueError"
    assert recall(query, path=target) == []
    hits = recall(query, path=target, include_candidates=True)
    assert hits and hits[0].status == "candidate" and "sitemaps" in hits[0].name


def test_republishing_never_disturbs_an_open_reader(skills_corpus: Path, tmp_path: Path) -> None:
    target = tmp_path / "recall.duckdb"
    index_corpus(skills_corpus, target, limit=50)
    with RecallIndex(target) as reader:
        before = reader.count()
        index_corpus(skills_corpus, target)  # a run publishes a new index meanwhile
        assert reader.count() == before  # the open reader keeps its snapshot
    with RecallIndex(target) as fresh:
        assert fresh.count() > before


def test_keywords_keep_code_tokens() -> None:
    words = keywords("Fix E501 in snake_case_name and ValueError, see py311").split()
    assert {"e501", "snake_case_name", "snake", "case", "valueerror", "value", "error", "py311"} <= set(words)
