"""Recall: which approved skills fit a task. Imports neither litellm, prefect nor pydantic."""

from pipeline.recall.brief import Packed, brief, pack
from pipeline.recall.search import Hit, RecallIndex, recall

__all__ = ["Hit", "Packed", "RecallIndex", "brief", "pack", "recall"]
