"""Files of agents skillmill does not read are named in the report: "looks like a <agent> <thing>: not read yet".

Real files of such agents in ../shared/trajectories: SpecStory's Markdown exports of Cursor chats
(nobody reads them), a JSON dump of Cursor's state.vscdb rows (the database, not this, is what a
reader would take), Goose's projects.json index.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.ingest import detect, ingest_file, iter_files
from pipeline.ingest.lookalikes import looks_like
from pipeline.ingest.reader import Probe

UNREAD = {
    "cursor_agent/cursor-history/workspaceStorage/f87f6e0b2cf1ae8645cc0c5ffaa99529.json":
        "looks like a Cursor state database exported as JSON: not read yet",
    "goose/jwp23-dotfiles/projects.json": "looks like a Goose project index (projects.json): not read yet",
}


@pytest.mark.parametrize("relative", sorted(UNREAD))
def test_a_file_of_an_agent_we_do_not_read_is_named(corpus: Path, relative: str) -> None:
    report, trajectories = ingest_file(corpus / relative)
    assert (report.format, report.status, trajectories) == (None, "skipped", [])
    assert [e.reason for e in report.errors] == [f"{UNREAD[relative]} (see `skillmill formats`)"]


def test_the_cli_says_so(corpus: Path) -> None:
    folder = corpus / "goose"
    result = CliRunner().invoke(main, ["ingest", str(folder)], catch_exceptions=False)
    assert result.output.count("looks like a Goose project index") == 1, result.output
    assert result.output.count("not a trajectory of any known format") == 2, "SOURCES.md and SOURCES.jsonl"


@pytest.mark.parametrize("relative", ["cline/SOURCES.md", "cline/SOURCES.jsonl", "README.md"])
def test_files_of_no_agent_are_still_not_a_trajectory(corpus: Path, relative: str) -> None:
    report, _ = ingest_file(corpus / relative)
    assert report.errors[0].reason == "not a trajectory of any known format (see `skillmill formats`)"
    assert looks_like(Probe.read(corpus / relative)) is None


def test_a_sqlite_store_is_named_by_its_header_and_usual_name(corpus: Path, tmp_path: Path) -> None:
    [store] = (corpus / "goose").rglob("sessions.db")
    copy = tmp_path / "data.sqlite3"
    copy.write_bytes(store.read_bytes())
    assert looks_like(Probe.read(copy)) == "looks like a Kiro CLI / Amazon Q CLI SQLite database: not read yet"
    other = tmp_path / "notes.db"
    other.write_bytes(store.read_bytes())
    assert looks_like(Probe.read(other)) == "a SQLite database of no agent skillmill reads"


def test_no_recogniser_matches_a_file_a_format_reads(corpus: Path) -> None:
    """When a reader for one of these agents is registered, its recogniser is stale: drop it."""
    stale = []
    for path in iter_files([corpus]):
        probe = Probe.read(path)
        if probe.head.strip() and detect(probe) is not None and (found := looks_like(probe)) \
                and "of no agent skillmill reads" not in found:  # the generic SQLite answer names no agent
            stale.append(f"{path.relative_to(corpus)}: read as {detect(probe).name}, yet {found}")
    assert stale == []


def test_formats_lists_what_is_recognised_but_not_read() -> None:
    output = CliRunner().invoke(main, ["formats"], catch_exceptions=False).output
    listed = output.split("Recognised but not read yet", 1)[1]
    assert "Factory Droid session" in listed and "Amp thread" in listed
    assert "Pi coding agent session" not in listed and "Kiro CLI / Amazon Q CLI conversation export" not in listed
