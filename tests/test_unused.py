"""Deprecation proposals: approved skills nobody is given, or agents find unhelpful, over a window.

The skills are this repository's own ``skills/`` manuals (written by a run over ``samples/``),
approved through ``review approve``; serves go through the hook, the MCP tools and ``skillmill
recall``, verdicts through ``feedback add``. The window's end is ``proposals(now=...)``; the
approvals are taken before a mark and one after it, so a window ending 90 days after the mark
holds the serves but not the last approval.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from pipeline.cli import main
from pipeline.library import Library
from pipeline.recall import usage
from pipeline.review.unused import proposals
from tests.conftest import ROOT

DJANGO, FLASK, SYMPY, MATPLOTLIB = "working-in-django", "working-in-flask", "working-in-sympy", "working-in-matplotlib"


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def library() -> Library:
    root = Path(os.environ["SKILLMILL_HOME"]) / "skills"
    shutil.copytree(ROOT / "skills", root)
    return Library(root)


def approve(*names: str) -> None:
    code, out = cli("review", "approve", *names, "--by", "alice")
    assert code == 0, out


def test_unserved_and_unhelpful_skills_are_proposed_and_recent_approvals_are_not(capsys) -> None:
    from pipeline.agents.hook import respond
    from pipeline.agents.mcp_server import build_server
    from pipeline.recall.cli import main as recall

    lib = library()
    approve(DJANGO, FLASK, SYMPY)
    mark = datetime.now(UTC)
    payload = {"hook_event_name": "UserPromptSubmit", "cwd": str(lib.root), "session_id": "s-1",
               "prompt": "how do the django tests run with runtests.py"}
    answer = respond(payload, "mini-swe-agent")
    assert answer and DJANGO in json.loads(answer)["hookSpecificOutput"]["additionalContext"]
    asyncio.run(build_server().call_tool("get_skill", {"name": DJANGO}))
    recall(["how do the sympy tests run with bin/test"])
    assert SYMPY in capsys.readouterr().out
    for verdict in ("not_helpful", "wrong", "not_helpful", "helpful"):
        assert cli("feedback", "add", SYMPY, verdict, "--note", "bin/test did not run here")[0] == 0
    approve(MATPLOTLIB)  # approved after the mark: inside any window that ends 90 days after it

    found = {u.name: u for u in proposals(lib, 90, now=mark + timedelta(days=90))}
    assert set(found) == {FLASK, SYMPY}
    flask, sympy = found[FLASK], found[SYMPY]
    assert (flask.served, flask.last_served, flask.reasons) == (0, None, ["not served to any agent in the last 90 days"])
    assert (sympy.served, sympy.helpful, sympy.unhelpful) == (1, 1, 3)
    assert sympy.reasons == ["agents found it unhelpful: 3 of 4 verdicts in the last 90 days"]
    assert sympy.last_served and sympy.last_served >= mark
    assert flask.command == f'skillmill review deprecate {FLASK} --reason "not served to any agent in the last 90 days"'
    assert lib.get(FLASK).skill.status == "approved"  # proposed, not done

    later = {u.name: u for u in proposals(lib, 90, now=mark + timedelta(days=200))}  # the serves fell out
    assert set(later) == {DJANGO, FLASK, SYMPY, MATPLOTLIB}
    assert later[SYMPY].reasons == ["not served to any agent in the last 90 days"]  # the verdicts are old too
    assert proposals(lib, 90) == []  # today every skill was approved inside the window

    served = sorted((name, source) for name, _when, source in usage.served(mark - timedelta(seconds=1)))
    assert served == [(DJANGO, "hook"), (DJANGO, "mcp"), (SYMPY, "cli")]


def test_hook_sessions_from_before_the_record_count_as_serves() -> None:
    from pipeline.agents.hook import _save_seen

    lib = library()
    _save_seen("older-session", {str(lib.root / FLASK)})  # the hook's own file, as written before this record
    since = datetime.now(UTC) - timedelta(minutes=1)
    assert [(n, s) for n, _w, s in usage.served(since)] == [(FLASK, "hook")]
    assert list(usage.served(datetime.now(UTC) + timedelta(minutes=1))) == []


def test_review_list_shows_the_figures_and_the_command(isolated_home: Path) -> None:
    lib = library()
    approve(DJANGO, FLASK)
    isolated_home.joinpath("skillmill.toml").write_text("[review]\ndeprecate_after_days = 0.0001\n")  # 8.64 s: room for a loaded machine
    time.sleep(8.7)
    assert cli("recall", "--limit", "1", "how do the django tests run with runtests.py")[0] == 0  # django alone
    for _ in range(3):  # served just now, but unhelpful
        assert cli("feedback", "add", DJANGO, "not_helpful")[0] == 0
    code, out = cli("review", "list")
    assert code == 0
    head = out.split("\n\n")[0]
    assert "2 approved skills proposed for DEPRECATION" in head and "nothing was changed" in head
    assert "in the last 8.6 seconds" in head
    assert f"{DJANGO}  (approved since" in head and "served 1 time, last" in head and "3 unhelpful" in head
    assert "agents found it unhelpful: 3 of 3 verdicts in the last 8.6 seconds" in head
    assert f"{FLASK}  (approved since" in head and "served 0 times, never; feedback 0 helpful, 0 unhelpful" in head
    assert f"to retire it: skillmill review deprecate {FLASK} --reason" in head
    assert "candidate" in out  # the queue follows
    listed = json.loads(cli("review", "list", "--json")[1])
    unused = [e for e in listed if "deprecate" in e]
    assert [e["name"] for e in unused] == [FLASK, DJANGO] and listed[:2] == unused  # never served first
    assert unused[0]["served"] == 0 and unused[1]["served"] == 1 and unused[1]["last_served"]
    assert unused[0]["command"].startswith(f"skillmill review deprecate {FLASK} --reason ")
    assert lib.get(FLASK).skill.status == "approved"
    assert not [e for e in json.loads(cli("review", "list", "--json", "--kind", "pitfall")[1]) if "deprecate" in e]
