"""``skillmill schedule``: the cron checks, the plan, and ``--dry-run`` (which starts nothing).

Serving for real, against a real ``prefect server start``, is in ``test_prefect_server.py``.
"""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline import cron as cron_check
from pipeline import schedule
from pipeline.cli import main
from tests.conftest import SAMPLES


@pytest.mark.parametrize("cron", ["0 2 * * *", "*/15 * * * *", "30 3 * * 1-5", "0 0 1,15 * *", "0 6 * jan-mar sun",
                                  "@daily", "0 2 * * 7"])
def test_valid_cron_expressions_pass(cron: str) -> None:
    assert cron_check.check_cron(cron) == cron
    assert len(schedule.next_runs(cron, "UTC")) == 3  # and croniter, which Prefect's scheduler uses, agrees


@pytest.mark.parametrize(("cron", "says"), [("0 2 * *", "needs 5 fields"), ("60 2 * * *", "minute field"),
                                            ("0 2 32 * *", "day of month field"), ("0 2 * 13 *", "month field"),
                                            ("0 2 * * 8", "day of week field"), ("*/0 * * * *", "minute field"),
                                            ("0 2 * * mon-funday", "day of week field"), ("", "needs 5 fields")])
def test_invalid_cron_expressions_say_which_field(cron: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        cron_check.check_cron(cron)


def test_next_runs_are_read_in_the_schedule_time_zone() -> None:
    start = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
    berlin = schedule.next_runs("0 2 * * *", "Europe/Berlin", count=2, start=start)
    assert [t.isoformat() for t in berlin] == ["2026-07-02T02:00:00+02:00", "2026-07-03T02:00:00+02:00"]
    assert schedule.next_runs("0 2 * * *", "UTC", count=1, start=start)[0].isoformat() == "2026-07-02T02:00:00+00:00"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _dry_run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["schedule", "--dry-run", *args])
    return result.exit_code, result.output


@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch) -> str:
    """No PREFECT_API_URL, and Prefect's local address on a port nothing listens on."""
    port = _free_port()
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setenv("PREFECT_SERVER_API_PORT", str(port))
    return f"http://127.0.0.1:{port}/api"


def test_dry_run_prints_the_plan_and_starts_nothing(isolated_home: Path, tmp_path: Path, no_server: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_home.mkdir(parents=True)
    (isolated_home / "skillmill.toml").write_text(
        f'[sources]\npaths = ["{SAMPLES}"]\ndefaults = false\n[schedule]\ncron = "30 3 * * 1-5"\n'
        'timezone = "Europe/Berlin"\n')
    code, output = _dry_run("--library", str(tmp_path / "lib"))
    assert code == 0, output
    assert output.startswith("Would serve (dry run: nothing started): flow skillmill-nightly, "
                             "deployment skillmill-nightly/nightly (flows.nightly.nightly)")
    assert f"cron       30 3 * * 1-5  (Europe/Berlin)    from file {isolated_home / 'skillmill.toml'}" in output
    assert f"library    {tmp_path / 'lib'}    from flag" in output
    listed = json.loads(CliRunner().invoke(main, ["sources", "--json"]).output)
    assert [s["path"] for s in listed] == [str(SAMPLES)] and listed[0]["files"] > 0
    assert f"sources    1 place, {listed[0]['files']} candidate files now" in output
    assert f"             {SAMPLES}  ({listed[0]['files']} files)" in output
    assert f"server     {no_server}  (Prefect's local server (PREFECT_API_URL unset); not running: " in output
    assert not schedule.healthy(no_server)  # nothing was started
    assert not (isolated_home / "logs" / "prefect-server.log").exists()

    code, output = _dry_run("--json", "--cron", "0 4 * * *")
    plan = json.loads(output)
    assert plan["cron"] == {"value": "0 4 * * *", "origin": "flag"}
    assert plan["timezone"]["value"] == "Europe/Berlin"
    assert [datetime.fromisoformat(t).hour for t in plan["next_runs"]] == [4, 4, 4]
    assert plan["parameters"] == {"paths": [], "library": str(isolated_home / "skills")}
    assert plan["library"]["origin"] == "default ($SKILLMILL_HOME/skills)"
    assert plan["server"] == {"url": no_server, "origin": "Prefect's local server (PREFECT_API_URL unset)",
                              "running": False, "start": True}
    assert plan["sources"] == listed  # what `skillmill sources` shows


def test_a_bad_cron_flag_is_a_usage_error(no_server: str) -> None:
    code, output = _dry_run("--cron", "0 2 * * * *")
    assert code == 2 and "schedule.cron (flag): cron '0 2 * * * *' needs 5 fields" in output


def test_a_server_that_does_not_answer_is_an_error_with_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{_free_port()}/api"
    monkeypatch.setenv("PREFECT_API_URL", url)
    code, output = _dry_run()
    assert code == 0 and f"server     {url}  (env PREFECT_API_URL; NOT answering)" in output
    result = CliRunner().invoke(main, ["schedule"])
    assert result.exit_code == 1
    assert f"Error: the Prefect server at {url} does not answer" in result.output
    assert "hint: start it (`prefect server start`) or unset PREFECT_API_URL" in result.output


def test_json_without_dry_run_is_refused(no_server: str) -> None:
    result = CliRunner().invoke(main, ["schedule", "--json"])
    assert result.exit_code == 2 and "--json describes the plan" in result.output


def test_a_shared_library_is_synced_on_its_own_schedule_too(isolated_home: Path, tmp_path: Path, no_server: str) -> None:
    """Issue 26: `[library] sync_minutes` serves the sync of a shared library beside the nightly run."""
    import subprocess

    from pipeline import config
    from pipeline.library import Library, sync

    library = isolated_home / "skills"
    remote = tmp_path / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "skillmill.toml").write_text("[library]\nsync_minutes = 15\n")
    code, output = _dry_run("--json")
    assert json.loads(output)["sync"] is None  # not shared yet: nothing to sync
    sync.sync(Library(library), str(remote))
    code, output = _dry_run("--json")
    assert json.loads(output)["sync"] == {"value": 15.0, "origin": f"file {isolated_home / 'skillmill.toml'}"}
    code, output = _dry_run()
    assert "sync       the shared library every 15 min (deployment skillmill-sync/every)" in output
    plan = schedule.plan(config.load())
    nightly, every = schedule.deployments(plan)
    assert (nightly.name, every.name, every.parameters) == ("nightly", "every", {"library": str(library)})
    assert every.schedules[0].schedule.interval.total_seconds() == 15 * 60
