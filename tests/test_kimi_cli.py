"""Kimi CLI sessions: ``~/.kimi/sessions/<md5(work dir)>/<session id>/context.jsonl``.

No Kimi CLI session is in ../shared/trajectories; tests/fixtures/kimi_cli/SOURCE.md says what the fixture is written
from. The counts below are taken from the raw lines, not from the reader.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from pipeline.ingest import ingest_file, iter_files
from pipeline.ingest.reader import Probe
from pipeline.plugins import registered_formats

SHARE = Path(__file__).parent / "fixtures" / "kimi_cli" / "share"
SESSION = next(SHARE.glob("sessions/*/*/context.jsonl"))


def lines(path: Path = SESSION) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def calls(rows: list[dict]) -> list[str]:
    return [c["id"] for r in rows if r["role"] == "assistant" for c in r.get("tool_calls", [])]


def test_a_session_is_one_trajectory_with_its_work_dir() -> None:
    rows = lines()
    report, [t] = ingest_file(SESSION)
    assert (report.status, report.format) == ("ok", "kimi-cli")
    assert [c.call_id for c in t.tool_calls()] == calls(rows) and len(calls(rows)) == 6
    assert [c.tool for c in t.tool_calls()] == ["ReadFile", "StrReplaceFile", "Shell", "Agent", "StrReplaceFile",
                                                "Shell"]
    first_run, last_run = (c for c in t.tool_calls() if c.tool == "Shell")
    assert (t.result_of(first_run).exit_code, t.result_of(first_run).is_error) == (1, True)
    assert (t.result_of(last_run).exit_code, t.result_of(last_run).is_error) == (0, False)
    assert "1 failed, 1 passed" in t.result_of(first_run).text and "ERROR" not in t.result_of(first_run).text
    edit = t.tool_calls()[4]
    assert edit.paths == ["/home/dev/tinycalc/tinycalc/cli.py"] and "+        sys.exit(2)" in edit.diff.splitlines()
    # nothing in the file says where it ran: kimi.json names the work dir whose md5 is the folder's name
    assert hashlib.md5(t.cwd.encode()).hexdigest() == SESSION.parent.parent.name  # noqa: S324
    assert (t.session_id, t.cwd, t.repo) == (SESSION.parent.name, "/home/dev/tinycalc", "tinycalc")
    assert t.task == rows[2]["content"][0]["text"]
    assert not any("Read the CLI first." in s.text for s in t.steps)  # think parts are not said
    assert not any(s.text.startswith("You are Kimi CLI") for s in t.steps)  # the system prompt is no step


def test_without_kimi_json_the_work_dir_is_the_touched_folder_whose_md5_names_the_sessions(tmp_path: Path) -> None:
    copy = tmp_path / "share"
    shutil.copytree(SHARE, copy)
    (copy / "kimi.json").unlink()
    _, [t] = ingest_file(next(copy.glob("sessions/*/*/context.jsonl")))
    assert t.cwd == "/home/dev/tinycalc"


def test_a_subagent_is_its_own_trajectory_under_its_session() -> None:
    sub = next(SESSION.parent.glob("subagents/*/context.jsonl"))
    _, [t] = ingest_file(sub)
    assert (t.session_id, t.parent_session_id) == (sub.parent.name, SESSION.parent.name)
    assert [c.call_id for c in t.tool_calls()] == calls(lines(sub)) and t.cwd == "/home/dev/tinycalc"


def test_the_folder_gives_the_session_once() -> None:
    """A revert's rotated copy and the wire log beside it are the same session: said, not read again."""
    reports = {p.name: ingest_file(p)[0] for p in iter_files([SESSION.parent]) if p.parent == SESSION.parent}
    assert set(reports) == {"context.jsonl", "context_1.jsonl", "wire.jsonl"}
    assert reports["context.jsonl"].status == "ok"
    assert reports["context_1.jsonl"].status == "skipped" and "revert" in reports["context_1.jsonl"].errors[0].reason
    assert reports["wire.jsonl"].status == "skipped" and "context.jsonl" in reports["wire.jsonl"].errors[0].reason
    rotated = lines(SESSION.with_name("context_1.jsonl"))
    assert "pip install click" not in {c.command for c in ingest_file(SESSION)[1][0].tool_calls()}
    assert any("pip install click" in json.dumps(r) for r in rotated)  # only the abandoned copy holds it


def test_it_is_claimed_by_kimi_cli_only() -> None:
    claims = [f.name for f in registered_formats() if f.sniff(Probe.read(SESSION))]
    assert claims == ["kimi-cli"]


def test_a_damaged_line_costs_that_line(tmp_path: Path) -> None:
    path = tmp_path / "s" / "context.jsonl"
    path.parent.mkdir()
    shutil.copy(SESSION, path)
    text = path.read_text().splitlines()
    text[3] = text[3][:30]  # the first assistant message, with its ReadFile call
    path.write_text("\n".join(text) + "\n")
    report, [t] = ingest_file(path)
    assert [e.line for e in report.errors] == [4] and len(t.tool_calls()) == 5


def test_the_hooks_context_handed_back_is_not_the_task(tmp_path: Path) -> None:
    """Kimi CLI adds a hook's additionalContext to the turn as a system reminder: skillmill's own words."""
    from pipeline.agents import hook

    rows = lines()
    context = hook.voice.SKILLS_HEADER + " Read a skill's SKILL.md before relying on it.\n\n## ruff-recursive-fix"
    rows.insert(2, {"role": "user", "content": [{"type": "text", "text": context}]})  # unwrapped, a turn of its own
    rows[3]["content"].append({"type": "text", "text": f"<system-reminder>{context}</system-reminder>"})
    path = tmp_path / "s" / "context.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _, [t] = ingest_file(path)
    assert t.task == lines()[2]["content"][0]["text"]
    assert all(s.meta for s in t.steps if "ruff-recursive-fix" in s.text)


def test_the_session_end_hook_finds_the_transcript_kimi_wrote(tmp_path: Path, monkeypatch) -> None:
    from pipeline.agents import hook

    monkeypatch.setenv("KIMI_SHARE_DIR", str(SHARE))
    payload = {"hook_event_name": "Stop", "session_id": SESSION.parent.name, "cwd": "/home/dev/tinycalc"}
    assert hook._with_transcript("kimi", payload)["transcript_path"] == str(SESSION)
    for odd in ({**payload, "session_id": "../../x"}, {**payload, "cwd": "relative"}):
        assert "transcript_path" not in hook._with_transcript("kimi", odd)
    assert "transcript_path" not in hook._with_transcript("codex", payload)  # the others name theirs


def test_a_refused_edit_is_the_harness_not_the_project(tmp_path: Path) -> None:
    rows = lines()
    edit_result = next(r for r in rows if r.get("tool_call_id") == "StrReplaceFile:1")
    edit_result["content"] = [{"type": "text", "text": "<system>ERROR</system>"}, {"type": "text", "text":
                              "<system>No replacements were made. The old string was not found in the file.</system>"}]
    path = tmp_path / "s" / "context.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _, [t] = ingest_file(path)
    refused = t.result_of(t.tool_calls()[1])
    assert refused.is_error and refused.protocol_error
    assert not any(s.protocol_error for s in t.steps if s.call_id == "Shell:2")  # a failing test run is the project's


def test_a_background_task_ends_in_its_notification_not_in_its_start(tmp_path: Path) -> None:
    """Round 14 of issue 23: a Shell call run in the background answers 'started in background' (no result yet); the
    CLI's <notification> user message says how it ended (kimi_cli/notifications/llm.py): that is its exit code, and
    the notification is the CLI's words, not the person's last instruction."""
    from pipeline.ingest import ingest_file
    from pipeline.trajectory import StepKind

    note = "\n".join(['<notification id="n1" category="task" type="task.completed" source_kind="background_task" '
                      'source_id="bash-7c1e">', "Title: Background task completed", "<task-notification>",
                      "Task ID: bash-7c1e", "Status: failed", "Exit code: 1", "Output tail:",
                      "1 failed, 1 passed in 0.04s", "</task-notification>", "</notification>"])
    shell = lambda n, args: {"role": "assistant", "content": "", "tool_calls": [  # noqa: E731
        {"type": "function", "id": f"Shell:{n}", "function": {"name": "Shell", "arguments": json.dumps(args)}}]}
    rows = [
        {"role": "_checkpoint", "id": 0},
        {"role": "user", "content": [{"type": "text", "text": "make divide exit 2 on zero"}]},
        shell(1, {"command": "python -m pytest -q", "run_in_background": True}),
        {"role": "tool", "content": [{"type": "text", "text": "<system>Command started in background.</system>"},
                                     {"type": "text", "text": "task_id: bash-7c1e\nstatus: running"}],
         "tool_call_id": "Shell:1"},
        {"role": "user", "content": [{"type": "text", "text": note}]},
    ]
    session = tmp_path / "sessions" / ("0" * 32) / "6b0f3c9e-2d41-4c7a-8e55-1f2a3b4c5d6e" / "context.jsonl"
    session.parent.mkdir(parents=True)
    session.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    report, [trajectory] = ingest_file(session)
    assert report.format == "kimi-cli", report.errors
    [call] = trajectory.tool_calls()
    result = trajectory.result_of(call)
    assert (result.exit_code, result.is_error) == (1, True)
    people = [s.text for s in trajectory.steps if s.kind is StepKind.USER and not s.meta]
    assert people == ["make divide exit 2 on zero"]
