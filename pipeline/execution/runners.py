"""Where a run's tasks execute: a bounded thread pool, or a Dask cluster through prefect-dask.

Work goes out in **parcels** (many trajectories per Prefect task), for two measured reasons:
the zero-LLM distiller takes ~0.5 ms per trajectory while one Prefect task costs ~8 ms, and
Prefect walks every task parameter that is a list, dict or pydantic model (to find futures in
it) -- for a list of trajectories that walk costs more than the distilling. A :class:`Parcel`
is opaque to that walk, and to Dask's, and pickles as its items.

Tasks return values for expected failures (:class:`Failed`), so one bad trajectory is one
error in the run summary and its parcel's other items are kept.

The single DuckDB writer stays the run's own process: tasks only compute and return, the
flow writes (``flows/nightly.py``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pipeline.config import RunConfig
from pipeline.errors import SkillmillError, UsageError

T = TypeVar("T")
R = TypeVar("R")

#: Parcels per worker: enough to balance uneven items and show progress, few enough to keep overhead low.
PARCELS_PER_WORKER = 4
MAX_PARCEL = 64


class Parcel(Generic[T]):
    """Items sent to (or returned from) one task. Deliberately not a collection: see the module docstring."""

    def __init__(self, items: Sequence[T]) -> None:
        self.items = list(items)

    def __len__(self) -> int:
        return len(self.items)


@dataclass
class Failed:
    """One item a task could not process, and why (the rest of its parcel is kept)."""

    reason: str


def each(function: Callable[[T], R], parcel: Parcel[T]) -> Parcel[R | Failed]:
    """Apply ``function`` to every item; an exception becomes that item's :class:`Failed`."""
    out: list[R | Failed] = []
    for item in parcel.items:
        try:
            out.append(function(item))
        except SkillmillError:
            raise  # configuration and usage errors stop the run; they are not one item's problem
        except Exception as exc:  # noqa: BLE001 -- one item's bug must not lose its parcel's others
            out.append(Failed(f"{type(exc).__name__}: {exc}"))
    return Parcel(out)


def parcels(items: Sequence[T], workers: int, *, size: int | None = None) -> list[Parcel[T]]:
    """Split ``items`` into contiguous parcels, about ``PARCELS_PER_WORKER`` per worker."""
    if not items:
        return []
    size = size or max(1, min(MAX_PARCEL, -(-len(items) // (workers * PARCELS_PER_WORKER))))
    return [Parcel(items[i:i + size]) for i in range(0, len(items), size)]


def fan_out(runner: Any, task: Any, items: Sequence[T], workers: int, *,
            on_parcel: Callable[[int], None] | None = None, **kwargs: Any) -> Iterator[tuple[T, R | Failed]]:
    """Run ``task(parcel, **kwargs)`` over ``items`` on ``runner``; yield ``(item, result)`` in order.

    A parcel whose task failed as a whole (a worker died, an input that does not pickle) gives
    a :class:`Failed` for each of its items. ``on_parcel(n)`` is called as each parcel is done.
    """
    batches = parcels(items, workers)
    futures = [runner.submit(task, {"parcel": batch, **kwargs}) for batch in batches]
    for batch, future in zip(batches, futures, strict=True):
        future.wait()
        state = future.state
        if state.is_completed():
            results: list[Any] = future.result().items
        else:
            reason = state.message or "the task failed"
            error = None
            with contextlib.suppress(Exception):
                error = state.result(raise_on_failure=False)
            if isinstance(error, SkillmillError):
                raise error
            if isinstance(error, BaseException):
                reason = f"{type(error).__name__}: {error}"
            results = [Failed(reason)] * len(batch)
        yield from zip(batch.items, results, strict=True)
        if on_parcel is not None:
            on_parcel(len(batch))


@contextlib.contextmanager
def local(concurrency: int) -> Iterator[Any]:
    """A thread pool of ``concurrency`` threads in this process (Prefect's default pool is unbounded)."""
    from prefect.task_runners import ThreadPoolTaskRunner

    with ThreadPoolTaskRunner(max_workers=concurrency) as runner:
        yield runner


@contextlib.contextmanager
def task_runner(cfg: RunConfig) -> Iterator[Any]:
    """The runner ``[run] task_runner`` names, started for the block."""
    if cfg.task_runner == "thread":
        with local(cfg.concurrency) as runner:
            yield runner
        return
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        raise UsageError("the dask task runner needs prefect-dask",
                         hint="pip install 'skillmill[dask]' (prefect-dask), or use --task-runner thread") from None
    from prefect.settings import PREFECT_API_URL, temporary_settings

    if cfg.dask_address:
        options: dict[str, Any] = {"address": cfg.dask_address}
    else:  # worker processes on this machine; no dashboard (it would take a port and want bokeh)
        from distributed.security import Security

        # Mutual TLS with a certificate made for this run alone: the scheduler and workers listen on 127.0.0.1,
        # where any local account could otherwise ask a worker to run a function as this user (issue 23)
        options = {"cluster_class": "distributed.LocalCluster",
                   "cluster_kwargs": {"n_workers": cfg.concurrency, "threads_per_worker": 1, "processes": True,
                                      "dashboard_address": None, "security": Security.temporary()}}
    # Workers run Prefect's task engine and report to the run's API: give them its address, or
    # each would start a temporary server of its own.
    url = PREFECT_API_URL.value() or _temporary_server_url()
    previous = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = url  # local worker processes inherit the environment
    try:
        with temporary_settings({PREFECT_API_URL: url}), DaskTaskRunner(**options) as runner:
            yield runner
    finally:
        if previous is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = previous


def _temporary_server_url() -> str:
    """The address of the temporary server Prefect started for this process's flow (library callers)."""
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    server.start()  # a no-op when the flow already started it
    return server.api_url
