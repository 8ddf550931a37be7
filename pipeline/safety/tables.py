"""The per-program tables of ordinary commands, read once from ``ordinary.toml`` (the one source of truth).

``TABLES`` holds them: programs by name, ``python -m`` modules by name, wrappers by name. Reading
checks the file: every KIND is one ``pipeline.safety.kinds`` knows, every table a table refers to
(``include``, ``use``, ``after_dashdash``, ``runs``, ``fallback``) exists. A file that fails is an
error at import, naming the table -- the tables decide what a batch approves, so a typo must not
quietly allow or refuse anything.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.safety import kinds

DATA_FILE = Path(__file__).with_name("ordinary.toml")

_LISTS = ("flags", "first_unless", "builtins", "needs_flag", "standalone")
_MAPS = ("options", "optional", "prefixed")
_SCALARS = ("positional", "first", "max_positional", "after_dashdash", "numeric", "style", "project_args", "why")
_KNOWN = {*_LISTS, *_MAPS, *_SCALARS, "names", "modules", "files", "example", "include", "use", "commands", "fallback",
          "needs_command", "needs_operand", "runs", "python", "raw", "command", "properties"}


class TableError(ValueError):
    """``ordinary.toml`` does not describe tables this module can use."""


@dataclass
class Table:
    """What one program (or subcommand, wrapper) may be given to stay ordinary; see ``ordinary.toml``."""

    label: str  # "pytest", "git log", "npm run": how reasons name it
    key: str = ""  # where it is in the file: "programs.git.commands.log"
    flags: frozenset[str] = frozenset()
    options: dict[str, str] = field(default_factory=dict)
    optional: dict[str, str] = field(default_factory=dict)
    prefixed: dict[str, str] = field(default_factory=dict)
    properties: frozenset[str] | None = None
    numeric: bool = False
    positional: str | None = None
    first: str | None = None
    first_unless: frozenset[str] = frozenset()
    max_positional: int | None = None
    after_dashdash: str | None = None
    commands: dict[str, Table] = field(default_factory=dict)
    fallback: Table | None = None
    builtins: frozenset[str] = frozenset()
    needs_command: bool = False
    needs_operand: bool = False
    needs_flag: frozenset[str] = frozenset()
    standalone: frozenset[str] = frozenset()  # flags that make `needs_operand` moot (`node --version`)
    why: str | None = None  # what the command does without one of `needs_flag`
    runs: frozenset[str] | None = None  # programs the rest of the line may be; frozenset({"any"}) for any
    python: bool = False
    project_args: bool = False
    style: str = "gnu"
    raw: bool = False
    command: str | None = None  # a wrapper's own subcommand ("run" of `uv run`)
    example: str | None = None
    names: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    files: tuple[str, ...] = ()  # project files that are this program: manage.py, setup.py

    def knows(self, option: str) -> bool:
        return option in self.flags or option in self.options or option in self.optional


@dataclass
class Tables:
    programs: dict[str, Table]
    modules: dict[str, Table]
    wrappers: dict[str, Table]
    files: dict[str, Table]  # by file name: "manage.py" -> Django's table
    system_bins: tuple[str, ...]
    every: list[Table]  # every table built, subcommands included (for tests and the benchmark)

    def find(self, ref: str) -> Table:
        """A table by its place in the file ("programs.pytest", "shared.js-script", "pytest")."""
        table = self._by_key.get(ref) or self._by_key.get(f"shared.{ref}") or self._by_key.get(f"programs.{ref}")
        if table is None:
            raise TableError(f"{DATA_FILE}: no table {ref!r}")
        return table

    def __post_init__(self) -> None:
        self._by_key = {t.key: t for t in self.every}


def load(path: Path = DATA_FILE) -> Tables:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    kinds.OUTWARD.clear()
    kinds.OUTWARD.update(data.get("outward_names", []))
    kinds.GRADLE_TASKS.clear()
    kinds.GRADLE_TASKS.update(data.get("gradle_tasks", []))
    kinds.ENVIRONMENT.clear()
    kinds.ENVIRONMENT.update(data.get("environment", {}))
    for name, kind in kinds.ENVIRONMENT.items():
        _kind(kind, f"environment.{name}", path)
    builder = _Builder(data, path)
    programs = {key: builder.table(f"programs.{key}", key) for key in data.get("programs", {})}
    wrappers = {key: builder.table(f"wrappers.{key}", key) for key in data.get("wrappers", {})}
    for key in data.get("shared", {}):
        builder.table(f"shared.{key}", key)
    by_name: dict[str, Table] = {}
    modules: dict[str, Table] = {}
    files: dict[str, Table] = {}
    for table in programs.values():
        for name in table.names:
            by_name[name] = table
        for module in table.modules:
            modules[module] = table
        for file in table.files:
            files[file] = table
    tables = Tables(by_name, modules, wrappers, files, tuple(data.get("system_bins", [])), list(builder.built.values()))
    builder.check_refs(tables)
    return tables


class _Builder:
    def __init__(self, data: dict[str, Any], path: Path) -> None:
        self.data, self.path = data, path
        self.built: dict[str, Table] = {}

    def raw(self, key: str) -> dict[str, Any]:
        node: Any = self.data
        for part in _split(key):
            if not isinstance(node, dict) or part not in node:
                raise TableError(f"{self.path}: no table {key!r}")
            node = node[part]
        return node

    def resolve(self, ref: str) -> str:
        for key in (ref, f"shared.{ref}", f"programs.{ref}"):
            try:
                self.raw(key)
                return key
            except TableError:
                continue
        raise TableError(f"{self.path}: no table {ref!r}")

    def merged(self, key: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
        """The table at KEY with its ``include``s merged in: lists and options joined, scalars filled."""
        own = dict(self.raw(key))
        unknown = set(own) - _KNOWN
        if unknown:
            raise TableError(f"{self.path}: [{key}] has {', '.join(sorted(unknown))}, which tables do not have")
        for ref in own.get("include", []):
            other_key = self.resolve(ref)
            if other_key in seen:
                raise TableError(f"{self.path}: [{key}] includes itself through {other_key}")
            other = self.merged(other_key, (*seen, key))
            for name in _LISTS:
                if name in other:
                    own[name] = [*own.get(name, []), *other[name]]
            for name in (*_MAPS,):
                if name in other:
                    own[name] = [*other[name], *own.get(name, [])]
            for name in _SCALARS:
                if name in other and name not in own:
                    own[name] = other[name]
        return own

    def table(self, key: str, name: str, label: str | None = None, style: str = "gnu") -> Table:
        if key in self.built:
            return self.built[key]
        raw = self.merged(key)
        if "use" in raw:
            used = self.table(self.resolve(raw["use"]), raw["use"].rsplit(".", 1)[-1])
            self.built[key] = used
            return used
        where = f"{self.path}: [{key}]"
        options = {n: k for n, k in (_option(o, where) for o in raw.get("options", []))}
        optional = {n: k for n, k in (_option(o, where) for o in raw.get("optional", []))}
        prefixed = {n: k for n, k in (_option(o, where) for o in raw.get("prefixed", []))}
        for kind in [*options.values(), *optional.values(), *prefixed.values(),
                     *(raw[k] for k in ("positional", "first") if k in raw)]:
            _kind(kind, key, self.path)
        runs = raw.get("runs")
        table = Table(
            label=label or (raw["files"][0] if raw.get("files") and not raw.get("names", [name]) else name), key=key, flags=frozenset(raw.get("flags", [])), options=options,
            optional=optional, prefixed=prefixed,
            properties=frozenset(raw["properties"]) if "properties" in raw else None,
            numeric=bool(raw.get("numeric")), positional=raw.get("positional"), first=raw.get("first"),
            first_unless=frozenset(raw.get("first_unless", [])), max_positional=raw.get("max_positional"),
            after_dashdash=raw.get("after_dashdash"), builtins=frozenset(raw.get("builtins", [])),
            needs_command=bool(raw.get("needs_command")), needs_operand=bool(raw.get("needs_operand")),
            needs_flag=frozenset(raw.get("needs_flag", [])), standalone=frozenset(raw.get("standalone", [])),
            why=raw.get("why"),
            runs=None if runs is None else frozenset([runs] if isinstance(runs, str) else runs),
            python=bool(raw.get("python")), project_args=bool(raw.get("project_args")),
            style=raw.get("style", style), raw=bool(raw.get("raw")), command=raw.get("command"),
            example=raw.get("example"), names=tuple(raw.get("names", [name])), modules=tuple(raw.get("modules", [])),
            files=tuple(raw.get("files", [])))
        if table.style not in ("gnu", "single"):
            raise TableError(f"{where}: style {table.style!r} is neither 'gnu' nor 'single'")
        self.built[key] = table
        for sub, sub_raw in self.raw(key).get("commands", {}).items():
            child = self.table(f"{key}.commands.{sub}", sub, f"{table.label} {sub}", table.style)
            for alias in sub_raw.get("names", [sub]):
                table.commands[alias] = child
        if "fallback" in raw:
            fallback = f"{key}.commands.{raw['fallback']}"
            if fallback not in self.built:
                raise TableError(f"{where}: fallback {raw['fallback']!r} is not one of its commands")
            table.fallback = self.built[fallback]
        return table

    def check_refs(self, tables: Tables) -> None:
        for table in tables.every:
            if table.after_dashdash and table.after_dashdash != "project-args":
                self.resolve(table.after_dashdash)
            for name in table.runs or ():
                if name != "any" and name not in tables.programs:
                    raise TableError(f"{self.path}: [{table.key}] runs {name!r}, which no table names")
            if table.example is not None and not table.example.strip():
                raise TableError(f"{self.path}: [{table.key}] has an empty example")


def _split(key: str) -> list[str]:
    return key.split(".")


def _option(spec: str, where: str) -> tuple[str, str]:
    name, equals, kind = spec.partition("=")
    if not equals or not name or not kind:
        raise TableError(f"{where}: {spec!r} is not \"--option=KIND\"")
    return name, kind


def _kind(kind: str, key: str, path: Path) -> None:
    if "|" not in kind and kind not in kinds.KINDS:
        raise TableError(f"{path}: [{key}] names the kind {kind!r}, which pipeline/safety/kinds.py does not know "
                         f"(one of {', '.join(sorted(kinds.KINDS))}, or values written a|b|c)")


TABLES = load()
