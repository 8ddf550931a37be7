"""Recall: indexed folders, the published index, ranking judgment, the budget, and the CLI contract."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.library import Library
from pipeline.recall import RecallIndex, pack, recall
from pipeline.recall.index import IndexedSkill, publish
from pipeline.recall.text import keywords

RUFF = "github-awesome-copilot/ruff-recursive-fix"


def cli(*args: str, input: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)
    return result.exit_code, result.output


def copy_skills(corpus: Path, dest: Path, names: list[str]) -> Path:
    for name in names:
        shutil.copytree(corpus / name, dest / name)
    return dest


@pytest.fixture(scope="module")
def corpus_index(skills_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared corpus indexed once for the module (read-only tests use it)."""
    target = tmp_path_factory.mktemp("index") / "recall.duckdb"
    report = publish([], target, add_folders=[skills_corpus])
    assert report.skills == len(list(skills_corpus.glob("*/*/SKILL.md")))
    return target


def test_index_command_indexes_a_folder_and_recall_finds_its_skill(skills_corpus: Path, tmp_path: Path) -> None:
    folder = copy_skills(skills_corpus, tmp_path / "team", [RUFF, "wshobson-agents/python-code-style",
                                                            "anthropics-skills/internal-comms"])
    code, out = cli("index", "--skills", str(folder), "--json")
    assert code == 0, out
    report = json.loads(out)
    assert report["skills"] == 3 and report["added"] == 3 and report["folders"] == {str(folder): 3}
    code, out = cli("recall", "--json", "fix E501 line too long reported by ruff")
    result = json.loads(out)
    assert result["results"][0]["name"] == "ruff-recursive-fix"
    assert result["results"][0]["path"] == str(folder / RUFF)
    assert set(result["results"][0]) == {"name", "path", "score", "description", "status"}
    assert all(r["status"] == "approved" for r in result["results"])  # indexed folders count as approved


def test_nothing_fits_returns_nothing(corpus_index: Path) -> None:
    assert recall("qwxzv plkjh", path=corpus_index) == []
    assert recall("Cassandra read latency went up after deleting rows; tombstones?", path=corpus_index) == []
    assert recall("", path=corpus_index) == []


def test_the_code_aware_channel_matches_identifiers(corpus_index: Path) -> None:
    hits = recall("jest.mock('axios') isn't taking effect in UserService tests", path=corpus_index)
    assert "javascript-typescript-jest" in [h.name for h in hits[:3]]


def test_keywords_keep_code_tokens() -> None:
    words = keywords("Fix E501 in snake_case_name and ValueError, see py311 and pyproject.toml").split()
    assert {"e501", "snake_case_name", "snake", "case", "valueerror", "value", "error", "py311",
            "pyproject_toml"} <= set(words)


def test_candidates_only_with_include_candidates(tmp_path: Path) -> None:
    from tests.test_skill_file import sample_skills

    target = tmp_path / "recall.duckdb"
    publish([IndexedSkill(s, tmp_path / s.name) for s in sample_skills()], target)
    query = "django tests"  # the samples' manuals are candidates: django's says how its tests run
    assert recall(query, path=target) == []
    hits = recall(query, path=target, include_candidates=True)
    assert hits and hits[0].status == "candidate" and hits[0].name == "working-in-django"


def test_same_name_in_two_folders_is_indexed_twice_and_recalled_once(skills_corpus: Path, tmp_path: Path) -> None:
    a = copy_skills(skills_corpus, tmp_path / "a", [RUFF])
    b = copy_skills(skills_corpus, tmp_path / "b", [RUFF])  # the same skill, vendored twice
    other = tmp_path / "c" / "tools" / "ruff-recursive-fix"
    other.mkdir(parents=True)
    other.joinpath("SKILL.md").write_text("---\nname: ruff-recursive-fix\ndescription: \"Our own take: run ruff "
                                          "in CI with E501 ignored for generated files.\"\n---\n\n# Ruff in CI\n")
    target = tmp_path / "recall.duckdb"
    report = publish([], target, add_folders=[a, b, tmp_path / "c"])
    assert report.skills == 3
    with RecallIndex(target) as index:
        assert len(index.get("ruff-recursive-fix")) == 3  # keyed by path
        hits = index.search("ruff E501 line too long autofix", limit=5)
    # One skill once: copies, and another folder's skill of the same name (an agent knows skills by
    # name, so the two would shadow each other), are one hit.
    assert [h.name for h in hits] == ["ruff-recursive-fix"]


def test_reindexing_is_incremental_and_remembers_folders(skills_corpus: Path, tmp_path: Path) -> None:
    folder = copy_skills(skills_corpus, tmp_path / "team", [RUFF, "wshobson-agents/python-code-style",
                                                            "anthropics-skills/internal-comms"])
    code, _ = cli("index", "--skills", str(folder))
    assert code == 0
    style = folder / "wshobson-agents/python-code-style/SKILL.md"
    style.write_text(style.read_text() + "\nAlways run isort before black.\n")
    shutil.rmtree(folder / "anthropics-skills/internal-comms")
    copy_skills(skills_corpus, folder, ["getsentry-skills/create-branch"])
    code, out = cli("index", "--json")  # no --skills: the folder is remembered
    report = json.loads(out)
    assert (report["added"], report["updated"], report["unchanged"], report["removed"]) == (1, 1, 1, 1)
    assert recall("isort before black", path=None, min_score=0)[0].name == "python-code-style"
    code, out = cli("index", "--forget", str(folder), "--json")
    assert json.loads(out)["skills"] == 0


def test_republishing_the_same_text_copies_the_lexical_tables(skills_corpus: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.recall import feedback, lexical, serving

    folder = copy_skills(skills_corpus, tmp_path / "team", [RUFF, "wshobson-agents/python-code-style"])
    target = tmp_path / "recall.duckdb"
    publish([], target, add_folders=[folder])
    query = "fix E501 line too long reported by ruff"
    before = recall(query, path=target)
    built: list[int] = []
    build = lexical.build
    monkeypatch.setattr(lexical, "build", lambda con: (built.append(1), build(con)))
    # Only a prior moved (feedback): the text is the same, so the postings are copied, not computed.
    verdict = {"id": "e1", "skill": "ruff-recursive-fix", "path": str(folder / RUFF), "verdict": "wrong", "note": "",
               "source": "test", "created_at": datetime.now(UTC)}
    publish([], target, events=[feedback.normal(verdict)])
    assert built == []
    scores = {h.path: h.score for h in before}, {h.path: h.score for h in recall(query, path=target)}
    assert scores[0].keys() == scores[1].keys() and scores[1][str(folder / RUFF)] < scores[0][str(folder / RUFF)]
    style = folder / "wshobson-agents/python-code-style/SKILL.md"
    style.write_text(style.read_text() + "\nAlways run isort before black.\n")
    publish([], target)  # the text changed: computed again
    assert built == [1]
    assert recall("isort before black", path=target, min_score=0)[0].name == "python-code-style"
    with RecallIndex(target) as index:
        assert index.snapshot.meta["lexical"] == index.con.execute(
            "SELECT value FROM meta WHERE key = 'lexical'").fetchone()[0]  # both files from one publish
    assert serving.path_for(target).name == "recall.serve.sqlite"


def test_an_index_without_its_serving_snapshot_asks_for_a_rebuild(skills_corpus: Path, tmp_path: Path) -> None:
    from pipeline.errors import IndexError_
    from pipeline.recall import serving

    target = tmp_path / "recall.duckdb"
    publish([], target, add_folders=[copy_skills(skills_corpus, tmp_path / "team", [RUFF])])
    serving.path_for(target).unlink()  # as an index published by an older skillmill
    with pytest.raises(IndexError_, match="another version") as err:
        RecallIndex(target)
    assert "skillmill index" in (err.value.hint or "")
    publish([], target)
    assert recall("ruff E501", path=target)[0].name == "ruff-recursive-fix"


def test_a_run_republishing_keeps_indexed_folders(skills_corpus: Path, tmp_path: Path) -> None:
    from pipeline import stages
    from pipeline.index.state import StateDB
    from pipeline.summary import RunSummary

    folder = copy_skills(skills_corpus, tmp_path / "team", [RUFF])
    cli("index", "--skills", str(folder))
    with StateDB() as state:  # what the nightly flow's index stage does
        count = stages.index(state, Library(tmp_path / "lib"), RunSummary(run_id="t", library=str(tmp_path)))
        assert state.con.execute("SELECT path FROM recall_folders").fetchall() == [(str(folder),)]
    assert count == 1
    assert recall("ruff autofix", path=None)[0].path == str(folder / RUFF)


def test_budget_keeps_the_best_and_says_when_it_cut(corpus_index: Path) -> None:
    with RecallIndex(corpus_index) as index:
        hits = index.search("review the diff of this pull request against the ticket", limit=5, min_score=0)
    assert len(hits) == 5
    tiny = pack("q", hits, budget=10)
    assert len(tiny.hits) == 1 and tiny.truncated  # always at least one item when something fits
    roomy = pack("q", hits, budget=100_000)
    assert len(roomy.hits) == 5 and not roomy.truncated
    assert hits[0].path in roomy.bodies and f"### {hits[0].name}" in roomy.markdown()
    middle = pack("q", hits, budget=roomy.tokens - 1)
    assert middle.tokens <= roomy.tokens - 1 and len(middle.bodies) < len(roomy.bodies)


def test_recall_cli_budget_and_json_contract(skills_corpus: Path, tmp_path: Path) -> None:
    cli("index", "--skills", str(copy_skills(skills_corpus, tmp_path / "t", [
        "mattpocock-skills/code-review", "obra-superpowers/requesting-code-review", "dlt-hub-dlt/review-pr",
        "getsentry-skills/iterate-pr"])))
    query = "review this pull request diff against the issue"
    code, out = cli("recall", "--json", "--budget", "40", query)
    small = json.loads(out)
    assert code == 0 and len(small["results"]) == 1 and small["truncated"] is True
    code, out = cli("recall", "--json", query)
    assert json.loads(out)["truncated"] is False and len(json.loads(out)["results"]) >= 2
    code, out = cli("recall", query)
    assert out.startswith(f"## Skills for: {query}") and "SKILL.md" in out


def test_filters_leave_out_skills_bound_elsewhere(tmp_path: Path) -> None:
    from tests.test_skill_file import sample_skills

    target = tmp_path / "recall.duckdb"
    skills = [s.model_copy(update={"status": "approved"}) for s in sample_skills()]
    publish([IndexedSkill(s, tmp_path / s.name) for s in skills], target)
    query = "run the tests"  # every manual that says how its tests run: one per repository
    both = {h.name for h in recall(query, path=target, limit=10)}
    sympy, django = "working-in-sympy", "working-in-django"
    assert {sympy, django} <= both
    assert {h.name for h in recall(query, path=target, limit=10, repo="sympy/sympy")} == {sympy}
    in_django = {h.name for h in recall(query, path=target, limit=10, repo="django")}
    assert sympy not in in_django and django in in_django
    # Both manuals name a Python tool (runtests.py; "not `pytest`"): python-bound, left out for another language.
    assert {sympy, django} <= {h.name for h in recall(query, path=target, limit=10, language="python")}
    assert not {sympy, django} & {h.name for h in recall(query, path=target, limit=10, language="go")}


def test_batch_queries_print_one_line_per_query(corpus_index: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SKILLMILL_HOME", str(corpus_index.parent))
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "a", "query": "fix E501 line too long reported by ruff"}\n\n'
                       '{"id": 7, "query": "qwxzv plkjh"}\n')
    code, out = cli("recall", "--json", "--queries", str(queries))
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [line["id"] for line in lines] == ["a", 7]
    assert lines[0]["results"][0]["name"] == "ruff-recursive-fix" and set(lines[0]) == {"id", "results"}
    assert lines[1]["results"] == []
    code, _ = cli("recall", "--queries", str(queries))
    assert code == 2  # JSON lines only


def test_recall_without_an_index_says_what_to_do() -> None:
    code, out = cli("recall", "anything")
    assert code == 1


def test_the_reader_knows_the_writers_schema_version() -> None:
    from pipeline.recall import index, search

    assert search._schema_version() == index.SCHEMA_VERSION


def test_folders_survive_an_index_of_an_older_schema(skills_corpus: Path, tmp_path: Path) -> None:
    import duckdb

    folder = copy_skills(skills_corpus, tmp_path / "team", [RUFF])
    target = tmp_path / "recall.duckdb"
    publish([], target, add_folders=[folder])
    con = duckdb.connect(str(target))
    con.execute("UPDATE meta SET value = '1' WHERE key = 'schema'")  # as an older skillmill left it
    con.close()
    report = publish([], target)
    assert report.folders == {str(folder): 1} and report.added == 1  # re-read, not reused
