"""Where trajectories live: every registered format's ``locations`` plus ``[sources]`` in the config.

``skillmill run`` with no paths reads what :func:`discover` finds, ``skillmill sources`` lists it.
Most machines run only some agents, so a location that does not exist is listed, never an error
(a path *named* on the command line that does not exist stays a usage error: ``iter_files``).

A format's location is a glob as the agent's docs write it (``~/.claude/projects/*/*.jsonl``,
``${CODEX_HOME:-~/.codex}/sessions/YYYY/MM/DD/rollout-*.jsonl``); discovery walks the part before
the first wildcard or placeholder and lets content detection decide what each file is. A location
relative to a repository (``<repo>/.aider.chat.history.md``) is looked for in each
``[sources] repos`` entry. ``<output dir>``-style locations (benchmark runs) cannot be guessed
and are only shown by ``skillmill formats``.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.config import Config
from pipeline.ingest import iter_files
from pipeline.plugins import registered_formats

#: Placeholders that stand for "the repository" at the start of a repo-relative location.
_REPO_PLACEHOLDERS = {"<repo>", "<project>", "<repo root>", "<repository>", "<cwd>", "<project root>"}
_WILDCARD = re.compile(r"[*?\[\]{}<>]|^(YYYY|MM|DD|HH)$")
_DEFAULT_VAR = re.compile(r"\$\{(\w+):-([^}]*)\}")


@dataclass
class Source:
    """One place discovery reads: a folder (or file) and why it is on the list."""

    path: Path
    origin: str
    formats: list[str] = field(default_factory=list)
    locations: list[str] = field(default_factory=list)
    ignored: bool = False

    @property
    def exists(self) -> bool:
        return self.path.exists()

    def files(self, ignore: Ignore) -> Iterator[Path]:
        if self.ignored or not self.exists:
            return iter(())
        return iter_files([self.path], ignore=ignore)

    def row(self, ignore: Ignore) -> dict:
        """The ``skillmill sources --json`` object for this source."""
        count = None if self.ignored else sum(1 for _ in self.files(ignore))
        return {"path": str(self.path), "exists": self.exists, "files": count, "origin": self.origin,
                "formats": self.formats, "locations": self.locations, "ignored": self.ignored}


class Ignore:
    """``[sources] ignore_paths``: folders whose contents are never opened, and sessions run in them.

    Besides files below an ignored folder, agents keep a folder *named after* the project:
    Claude Code ``~/.claude/projects/<cwd with every non [A-Za-z0-9-] as '-'>`` and Gemini CLI
    ``~/.gemini/tmp/<sha256 of the project root>``. Those are skipped without being opened. The
    Claude slug is lossy (``/a/b-c`` and ``/a/b/c`` share it), so it can also skip a sibling
    folder whose name extends the ignored one; for secrets, skipping too much is the safe side.
    Formats that record the project only inside the file (Codex, OpenCode ...) are caught after
    parsing by :meth:`covers_cwd`: their sessions are dropped before anything is stored.
    """

    def __init__(self, paths: Iterable[str | Path] = ()) -> None:
        self.roots = [_resolve(Path(os.path.expanduser(str(p)))) for p in paths]
        self._slugs = {re.sub(r"[^A-Za-z0-9-]", "-", str(r)) for r in self.roots}
        self._hashes = {hashlib.sha256(str(r).encode()).hexdigest() for r in self.roots}

    def __bool__(self) -> bool:
        return bool(self.roots)

    def covers(self, path: Path) -> bool:
        """True when ``path`` is below an ignored folder or is a project folder named after one."""
        if not self.roots:
            return False
        resolved = _resolve(path)
        if any(resolved == r or r in resolved.parents for r in self.roots):
            return True
        return any(self._alias(part) for part in resolved.parts)

    def covers_cwd(self, cwd: str | None) -> bool:
        """True when a session ran in (or below) an ignored folder."""
        if not cwd or not self.roots:
            return False
        path = Path(cwd)
        return any(path == r or r in path.parents for r in self.roots)

    def _alias(self, name: str) -> bool:
        if name in self._hashes:
            return True
        return any(name == slug or name.startswith(slug + "-") for slug in self._slugs)


def _resolve(path: Path) -> Path:
    try:
        return path.resolve(strict=False)
    except (OSError, RuntimeError):  # a symlink loop: compare the path as written
        return path.absolute()


def _expand(location: str) -> str:
    location = _DEFAULT_VAR.sub(lambda m: os.environ.get(m.group(1)) or m.group(2), location)
    return os.path.expanduser(os.path.expandvars(location))


def location_root(location: str) -> tuple[str, Path] | None:
    """``("home", root)`` for a machine-wide location, ``("repo", relative root)`` for one marked
    ``<repo>/...``, None when it cannot be discovered (``<output dir>/...``, ``trajectories/...``)."""
    parts = Path(location).parts
    kind = "home"
    if parts and parts[0].lower() in _REPO_PLACEHOLDERS:
        kind, parts = "repo", parts[1:]
    elif parts and not (parts[0].startswith(("~", "/", "$"))):
        return None  # relative to wherever a tool was run (``trajectories/<user>/...``): not guessable
    expanded = Path(_expand(str(Path(*parts)))) if parts else Path()
    kept: list[str] = []
    for part in expanded.parts:
        if _WILDCARD.search(part):
            break
        kept.append(part)
    if not kept or "$" in "".join(kept):
        return None  # nothing fixed to walk, or an unset environment variable
    root = Path(*kept)
    if kind == "home" and not root.is_absolute():
        return None
    return kind, root


def configured_sources(config: Config) -> list[Source]:
    """Every place ``skillmill run`` with no paths looks, in a stable order, merged by folder."""
    ignore = Ignore(config.sources.ignore_paths)
    found: dict[Path, Source] = {}

    def add(path: Path, origin: str, fmt: str | None, location: str) -> None:
        source = found.setdefault(path, Source(path=path, origin=origin))
        if fmt and fmt not in source.formats:
            source.formats.append(fmt)
        if location not in source.locations:
            source.locations.append(location)

    repos = [Path(os.path.expanduser(r)) for r in config.sources.repos]
    for fmt in registered_formats():
        for location in fmt.locations:
            root = location_root(location)
            if root is None:
                continue
            kind, path = root
            if kind == "home" and config.sources.defaults:
                add(path, "default", fmt.name, location)
            for repo in repos if kind == "repo" else ():
                add(repo / path, f"sources.repos ({config.source_of('sources.repos')})", fmt.name, location)
    for raw in config.sources.paths or []:
        add(Path(_expand(raw)), f"sources.paths ({config.source_of('sources.paths')})", None, raw)
    for source in found.values():
        source.ignored = ignore.covers(source.path)
    return list(found.values())


def discover(config: Config) -> list[Path]:
    """The candidate files of every existing source, each once, none below an ignored folder."""
    ignore = Ignore(config.sources.ignore_paths)
    seen: set[Path] = set()
    files: list[Path] = []
    for source in configured_sources(config):
        for path in source.files(ignore):
            if path not in seen:
                seen.add(path)
                files.append(path)
    return files
