"""Every Python interpreter skillmill starts: isolated from the folder it was started from.

skillmill runs inside agents' turns, in whatever folder the agent works in: a checkout that is
not ours and may be hostile. ``python -m pipeline ...`` started there imports ``pipeline`` (or
``prefect``, or anything those import first) from that folder, before site-packages: a file
``pipeline.py`` in a repository would run as the user at the next prompt. So every interpreter we
start goes through :func:`popen` (or takes :func:`argv`, :func:`env` and :func:`folder` for a
command it writes down, as ``install`` does):

* ``-P`` keeps the working folder (or a script's folder) off ``sys.path``;
* ``PYTHONSAFEPATH=1`` does the same for every interpreter *those* start (Prefect's server, its
  flow-run subprocesses, the serve runner);
* it starts in skillmill's own folder (``$SKILLMILL_HOME``, owner-only), not the caller's, so a
  relative entry on ``PYTHONPATH`` cannot point back into the checkout either.

Standard library only: the hook starts the recall server through it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Mapping
    from typing import Any

#: What keeps a child's children from importing from their working folder too.
SAFE_ENV = {"PYTHONSAFEPATH": "1"}


def argv(*args: str) -> list[str]:
    """``[python, -P, *args]``: this interpreter, with no working folder on ``sys.path``."""
    return [sys.executable, "-P", *args]


def env(base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """``base`` (default: this process's environment) with :data:`SAFE_ENV` and ``extra``."""
    return {**(os.environ if base is None else base), **SAFE_ENV, **extra}


def runs_skillmill(words: list[str]) -> bool:
    """Whether the program part of a command line is skillmill as ``install`` writes it: ``skillmill`` (from any
    folder) or ``<python> [-P] -m pipeline`` (what :func:`argv` starts)."""
    import re

    if len(words) == 1:
        return Path(words[0]).name.removesuffix(".exe") == "skillmill"
    return len(words) >= 3 and words[-2:] == ["-m", "pipeline"] and all(w == "-P" for w in words[1:-2]) \
        and re.fullmatch(r"python[\d.]*", Path(words[0]).name) is not None


def folder() -> Path:
    """Where a child starts: skillmill's home (created owner-only when missing)."""
    from pipeline import private, settings

    return private.mkdir(settings.home())


#: Variables that name folders: made absolute before a command leaves the folder it was started in.
PATH_VARIABLES = ("SKILLMILL_HOME", "SKILLMILL_LIBRARY", "PREFECT_HOME", "PREFECT_PROFILES_PATH")


def work_in_home() -> Path:
    """Make this process work in skillmill's home, not the folder it was started in (call it once the
    command's own path arguments are absolute): Prefect reads settings from its working folder
    (``prefect.toml``, ``.env``, ``pyproject.toml``'s ``[tool.prefect]``, a logging config they name), and a
    checkout's could run code as the user. Prefect is configured by the environment and Prefect's profiles."""
    for name in PATH_VARIABLES:
        value = os.environ.get(name)
        if value and not os.path.isabs(os.path.expanduser(value)):
            os.environ[name] = os.path.abspath(os.path.expanduser(value))
    home = folder()
    os.chdir(home)
    return home


def popen(args: list[str], *, env_base: Mapping[str, str] | None = None, cwd: Path | None = None,
          **options: Any) -> subprocess.Popen:
    """``subprocess.Popen(argv(*args))`` with the safe environment, in skillmill's own folder (or ``cwd``,
    which must be one of ours)."""
    import subprocess

    return subprocess.Popen(argv(*args), env=env(env_base), cwd=cwd or folder(), **options)
