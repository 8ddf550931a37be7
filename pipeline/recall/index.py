"""Build and publish the recall index: one small DuckDB file and its serving snapshot, replaced atomically.

The index holds our library's skills and those of every folder indexed with
``skillmill index --skills DIR``, the lexical postings, optional embeddings, the feedback
priors and the list of indexed folders. It is derived data, written to a temporary file and
renamed over ``recall.duckdb``: a reader that opened the old file keeps reading it, a new
reader gets the new one, and nobody ever meets a write lock. The same publish copies what
queries read into ``recall.serve.sqlite`` (``pipeline.recall.serving``), renamed into place
just before. Publishers (a run's index stage,
``skillmill index``) take ``recall.lock`` so two of them never drop each other's changes.

Re-indexing is incremental: a folder skill whose file has the same size and mtime (or, when
those changed, the same content hash) as in the previous index is taken from it without being
read again, and a skill whose text was embedded before gets its vector from the cache
(``semantic.embed_documents``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from pipeline import private, settings
from pipeline.errors import IndexError_, SkillFileError
from pipeline.index.db import bulk_insert, connect, load_fts
from pipeline.library import markdown
from pipeline.library.model import SERVABLE, Skill
from pipeline.library.store import StoredSkill
from pipeline.recall import feedback, folders, lexical, serving
from pipeline.recall.text import agents, keywords, languages

#: 6: postings, vocabulary and surface words live in the serving snapshot (``serving.py``), not here.
SCHEMA_VERSION = "6"
COLUMNS = {
    "doc": "INTEGER", "id": "VARCHAR", "name": "VARCHAR", "path": "VARCHAR", "root": "VARCHAR",
    "status": "VARCHAR", "kind": "VARCHAR", "repo": "VARCHAR", "languages": "VARCHAR[]", "agents": "VARCHAR[]",
    "confidence": "DOUBLE", "title": "VARCHAR", "description": "VARCHAR", "name_text": "VARCHAR",
    "body": "VARCHAR", "keywords": "VARCHAR", "sha": "VARCHAR", "size": "BIGINT", "mtime_ns": "BIGINT",
    "prior": "DOUBLE",
}
#: Columns a folder skill keeps from the previous index when its file did not change.
_REUSED = [c for c in COLUMNS if c not in ("doc", "prior")]
LIBRARY = "library"


@dataclass(frozen=True)
class IndexedSkill:
    """A skill and the folder it was read from; ``root`` is the indexed folder, or None for our library."""

    skill: Skill
    path: Path
    root: str | None = None

    @classmethod
    def of(cls, stored: StoredSkill) -> IndexedSkill:
        return cls(stored.skill, stored.path)


@dataclass
class PublishReport:
    """What a publish did, for ``skillmill index`` and the run summary."""

    path: str
    skills: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    #: Every skill this publish took out of the index (folder skills and library skills), by path. A
    #: library skill that only moved (a candidate approved, the library moved) is not among them.
    removed_skills: list[str] = field(default_factory=list)
    folders: dict[str, int] = field(default_factory=dict)
    errors: list[dict[str, str]] = field(default_factory=list)
    embedder: str | None = None
    seconds: float = 0.0

    def contract(self) -> dict[str, Any]:
        return dict(self.__dict__)


def body_text(skill: Skill) -> str:
    parts = [skill.title]
    parts += [f"{i.text} {i.command or ''}" for i in skill.procedure]
    parts += [f"{p.symptom} {p.cause or ''} {p.fix} {p.command or ''}" for p in skill.pitfalls]
    parts += [f"{i.text} {i.command or ''}" for i in skill.verification]
    parts += [skill.notes, skill.repo or ""]
    return "\n".join(p for p in parts if p)


def _row(entry: IndexedSkill, sha: str = "", size: int = 0, mtime_ns: int = 0) -> dict[str, Any]:
    s = entry.skill
    body = body_text(s)
    path = str(entry.path)
    return {
        "id": path, "name": s.name, "path": path, "root": entry.root or LIBRARY,
        "status": "approved" if entry.root else s.status, "kind": s.kind, "repo": s.repo,
        "languages": languages(s.name, s.description), "agents": agents(path, s.compatibility),
        "confidence": s.confidence, "title": s.title, "description": s.description,
        "name_text": s.name.replace("-", " "), "body": body,
        "keywords": keywords(f"{s.name} {s.description} {body}"), "sha": sha, "size": size, "mtime_ns": mtime_ns,
    }


# -- the previous index -------------------------------------------------------------------------
class Previous:
    """Read-only view of the published index, to carry folders, feedback and unchanged rows over.

    Folders and feedback are carried over from an index of any schema version (they must survive
    an upgrade); rows only from one of this version.
    """

    def __init__(self, path: Path) -> None:
        self.con: duckdb.DuckDBPyConnection | None = None
        self.compatible = False
        if not path.exists():
            return
        try:
            self.con = connect(path, read_only=True)
            version = self.con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            self.compatible = bool(version and version[0] == SCHEMA_VERSION)
        except (IndexError_, duckdb.Error):
            self.close()

    def close(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None

    def _query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        if self.con is None:
            return []
        try:
            return self.con.execute(sql, *params).fetchall()
        except duckdb.Error:  # an older index without this table
            return []

    def ids(self) -> set[str]:
        return {r[0] for r in self._query("SELECT id FROM skills")}

    def roots(self) -> dict[str, tuple[str, str]]:
        """``id -> (root, name)`` of every skill in the index."""
        return {r[0]: (r[1], r[2]) for r in self._query("SELECT id, root, name FROM skills")}

    def folders(self) -> dict[str, str | None]:
        return {r[0]: r[1] for r in self._query("SELECT path, repo FROM folders")}

    def feedback(self) -> list[dict[str, Any]]:
        rows = self._query(f"SELECT {', '.join(feedback.COLUMNS)} FROM skill_feedback")
        return [feedback.normal(dict(zip(feedback.COLUMNS, r, strict=True))) for r in rows]

    def rows(self, root: str) -> dict[str, dict[str, Any]]:
        if not self.compatible:
            return {}
        rows = self._query(f"SELECT {', '.join(_REUSED)} FROM skills WHERE root = ?", [root])
        return {r[0]: dict(zip(_REUSED, r, strict=True)) for r in rows}


# -- scanning indexed folders -------------------------------------------------------------------
def scan_folder(root: str, repo: str | None, previous: dict[str, dict[str, Any]],
                report: PublishReport) -> Iterator[dict[str, Any]]:
    """Rows for every SKILL.md below ``root``; unchanged files are taken from ``previous``."""
    for found in folders.find_skill_files(Path(root)):
        key = str(found.file.parent)
        old = previous.get(key)
        if old and old["size"] == found.size and old["mtime_ns"] == found.mtime_ns:
            report.unchanged += 1
            yield dict(old)
            continue
        try:
            data = found.file.read_bytes()
        except OSError as exc:
            report.errors.append({"path": str(found.file), "reason": f"cannot read: {exc}"})
            continue
        sha = folders.sha256(data)
        if old and old["sha"] == sha:
            report.unchanged += 1
            yield {**old, "size": found.size, "mtime_ns": found.mtime_ns}
            continue
        try:
            skill = markdown.parse(data.decode("utf-8"), path=str(found.file))
        except UnicodeDecodeError:
            report.errors.append({"path": str(found.file), "reason": "not UTF-8 text"})
            continue
        except SkillFileError as exc:
            report.errors.append({"path": str(found.file), "reason": exc.message})
            continue
        if repo and not skill.repo:
            skill = skill.model_copy(update={"repo": repo})
        if old:
            report.updated += 1
        else:
            report.added += 1
        yield _row(IndexedSkill(skill, found.file.parent, root), sha, found.size, found.mtime_ns)


# -- publishing ---------------------------------------------------------------------------------
@contextlib.contextmanager
def publish_lock(target: Path, timeout: float = 300.0) -> Iterator[None]:
    """Serialize publishers (a run and ``skillmill index``); readers never take it."""
    private.mkdir(target.parent)
    try:
        import fcntl
    except ImportError:  # not POSIX: publishers are not serialized
        yield
        return
    with private.open_file(target.with_name(target.name + ".lock"), "a+b") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise IndexError_(f"another process has been publishing {target} for {timeout:.0f} s",
                                      hint="wait for the running `skillmill run` or `skillmill index` to finish") from None
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def normalize_folder(folder: str | Path) -> str:
    return str(Path(folder).expanduser().absolute())


def publish(skills: Iterable[IndexedSkill], target: Path | None = None, *,
            add_folders: Iterable[str | Path] = (), forget_folders: Iterable[str | Path] = (),
            known_folders: dict[str, str | None] | None = None, events: list[dict[str, Any]] | None = None,
            embedder: Any = None) -> PublishReport:
    """Build a fresh index from our library's ``skills`` plus the indexed folders, then swap it in.

    Folders are those of the previous index (and ``known_folders`` from the state database),
    plus ``add_folders``, minus ``forget_folders``. ``events`` are the feedback verdicts when the
    caller read them from the state database; otherwise the previous index's are carried over.
    Journaled verdicts are always included.
    """
    target = target or settings.recall_index_path()
    clock = time.monotonic()
    report = PublishReport(path=str(target))
    with publish_lock(target):
        previous = Previous(target)
        try:
            roots = {**previous.folders(), **(known_folders or {})}
            for folder in add_folders:
                path = normalize_folder(folder)
                if not Path(path).is_dir():
                    raise IndexError_(f"{folder} is not a folder", hint="pass the folder that holds <name>/SKILL.md")
                roots[path] = folders.project_repo(Path(path))
            for folder in forget_folders:
                roots.pop(normalize_folder(folder), None)
            verdicts = {e["id"]: e for e in (events if events is not None else previous.feedback())}
            verdicts.update({e["id"]: e for e in feedback.events()})
            old = previous.roots()
            rows: dict[str, dict[str, Any]] = {}
            for entry in skills:
                row = _row(entry)
                rows[row["id"]] = row
            for root, repo in sorted(roots.items()):
                count = 0
                for row in scan_folder(root, repo, previous.rows(root), report):
                    if row["id"] not in rows:  # the library wins when a folder is indexed twice
                        rows[row["id"]] = row
                        count += 1
                report.folders[root] = count
        finally:
            previous.close()
        _count_removed(report, old, rows)
        report.skills = len(rows)
        _write(target, list(rows.values()), roots, list(verdicts.values()), embedder)
    report.embedder = embedder.name if embedder is not None else None
    report.seconds = round(time.monotonic() - clock, 3)
    return report


def _count_removed(report: PublishReport, old: dict[str, tuple[str, str]], rows: dict[str, dict[str, Any]]) -> None:
    """What left the index: folder skills no longer found, library skills no longer in the library (by name:
    one that moved folder, as a candidate does when approved, is still there)."""
    in_library = {row["name"] for row in rows.values() if row["root"] == LIBRARY}
    gone = {i: (root, name) for i, (root, name) in old.items()
            if i not in rows and not (root == LIBRARY and name in in_library)}
    report.removed = sum(1 for root, _name in gone.values() if root != LIBRARY)
    report.removed_skills = sorted(gone)


def _write(target: Path, rows: list[dict[str, Any]], roots: dict[str, str | None], events: list[dict[str, Any]],
           embedder: Any) -> None:
    totals = feedback.priors(events)
    for doc, row in enumerate(rows):
        row["doc"] = doc
        row["prior"] = feedback.prior_for(totals, row["path"], row["name"])
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    os.unlink(tmp_name)  # DuckDB must create the file itself
    tmp = Path(tmp_name)
    snapshot_tmp = Path(f"{tmp}{serving.SUFFIX}")
    try:
        con = connect(tmp)
        try:
            con.execute("SET enable_progress_bar = false")  # DuckDB draws it on stdout, which carries --json
            load_fts(con)
            con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
            lexical_key = lexical.fingerprint(rows, salt=duckdb.__version__) if rows else ""
            meta = {"schema": SCHEMA_VERSION, "servable": ",".join(sorted(SERVABLE)),
                    "published_at": datetime.now(UTC).isoformat(), "embedder": embedder.name if embedder else "",
                    "lexical": lexical_key}
            con.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
            columns = ", ".join(f"{k} {v}" for k, v in COLUMNS.items())
            con.execute(f"CREATE TABLE skills ({columns})")
            bulk_insert(con, "skills", COLUMNS, rows, scratch=target.parent / "tmp")
            con.execute("CREATE UNIQUE INDEX skills_doc ON skills (doc)")
            con.execute("CREATE TABLE folders (path VARCHAR PRIMARY KEY, repo VARCHAR)")
            if roots:
                con.executemany("INSERT INTO folders VALUES (?, ?)", sorted(roots.items()))
            con.execute("CREATE TABLE skill_feedback (id VARCHAR, skill VARCHAR, path VARCHAR, verdict VARCHAR, "
                        "note VARCHAR, source VARCHAR, created_at TIMESTAMPTZ)")
            if events:
                con.executemany("INSERT INTO skill_feedback VALUES (?, ?, ?, ?, ?, ?, ?)",
                                [[e.get(c) for c in feedback.COLUMNS] for e in events])
            # The lexical tables are computed again only when the text they come from changed.
            reuse = serving.reusable(serving.path_for(target), lexical_key) if rows else None
            if rows and reuse is None:
                lexical.build(con)
            if embedder is not None and rows:
                _embed(con, embedder, rows, target.parent / "tmp")
            # The same publish, from the tables just built: what queries read (see serving.py).
            serving.write(con, snapshot_tmp, meta, lexical_from=reuse)
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.replace(snapshot_tmp, serving.path_for(target))
        os.replace(tmp, target)  # last: a new recall.duckdb marks a finished publish
    finally:
        for leftover in (tmp, Path(f"{tmp}.wal"), snapshot_tmp):
            with contextlib.suppress(OSError):
                leftover.unlink()


def _embed(con: duckdb.DuckDBPyConnection, embedder: Any, rows: list[dict[str, Any]], scratch: Path) -> None:
    """Vectors for every skill; those whose text was embedded before come from the cache (``semantic.embed_documents``)."""
    from pipeline.recall.semantic import document_text, embed_documents

    vectors = embed_documents(embedder, [document_text(r) for r in rows])
    dim = int(embedder.dim)
    con.execute(f"CREATE TABLE vectors (doc INTEGER, v FLOAT[{dim}])")
    bulk_insert(con, "vectors", {"doc": "INTEGER", "v": f"FLOAT[{dim}]"},
                ({"doc": r["doc"], "v": v} for r, v in zip(rows, vectors, strict=True)), scratch=scratch)
