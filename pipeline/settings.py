"""Where skillmill keeps its state, and the environment it runs in.

Every path goes through :func:`home`, which ``SKILLMILL_HOME`` overrides, so tests
(and users with several libraries) isolate state with one variable.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path

ENV_HOME = "SKILLMILL_HOME"
ENV_LIBRARY = "SKILLMILL_LIBRARY"

# Keep litellm and Prefect from reaching the internet (../shared/docs/stack.md).
OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
}


def home(env: Mapping[str, str] | None = None) -> Path:
    """The state directory: ``$SKILLMILL_HOME``, else ``~/.skillmill`` (of ``env``, default this process's)."""
    env = os.environ if env is None else env
    value = env.get(ENV_HOME)
    if value:
        return Path(value).expanduser()
    return (Path(env["HOME"]) if env.get("HOME") else Path.home()) / ".skillmill"


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


def prefect_home(env: Mapping[str, str] | None = None) -> Path:
    """Prefect's own folder (its database, result storage, profiles): ``$PREFECT_HOME``, else ``<home>/prefect``."""
    env = os.environ if env is None else env
    value = env.get("PREFECT_HOME")
    return Path(value).expanduser() if value else home(env) / "prefect"


def apply_offline_env() -> None:
    """Set the offline switches, and Prefect's home under ours, unless the user chose otherwise."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    apply_prefect_home()


def apply_prefect_home() -> None:
    """``PREFECT_HOME`` defaults to ``$SKILLMILL_HOME/prefect``: Prefect's database grows with every run
    (12 MB an afternoon), and belongs with the rest of skillmill's state, not in ``~/.prefect``.

    A user's own Prefect profiles (``~/.prefect/profiles.toml``, where ``prefect config set
    PREFECT_API_URL=...`` writes) stay in force through ``PREFECT_PROFILES_PATH``. Once Prefect is
    imported its home is chosen: nothing changes then (a test harness, a Prefect worker).
    """
    if "PREFECT_HOME" in os.environ or "prefect" in sys.modules:
        return
    os.environ["PREFECT_HOME"] = str(prefect_home())
    profiles = Path.home() / ".prefect" / "profiles.toml"
    if "PREFECT_PROFILES_PATH" not in os.environ and profiles.is_file():
        os.environ["PREFECT_PROFILES_PATH"] = str(profiles)


def ensure_prefect_home() -> Path:
    """Create Prefect's folder (owner-only) before Prefect is imported: Prefect makes only the last level, and
    with a new ``SKILLMILL_HOME`` it would warn on every import and its server would not start.

    A folder that cannot be made is left to the caller's own checks (``pipeline.execution.preflight``).
    """
    from pipeline import private

    folder = prefect_home()
    with contextlib.suppress(OSError):
        private.mkdir(folder)
    return folder
