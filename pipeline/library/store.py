"""The skill library on disk: folders of ``<name>/SKILL.md``, the source of truth.

Layout, chosen so that an agent loading ``<library>/*/SKILL.md`` only ever sees approved
skills (underscored folders cannot be skill names)::

    <library>/<name>/SKILL.md              approved
    <library>/_candidates/<name>/SKILL.md  waiting for review
    <library>/_deprecated/<name>/SKILL.md
    <library>/_rejected/<name>/SKILL.md
    <library>/_proposed/<name>/SKILL.md    a proposed change to an approved skill
    <library>/_rejected/_proposed/<name>/SKILL.md   the last rejected change (rejection memory)
    <library>/_history/<name>/v<N>.md      every version ever written (``history.py``)
    <library>/_audit.jsonl                 every review decision, append-only (``audit.py``)

Writes are atomic: a new skill folder is assembled under a temporary name and renamed
into place; an existing SKILL.md is replaced with ``os.replace``. Writers that check then
write (a run saving a draft, a review decision) hold :meth:`Library.lock`, so a run never
overwrites a skill a person approved a moment ago.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pipeline import private
from pipeline.atomic import write as atomic_write
from pipeline.errors import SkillFileError, UsageError
from pipeline.library import markdown, memory
from pipeline.library.audit import AuditLog, sha256_file
from pipeline.library.history import History
from pipeline.library.model import Skill, SkillStatus

SKILL_FILE = "SKILL.md"
STATUS_DIRS: dict[str, str] = {
    "approved": "",
    "candidate": "_candidates",
    "deprecated": "_deprecated",
    "rejected": "_rejected",
}
#: Proposed changes to an approved skill wait here for review (never loaded by agents).
PROPOSED_DIR = "_proposed"
#: The last rejected proposal per skill, kept so the same change is not proposed again.
REJECTED_PROPOSALS = "_rejected/_proposed"
LOCK_FILE = ".skillmill.lock"
#: ``held``: a person rejected this skill and the draft brings nothing new: not proposed again.
SaveResult = Literal["created", "updated", "unchanged", "held"]


@dataclass(frozen=True)
class StoredSkill:
    skill: Skill
    path: Path  # the skill folder

    @property
    def file(self) -> Path:
        return self.path / SKILL_FILE


class Library:
    def __init__(self, root: Path) -> None:
        self.root = Path(root).expanduser().absolute()  # paths in the index must not depend on the cwd
        if (reason := private.why_unsafe(self.root)) is not None:  # what is here reaches agents: ours alone
            raise UsageError(f"library {reason}", hint="chmod go-w it if it is yours, or use a library of your own")
        self.history = History(self.root)
        self.audit = AuditLog(self.root)
        self._rejected_cache: tuple[int, list[StoredSkill]] | None = None

    def lock(self) -> contextlib.AbstractContextManager[bool]:
        """Hold the library for a check-then-write (re-entrant; across threads and processes)."""
        return _lock_for(self.root / LOCK_FILE)

    def try_lock(self) -> contextlib.AbstractContextManager[bool]:
        """As :meth:`lock` without waiting: yields False (holding nothing) when another process holds it."""
        return _lock_for(self.root / LOCK_FILE, wait=False)

    def folder(self, name: str, status: SkillStatus) -> Path:
        sub = STATUS_DIRS[status]
        return (self.root / sub / name) if sub else (self.root / name)

    def __iter__(self) -> Iterator[StoredSkill]:
        """Every skill, approved first, in name order. Unreadable files raise SkillFileError."""
        return self.entries()

    def entries(self, on_error: Callable[[Path, SkillFileError], None] | None = None) -> Iterator[StoredSkill]:
        """Every skill; with ``on_error``, a file that does not parse is reported there and skipped."""
        for status in STATUS_DIRS:
            yield from self.in_status(status, on_error)  # type: ignore[arg-type]

    def in_status(self, status: SkillStatus,
                  on_error: Callable[[Path, SkillFileError], None] | None = None) -> Iterator[StoredSkill]:
        """The skills of one status, in name order."""
        sub = STATUS_DIRS[status]
        for entry in _read_folders(self.root / sub if sub else self.root, on_error):
            skill = entry.skill
            if skill.generated and skill.status != status:
                entry = StoredSkill(skill.model_copy(update={"status": status}), entry.path)  # the folder is the truth
            yield entry

    def get(self, name: str) -> StoredSkill | None:
        for status in STATUS_DIRS:
            file = self.folder(name, status) / SKILL_FILE  # type: ignore[arg-type]
            if file.is_file():
                skill = read_skill(file)
                if skill.generated and skill.status != status:
                    skill = skill.model_copy(update={"status": status})  # the folder is the truth
                return StoredSkill(skill, file.parent)
        return None

    def save(self, skill: Skill) -> SaveResult:
        """Write the skill where its status says; move it if its status changed.

        A content change under a version number already used for other content gets the next
        free number (``History.settle``); every version written is kept in ``_history/``.
        """
        skill = self.history.settle(skill)
        target = self.folder(skill.name, skill.status)
        text = render_file(skill)
        existing = self.get(skill.name)
        if existing and existing.path != target:
            _atomic_move(existing.path, target)
        file = target / SKILL_FILE
        self.history.keep(skill, text)
        if file.is_file():
            if file.read_text(encoding="utf-8") == text:
                return "unchanged"
            atomic_write(file, text)
            return "updated"
        _atomic_new_folder(target, text)
        return "created" if existing is None else "updated"

    def propose(self, skill: Skill) -> Path | None:
        """Stage a change to an approved skill for review; the approved file is not touched.

        Returns the proposal's folder, or None when a person already rejected this change and its
        evidence has not changed materially since (``memory.py``). A proposal always gets a
        version above the approved one, and is kept in ``_history/`` like every version.
        """
        with self.lock():
            rejected = self.rejected_proposal(skill.name)
            if rejected is not None:
                news = memory.material_news(rejected.skill, skill)
                if not news:
                    return None
                skill = memory.reopened(skill, memory.Rejection(rejected.skill, rejected.path, tuple(news)))
            current = self.get(skill.name)
            floor = current.skill.version + 1 if current else 1
            skill = self.history.settle(skill.model_copy(update={"status": "candidate"}), at_least=floor)
            target = self.root / PROPOSED_DIR / skill.name
            text = render_file(skill)
            self.history.keep(skill, text)
            if (target / SKILL_FILE).is_file():
                atomic_write(target / SKILL_FILE, text)
            else:
                _atomic_new_folder(target, text)
            return target

    def proposal(self, name: str) -> StoredSkill | None:
        file = self.root / PROPOSED_DIR / name / SKILL_FILE
        return StoredSkill(read_skill(file), file.parent) if file.is_file() else None

    def proposals(self, on_error: Callable[[Path, SkillFileError], None] | None = None) -> Iterator[StoredSkill]:
        """Every pending proposed change, in name order."""
        return _read_folders(self.root / PROPOSED_DIR, on_error)

    def rejected_proposal(self, name: str) -> StoredSkill | None:
        file = self.root / REJECTED_PROPOSALS / name / SKILL_FILE
        return StoredSkill(read_skill(file), file.parent) if file.is_file() else None

    def reject_proposal(self, proposal: StoredSkill, skill: Skill) -> Path:
        """Move a pending proposal into the rejection memory (replacing an older rejected one)."""
        target = self.root / REJECTED_PROPOSALS / skill.name
        _atomic_move(proposal.path, target)
        atomic_write(target / SKILL_FILE, render_file(skill))
        return target

    def discard_proposal(self, name: str) -> bool:
        folder = self.root / PROPOSED_DIR / name
        if not folder.is_dir():
            return False
        shutil.rmtree(folder)
        return True

    # -- rejection memory ---------------------------------------------------------------
    def rejection(self, draft: Skill) -> memory.Rejection | None:
        """The rejected skill ``draft`` repeats, with what is new in its evidence (see ``memory.py``)."""
        candidates = []
        named = self.folder(draft.name, "rejected") / SKILL_FILE
        if named.is_file():
            candidates.append(StoredSkill(read_skill(named), named.parent))
        candidates += [r for r in self._rejected() if r.skill.name != draft.name]
        for entry in candidates:
            if memory.same_skill(entry.skill, draft):
                news = memory.material_news(entry.skill, draft)
                return memory.Rejection(entry.skill, entry.path, tuple(news))
        return None

    def _rejected(self) -> list[StoredSkill]:
        base = self.root / STATUS_DIRS["rejected"]
        stamp = base.stat().st_mtime_ns if base.is_dir() else 0
        if self._rejected_cache is None or self._rejected_cache[0] != stamp:
            found = list(self.in_status("rejected", on_error=lambda *_: None))
            self._rejected_cache = (stamp, found)
        return self._rejected_cache[1]

    def reopen(self, draft: Skill, rejection: memory.Rejection, *, who: str = "skillmill run") -> tuple[Skill, SaveResult]:
        """Bring a rejected skill back as a candidate because its evidence changed; log it."""
        skill = memory.reopened(draft, rejection)
        before = sha256_file(rejection.path / SKILL_FILE)
        result = self.save(skill)
        stored = self.get(skill.name)
        assert stored is not None
        self.audit.append(who=who, action="reopen", skill=stored.skill.name, version=stored.skill.version,
                          status=stored.skill.status, before=before, after=sha256_file(stored.file),
                          reason=stored.skill.extra_metadata[memory.REOPENED])
        return stored.skill, result

    def withdraw(self, name: str, reason: str, *, who: str = "skillmill run") -> bool:
        """Take a candidate out of the queue, logged; its versions stay in ``_history/`` (``restore`` brings it back).

        For a run: a candidate drafted from an earlier version of a session that has grown since.
        The folder disappears in one rename, so a kill leaves it either queued or gone.
        """
        with self.lock():
            stored = self.get(name)
            if stored is None or stored.skill.status != "candidate":
                return False
            before = sha256_file(stored.file)
            staging = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=stored.path.parent))
            os.rename(stored.path, staging)  # over the empty staging folder
            shutil.rmtree(staging, ignore_errors=True)
            self.audit.append(who=who, action="withdraw", skill=name, version=stored.skill.version,
                              status="withdrawn", before=before, after=None, reason=reason)
            return True

    def remove(self, name: str) -> bool:
        existing = self.get(name)
        if existing is None:
            return False
        shutil.rmtree(existing.path)
        return True


class _ProcessLock:
    """``flock`` across processes, an RLock across threads, re-entrant within a thread."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.guard = threading.RLock()
        self.depth = 0
        self.fd: int | None = None

    @contextlib.contextmanager
    def hold(self, wait: bool = True) -> Iterator[bool]:
        if not self.guard.acquire(blocking=wait):
            yield False
            return
        try:
            if self.depth == 0:
                private.make_folders(self.file.parent)
                fd = os.open(self.file, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    yield False
                    return
                self.fd = fd
            self.depth += 1
            try:
                yield True
            finally:
                self.depth -= 1
                if self.depth == 0 and self.fd is not None:
                    fcntl.flock(self.fd, fcntl.LOCK_UN)
                    os.close(self.fd)
                    self.fd = None
        finally:
            self.guard.release()


_LOCKS: dict[Path, _ProcessLock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock_for(file: Path, wait: bool = True) -> contextlib.AbstractContextManager[bool]:
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(file, _ProcessLock(file))
    return lock.hold(wait)


#: Parsed skills by (path, inode, mtime, size): the review page re-reads the library on every request,
#: and atomic writes always give a changed file a new inode. Callers get a copy of the cached model.
_PARSED: dict[tuple[str, int, int, int], Skill] = {}
_PARSED_MAX = 4096


def file_key(file: Path) -> tuple[str, int, int, int]:
    """What identifies one written state of a file (atomic writes change the inode)."""
    info = file.stat()
    return (str(file), info.st_ino, info.st_mtime_ns, info.st_size)


def render_file(skill: Skill) -> str:
    """The SKILL.md text to write. Every write of a skill file goes through here.

    Skill files are shared with a team, so this is the last redaction check before one is
    written. Drafts come from redacted trajectories, so it finds nothing unless a distiller (an
    LLM) made up something key-shaped, or a person pasted a secret into an edit -- which is
    then written as a placeholder too.
    """
    from pipeline.redact import redact

    return redact(markdown.render(skill))


def _read_folders(base: Path, on_error: Callable[[Path, SkillFileError], None] | None) -> Iterator[StoredSkill]:
    """The ``<name>/SKILL.md`` folders directly below ``base``, in name order (``_``/``.`` ones skipped);
    with ``on_error``, a file that does not parse is reported there and skipped."""
    if not base.is_dir():
        return
    for folder in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        file = folder / SKILL_FILE
        if not file.is_file():
            continue
        try:
            skill = read_skill(file)
        except SkillFileError as exc:
            if on_error is None:
                raise
            on_error(file, exc)
            continue
        yield StoredSkill(skill, folder)


def read_skill(file: Path) -> Skill:
    try:
        key = file_key(file)
        if key in _PARSED:
            return _PARSED[key].model_copy()  # skills are changed with model_copy(update=...), never in place
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillFileError(f"cannot read {file}: {exc}", path=str(file)) from exc
    skill = markdown.parse(text, path=str(file))
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[key] = skill
    return skill


def _atomic_new_folder(target: Path, text: str) -> None:
    private.make_folders(target.parent)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        atomic_write(staging / SKILL_FILE, text)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _atomic_move(source: Path, target: Path) -> None:
    private.make_folders(target.parent)
    if target.exists():
        shutil.rmtree(target)
    os.rename(source, target)
