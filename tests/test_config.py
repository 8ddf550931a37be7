"""Configuration: flag over environment over config file over default, each value with its origin."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import config
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
