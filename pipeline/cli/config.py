"""``skillmill config show``: the effective configuration and where each value came from."""

from __future__ import annotations

import re
from typing import Any

import click
import orjson

from pipeline.cli._help import Group
from pipeline.cli._output import emit_json


@click.group("config", cls=Group)
def command() -> None:
    """Inspect skillmill's configuration ($SKILLMILL_HOME/skillmill.toml, env vars, flags)."""


@command.command("show")
@click.option("--json", "as_json", is_flag=True,
              help='Print {"file", "file_exists", "values": {"<section.key>": {"value", "origin"}}}.')
def show(as_json: bool) -> None:
    """Print every setting's effective value and its origin: a flag, an env var, the file, or the default.

    \b
    Precedence: command-line flag > environment variable > config file > default.
    The output is valid TOML (origins are comments), so it can seed a config file.
    """
    from pipeline import config

    path = config.config_path()
    cfg = config.load()
    rows = config.entries(cfg)
    if as_json:
        emit_json({"file": str(path), "file_exists": path.is_file(),
                   "values": {key: {"value": value, "origin": origin} for key, value, origin in rows}})
        return
    state = "" if path.is_file() else " (not found: defaults and environment only)"
    click.echo(f"# config file: {path}{state}")
    click.echo("# precedence: flag > environment variable > config file > default")
    env = {key: name for name, key in config.ENV_KEYS.items()}
    section = None
    for key, value, origin in rows:
        shown = "library.path" if key == "library" else key  # [library] holds it beside the sharing settings
        head, _, leaf = shown.rpartition(".")
        if head != (section or ""):
            section = head
            click.echo(f"\n[{section}]")
        hint = f"; ${env[key]} overrides" if key in env and not origin.startswith("env") else ""
        name = leaf or key
        text = f"# {name} = (unset)" if value is None else f"{name} = {_toml(value)}"  # TOML has no null
        click.echo(f"{text:<48} # {origin}{hint}")


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        items = ", ".join(f"{_key(k)} = {_toml(v)}" for k, v in value.items())
        return f"{{ {items} }}" if value else "{}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return orjson.dumps(value).decode()


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else orjson.dumps(key).decode()
