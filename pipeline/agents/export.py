"""``skillmill export``: approved skills into an agent's native skills folder.

Each exported skill folder gets a ``.skillmill-export`` marker (JSON: the skill, where it came
from, and the hash of every file written). A later export updates folders that carry the
marker and removes those whose skill is no longer approved; a folder without the marker is a
person's own skill and is never touched, and a managed folder someone edited by hand is left
alone (reported as ``modified``) rather than overwritten. A folder counts as managed only when
every file in it, hidden ones included, is one the marker records with the same hash, and it
holds no link: a project may ship a forged marker beside ``.SKILL.md.tmp -> ~/.bashrc``.

The target is somebody else's folder (a checkout, the home folder), so every read, write and
removal there goes through :mod:`pipeline.confined`: files are created exclusively under a fresh
name and renamed into place, and no link that leads out of the project (or home) is followed.

A project receives only the skills meant for it: ``repo`` (by default the project's own
``owner/name``, read from its git config) keeps skills bound to that repository and those bound
to none, and leaves out the other repositories' manuals. Every export is remembered in
``$SKILLMILL_HOME/exports.json``; a review decision (approve, deprecate, reject, restore)
re-runs them all (:func:`refresh_all`), so the copies in agents' folders never wait for the next
manual export to drop a deprecated skill.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline import confined, private, settings
from pipeline.agents import wiring
from pipeline.errors import UsageError, no_space, not_writable
from pipeline.library.store import SKILL_FILE, Library, atomic_write
from pipeline.recall.text import lean, repo_matches

MARKER = ".skillmill-export"
MAX_MARKER = 1 << 20
#: Each agent's skills folder in a project (``--project``), and in the home folder where that differs
#: (``USER_FOLDERS``); where each agent looks, with its docs, is in :mod:`pipeline.agents.wiring`.
FOLDERS = {a.name: a.skills_project for a in wiring.agents().values() if a.skills_project}
USER_FOLDERS = {a.name: a.skills_user for a in wiring.agents().values() if a.skills_user}


def skills_dir(agent: str, project: Path | None) -> Path:
    if agent not in USER_FOLDERS:
        raise UsageError(f"unknown agent {agent!r}", hint=f"use one of: {', '.join(USER_FOLDERS)}")
    if project is None:
        return Path.home() / USER_FOLDERS[agent]
    if agent not in FOLDERS:
        raise UsageError(f"{wiring.get(agent).title} reads skills from the home folder only, not from a project",
                         hint=f"export user-wide (without --project): {Path.home() / USER_FOLDERS[agent]}")
    return project.expanduser().absolute() / FOLDERS[agent]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _files(folder: Path) -> dict[str, bytes]:
    """The files of a skill folder to export (hidden files and caches left out)."""
    out = {}
    for file in sorted(folder.rglob("*")):
        rel = file.relative_to(folder)
        if file.is_file() and not any(p.startswith(".") or p == "__pycache__" for p in rel.parts):
            out[rel.as_posix()] = file.read_bytes()
    if SKILL_FILE in out:  # agents get the lean text; provenance stays in the library for review
        out[SKILL_FILE] = lean(out[SKILL_FILE].decode("utf-8", "replace")).encode("utf-8")
    return out


def _marker(root: Path, folder: Path) -> dict[str, Any] | None:
    data = confined.read(root, folder / MARKER, MAX_MARKER)
    try:
        value = json.loads(data) if data is not None else None
    except ValueError:
        return None
    return value if isinstance(value, dict) and value.get("managed_by") == "skillmill" else None


def _on_disk(root: Path, folder: Path) -> dict[str, str] | None:
    """The hash of every file in an exported folder (its marker and our own unfinished temporary files
    left out), or None when it holds anything skillmill never writes: a link, a FIFO, a huge file."""
    entries = confined.tree(root, folder)
    if entries is None:
        return None
    hashes = {}
    for rel, data in entries.items():
        if rel == MARKER or (rel.endswith(confined.TEMP_SUFFIX) and "/" not in rel and isinstance(data, bytes)):
            continue
        if isinstance(data, confined.Link):
            return None
        hashes[rel] = _sha(data)
    return hashes


def _edited(root: Path, folder: Path, marker: dict[str, Any]) -> bool:
    """True when a managed folder no longer holds exactly what skillmill wrote (hidden files included)."""
    recorded = marker.get("files")
    return not isinstance(recorded, dict) or _on_disk(root, folder) != recorded


@dataclass
class ExportReport:
    target: str
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    dry_run: bool = False
    repo: str | None = None

    def contract(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def describe(self) -> str:
        verb = "Would export" if self.dry_run else "Exported"
        scope = f" (skills for {self.repo} and for any repository)" if self.repo else ""
        lines = [f"{verb} to {self.target}{scope}: {len(self.created)} created, {len(self.updated)} updated, "
                 f"{len(self.unchanged)} unchanged, {len(self.removed)} removed, {len(self.skipped)} left alone"]
        for sign, names in (("+", self.created), ("~", self.updated), ("-", self.removed)):
            lines += [f"  {sign} {n}" for n in names]
        lines += [f"  ! {s['name']}: {s['reason']}" for s in self.skipped]
        return "\n".join(lines)


def project_repo(project: Path | None) -> str | None:
    """The repository a project folder is a checkout of (``owner/name`` from its git config), if any."""
    if project is None:
        return None
    from pipeline import checkout

    return checkout.repo_of(project)


def export(agent: str, project: Path | None, library: Path, *, dry_run: bool = False,
           repo: str | None = None, remember: bool = True) -> ExportReport:
    """Write the approved skills for ``repo`` (and those bound to no repository) into ``agent``'s skills
    folder (in ``project``, else the home folder).

    ``repo`` None means every approved skill. The export is remembered (unless ``dry_run`` or not
    ``remember``) so that review decisions keep this folder true (:func:`refresh_all`). A target that
    is full or may not be written is a one-line error naming it (exit 2), not a crash.
    """
    target = skills_dir(agent, project)
    root = project.expanduser().absolute() if project else Path.home()  # nothing written leads out of it
    try:
        report = _export(root, target, library, dry_run=dry_run, repo=repo)
    except OSError as exc:
        refused = no_space(exc, [target], advice="free some space or export elsewhere with --project DIR") \
            or not_writable(exc, [target], advice="export elsewhere with --project DIR or make it writable")
        if refused is None:
            raise
        raise refused from exc
    if remember and not dry_run:
        _remember(agent, project, library, repo)
    return report


def _export(root: Path, target: Path, library: Path, *, dry_run: bool, repo: str | None) -> ExportReport:
    report = ExportReport(target=str(target), dry_run=dry_run, repo=repo)
    confined.resolve(root, target)  # the skills folder (and its parents) may not lead out of the project
    approved = {s.skill.name: s for s in Library(library).entries(on_error=lambda *_: None)
                if s.skill.status == "approved" and (not repo or not s.skill.repo or repo_matches(s.skill.repo, repo))}
    for name, stored in sorted(approved.items()):
        folder = target / name
        files = _files(stored.path)
        if SKILL_FILE not in files:
            continue
        kind = _kind(folder)
        marker = _marker(root, folder) if kind == "folder" else None
        if kind == "link":
            report.skipped.append({"name": name, "reason": f"{folder} is a link: skillmill never writes through one"})
            continue
        if kind is not None and marker is None:
            report.skipped.append({"name": name, "reason": f"{folder} is not managed by skillmill (a person's own skill)"})
            continue
        if marker is not None and _edited(root, folder, marker):
            report.skipped.append({"name": name, "reason": f"{folder} was edited since the last export; "
                                   f"delete {MARKER} to keep it yours, or the folder to re-export"})
            continue
        wanted = {k: _sha(v) for k, v in files.items()}
        if marker is not None and marker.get("files") == wanted:
            report.unchanged.append(name)
            continue
        (report.updated if marker is not None else report.created).append(name)
        if not dry_run:
            _write(root, folder, files, {"managed_by": "skillmill", "skill": name, "source": str(stored.path),
                                         "exported_at": datetime.now(UTC).isoformat(), "files": wanted},
                   stale=set(marker.get("files", {})) - set(files) if marker else set())
    if _kind(target) == "folder":
        for folder in sorted(target / e.name for e in os.scandir(target)
                             if e.is_dir(follow_symlinks=False) and e.name not in approved):
            marker = _marker(root, folder)
            if marker is None:
                continue
            if _edited(root, folder, marker):
                report.skipped.append({"name": folder.name, "reason": "no longer approved, but edited by hand: kept"})
                continue
            report.removed.append(folder.name)
            if not dry_run:
                confined.remove_tree(root, folder)
    return report


def _kind(path: Path) -> str | None:
    """"folder", "link", "other", or None when nothing is there (never following a link)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    return "link" if stat.S_ISLNK(mode) else "folder" if stat.S_ISDIR(mode) else "other"


# -- remembered exports: kept true after every review decision ----------------------------------
def registry_path() -> Path:
    return settings.home() / "exports.json"


def remembered() -> list[dict[str, str | None]]:
    """The exports done so far: ``{"agent", "project", "library", "repo"}`` each (project None: user-wide)."""
    try:
        data = json.loads(registry_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [e for e in data if isinstance(e, dict) and e.get("agent") in USER_FOLDERS] if isinstance(data, list) else []


def _remember(agent: str, project: Path | None, library: Path, repo: str | None) -> None:
    entry = {"agent": agent, "project": str(project.expanduser().absolute()) if project else None,
             "library": str(library.expanduser().absolute()), "repo": repo}
    entries = [e for e in remembered() if (e["agent"], e["project"]) != (entry["agent"], entry["project"])]
    try:
        private.mkdir(registry_path().parent)
        atomic_write(registry_path(), json.dumps([*entries, entry], indent=2) + "\n")
    except OSError:  # the export itself is done; only its upkeep is lost
        pass


def refresh_all(library: Path) -> list[ExportReport]:
    """Re-run every remembered export of ``library``: called after each review decision, so a
    deprecated, rejected or restored skill is gone from (or back in) every agent's folder at once.

    An export whose folder is gone (a deleted checkout) is forgotten; one that fails is skipped.
    """
    root = str(library.expanduser().absolute())
    reports = []
    for entry in remembered():
        if entry["library"] != root:
            continue
        project = Path(entry["project"]) if entry["project"] else None
        if project is not None and not project.is_dir():
            continue
        try:
            reports.append(export(str(entry["agent"]), project, library, repo=entry["repo"], remember=False))
        except (OSError, UsageError, confined.Refused):
            continue
    return reports


def _write(root: Path, folder: Path, files: dict[str, bytes], marker: dict[str, Any], stale: set[str]) -> None:
    for leftover in _on_disk_temps(root, folder):
        confined.unlink(root, folder / leftover)
    for rel, data in files.items():
        confined.write(root, folder / rel, data)
    for rel in stale:
        confined.unlink(root, folder / rel)
    confined.write(root, folder / MARKER, json.dumps(marker, indent=2) + "\n")


def _on_disk_temps(root: Path, folder: Path) -> list[str]:
    """Our own temporary files an interrupted export left in ``folder`` (regular files, never links)."""
    entries = confined.tree(root, folder) or {}
    return [rel for rel, data in entries.items()
            if "/" not in rel and rel.endswith(confined.TEMP_SUFFIX) and isinstance(data, bytes)]
