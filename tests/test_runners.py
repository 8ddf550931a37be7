"""Parcels of work: what crosses to a Dask worker must pickle, and come back the same."""

from __future__ import annotations

import pickle
from pathlib import Path

import cloudpickle
import pytest

from pipeline.errors import UsageError
from pipeline.execution import runners
from pipeline.execution.runners import Failed, Parcel
from pipeline.ingest import ingest_file
from pipeline.redact import Sanitized, fallback_count
from pipeline.stages import distill_one
from tests.planted import SOURCES, Planter


def test_parcels_cover_every_item_in_order() -> None:
    items = list(range(1000))
    batches = runners.parcels(items, workers=4)
    assert [i for b in batches for i in b.items] == items
    assert len(batches) == 16 and max(len(b) for b in batches) <= runners.MAX_PARCEL
    assert [len(b) for b in runners.parcels(items[:3], workers=4)] == [1, 1, 1]
    assert runners.parcels([], workers=4) == []


def test_one_bad_item_is_one_failure_but_a_usage_error_stops_the_run() -> None:
    def work(n: int) -> int:
        if n == 2:
            raise ValueError("bad input")
        if n == 99:
            raise UsageError("bad configuration")
        return n * 10

    out = runners.each(work, Parcel([1, 2, 3]))
    assert out.items[0] == 10 and out.items[2] == 30
    assert isinstance(out.items[1], Failed) and out.items[1].reason == "ValueError: bad input"
    with pytest.raises(UsageError):
        runners.each(work, Parcel([1, 99]))


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps])
def test_redacted_trajectories_cross_a_process_boundary_as_they_are(corpus: Path, tmp_path: Path, dumps) -> None:
    method, relative = SOURCES["mini-swe-agent"]
    planted = method(Planter(seed=7), corpus / relative, tmp_path / "planted.traj.json")
    _, trajectories = ingest_file(planted)
    assert trajectories[0].redactions  # secrets were found and replaced
    before = fallback_count()

    back = pickle.loads(dumps(Parcel(trajectories)))

    assert fallback_count() == before  # nothing was redacted again on the way (it is Sanitized already)
    for old, new in zip(trajectories, back.items, strict=True):
        assert new.id == old.id == new.content_id()
        assert new == old
        assert type(new.task) is Sanitized
        assert new.cwd is None or type(new.cwd) is Sanitized
        for step in new.steps:
            assert type(step.text) is Sanitized
            assert all(type(p) is Sanitized for p in step.paths)
            assert step.command is None or type(step.command) is Sanitized
    results = pickle.loads(dumps(runners.each(distill_one, back)))
    assert [r.skills for r in results.items] == [distill_one(t).skills for t in trajectories]
