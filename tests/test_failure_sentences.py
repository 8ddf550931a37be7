"""Issue 15, "failure is a sentence": what review, feedback and index say when there is little or
something wrong, each through the real command.

An empty home lists 0 skills (exit 0); a hint's command works as written; a verdict on a skill
nobody has is refused; ``review log --verify`` ends with its verdict; no pydantic documentation
link reaches a user; ``index`` reports as removed only the skills it took out of the index.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from pydantic import ValidationError

from pipeline.cli import main
from tests.review_support import build, django_inputs

MANUAL = "working-in-django"  # what the django sitemaps session gives
PYDANTIC = "errors.pydantic.dev"


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    built = tmp_path / "skills"
    build([django_inputs(tmp_path, "django__django-16255")], built)
    return built


def skill_folder(root: Path, name: str, description: str = "Tidy the imports.") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n")
    return folder


# -- review list and review log on a fresh home -----------------------------------------------------
def test_review_list_on_a_fresh_home_is_0_skills_not_an_error(isolated_home: Path) -> None:
    for args in (["review", "list"], ["review"], ["review", "list", "--status", "all"]):
        result = invoke(*args)
        assert (result.exit_code, result.output) == (
            0, f"0 skills in {isolated_home / 'skills'} (no library there yet: `skillmill run PATH...` writes one)\n")
    result = invoke("review", "list", "--json")
    assert (result.exit_code, json.loads(result.output)) == (0, [])
    result = invoke("review", "log", "--verify")
    assert result.exit_code == 0 and result.output.splitlines()[-1] == "verified: 0 entries, chain intact"
    assert not isolated_home.exists(), "listing nothing creates nothing"


def test_a_library_named_on_the_command_line_must_exist(tmp_path: Path) -> None:
    result = invoke("review", "list", "--library", tmp_path / "typo")
    assert result.exit_code == 2 and f"no skill library at {tmp_path / 'typo'}" in result.output


# -- hints are commands that work -------------------------------------------------------------------
def commands_in(hint: str) -> list[list[str]]:
    return [cmd.split()[1:] for cmd in re.findall(r"`(skillmill [^`]+)`", hint)]


def test_the_not_found_hints_are_commands_that_work(library: Path) -> None:
    result = invoke("review", "show", "no-such-skill", "--library", library)
    assert result.exit_code == 1 and "no skill named 'no-such-skill'" in result.output
    hint = result.output.split("hint:", 1)[1]
    commands = commands_in(hint)
    assert commands == [["review", "list"], ["review", "list", "--status", "all"]], hint
    for command in commands:
        ran = invoke(*command, "--library", library)
        assert ran.exit_code == 0 and MANUAL in ran.output, (command, ran.output)
    result = invoke("review", "deprecate", "no-such-skill", "--reason", "old", "--by", "a", "--library", library)
    assert result.exit_code == 1
    for command in commands_in(result.output.split("hint:", 1)[1]):
        assert invoke(*command, "--library", library).exit_code == 0, command


def test_status_takes_several_values_separated_by_commas(library: Path) -> None:
    assert invoke("review", "approve", MANUAL, "--by", "alice", "--library", library).exit_code == 0
    for status in (["approved,rejected"], ["approved", "--status", "rejected"], ["rejected,approved,deprecated"]):
        result = invoke("review", "list", "--json", "--library", library, "--status", *status)
        assert result.exit_code == 0, result.output
        assert [i["name"] for i in json.loads(result.output)] == [MANUAL]
    result = invoke("review", "list", "--json", "--library", library, "--status", "rejected,deprecated")
    assert (result.exit_code, json.loads(result.output)) == (0, [])
    result = invoke("review", "list", "--library", library, "--status", "approved,bogus")
    assert result.exit_code == 2 and "'bogus' is not a status" in result.output


# -- review log --verify ---------------------------------------------------------------------------
def test_review_log_verify_ends_with_a_verdict(library: Path) -> None:
    assert invoke("review", "approve", MANUAL, "--by", "alice", "--library", library).exit_code == 0
    assert invoke("review", "deprecate", MANUAL, "--reason", "old", "--by", "bob", "--library", library).exit_code == 0
    result = invoke("review", "log", "--verify", "--library", library)
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "verified: 2 entries, chain intact"
    result = invoke("review", "log", "--verify", "--json", "--library", library)
    assert result.exit_code == 0 and len(json.loads(result.stdout)) == 2  # stdout stays JSON
    assert result.stderr.splitlines()[-1] == "verified: 2 entries, chain intact"

    audit = library / "_audit.jsonl"
    first, second = audit.read_text().splitlines()
    audit.write_text(first.replace('"alice"', '"mallory"') + "\n" + second + "\n")
    result = invoke("review", "log", "--verify", "--library", library)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1] == (f"FAILED: 1 problem in {audit}: line 2 (seq 2): the line before it was "
                                              "changed or removed")

    audit.write_text(first + "\nnot an entry\n" + second + "\n")
    result = invoke("review", "log", "--verify", "--library", library)
    assert result.exit_code == 1 and "internal error" not in result.output and PYDANTIC not in result.output
    assert result.stdout.splitlines()[-1].startswith(f"FAILED: 3 problems in {audit}: line 2 is not a valid audit "
                                                     "entry (and more above)")
    assert "mallory" not in result.stdout and "alice" in result.stdout  # the readable entries are still shown


# -- feedback on a skill nobody has ----------------------------------------------------------------
def test_feedback_on_an_unknown_skill_is_refused_with_where_to_find_names(library: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.recall import feedback

    result = invoke("feedback", "add", "no-such-skill", "helpful")
    assert result.exit_code == 2
    assert result.output.startswith("Error: no skill named 'no-such-skill' in the recall index or in ")
    hint = result.output.split("hint:", 1)[1]
    assert commands_in(hint) == [["recall", "TASK"], ["review", "list", "--status", "all"]]
    assert not feedback.journaled(), "nothing was kept"
    result = invoke("feedback", "add", MANUAL, "helpful")  # a candidate of the index: known
    assert (result.exit_code, result.output) == (0, f"Recorded helpful for {MANUAL}.\n")
    monkeypatch.setenv("SKILLMILL_LIBRARY", str(library))
    shutil.rmtree(library / "_candidates" / MANUAL)
    skill_folder(library / "_deprecated", "old-one")  # not in the index, but in the library
    assert invoke("feedback", "add", "old-one", "stale").exit_code == 0
    assert [e["skill"] for e in feedback.events()] == [MANUAL, "old-one"]


def test_feedback_on_a_fresh_home_is_refused_too(isolated_home: Path) -> None:
    result = invoke("feedback", "add", "anything", "wrong")
    assert result.exit_code == 2 and "no skill named 'anything'" in result.output
    assert not isolated_home.exists()


# -- no pydantic documentation links -------------------------------------------------------------
def test_an_invalid_skill_file_is_described_without_pydantic_links(tmp_path: Path) -> None:
    team = tmp_path / "team"
    skill_folder(team, "tidy")
    skill_folder(team, "Bad_Name")
    (skill_folder(team, "no-description") / "SKILL.md").write_text("---\nname: no-description\n---\n\n# x\n")
    result = invoke("index", "--skills", team)
    assert result.exit_code == 0 and PYDANTIC not in result.output
    assert (f"  ! {team / 'Bad_Name' / 'SKILL.md'}  not a valid skill: name: String should match pattern "
            "'^[a-z0-9]+(-[a-z0-9]+)*$' (got 'Bad_Name')") in result.output.splitlines()
    assert (f"  ! {team / 'no-description' / 'SKILL.md'}  not a valid skill: description: String should have at "
            "least 1 character (got '')") in result.output.splitlines()
    result = invoke("index", "--skills", team, "--json")
    assert PYDANTIC not in result.output


def test_an_internal_error_quoting_a_validation_error_has_no_link(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.library.model import Skill
    from pipeline.recall import service

    def bug(*args: object, **kwargs: object) -> None:
        Skill(name="Not A Name", description="")

    monkeypatch.setattr(service, "reindex", bug)
    result = invoke("index")
    assert result.exit_code == 1 and "internal error: ValidationError" in result.output
    assert PYDANTIC not in result.output and "For further information" not in result.output
    assert PYDANTIC in (Path(result.output.split("the traceback is in ")[1].split(";")[0])).read_text(), \
        "the link stays in the traceback file, for whoever debugs it"


def test_a_model_answer_that_did_not_validate_is_described_without_links() -> None:
    from pipeline.distill.llm.schema import Extraction
    from pipeline.llm.litellm_backend import _short

    with pytest.raises(ValidationError) as caught:
        Extraction.model_validate_json('{"procedure": 3}')
    assert PYDANTIC in str(caught.value)
    assert _short(caught.value) == ("(top level): give at least one draft or note, or set nothing_reusable to the "
                                    "reason there is none")


def test_a_parser_bug_reported_for_one_file_has_no_link(tmp_path: Path) -> None:
    from pipeline.ingest import ingest_file
    from pipeline.library.model import Skill

    class Buggy:  # a format plugin whose parser builds an invalid model
        name, incremental = "buggy", False

        def parse(self, path: Path, report: object) -> object:
            yield Skill(name="Not A Name", description="")

    session = tmp_path / "session.jsonl"
    session.write_text('{"type": "user"}\n')
    report, _ = ingest_file(session, fmt=Buggy())  # type: ignore[arg-type]
    reasons = " ".join(e.reason for e in report.errors)
    assert "ValidationError" in reasons and "name: String should match pattern" in reasons and PYDANTIC not in reasons


# -- index removals ---------------------------------------------------------------------------------
def test_index_reports_as_removed_only_what_left_the_index(library: Path, tmp_path: Path) -> None:
    team = tmp_path / "team"
    skill_folder(team, "tidy")
    skill_folder(team, "lint")
    first = json.loads(invoke("index", "--skills", team, "--library", library, "--json").output)
    assert (first["added"], first["removed"], first["removed_skills"]) == (2, 0, [])

    moved = tmp_path / "moved-library"  # the library moved: its skill is still in the index, at its new path
    shutil.copytree(library, moved)
    result = invoke("index", "--library", moved, "--json")
    report = json.loads(result.output)
    assert (report["skills"], report["removed"], report["removed_skills"]) == (3, 0, []), report

    # A candidate approved by a person moves to <library>/NAME/: not a removal.
    assert invoke("review", "approve", MANUAL, "--by", "alice", "--library", moved).exit_code == 0
    report = json.loads(invoke("index", "--library", moved, "--json").output)
    assert (report["removed"], report["removed_skills"]) == (0, [])

    shutil.rmtree(team / "lint")
    result = invoke("index", "--library", moved)
    assert result.exit_code == 0
    assert "  folder skills: 0 added, 0 updated, 1 unchanged; 1 removed from the index" in result.output
    assert f"  - {team / 'lint'}  (removed from the index)" in result.output.splitlines()

    result = invoke("index", "--library", tmp_path / "typo")  # would take every library skill out: refused
    assert result.exit_code == 2 and f"no skill library at {tmp_path / 'typo'}" in result.output
    report = json.loads(invoke("index", "--library", moved, "--json").output)
    assert (report["skills"], report["removed"], report["removed_skills"]) == (2, 0, [])
