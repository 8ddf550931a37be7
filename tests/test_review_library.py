"""The library side of review: kept versions, the audit log, rejection memory, proposed changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline import stages
from pipeline.distill import consolidate
from pipeline.distill import tables as distill_tables
from pipeline.index.state import StateDB
from pipeline.library import Library, markdown
from pipeline.library.audit import sha256_file
from pipeline.library.memory import material_news
from pipeline.summary import RunSummary
from tests.review_support import DJANGO, build, django_inputs
from tests.test_skill_file import sample_skills


def test_every_written_version_is_kept_and_a_number_names_one_content(tmp_path: Path) -> None:
    library = Library(tmp_path)
    skill = sample_skills()[0]
    library.save(skill)
    library.save(skill.model_copy(update={"confidence": 0.11}))  # same version number, other content
    assert library.history.versions(skill.name) == [1, 2]
    assert library.get(skill.name).skill.version == 2
    assert markdown.parse(library.history.text(skill.name, 1)) == skill
    # a status change is a decision, not new content: same version, no new snapshot
    library.save(library.get(skill.name).skill.model_copy(update={"status": "approved"}))
    assert library.history.versions(skill.name) == [1, 2]
    assert library.get(skill.name).skill.version == 2


def test_the_audit_log_is_a_hash_chain_that_shows_tampering(tmp_path: Path) -> None:
    library = Library(tmp_path)
    for n in range(3):
        library.audit.append(who="alice", action="approve", skill=f"s{n}", version=1, status="approved")
    assert [e.seq for e in library.audit.entries()] == [1, 2, 3]
    assert library.audit.verify() == []
    lines = library.audit.path.read_text().splitlines()
    edited = json.loads(lines[1])
    edited["who"] = "mallory"
    library.audit.path.write_text("\n".join([lines[0], json.dumps(edited), lines[2]]) + "\n")
    assert any("line 3" in p for p in library.audit.verify())
    library.audit.path.write_text("\n".join([lines[0], lines[2]]) + "\n")  # a line removed
    assert library.audit.verify()


def test_material_news_needs_half_as_much_evidence_again_or_a_resolved_outcome(tmp_path: Path) -> None:
    build([django_inputs(tmp_path, *DJANGO[:2])], tmp_path / "lib")
    two = Library(tmp_path / "lib").get("working-in-django").skill
    assert len(two.sources) == 2
    assert material_news(two, two) == []
    three = two.model_copy(update={"sources": [*two.sources, two.sources[0].model_copy(update={"trajectory": "f" * 16})]})
    assert material_news(two, three) and "1 new trajectory" in material_news(two, three)[0]
    four = three.model_copy(update={"sources": [*three.sources, two.sources[0].model_copy(update={"trajectory": "e" * 16})]})
    assert material_news(three, four) == []  # 1 new beside 3: not enough
    failed = two.model_copy(update={"outcome": "failed"})
    assert material_news(failed, two) == ["outcome now resolved (was failed)"]


def test_a_rejected_draft_is_not_written_again_for_the_same_evidence(tmp_path: Path) -> None:
    build([django_inputs(tmp_path, *DJANGO)], tmp_path / "lib")
    library = Library(tmp_path / "lib")
    stored = library.get("working-in-django")
    library.save(stored.skill.model_copy(update={"status": "rejected",
                                                 "extra_metadata": {"reviewed": "rejected by bob: no"}}))
    with StateDB() as state:
        draft = consolidate("django/django", distill_tables.facts(state, "django/django"))
    assert draft is not None and draft.status == "candidate"
    assert stages.save_skill(library, draft) == ("working-in-django", "held")
    renamed = draft.model_copy(update={"name": "django-commands"})  # same evidence, another name
    assert stages.save_skill(library, renamed) == ("working-in-django", "held")
    summary = RunSummary()
    stages.WriteOutcome(results={"working-in-django": "held"}).count(summary)
    assert (summary.held, summary.unchanged, summary.skills.unchanged) == (["working-in-django"], [], 0)
    assert library.get("django-commands") is None
    assert library.get("working-in-django").skill.status == "rejected"


def test_proposed_changes_wait_keep_history_and_remember_rejection(tmp_path: Path) -> None:
    build([django_inputs(tmp_path, *DJANGO[:2])], tmp_path / "lib")
    library = Library(tmp_path / "lib")
    approved = library.get("working-in-django").skill.model_copy(update={"status": "approved"})
    library.save(approved)
    approved_file = library.folder("working-in-django", "approved") / "SKILL.md"
    before = sha256_file(approved_file)
    build([django_inputs(tmp_path, *DJANGO)], tmp_path / "lib")  # a later run: the approved file is untouched
    assert sha256_file(approved_file) == before
    with StateDB() as state:
        update = consolidate("django/django", distill_tables.facts(state, "django/django"))
    path = library.propose(update)
    assert path == library.root / "_proposed" / "working-in-django"
    proposal = library.proposal("working-in-django").skill
    assert proposal.version == approved.version + 1 and proposal.status == "candidate"
    assert sha256_file(approved_file) == before
    assert library.history.versions("working-in-django") == [1, 2]
    # rejected: kept in the memory, the same change is not proposed again
    library.reject_proposal(library.proposal("working-in-django"), proposal)
    assert library.proposal("working-in-django") is None
    assert library.propose(update) is None


def test_the_library_lock_is_reentrant_and_exclusive_across_threads(tmp_path: Path) -> None:
    import threading

    library = Library(tmp_path)
    order: list[str] = []
    def work() -> None:
        with library.lock():
            order.append("worker")

    with library.lock(), library.lock():  # re-entrant in one thread
        worker = threading.Thread(target=work)
        worker.start()
        worker.join(0.2)
        order.append("main")
    worker.join(5)
    assert order == ["main", "worker"]


@pytest.mark.parametrize("status", ["approved", "deprecated"])
def test_runs_never_touch_decided_skills(tmp_path: Path, status: str) -> None:
    build([django_inputs(tmp_path, *DJANGO[:2])], tmp_path / "lib")
    library = Library(tmp_path / "lib")
    name = "working-in-django"  # the manual of two sessions; the next run has a third
    library.save(library.get(name).skill.model_copy(update={"status": status}))
    file = library.get(name).file
    before = sha256_file(file)
    with StateDB() as state:
        state.con.execute("DELETE FROM distillations")  # force a full re-distillation
    summary = build([django_inputs(tmp_path, *DJANGO)], tmp_path / "lib")
    assert name in summary.unchanged, "the run drafted it again, from three sessions, and left it alone"
    assert library.get(name).skill.status == status and sha256_file(file) == before
    assert len(library.get(name).skill.sources) == 2


def test_a_model_merge_into_an_approved_skill_whose_change_was_rejected_is_held(tmp_path: Path) -> None:
    from pipeline.distill.llm.merge import Consolidator

    build([django_inputs(tmp_path, *DJANGO[:2])], tmp_path / "lib")
    library = Library(tmp_path / "lib")
    approved = library.get("working-in-django").skill.model_copy(update={"status": "approved"})
    library.save(approved)
    build([django_inputs(tmp_path, *DJANGO)], tmp_path / "lib")
    with StateDB() as state:
        update = consolidate("django/django", distill_tables.facts(state, "django/django"))
    library.propose(update)
    library.reject_proposal(library.proposal("working-in-django"), library.proposal("working-in-django").skill)

    consolidator = Consolidator(library, client=None, llm_state=None)  # writing needs no model
    assert consolidator._write(approved, update) == "held"
    assert library.proposal("working-in-django") is None
