"""The canonical trajectory model and the builder parsers use to fill it."""

from pipeline.trajectory.builder import TrajectoryBuilder
from pipeline.trajectory.model import MAX_STEP_TEXT, Outcome, Step, StepKind, Trajectory, clip

__all__ = ["MAX_STEP_TEXT", "Outcome", "Step", "StepKind", "Trajectory", "TrajectoryBuilder", "clip"]
