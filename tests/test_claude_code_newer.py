"""Claude Code 2.x entries the reader used to skip: queued prompts, local commands, pr-link, and
subagents streamed into their parent as ``progress`` entries.

The queue tests read the real 2.0.76 sessions in ../shared/trajectories/claude_code. No real file
holds ``agent_progress`` entries, so ``tests/fixtures/claude_code/agent-progress-7b1e9c2a.jsonl``
is built from the documented shape of a 2.1.73 line (``{"type":"progress","data":{"message":{...},
"type":"agent_progress","prompt":...,"agentId":...},"toolUseID":"agent_msg_...","parentToolUseID":
"toolu_..."}``, as quoted from a real session in a public format reference, and the claude-code
issues #18905 / #19040 on ``normalizedMessages``), with ``its-own-file/`` holding the subagent's
own file as 2.1.x writes it beside the session.
"""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

from pipeline.ingest import Checkpoint, ingest_file
from pipeline.trajectory import StepKind

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"
PROGRESS = FIXTURES / "agent-progress-7b1e9c2a.jsonl"
AGENT = "a3f9c1d27e4b5a6c8"
OWN_FILE = FIXTURES / "its-own-file" / f"agent-{AGENT}.jsonl"


def tool_use_ids(path: Path) -> list[str]:
    """Every tool_use id in the file, in the entries and inside agent_progress messages."""
    ids = []
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        data = entry.get("data") if isinstance(entry.get("data"), dict) else {}
        message = (data.get("message") or {}).get("message") if data.get("type") == "agent_progress" else None
        for container in (entry.get("message"), message):
            for block in (container or {}).get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    ids.append(block["id"])
    return ids


def prompts(trajectory) -> list[str]:
    return [s.text for s in trajectory.steps if s.kind is StepKind.USER and not s.meta]


def test_a_subagent_streamed_into_its_parent_is_its_own_trajectory(tmp_path: Path) -> None:
    path = tmp_path / PROGRESS.name
    shutil.copy(PROGRESS, path)
    report, [main, sub] = ingest_file(path)
    assert (report.status, report.format) == ("ok", "claude-code")
    assert [c.tool for c in main.tool_calls()] == ["Task", "Edit", "Bash"]
    assert [c.tool for c in sub.tool_calls()] == ["Bash", "Read"]
    # the re-streamed message (same uuid) and normalizedMessages are not read again
    assert sorted(c.call_id for t in (main, sub) for c in t.tool_calls()) == sorted(set(tool_use_ids(path)))
    assert sub.session_id == f"agent-{AGENT}" and sub.parent_session_id == main.session_id
    assert sub.task == "Run the cart tests and report the failing assertion"
    assert sub.model == "claude-haiku-4-5" and main.model == "claude-opus-4-6"
    assert sub.cwd == main.cwd == "/home/dev/shop" and sub.agent_version == "2.1.73"
    failing = sub.result_of(sub.tool_calls()[0])
    assert (failing.exit_code, failing.is_error) == (1, True)
    assert main.outcome.status == "resolved" and sub.outcome.status == "failed"


def test_with_the_subagent_s_own_file_beside_it_its_calls_are_counted_once(tmp_path: Path) -> None:
    path = tmp_path / PROGRESS.name
    shutil.copy(PROGRESS, path)
    folder = tmp_path / PROGRESS.stem / "subagents"
    folder.mkdir(parents=True)
    shutil.copy(OWN_FILE, folder / OWN_FILE.name)
    _, parent = ingest_file(path)
    _, own = ingest_file(folder / OWN_FILE.name)
    assert [t.session_id for t in parent] == ["7b1e9c2a-4d3f-4e8a-9b6c-1f2e3d4c5b6a"]
    assert [t.session_id for t in own] == [f"agent-{AGENT}"]
    calls = [c.call_id for t in (*parent, *own) for c in t.tool_calls()]
    assert len(calls) == len(set(calls)) == 5
    # the <= 2.0 layout: agent-<id>.jsonl beside the session file
    shutil.move(folder / OWN_FILE.name, tmp_path / OWN_FILE.name)
    _, parent = ingest_file(path)
    assert len(parent) == 1 and len(parent[0].tool_calls()) == 3


def test_a_prompt_handed_over_mid_turn_is_the_person_s_step(corpus: Path) -> None:
    """2.0.76 writes ``enqueue`` with the text and ``remove`` when it goes to the model with the next
    tool result, and nothing else: the reply right after reacts to it."""
    _, [t] = ingest_file(corpus / "claude_code/codemie-code/session-624a4a58.jsonl")
    said = prompts(t)
    assert said.count("no, add conversationId field, but set value from sessionId") == 1
    assert len(said) == 15  # 14 before
    _, [t] = ingest_file(corpus / "claude_code/codemie-code/session-3fe1b6bc.jsonl")
    said = prompts(t)
    # enqueue, popAll (taken back to be edited), enqueue of the edited text, remove: one prompt
    assert [p for p in said if p.startswith("check 019b7f07")] == [
        "check 019b7f07-4a68-7d10-a8ef-8454269f439d and event_msg type"]
    assert len(said) == 9


def test_a_dequeued_prompt_comes_as_its_user_entry_and_is_not_read_twice(corpus: Path) -> None:
    _, [t] = ingest_file(corpus / "claude_code/codemie-code/session-196820da.jsonl")
    assert prompts(t).count("don't produce code, design solution first") == 1
    assert len(prompts(t)) == 13  # as before: both queued prompts came back as user entries


def test_both_records_of_one_queued_prompt_make_one_step(tmp_path: Path) -> None:
    lines = PROGRESS.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if '"operation":"remove"' in line)
    attachment = {"parentUuid": "u-3", "isSidechain": False, "type": "attachment", "uuid": "att-1",
                  "timestamp": "2026-03-11T10:00:12.100Z", "sessionId": "7b1e9c2a-4d3f-4e8a-9b6c-1f2e3d4c5b6a",
                  "attachment": {"type": "queued_command", "prompt": "and run the whole test suite once the fix is in",
                                 "commandMode": "prompt"}}
    lines.insert(at + 2, json.dumps(attachment))
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n")
    _, [main, _] = ingest_file(path)
    assert prompts(main).count("and run the whole test suite once the fix is in") == 1


def test_local_commands_pr_links_and_the_other_2_1_entries(tmp_path: Path) -> None:
    path = tmp_path / PROGRESS.name
    shutil.copy(PROGRESS, path)
    _, [main, _] = ingest_file(path)
    assert main.repo == "acme/shop"  # pr-link's prRepository
    command = [s for s in main.steps if s.text == "/cost"]
    assert len(command) == 1 and command[0].meta  # the person's slash command, not a request
    assert main.task == "Find why the cart total test fails and fix it"
    texts = " ".join(s.text for s in main.steps)
    for ignored in ("Overloaded", "Microcompact", "Fix cart total", "shop-fixer", "bypassPermissions"):
        assert ignored not in texts


def test_a_grown_session_resumes_to_what_a_whole_read_gives(tmp_path: Path) -> None:
    lines = PROGRESS.read_text().splitlines(keepends=True)
    path = tmp_path / PROGRESS.name
    whole = [t.model_dump(exclude={"source_path"}) for t in ingest_file(PROGRESS)[1]]
    for cut in (6, 14, 16, 20):  # mid-subagent, between enqueue and remove, after remove ...
        path.write_text("".join(lines[:cut]))
        checkpoint = Checkpoint()
        ingest_file(path, checkpoint=checkpoint)
        state = pickle.loads(checkpoint.state)
        assert state.sessions
        path.write_text("".join(lines))
        _, resumed = ingest_file(path, checkpoint=checkpoint)
        assert [t.model_dump(exclude={"source_path"}) for t in resumed] == whole, cut


def test_a_secret_in_a_queued_prompt_is_redacted_in_the_steps_and_the_saved_state(tmp_path: Path) -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    text = PROGRESS.read_text().replace("and run the whole test suite once the fix is in",
                                        f"use the token {secret} for the registry")
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if '"operation":"remove"' in line)
    path = tmp_path / PROGRESS.name
    path.write_text("".join(lines[:at]))  # the prompt still waits in the queue
    checkpoint = Checkpoint()
    ingest_file(path, checkpoint=checkpoint)
    assert secret not in checkpoint.state.decode("latin-1")
    path.write_text(text)
    _, trajectories = ingest_file(path, checkpoint=checkpoint)
    dumped = "".join(t.model_dump_json() for t in trajectories)
    assert secret not in dumped and "[REDACTED" in dumped
