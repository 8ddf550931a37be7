"""Pi coding agent sessions: ``~/.pi/agent/sessions/--<cwd>--/<ts>_<id>.jsonl``.

The corpus' one Pi file is a hand-written version-1 sample; tests/fixtures/pi/SOURCE.md says what the version-3
fixture is written from. Counts are taken from the raw lines, not from the reader.
"""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.ingest import ingest_file
from pipeline.ingest.reader import Probe
from pipeline.plugins import registered_formats
from tests.conftest import TRAJECTORIES

SESSION = next((Path(__file__).parent / "fixtures" / "pi" / "sessions").glob("*/*.jsonl"))
SAMPLE = next(p for p in (TRAJECTORIES / "pi").rglob("*.jsonl") if p.name != "SOURCES.jsonl")


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def calls(rows: list[dict]) -> list[str]:
    return [p["id"] for r in rows if r.get("type") == "message" and r["message"]["role"] == "assistant"
            for p in r["message"]["content"] if p.get("type") == "toolCall"]


def branch(rows: list[dict]) -> list[dict]:
    by_id = {r["id"]: r for r in rows[1:]}
    node, path = rows[-1], []
    while node:
        path.append(node)
        node = by_id.get(node["parentId"])
    return path[::-1]


def test_a_session_is_the_branch_it_ended_on() -> None:
    rows = lines(SESSION)
    assert len(calls(rows)) == 5 and len(calls(branch(rows))) == 4  # the full run was left on another branch
    report, [t] = ingest_file(SESSION)
    assert (report.status, report.format) == ("ok", "pi")
    assert [c.call_id for c in t.tool_calls() if not c.call_id.startswith("user-bash")] == calls(branch(rows))
    assert [c.tool for c in t.tool_calls()] == ["read", "edit", "edit", "bash", "bash"]
    assert "python -m pytest -q" not in [c.command for c in t.tool_calls()]  # the abandoned run
    run = next(c for c in t.tool_calls() if c.command == "python -m pytest -q tests/test_cli.py")
    assert (t.result_of(run).exit_code, t.result_of(run).is_error) == (0, False)
    person = t.tool_calls()[-1]  # `!git diff --stat`, run by the person
    assert person.command == "git diff --stat" and t.result_of(person).exit_code == 0
    assert '+        sys.exit(2)' not in t.tool_calls()[2].diff and "+        print(" in t.tool_calls()[2].diff
    header = rows[0]
    assert (t.session_id, t.cwd, t.repo, t.model) == (header["id"], header["cwd"], "tinycalc", "claude-sonnet-4-5")
    assert t.task == rows[3]["message"]["content"][0]["text"]
    assert any(s.meta and "Ran the whole suite" in s.text for s in t.steps)  # the branch summary, as Pi sends it
    assert not any("Read it first." in s.text for s in t.steps)


def test_a_failing_bash_call_has_its_exit_code(tmp_path: Path) -> None:
    rows = lines(SESSION)
    path = tmp_path / SESSION.name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:10]))  # up to the failing full run
    _, [t] = ingest_file(path)
    run = t.tool_calls()[-1]
    assert run.command == "python -m pytest -q" and t.result_of(run).exit_code == 1 and t.result_of(run).is_error


def test_the_version_1_sample_is_read_line_after_line() -> None:
    rows = lines(SAMPLE)
    report, [t] = ingest_file(SAMPLE)
    assert (report.status, report.format) == ("ok", "pi")
    assert [c.call_id for c in t.tool_calls()] == calls(rows) and [c.tool for c in t.tool_calls()] == ["write", "edit"]
    assert t.cwd == rows[0]["cwd"] and t.tool_calls()[1].paths == ["/home/user/project/hello.py"]
    assert "+if __name__ == \"__main__\":" in t.tool_calls()[1].diff.splitlines()


def test_it_is_claimed_by_pi_only() -> None:
    for path in (SESSION, SAMPLE):
        assert [f.name for f in registered_formats() if f.sniff(Probe.read(path))] == ["pi"]


def test_a_refused_edit_is_the_harness_not_the_project(tmp_path: Path) -> None:
    rows = lines(SESSION)
    for row in rows:
        message = row.get("message") or {}
        if message.get("toolCallId") == "toolu_02":
            message.update(isError=True, content=[{"type": "text", "text": "Could not find the exact text in "
                           "/home/dev/tinycalc/tinycalc/cli.py. The old text must match exactly including all "
                           "whitespace and newlines."}])
    path = tmp_path / SESSION.name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _, [t] = ingest_file(path)
    assert t.result_of(t.tool_calls()[1]).protocol_error and not t.result_of(t.tool_calls()[3]).protocol_error
