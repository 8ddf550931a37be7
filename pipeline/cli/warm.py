"""The warm process of ``skillmill run`` (``pipeline.execution.warm``): the run command, the flow and
Prefect imported once; each run handed over by a client is forked from here and run as the client.

Started by a run that ran in its own process (``warm.start``), detached, with that run's starting
environment: ``python -c "...; from pipeline.cli.warm import main; main()" IDLE_SECONDS HOME`` (the home
only names it for ``ps``).
"""

from __future__ import annotations

import gc
import os
import sys
import time

from pipeline import settings
from pipeline.execution import clock, warm


def main() -> None:
    idle_s = float(sys.argv[1])
    before = dict(os.environ)
    try:
        listener = warm.Listener(warm.key(before, warm.code_root()))
    except OSError:  # one is up for this setup already
        return
    since = time.time()
    _preload()
    added = {k: v for k, v in os.environ.items() if before.get(k) != v}  # what a cold run sets before importing
    gc.collect()
    gc.freeze()  # forks share these pages instead of copying them when the collector visits
    request = listener.serve(idle_s, settings.home(), added, since)
    if request is None:  # idle, its code changed, or its home is gone
        return
    clock.adopt(request.started)  # in a runner: the client's command
    from pipeline.cli import main as group

    warm.finish(lambda: group.main(args=request.argv[1:], prog_name=request.prog))


def _preload() -> None:
    """What a ``skillmill run`` imports, imported as a cold run would: offline, Prefect's logging quiet."""
    settings.apply_offline_env()
    from pipeline.cli.run import quiet_prefect

    quiet_prefect()
    import fastapi.encoders  # noqa: F401  (Prefect imports it to serialize a flow's parameters: 0.4 s)

    import flows.nightly  # noqa: F401
    import pipeline.cli  # noqa: F401  (every command)
