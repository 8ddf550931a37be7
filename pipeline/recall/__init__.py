"""Recall: which approved skills fit a task. Imports neither litellm nor prefect."""

from pipeline.recall.search import Hit, RecallIndex, brief, recall

__all__ = ["Hit", "RecallIndex", "brief", "recall"]
