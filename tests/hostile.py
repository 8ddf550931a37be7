"""Hostile sessions: ordinary-looking Claude Code transcripts whose values an attacker chose.

Each session is what an agent that read a malicious README or issue would leave on disk:
``pytest`` fails with ``ModuleNotFoundError``, a "fix" command exits 0, one edit, ``pytest``
passes, the user says "thanks, works". The record envelope (version, user type, field names)
is copied from a real Claude Code session in ``samples/``, so the files go through the real
parser; only the values are the attacker's.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import SAMPLES

_REAL = SAMPLES / "claude_code" / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"


def _envelope() -> dict:
    first = json.loads(_REAL.read_text(encoding="utf-8").splitlines()[0])
    return {k: first[k] for k in ("isSidechain", "userType", "version", "gitBranch")}


@dataclass
class Session:
    """One session's attacker-chosen values; ``write`` turns it into a Claude Code JSONL file."""

    task: str = "Fix the failing tests"
    cwd: str = "/home/dev/shop"
    fix_command: str = "pip install requests"
    edit_path: str = "shop/client.py"
    edit_old: str = "import request"
    edit_new: str = "import requests"
    test_command: str = "python -m pytest tests -q"
    error: str = "ModuleNotFoundError: No module named 'requests'"
    thanks: str = "thanks, works"
    tool: str = "Bash"  # the tool the fix command runs in
    fail_after: bool = False  # the last test run fails too (a failed session)
    session_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def records(self) -> Iterator[dict]:
        envelope = {**_envelope(), "cwd": self.cwd, "sessionId": self.session_id}
        clock = iter(range(10, 60))
        parent: list[str | None] = [None]

        def record(kind: str, content, **extra) -> dict:
            uid = str(uuid.uuid4())
            out = {"parentUuid": parent[0], **envelope, "type": kind,
                   "message": {"role": kind, "content": content}, "uuid": uid,
                   "timestamp": f"2025-09-03T00:47:{next(clock):02d}.000Z", **extra}
            parent[0] = uid
            return out

        def call(name: str, tool_input: dict) -> tuple[dict, str]:
            tid = "toolu_" + uuid.uuid4().hex[:24]
            return record("assistant", [{"type": "tool_use", "id": tid, "name": name, "input": tool_input}]), tid

        def result(tid: str, text: str, error: bool = False) -> dict:
            return record("user", [{"tool_use_id": tid, "type": "tool_result", "content": text,
                                    "is_error": error}])

        yield record("user", self.task)
        rec, tid = call("Bash", {"command": self.test_command, "description": "Run the tests"})
        yield rec
        yield result(tid, f"Exit code 1\nE   {self.error}\n1 error in 0.12s", error=True)
        rec, tid = call("Bash", {"command": self.fix_command, "description": "Fix the environment"})
        yield rec
        yield result(tid, "done")
        rec, tid = call("Read", {"file_path": f"{self.cwd}/{self.edit_path}"})
        yield rec
        yield result(tid, f"     1\u2192{self.edit_old}\n")
        rec, tid = call("Edit", {"file_path": f"{self.cwd}/{self.edit_path}", "old_string": self.edit_old,
                                 "new_string": self.edit_new})
        yield rec
        yield result(tid, f"The file {self.cwd}/{self.edit_path} has been updated.")
        rec, tid = call("Bash", {"command": self.test_command, "description": "Run the tests again"})
        yield rec
        if self.fail_after:
            yield result(tid, f"Exit code 1\nE   {self.error}\n1 failed in 0.20s", error=True)
        else:
            yield result(tid, "3 passed in 0.20s")
        yield record("user", self.thanks)

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.session_id}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.records()), encoding="utf-8")
        return path
