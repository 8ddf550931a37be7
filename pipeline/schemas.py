"""JSON Schemas generated from the pydantic models: the models are the one source of truth.

``python -m pipeline.schemas`` rewrites ``schemas/``; a test fails when the checked-in files
are stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from pipeline.library.model import Skill
from pipeline.trajectory.model import Trajectory

SCHEMAS: dict[str, type[BaseModel]] = {
    "trajectory.schema.json": Trajectory,
    "skill.schema.json": Skill,
}
DEFAULT_DIR = Path(__file__).resolve().parent.parent / "schemas"


def render(model: type[BaseModel]) -> str:
    schema = model.model_json_schema()
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write(directory: Path = DEFAULT_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in SCHEMAS.items():
        path = directory / name
        path.write_text(render(model), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DIR):
        print(path)
