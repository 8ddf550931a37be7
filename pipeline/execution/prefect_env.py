"""Prefect, imported offline, with its files under ``SKILLMILL_HOME`` and no telemetry files.

:func:`prepare` runs before the flows import Prefect (``flows/__init__.py``): the offline
switches (``DO_NOT_TRACK=1``, no server analytics), ``PREFECT_HOME`` under ``SKILLMILL_HOME``
unless the user set it (``pipeline.settings.apply_prefect_home``), and its folder made.

``DO_NOT_TRACK`` alone does not keep Prefect 3.9 from writing ``$PREFECT_HOME/.sdk_telemetry/``
(``device_id``, ``milestones.json``): on a terminal, defining or running a flow calls
``try_mark_milestone``, which checks for a terminal but not for ``DO_NOT_TRACK``, and writes both
files before the event it queues is dropped. So when telemetry is off, that function is
replaced by one that does nothing (``tests/test_startup.py`` runs a flow on a pseudo-terminal and
looks for the folder). Telemetry the user turned on (``DO_NOT_TRACK=0``) is left alone.
"""

from __future__ import annotations

import contextlib

from pipeline import settings


def prepare() -> None:
    settings.apply_offline_env()
    settings.ensure_prefect_home()
    no_telemetry_files()


def no_telemetry_files() -> None:
    with contextlib.suppress(ImportError, AttributeError):  # a later Prefect may move it: the test says so
        import prefect._internal.analytics as analytics

        if analytics.is_telemetry_enabled():
            return

        def try_mark_milestone(milestone: str) -> bool:
            return False

        analytics.try_mark_milestone = try_mark_milestone  # callers import it from here when they call it
