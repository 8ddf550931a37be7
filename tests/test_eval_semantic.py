"""``skillmill eval retrieval`` on the shared corpus, and the semantic channel's plugin plumbing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.recall import RecallIndex, evaluate, semantic

RUFF = "github-awesome-copilot/ruff-recursive-fix"


@pytest.mark.slow
def test_eval_retrieval_reports_both_systems_on_the_shared_corpus(skills_corpus: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["eval", "retrieval", "--skills", str(skills_corpus), "--queries",
                                       str(skills_corpus / "queries-dev.jsonl"), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = {r["system"]: r for r in map(json.loads, result.output.splitlines())}
    assert set(rows) == {"skillmill", "bm25s"}
    for row in rows.values():
        assert set(row["metrics"]) == set(evaluate.METRICS) and row["answerable"] + row["no_match"] == 40
        assert 0 < row["metrics"]["mrr@10"] <= 1
    assert rows["bm25s"]["metrics"]["empty_on_no_match"] == 0  # plain BM25 always answers something
    assert not (tmp_path / "home").exists(), "evaluation runs in a temporary home"


def test_metrics_on_hand_checked_answers() -> None:
    q = [evaluate.Query("1", "a", ["x"]), evaluate.Query("2", "b", ["y", "z"]), evaluate.Query("3", "c", [])]
    m = evaluate.score(q, [["w", "x"], ["y"], []])
    assert m == {"hit@1": 0.5, "hit@3": 1.0, "recall@5": 0.75, "mrr@10": 0.75, "empty_on_no_match": 1.0}


def tiny_static_model(folder: Path) -> Path:
    """A real model2vec model file, built offline from a six-word vocabulary (plumbing, not quality)."""
    import numpy as np
    from model2vec import StaticModel
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, "lint": 1, "ruff": 2, "style": 3, "commit": 4, "branch": 5, "git": 6}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    vectors = np.zeros((len(vocab), 4), dtype=np.float32)
    vectors[[1, 2, 3], 0] = 1.0  # linting words share a direction
    vectors[[4, 5, 6], 1] = 1.0  # git words another
    StaticModel(vectors=vectors, tokenizer=tokenizer, normalize=True).save_pretrained(str(folder))
    return folder


def test_semantic_channel_through_the_plugin_interface(skills_corpus: Path, tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("model2vec")
    folder = tmp_path / "team"
    for name in (RUFF, "getsentry-skills/create-branch"):
        shutil.copytree(skills_corpus / name, folder / name)
    spec = f"static:{tiny_static_model(tmp_path / 'model')}"
    monkeypatch.setenv("SKILLMILL_EMBEDDER", spec)
    out = CliRunner().invoke(main, ["index", "--skills", str(folder), "--json"], catch_exceptions=False).output
    assert json.loads(out)["embedder"] == spec
    with RecallIndex() as index:
        assert index.con.execute("SELECT count(*) FROM vectors").fetchone()[0] == 2
        assert index.embedder() is not None
        assert index.search("ruff lint")[0].name == "ruff-recursive-fix"
    # Vectors of unchanged skills are reused, not recomputed: a broken model would fail here.
    monkeypatch.setattr(semantic.StaticEmbedder, "embed", lambda self, texts: 1 / 0 if texts else [])
    assert CliRunner().invoke(main, ["index"], catch_exceptions=False).exit_code == 0


def test_absent_model_means_lexical_only(skills_corpus: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    folder = tmp_path / "team"
    shutil.copytree(skills_corpus / RUFF, folder / RUFF)
    monkeypatch.setenv("SKILLMILL_EMBEDDER", f"static:{tmp_path / 'no-such-model'}")
    result = CliRunner().invoke(main, ["index", "--skills", str(folder), "--json"], catch_exceptions=False)
    assert result.exit_code == 0 and json.loads(result.stdout)["embedder"] is None
    assert "recall is lexical only" in result.stderr
    assert semantic.load(f"static:{tmp_path / 'no-such-model'}", quiet=True) is None
    with RecallIndex() as index:
        assert index.search("ruff E501 autofix")[0].name == "ruff-recursive-fix"


def test_the_hook_never_loads_a_slow_embedder(skills_corpus: Path, tmp_path: Path, monkeypatch) -> None:
    import sqlite3

    from pipeline.recall import serving
    from pipeline.recall.index import publish

    folder = tmp_path / "team"
    shutil.copytree(skills_corpus / RUFF, folder / RUFF)
    target = tmp_path / "recall.duckdb"
    publish([], target, add_folders=[folder])
    con = sqlite3.connect(serving.path_for(target))  # queries read the embedder from the serving snapshot
    con.execute("UPDATE meta SET value = 'sentence-transformers:/models/minilm' WHERE key = 'embedder'")
    con.commit()
    con.close()
    calls: list[str] = []
    monkeypatch.setattr(semantic, "load", lambda spec, quiet=False: calls.append(spec))
    with RecallIndex(target, slow_embedders=False) as index:
        assert index.embedder() is None and index.search("ruff E501")[0].name == "ruff-recursive-fix"
    assert calls == []
    with RecallIndex(target) as index:
        index.embedder()
    assert calls == ["sentence-transformers:/models/minilm"]
