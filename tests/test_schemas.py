"""The checked-in JSON Schemas are generated from the models and must not go stale."""

from __future__ import annotations

import json

import jsonschema
import pytest

from pipeline import schemas
from pipeline.ingest import ingest_file
from tests.conftest import SAMPLES


@pytest.mark.parametrize("name", sorted(schemas.SCHEMAS))
def test_checked_in_schema_is_current(name: str) -> None:
    on_disk = (schemas.DEFAULT_DIR / name).read_text(encoding="utf-8")
    assert on_disk == schemas.render(schemas.SCHEMAS[name]), (
        f"schemas/{name} is stale: run `make schemas` and commit the result")


def test_parsed_trajectories_validate_against_the_schema() -> None:
    schema = json.loads((schemas.DEFAULT_DIR / "trajectory.schema.json").read_text())
    checked = 0
    for path in sorted(SAMPLES.rglob("*.json*")):
        _, trajectories = ingest_file(path)
        for trajectory in trajectories:
            jsonschema.validate(trajectory.model_dump(mode="json"), schema)
            checked += 1
    assert checked >= 5
