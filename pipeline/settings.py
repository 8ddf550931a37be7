"""Where skillmill keeps its state, and the environment it runs in.

Every path goes through :func:`home`, which ``SKILLMILL_HOME`` overrides, so tests
(and users with several libraries) isolate state with one variable.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_HOME = "SKILLMILL_HOME"
ENV_LIBRARY = "SKILLMILL_LIBRARY"

# Keep litellm and Prefect from reaching the internet (../shared/docs/stack.md).
OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
}


def home() -> Path:
    """The state directory: ``$SKILLMILL_HOME``, else ``~/.skillmill``."""
    value = os.environ.get(ENV_HOME)
    return Path(value).expanduser() if value else Path.home() / ".skillmill"


def library_dir() -> Path:
    """The skill library: ``$SKILLMILL_LIBRARY``, else ``<home>/skills``."""
    value = os.environ.get(ENV_LIBRARY)
    return Path(value).expanduser() if value else home() / "skills"


def state_db_path() -> Path:
    """The pipeline's own database (trajectories, steps, skills, runs). One writer at a time."""
    return home() / "skillmill.duckdb"


def recall_index_path() -> Path:
    """The published, read-only recall index; replaced atomically after each run."""
    return home() / "recall.duckdb"


def apply_offline_env() -> None:
    """Set the offline switches unless the user chose otherwise."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
