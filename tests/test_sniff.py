"""Every format's sniff answers for any first bytes; it never raises.

``detect`` logs and moves on when a sniff raises, so a raising sniff does not crash a run, but
it hides the file from the formats after it and floods the log. This calls each sniff directly
(not through ``detect``), on the first records of real files whose top-level fields hold values
of the wrong type: lists and objects are unhashable, so ``record.get("type") in SOME_SET`` raises.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from pipeline.ingest.reader import Probe
from pipeline.plugins import registered_formats
from tests.format_samples import samples

WRONG = [None, 1.5, True, [], ["x"], {}, {"a": 1}]


def heads(corpus: Path) -> list[tuple[str, list[dict], bool]]:
    """(sample, records, is it one JSON document) for every structured sample in the corpus."""
    found = []
    for name, sample in samples(corpus).items():
        if sample.kind == "json":
            document = orjson.loads(sample.data)
            if isinstance(document, dict):
                found.append((name, [document], True))
        elif sample.kind == "jsonl":
            found.append((name, sample.records()[:4], False))
    return found


def test_sniffs_never_raise_on_fields_of_the_wrong_type(corpus: Path, tmp_path: Path) -> None:
    formats = registered_formats()
    tried = 0
    for name, records, document in heads(corpus):
        for index in range(1 if document else min(3, len(records))):
            for key in list(records[index])[:15]:
                for value in WRONG:
                    mutated = [dict(r) for r in records]
                    mutated[index][key] = value
                    path = tmp_path / "head.jsonl"
                    path.write_bytes(b"\n".join(orjson.dumps(r) for r in mutated) + b"\n")
                    probe = Probe.read(path)
                    for fmt in formats:
                        try:
                            fmt.sniff(probe)
                        except Exception as exc:  # noqa: BLE001 -- the test reports which sniff and how
                            pytest.fail(f"{fmt.name} sniff raised {exc!r} on the {name} sample "
                                        f"with record {index} {key!r} = {value!r}")
                        tried += 1
    assert tried > 500
