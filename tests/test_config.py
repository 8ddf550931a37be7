"""Configuration: flag over environment over config file over default, each value with its origin."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline import config
from pipeline.cli import main
from pipeline.errors import UsageError


def test_precedence_and_origin(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_home.mkdir(parents=True)
    (isolated_home / "skillmill.toml").write_text(
        'library = "/from/file"\n[llm]\nmodel = "openai/file-model"\nbudget_usd = 1.5\n')
    loaded = config.load()
    assert loaded.library == "/from/file" and loaded.llm.budget_usd == 1.5
    assert loaded.source_of("llm.model").startswith("file ")
    assert loaded.source_of("llm.concurrency") == "default"
    monkeypatch.setenv("SKILLMILL_MODEL", "openai/env-model")
    loaded = config.load({"library": "/from/flag"})
    assert loaded.llm.model == "openai/env-model" and loaded.source_of("llm.model") == "env SKILLMILL_MODEL"
    assert loaded.library == "/from/flag" and loaded.source_of("library") == "flag"


@pytest.mark.parametrize("text", ["library = [unclosed", "[llm]\nmodle = 'typo'\n"])
def test_bad_config_is_a_usage_error_naming_the_file(isolated_home: Path, text: str) -> None:
    isolated_home.mkdir(parents=True)
    (isolated_home / "skillmill.toml").write_text(text)
    with pytest.raises(UsageError) as error:
        config.load()
    assert "skillmill.toml" in str(error.value)


# -- issue 8: [schedule], [run], origins everywhere, `skillmill config show` ------------------------------
def test_each_level_overrides_the_one_below_with_its_origin(isolated_home: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for name in config.ENV_KEYS:
        monkeypatch.delenv(name, raising=False)
    assert config.load().schedule.cron == "0 2 * * *"
    assert config.load().source_of("schedule.cron") == "default"
    isolated_home.mkdir(parents=True)
    path = isolated_home / "skillmill.toml"
    path.write_text('[schedule]\ncron = "30 3 * * 1-5"\n[run]\ntask_runner = "dask"\nconcurrency = 3\n')
    loaded = config.load()
    assert (loaded.schedule.cron, loaded.run.task_runner, loaded.run.concurrency) == ("30 3 * * 1-5", "dask", 3)
    assert loaded.source_of("schedule.cron") == loaded.source_of("run.concurrency") == f"file {path}"
    monkeypatch.setenv("SKILLMILL_CRON", "15 1 * * *")
    monkeypatch.setenv("SKILLMILL_CONCURRENCY", "8")  # env values are strings: validated like the file's
    loaded = config.load()
    assert (loaded.schedule.cron, loaded.run.concurrency) == ("15 1 * * *", 8)
    assert loaded.source_of("schedule.cron") == "env SKILLMILL_CRON"
    assert loaded.source_of("run.task_runner") == f"file {path}"
    loaded = config.load({"schedule.cron": "0 4 * * *", "run.concurrency": None})  # None = flag not given
    assert loaded.schedule.cron == "0 4 * * *" and loaded.source_of("schedule.cron") == "flag"
    assert loaded.run.concurrency == 8 and loaded.source_of("run.concurrency") == "env SKILLMILL_CONCURRENCY"


@pytest.mark.parametrize(("text", "key", "says"), [
    ('[schedule]\ncron = "0 25 * * *"\n', "schedule.cron", "hour field '25'"),
    ('[schedule]\ncron = "every night"\n', "schedule.cron", "needs 5 fields"),
    ('[schedule]\ntimezone = "Mars/Olympus"\n', "schedule.timezone", "unknown time zone"),
    ('[run]\ntask_runner = "celery"\n', "run.task_runner", "'thread' or 'dask'"),
    ('[run]\nconcurrency = 0\n', "run.concurrency", "greater than or equal to 1"),
    ('[review]\ndeprecate_after_days = 0\n', "review.deprecate_after_days", "greater than 0"),
    ("llm = 5\n", "llm", "valid dictionary"),
])
def test_a_bad_value_names_its_key_and_the_file(isolated_home: Path, text: str, key: str, says: str) -> None:
    isolated_home.mkdir(parents=True)
    path = isolated_home / "skillmill.toml"
    path.write_text(text)
    with pytest.raises(UsageError) as error:
        config.load()
    assert f"{key} (file {path})" in error.value.message and says in error.value.message


def test_a_bad_env_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLMILL_CRON", "61 * * * *")
    with pytest.raises(UsageError) as error:
        config.load()
    assert "schedule.cron (env SKILLMILL_CRON): cron '61 * * * *': minute field" in error.value.message


def test_an_unreadable_config_file_is_a_usage_error(isolated_home: Path) -> None:
    (isolated_home / "skillmill.toml").mkdir(parents=True)  # a folder where the file belongs: not read at all
    assert config.load().schedule.cron == "0 2 * * *"
    isolated_home.joinpath("skillmill.toml").rmdir()
    (isolated_home / "skillmill.toml").write_bytes(b"library = \"\xff\"\n")
    with pytest.raises(UsageError, match="skillmill.toml is not valid TOML"):
        config.load()


def _show(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["config", "show", *args], catch_exceptions=False)
    return result.exit_code, result.output


def test_config_show_prints_every_value_with_its_origin(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_home.mkdir(parents=True)
    path = isolated_home / "skillmill.toml"
    path.write_text('[sources]\npaths = ["~/logs"]\n[redaction]\nextra_patterns = { internal-token = "itk_[a-z]{8}" }\n'
                    '[llm]\nmodel = "openai/from-file"\n')
    monkeypatch.setenv("SKILLMILL_MODEL", "openai/from-env")
    monkeypatch.setenv("SKILLMILL_TASK_RUNNER", "dask")
    code, output = _show("--json")
    assert code == 0
    shown = json.loads(output)
    assert shown["file"] == str(path) and shown["file_exists"] is True
    values = shown["values"]
    assert values["llm.model"] == {"value": "openai/from-env", "origin": "env SKILLMILL_MODEL"}
    assert values["sources.paths"] == {"value": ["~/logs"], "origin": f"file {path}"}
    assert values["run.task_runner"] == {"value": "dask", "origin": "env SKILLMILL_TASK_RUNNER"}
    assert values["schedule.cron"] == {"value": "0 2 * * *", "origin": "default"}
    assert values["library"] == {"value": str(isolated_home / "skills"), "origin": "default ($SKILLMILL_HOME/skills)"}
    effective = config.load()
    for key, row in values.items():  # every setting of every section, and nothing else
        section, _, leaf = key.rpartition(".")
        section = "library_sync" if section == "library" else section  # [library] in the file: the sharing settings
        assert row["value"] == getattr(getattr(effective, section) if section else effective, leaf) or key == "library"

    code, text = _show()
    assert code == 0 and text.startswith(f"# config file: {path}\n")
    assert 'model = "openai/from-env"' in text and "# env SKILLMILL_MODEL" in text
    assert 'cron = "0 2 * * *"' in text and "# default; $SKILLMILL_CRON overrides" in text
    # The text is TOML (origins are comments): written back as a config file, it loads to the same values.
    parsed = tomllib.loads(text)
    assert parsed["llm"]["model"] == "openai/from-env" and parsed["sources"]["paths"] == ["~/logs"]
    assert parsed["redaction"]["extra_patterns"] == {"internal-token": "itk_[a-z]{8}"}
    assert "api_base" not in parsed["llm"]  # unset values are comments: TOML has no null


def test_config_show_with_a_bad_file_exits_2_naming_it(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    (isolated_home / "skillmill.toml").write_text('[schedule]\ncron = "0 2 * *"\n')
    result = CliRunner().invoke(main, ["config", "show"])
    assert result.exit_code == 2
    assert "schedule.cron (file " in result.output and "skillmill.toml" in result.output
    assert "Traceback" not in result.output
