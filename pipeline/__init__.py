"""skillmill: distill coding-agent trajectories into reviewed Agent Skills."""

__version__ = "0.1.0"
