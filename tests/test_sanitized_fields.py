"""Issue 12: every field a format stores passes through the redactor -- ids, names and versions too.

The model says it (every ``str`` field is ``Sanitized`` but for a short list of fields no session
text can reach); real files of every format say it (ids, model names, versions, session ids
replaced by values holding a URL with a password must come out redacted, and still pair up);
and so does the parser state an incremental read pickles into the state database.
"""

from __future__ import annotations

import pickle
import re
import shutil
import typing
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

from pipeline.ingest import ingest_file
from pipeline.ingest.reader import Checkpoint
from pipeline.redact import Sanitized
from pipeline.trajectory import Trajectory
from pipeline.trajectory.transcript import transcript
from tests.format_samples import format_names, place, samples
from tests.planted import Factory

#: ``str`` fields no session text can reach, and why.
NOT_SESSION_TEXT = {
    ("Trajectory", "id"): "a hash of the canonical (redacted) form, computed by pipeline.ingest",
    ("Trajectory", "source_format"): "the format plugin's registered name",
    ("Redaction", "field"): "the name of a field of this model",
    ("Redaction", "kind"): "a detector's kind, as in [REDACTED:<kind>]",
}


def _plain_str_fields(model: type[BaseModel], seen: set[type] | None = None) -> list[tuple[str, str]]:
    """(model, field) for each field whose type admits a plain ``str``, nested models included."""
    seen = seen if seen is not None else set()
    seen.add(model)
    found = []
    for name, field in model.model_fields.items():
        stack: list[Any] = [field.annotation]
        while stack:
            annotation = stack.pop()
            if annotation is str:
                found.append((model.__name__, name))
            elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
                if annotation not in seen:
                    found += _plain_str_fields(annotation, seen)
            elif typing.get_origin(annotation) is not typing.Literal:
                stack.extend(typing.get_args(annotation))
    return found


def test_every_text_field_of_the_trajectory_model_is_sanitized() -> None:
    plain = set(_plain_str_fields(Trajectory))
    assert plain <= set(NOT_SESSION_TEXT), f"make these Sanitized (or justify them): {sorted(plain - set(NOT_SESSION_TEXT))}"
    assert ("Step", "call_id") not in plain and ("Trajectory", "agent") not in plain


# -- every format ------------------------------------------------------------------------------
#: A value that names something (an id, a model, a version): a word with a digit in it.
_NAME_LIKE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:#/-]{4,100}")
#: Keys whose values tell a format apart (sniffing): left as they are.
_FORMAT_KEYS = frozenset({"schema_version", "type", "role"})
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d|\d+(?:\.\d+)?")


def _mutate(value: Any, replace: dict[str, str]) -> Any:
    """Every name-like string leaf replaced the same way everywhere (so calls still find their results)."""
    if isinstance(value, dict):
        return {key: _mutate(item, replace) for key, item in value.items()}
    if isinstance(value, list):
        return [_mutate(item, replace) for item in value]
    if isinstance(value, str) and value in replace:
        return replace[value]
    return value


def _names(value: Any, found: set[str], kept: set[str]) -> set[str]:
    """Name-like string leaves into ``found``; those under a format's marker keys into ``kept``."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _FORMAT_KEYS and isinstance(item, str):
                kept.add(item)
            else:
                _names(item, found, kept)
    elif isinstance(value, list):
        for item in value:
            _names(item, found, kept)
    elif isinstance(value, str) and _NAME_LIKE.fullmatch(value) and any(c.isdigit() for c in value) \
            and not _TIMESTAMP.match(value):
        found.add(value)
    return found


@pytest.mark.parametrize("name", format_names())
def test_ids_names_and_versions_of_every_format_are_redacted(name: str, corpus: Path, tmp_path: Path) -> None:
    sample = samples(corpus).get(name)
    if sample is None:
        pytest.skip(f"no real {name} file in the corpus")
    if sample.kind == "text":
        pytest.skip(f"{name} files are text: no ids or names in fields of their own")
    password = Factory(len(name))._rand(14)
    records = [orjson.loads(sample.data)] if sample.kind == "json" else sample.records()
    kept: set[str] = set()
    names = set().union(*(_names(r, set(), kept) for r in records)) - kept
    if sample.context is not None:  # a storage tree: ids are also file and folder names
        names -= {part for p in sample.context.rglob("*") for part in (p.name, p.stem)}
    if not names:
        pytest.skip(f"the {name} sample has no ids, models or versions (but for its storage tree's file names)")
    replace = {v: f"{v}+https://ci:{password}@vault.internal/" for v in names}
    mutated = [_mutate(r, replace) for r in records]
    data = orjson.dumps(mutated[0]) if sample.kind == "json" else b"\n".join(map(orjson.dumps, mutated)) + b"\n"
    report, trajectories = ingest_file(place(sample, tmp_path, data))
    assert len(trajectories) == sample.trajectories, report.errors[:3]
    assert sum(len(t.steps) for t in trajectories) == sample.steps
    for trajectory in trajectories:
        assert password not in trajectory.model_dump_json(), f"a {name} field kept the planted URL"
        assert password not in transcript(trajectory)
        assert all(type(getattr(trajectory, f)) is Sanitized for f in ("agent", "session_id") if getattr(trajectory, f))
    recorded = {r.field for t in trajectories for r in t.redactions if r.kind == "url-password"}
    if not recorded:
        plain = "".join(t.model_dump_json() for t in ingest_file(sample.path)[1])
        if not any(v in plain for v in names):
            pytest.skip(f"the {name} sample's ids ({', '.join(sorted(names)[:3])}) reach no field of a trajectory")
    assert recorded, f"no {name} field held a planted value: the mutation missed"


def test_an_openhands_tool_call_id_holding_a_url_with_a_password(corpus: Path, tmp_path: Path) -> None:
    """The field issue 12 found stored unredacted: OpenHands' ``tool_call_metadata.tool_call_id``."""
    source = corpus / "openhands" / "runtime_replay_trajs" / "basic.json"
    events = orjson.loads(source.read_bytes())
    password = Factory(12)._rand(16)
    planted = 0
    for event in events:
        meta = event.get("tool_call_metadata")
        if isinstance(meta, dict) and isinstance(meta.get("tool_call_id"), str):
            meta["tool_call_id"] = f"https://deploy:{password}@git.internal/{meta['tool_call_id']}"
            planted += 1
    assert planted >= 3
    path = tmp_path / source.name
    path.write_bytes(orjson.dumps(events))
    _, [trajectory] = ingest_file(path)
    _, [original] = ingest_file(source)
    assert password not in trajectory.model_dump_json()
    calls = [s for s in trajectory.steps if s.call_id and "url-password" in s.call_id]
    assert calls and all(type(s.call_id) is Sanitized for s in calls)
    assert [s.call_index for s in trajectory.steps] == [s.call_index for s in original.steps]  # still paired
    assert {r.field for r in trajectory.redactions} >= {"call_id"}


def test_the_parser_state_saved_between_reads_holds_no_secret(corpus: Path, tmp_path: Path) -> None:
    """Claude Code is read incrementally: its parser is pickled into the state DB after each read."""
    source = corpus / "claude_code" / "claude-code-viewer" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    secrets = {s.kind: s for s in Factory(13).secrets()}
    key, url = secrets["openai-api-key"], secrets["url-password"]
    lines = source.read_bytes().splitlines()
    records = [orjson.loads(line) for line in lines if line.strip()]
    for record in records:
        if record.get("type") in ("user", "assistant"):
            record["cwd"] = f"/home/me/{url.line}"
            record["gitBranch"] = f"fix/{key.value}"
    # the session stops right after an edit: its arguments wait in the parser for a result
    edit = {"type": "tool_use", "id": f"toolu_{url.line}", "name": "Edit",
            "input": {"file_path": "/srv/app/.env", "old_string": "X=1", "new_string": key.line}}
    last = next(r for r in reversed(records) if r.get("type") == "assistant")
    records.append({**last, "uuid": "f00dfeed-0000-4000-8000-000000000001", "parentUuid": last.get("uuid"),
                    "message": {**last["message"], "id": "msg_planted", "content": [edit]}})
    path = tmp_path / source.name
    shutil.copy(source, path)
    path.write_bytes(b"\n".join(map(orjson.dumps, records)) + b"\n")
    checkpoint = Checkpoint()
    _, trajectories = ingest_file(path, checkpoint=checkpoint)
    assert trajectories and checkpoint.state
    state = checkpoint.state.decode("latin-1")
    for value in (key.value, url.value):
        assert value not in state
        assert value not in "".join(t.model_dump_json() for t in trajectories)
    resumed = pickle.loads(checkpoint.state)  # still a working parser state
    assert resumed.sessions
