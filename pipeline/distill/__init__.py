"""Distill: trajectories in, skill drafts out (zero-LLM by default)."""

from pipeline.distill.facts import RepoFact
from pipeline.distill.heuristic import Distilled, distill
from pipeline.distill.repo import consolidate, repo_skill_name

__all__ = ["Distilled", "RepoFact", "consolidate", "distill", "repo_skill_name"]
