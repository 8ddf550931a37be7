"""Configuration in a documented order: flag, then environment variable, then config file, then default.

The config file is ``$SKILLMILL_HOME/skillmill.toml``. Every value remembers where it came
from (``Config.origin``), so ``skillmill config show`` can say it. Sections are pydantic models;
stages add their fields here, in one place.

    [sources]
    paths = ["~/work/agent-logs"]            # looked at besides the default locations
    ignore_paths = ["~/work/secret-repo"]    # never read: files below it, and sessions run in it
    repos = ["~/code/app"]                   # where repo-local histories live (Aider)
    repos_map = { "~/scratch/api-*" = "acme/api" }  # sessions run there (or filed there) are acme/api's
    defer_minutes = 5                        # a session changed more recently is read next run

    [redaction]
    extra_patterns = { internal-token = "itk_[A-Za-z0-9]{32}" }
    allow = ["sk-test-not-a-secret"]

    [llm]
    model = "openai/gpt-5-mini"
    budget_usd = 2.0

    [schedule]
    cron = "0 2 * * *"                       # `skillmill schedule`: when the nightly run fires
    timezone = "Europe/Berlin"               # default: this machine's zone

    [run]
    task_runner = "dask"                     # "thread" (default) or "dask"
    dask_address = "tcp://scheduler:8786"    # unset: a LocalCluster on this machine
    concurrency = 4                          # distillation tasks in flight at once
    server_idle_minutes = 10                 # the local Prefect server outlives a run this long; 0: one per run

    [scan]
    enabled = true                           # `skillmill run` scans the checkouts its sessions ran in (default false)

    [handoff]
    enabled = true                           # briefs of unfinished sessions for the next one in the checkout
    expire_days = 7

    [review]
    deprecate_after_days = 90                # approved skills unserved (or mostly unhelpful) this long: proposed
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pipeline import settings
from pipeline.cron import check_cron, check_timezone
from pipeline.errors import UsageError

CONFIG_FILE = "skillmill.toml"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SourcesConfig(_Section):
    paths: list[str] | None = Field(None, description="Where to look when `skillmill run` gets no paths.")
    ignore_paths: list[str] = Field(default_factory=list, description="Never read anything below these.")
    defaults: bool = Field(True, description="Also look in the places each format's agent keeps its files.")
    repos: list[str] = Field(default_factory=list,
                             description="Repositories holding repo-local histories (Aider's .aider.chat.history.md).")
    repos_map: dict[str, str] = Field(default_factory=dict,
                                      description="Folder or glob -> owner/name: the repository of sessions that ran "
                                                  "there (or whose files lie there), for moved or anonymised folders.")
    defer_minutes: float = Field(5.0, ge=0, description="Files changed less than this long ago are still being "
                                                        "written: discovery defers them to the next run.")


class RedactionConfig(_Section):
    extra_patterns: dict[str, str] = Field(default_factory=dict, description="kind -> regex, redacted too.")
    allow: list[str] = Field(default_factory=list, description="Values never redacted (test fixtures).")

    @field_validator("extra_patterns")
    @classmethod
    def _compiles(cls, patterns: dict[str, str]) -> dict[str, str]:
        """A bad pattern is a config error now, not a crash in the middle of a run."""
        for kind, pattern in patterns.items():
            if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", kind):
                raise ValueError(f"kind {kind!r} must be lower-case words joined by '-' (it names the placeholder)")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{kind!r} is not a valid regular expression: {exc}") from exc
        return patterns


class LLMConfig(_Section):
    model: str | None = Field(None, description="A litellm model string; unset = the zero-LLM distiller.")
    api_base: str | None = None
    budget_usd: float | None = None
    budget_tokens: int | None = None
    concurrency: int = 4
    retries: int = Field(3, ge=0, description="Retries of a request after HTTP 429/5xx or a timeout.")
    retry_delay: float = Field(1.0, ge=0, description="First backoff in seconds; doubles on each retry.")
    chunk_chars: int = Field(40_000, ge=2_000, description="Transcript characters per request (~4 per token); "
                                                           "longer sessions are sent in several parts.")


class RecallConfig(_Section):
    embedder: str | None = Field(None, description="Semantic channel: <kind>:<local path>, e.g. static:/models/m2v.")


class ScheduleConfig(_Section):
    cron: str = Field("0 2 * * *", description="When `skillmill schedule` runs the nightly flow (5-field cron).")
    timezone: str | None = Field(None, description="IANA zone the cron is read in; unset = this machine's zone.")

    @field_validator("cron")
    @classmethod
    def _cron(cls, cron: str) -> str:
        """A schedule that never fires is worse than an error: check it when the config loads."""
        return check_cron(cron)

    @field_validator("timezone")
    @classmethod
    def _zone(cls, zone: str | None) -> str | None:
        return check_timezone(zone) if zone else None


class RunConfig(_Section):
    """How a run spreads its work (``pipeline/execution/runners.py``)."""

    task_runner: Literal["thread", "dask"] = Field(
        "thread", description="thread: a thread pool in the run's process; dask: a Dask cluster (prefect-dask).")
    dask_address: str | None = Field(None, description="Scheduler of an existing Dask cluster (tcp://host:8786); "
                                                       "unset: a LocalCluster of `concurrency` worker processes.")
    concurrency: int = Field(4, ge=1, description="Distillation tasks running at once (threads or Dask workers).")
    server_idle_minutes: float = Field(
        10.0, ge=0, description="With no PREFECT_API_URL: the local Prefect server `skillmill run` starts is reused "
                                "by the next runs and stops after this many minutes unused; 0: a temporary server "
                                "per run, stopped with it.")


class ScanConfig(_Section):
    """``skillmill run`` scanning the checkouts its sessions ran in (``pipeline/scan``)."""

    enabled: bool = Field(False, description="Scan each checkout the run's sessions ran in that exists on this "
                                             "machine: update its working-in-<repo> manual, mark stale skills.")


class ReviewConfig(_Section):
    """What ``review list`` proposes besides the queue (``pipeline/review/unused.py``)."""

    deprecate_after_days: float = Field(
        90.0, gt=0, description="An approved skill no agent was given, or agents mostly found unhelpful, in this "
                                "many days is proposed for deprecation (never one approved more recently).")


class HandoffConfig(_Section):
    """Briefs of unfinished sessions for the next one in the same checkout (``pipeline/handoff``; its store reads
    these two keys itself, without this model, on the hook's path; ``tests/test_handoff.py`` holds the
    defaults here and there equal)."""

    enabled: bool = Field(True, description="Write and serve handoffs.")
    expire_days: float = Field(7.0, gt=0, description="A handoff older than this is removed.")


class LibrarySyncConfig(_Section):
    """A team's library on git (``skillmill sync``; ``pipeline/library/sync.py``). Written ``[library]`` in the file,
    beside ``path`` (the same as a top-level ``library = "..."``)."""

    sync_minutes: float = Field(0.0, ge=0, description="While `skillmill schedule` serves, sync a shared library "
                                                       "this often (0: only around each nightly run).")
    sync_after_run: bool = Field(True, description="A nightly run of a shared library syncs it when it ends, so "
                                                   "its candidates reach the team's queue.")


class Config(_Section):
    library: str | None = None
    library_sync: LibrarySyncConfig = Field(default_factory=LibrarySyncConfig)
    sources: SourcesConfig = Field(default_factory=SourcesConfig)
    redaction: RedactionConfig = Field(default_factory=RedactionConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    recall: RecallConfig = Field(default_factory=RecallConfig)
    schedule: ScheduleConfig = Field(default_factory=ScheduleConfig)
    run: RunConfig = Field(default_factory=RunConfig)
    scan: ScanConfig = Field(default_factory=ScanConfig)
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    handoff: HandoffConfig = Field(default_factory=HandoffConfig)
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
    "SKILLMILL_CRON": "schedule.cron",
    "SKILLMILL_TIMEZONE": "schedule.timezone",
    "SKILLMILL_TASK_RUNNER": "run.task_runner",
    "SKILLMILL_DASK_ADDRESS": "run.dask_address",
    "SKILLMILL_CONCURRENCY": "run.concurrency",
    "SKILLMILL_SERVER_IDLE_MINUTES": "run.server_idle_minutes",
}


def config_path() -> Path:
    return settings.home() / CONFIG_FILE


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for part in parents:
        data = data.setdefault(part, {})
        if not isinstance(data, dict):
            return  # the file has a value where a section belongs: validation reports it, naming the file
    data[leaf] = value


def _library_table(data: dict[str, Any]) -> dict[str, Any]:
    """``[library]`` in the file: its ``path`` is the library, the rest the team-sharing settings."""
    table = data.get("library")
    if not isinstance(table, dict):
        return data
    out = {k: v for k, v in data.items() if k != "library"}
    table = dict(table)
    if "path" in table:
        out["library"] = table.pop("path")
    out["library_sync"] = table
    return out


def display_key(key: str) -> str:
    """How a dotted key is written in the file: ``library_sync.sync_minutes`` is ``library.sync_minutes``."""
    return key.replace("library_sync.", "library.", 1) if key.startswith("library_sync.") else key


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
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror}", hint="fix its permissions or remove it") from exc
        data = _library_table(data)
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
        problems = "\n".join(_problem(error, origin) for error in exc.errors())
        raise UsageError(f"invalid configuration:\n{problems}", hint=f"values come from {places}") from exc
    config.origin = origin
    return config


def _problem(error: Any, origin: dict[str, str]) -> str:
    """One validation error as ``key (where it came from): what is wrong``."""
    key = ".".join(str(part) for part in error["loc"]) or "(top level)"
    where = next((origin[k] for k in _prefixes(key) if k in origin), "default")
    key = display_key(key)
    message = error["msg"].removeprefix("Value error, ")
    return f"  {key} ({where}): {message}"


def _prefixes(key: str) -> list[str]:
    parts = key.split(".")
    return [".".join(parts[:n]) for n in range(len(parts), 0, -1)]


def entries(cfg: Config) -> list[tuple[str, Any, str]]:
    """Every setting as ``(dotted key, effective value, origin)``, in the order the sections declare them.

    The library's effective default is resolved (``$SKILLMILL_HOME/skills``), since that is the
    folder a run writes; other unset values stay ``None`` (the feature is off or uses its own default).
    """
    rows: list[tuple[str, Any, str]] = []
    for name in Config.model_fields:
        if name == "origin":
            continue
        value = getattr(cfg, name)
        if isinstance(value, _Section):
            for sub in type(value).model_fields:
                key = f"{name}.{sub}"
                rows.append((display_key(key), getattr(value, sub), cfg.source_of(key)))
        elif name == "library" and value is None:
            rows.append((name, str(settings.home() / "skills"), "default ($SKILLMILL_HOME/skills)"))
        else:
            rows.append((name, value, cfg.source_of(name)))
    return rows
