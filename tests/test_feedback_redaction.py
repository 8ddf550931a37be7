"""Issue 12: feedback notes are redacted before they are stored or shown, and capped in size.

Agents paste what they saw into ``skill_feedback`` notes: tokens, passwords, whole logs. A note
is journaled redacted; ``feedback add`` refuses one over 4,000 characters, the MCP tool cuts it
(the verdict is still worth having) and says so; journals written before are redacted when read.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.recall import feedback
from tests.planted import Factory, Secret

SKILL = "github-awesome-copilot/ruff-recursive-fix"


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def _secrets() -> list[Secret]:
    return [*Factory(31).secrets()[:8], *Factory(31).forms()[:6]]


def _left(secrets: list[Secret], text: str) -> list[str]:
    return [s.kind for s in secrets for f in s.fragments() if f in text]


def _journal_text() -> str:
    return "".join(p.read_text(encoding="utf-8") for p in feedback.journal_dir().glob("*.json"))


@pytest.fixture
def deploy_billing(tmp_path: Path) -> None:
    """A skill called deploy-billing in the recall index: ``feedback add`` refuses names it does not know."""
    folder = tmp_path / "team" / "deploy-billing"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: deploy-billing\ndescription: Deploy the billing service.\n---\n")
    assert cli("index", "--skills", str(folder.parent))[0] == 0


@pytest.mark.usefixtures("deploy_billing")
def test_a_note_is_redacted_in_the_journal_and_in_every_listing() -> None:
    secrets = _secrets()
    note = "it failed, I had to run:\n" + "\n".join(s.line for s in secrets)
    code, out = cli("feedback", "add", "deploy-billing", "wrong", "--note", note)
    assert code == 0 and "Recorded wrong for deploy-billing." in out
    assert not _left(secrets, _journal_text()) and "[REDACTED:" in _journal_text()
    code, listed = cli("feedback", "list", "--json")
    assert code == 0 and not _left(secrets, listed)
    assert "[REDACTED:openai-api-key]" in json.loads(listed.splitlines()[0])["last_note"]
    code, listed = cli("feedback", "list")
    assert code == 0 and not _left(secrets, listed) and "last note: it failed" in listed


@pytest.mark.usefixtures("deploy_billing")
def test_a_note_over_the_limit_is_refused_by_the_cli_with_what_to_do() -> None:
    for size in (feedback.MAX_NOTE + 1, 50_000_000):
        code, out = cli("feedback", "add", "deploy-billing", "stale", "--note", "x" * size)
        assert code == 2, out
        assert f"{size:,} characters long" in out and "4,000" in out and "hint:" in out
    assert not list(feedback.journal_dir().glob("*.json")) if feedback.journal_dir().is_dir() else True
    assert cli("feedback", "add", "deploy-billing", "stale", "--note", "x" * feedback.MAX_NOTE)[0] == 0


def test_journals_written_before_redaction_are_redacted_when_read() -> None:
    secrets = _secrets()
    folder = feedback.journal_dir()
    folder.mkdir(parents=True)
    old = {"id": "a" * 32, "skill": "deploy-billing", "path": None, "verdict": "wrong",
           "note": "\n".join(s.line for s in secrets) + "y" * 60_000, "source": "mcp",
           "created_at": "2026-11-30T10:00:00+00:00"}
    (folder / "20261130T100000000000-old.json").write_text(json.dumps(old), encoding="utf-8")
    events = feedback.events()
    assert len(events) == 1 and not _left(secrets, json.dumps(events))
    assert len(events[0]["note"]) <= feedback.MAX_NOTE and events[0]["note"].endswith("kept]")
    code, listed = cli("feedback", "list", "--json")
    assert code == 0 and not _left(secrets, listed)


def test_the_mcp_tool_redacts_and_cuts_a_note_and_says_so(skills_corpus: Path, tmp_path: Path) -> None:
    from mcp import Client

    from pipeline.agents.mcp_server import build_server

    folder = tmp_path / "team"
    shutil.copytree(skills_corpus / SKILL, folder / SKILL)
    assert cli("index", "--skills", str(folder))[0] == 0
    secrets = _secrets()
    planted = "\n".join(s.line for s in secrets)

    async def session() -> list[tuple[bool, str]]:
        async with Client(build_server()) as client:
            replies = []
            for note in (f"worked after:\n{planted}", planted + "\n" + "log line\n" * 6_000_000):
                result = await client.call_tool("skill_feedback", {"name": "ruff-recursive-fix",
                                                                   "verdict": "helpful", "note": note})
                replies.append((result.is_error, result.content[0].text))
            return replies

    (error, short), (cut_error, cut) = asyncio.run(session())
    assert not error and not cut_error
    assert short == "Recorded helpful for ruff-recursive-fix. Thank you."
    assert "Your note was cut to 4,000 characters." in cut
    events = feedback.events()
    assert len(events) == 2 and not _left(secrets, json.dumps(events))
    assert all(len(e["note"]) <= feedback.MAX_NOTE for e in events)
    assert "[REDACTED:" in events[0]["note"] and events[1]["note"].endswith("kept]")


def test_a_skill_name_that_cannot_be_one_is_refused() -> None:
    code, out = cli("feedback", "add", "x" * 1000, "helpful")
    assert code == 2 and "names have at most" in out
