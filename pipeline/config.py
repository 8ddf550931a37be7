"""Configuration in a documented order: flag, then environment variable, then config file, then default.

The config file is ``$SKILLMILL_HOME/skillmill.toml``. Every value remembers where it came
from (``Config.origin``), so ``skillmill config show`` can say it. Sections are pydantic models;
stages add their fields here, in one place.

    [sources]
    paths = ["~/.claude/projects", "~/.codex/sessions"]
    ignore_paths = ["~/work/secret-repo"]

    [redaction]
    extra_patterns = { internal-token = "itk_[A-Za-z0-9]{32}" }
    allow = ["sk-test-not-a-secret"]

    [llm]
    model = "openai/gpt-5-mini"
    budget_usd = 2.0
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline import settings
from pipeline.errors import UsageError

CONFIG_FILE = "skillmill.toml"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SourcesConfig(_Section):
    paths: list[str] | None = Field(None, description="Where to look when `skillmill run` gets no paths.")
    ignore_paths: list[str] = Field(default_factory=list, description="Never read anything below these.")


class RedactionConfig(_Section):
    extra_patterns: dict[str, str] = Field(default_factory=dict, description="kind -> regex, redacted too.")
    allow: list[str] = Field(default_factory=list, description="Values never redacted (test fixtures).")


class LLMConfig(_Section):
    model: str | None = Field(None, description="A litellm model string; unset = the zero-LLM distiller.")
    api_base: str | None = None
    budget_usd: float | None = None
    budget_tokens: int | None = None
    concurrency: int = 4


class RecallConfig(_Section):
    embedder: str | None = Field(None, description="Semantic channel: <kind>:<local path>, e.g. static:/models/m2v.")


class Config(_Section):
    library: str | None = None
    sources: SourcesConfig = Field(default_factory=SourcesConfig)
    redaction: RedactionConfig = Field(default_factory=RedactionConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    recall: RecallConfig = Field(default_factory=RecallConfig)
    #: dotted key -> "default" | "file <path>" | "env <NAME>" | "flag"
    origin: dict[str, str] = Field(default_factory=dict, exclude=True)

    def source_of(self, key: str) -> str:
        return self.origin.get(key, "default")


#: Environment variables that override config keys.
ENV_KEYS = {
    "SKILLMILL_LIBRARY": "library",
    "SKILLMILL_MODEL": "llm.model",
    "SKILLMILL_API_BASE": "llm.api_base",
    "SKILLMILL_BUDGET_USD": "llm.budget_usd",
    "SKILLMILL_BUDGET_TOKENS": "llm.budget_tokens",
    "SKILLMILL_EMBEDDER": "recall.embedder",
}


def config_path() -> Path:
    return settings.home() / CONFIG_FILE


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for part in parents:
        data = data.setdefault(part, {})
    data[leaf] = value


def _walk(data: dict[str, Any], prefix: str = "") -> list[str]:
    keys = []
    for key, value in data.items():
        if isinstance(value, dict) and key in Config.model_fields and key != "origin":
            keys.extend(_walk(value, f"{prefix}{key}."))
        else:
            keys.append(f"{prefix}{key}")
    return keys


def load(flags: dict[str, Any] | None = None) -> Config:
    """The effective config. ``flags`` are dotted keys set on the command line (None = not given)."""
    data: dict[str, Any] = {}
    origin: dict[str, str] = {}
    path = config_path()
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path} is not valid TOML: {exc}", hint="fix the file or remove it") from exc
        origin.update({key: f"file {path}" for key in _walk(data)})
    for name, key in ENV_KEYS.items():
        if os.environ.get(name):
            _set(data, key, os.environ[name])
            origin[key] = f"env {name}"
    for key, value in (flags or {}).items():
        if value is not None:
            _set(data, key, value)
            origin[key] = "flag"
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        places = f"{path}, environment variables ({', '.join(ENV_KEYS)}) and flags"
        raise UsageError(f"invalid configuration: {exc}", hint=f"values come from {places}") from exc
    config.origin = origin
    return config
