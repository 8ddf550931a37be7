"""The optional semantic channel: an embedding model behind a small plugin interface.

Nothing here downloads anything. An embedder is named by a spec, ``<kind>:<local path>``:

* ``static:<dir>`` — a model2vec static model saved on disk (``pip install 'skillmill[semantic]'``);
  ~40k sentences/s on a CPU, no torch.
* ``sentence-transformers:<dir>`` — a sentence-transformers model from a local folder
  (``pip install sentence-transformers``; torch makes it slow to start, so it suits the MCP server
  and batch evaluation better than the per-prompt hook).
* any other kind a plugin registers through the ``register_embedders`` hook.

The spec is configured as ``[recall] embedder`` in ``skillmill.toml`` or ``SKILLMILL_EMBEDDER``,
used when the index is built, and recorded in the index, so recall embeds queries with the
same model. If the model does not load (missing folder, package not installed), recall is
lexical only: a warning at index time, silence on the hook path.

No model ships with skillmill: a model2vec model distilled from all-MiniLM-L6-v2 (the only
sentence model installable here) lowered MRR on both query sets of the shared corpus when fused
with the lexical channel (see README, "Recall quality"), so it is not worth 15 MB.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
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


BUILTIN: dict[str, Factory] = {"static": StaticEmbedder, "sentence-transformers": SentenceTransformerEmbedder}
#: Kinds that load in milliseconds; the per-prompt hook uses no other (torch takes seconds).
FAST_KINDS = frozenset({"static"})


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
        if kind in BUILTIN and not os.path.isdir(os.path.expanduser(path)):
            raise FileNotFoundError(path)
        return factory(spec, os.path.expanduser(path))
    except Exception as exc:  # any failure means lexical only, never a failed recall
        if not quiet:
            print(f"warning: embedder {spec} not loaded ({type(exc).__name__}: {exc}); recall is lexical only",
                  file=sys.stderr)
        return None


def configured() -> str | None:
    """The embedder spec from ``SKILLMILL_EMBEDDER`` or ``[recall] embedder`` in the config file."""
    from pipeline import config

    return config.load().recall.embedder


def document_text(row: dict[str, Any]) -> str:
    """What a skill is embedded as: its name, description and the start of its body."""
    return f"{row['name_text']}: {row['description']}\n{row['body'][:2000]}"
