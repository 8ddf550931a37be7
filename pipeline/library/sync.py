"""A team's library on git: ``skillmill sync``.

The library folder -- approved skills, candidates, rejections (the rejection memory), proposed changes,
``_history/`` and the review log -- is a git repository; the team's remote is any URL the user's git reaches.
Nothing else of ``$SKILLMILL_HOME`` is in it: handoffs, usage logs, feedback notes, the state database live
beside the library, never in it.

A sync: commit what changed here (a run's candidates; review decisions are commits of their own, authored by
the reviewer: :func:`record`), fetch, merge, settle what the merge cannot, rebuild what changed, push.

How the review log chains across machines: each line holds ``prev``, the SHA-256 of the line before it *on the
machine that wrote it*. Git merges the log as a union (``merge=union`` in the repository's own attributes: a
remote cannot switch it off), so after a merge a line's ``prev`` names an earlier line, not always the one just
above it; ``AuditLog.verify`` checks that each ``prev`` is an earlier line of the file, so an edited, removed
or reordered line is still found.

What a merge cannot settle is kept, never merged into one file: the same skill edited on two machines, or
decided differently (approved here, rejected there), leaves the stricter decision in place (rejected, then
deprecated, then approved) and the other version under ``_conflicts/<name>/`` -- shown by ``review list`` as a
``conflict``, settled by ``review resolve``. A candidate drafted here of a skill approved elsewhere meanwhile
becomes a proposed change to it.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pipeline import private
from pipeline.atomic import write as atomic_write
from pipeline.errors import SkillFileError, UsageError
from pipeline.library.git import GitError, Repo
from pipeline.library.memory import REVIEWED
from pipeline.library.model import NAME_PATTERN
from pipeline.library.store import PROPOSED_DIR, SKILL_FILE, STATUS_DIRS, Library, read_skill, render_file

CONFLICTS_DIR = "_conflicts"
CONFLICT_FILE = "conflict.json"
BRANCH = "main"
#: Never in the repository: what a process holds while it writes, and half-written files.
IGNORED = (".skillmill.lock", "*.tmp", ".*.tmp/", "*.skillmill-tmp", ".DS_Store")
#: Which decision stays in place when two machines decided one skill differently: the stricter.
_STRICTER = ("rejected", "deprecated", "approved", "candidate")


@dataclass
class Conflict:
    name: str
    kept: str  # the status of the version in place
    other: str  # what the other version is: its status, and where it came from
    file: str  # the other version's file, under _conflicts/<name>/
    when: str = ""
    take: int = 0  # its number among the skill's other versions (``review resolve NAME --take N``)

    def contract(self) -> dict[str, object]:
        return {"name": self.name, "kept": self.kept, "other": self.other, "file": self.file, "when": self.when,
                "take": self.take}


@dataclass
class SyncResult:
    """What ``skillmill sync --json`` prints."""

    library: str
    remote: str
    branch: str = BRANCH
    created: bool = False  # this call made the library a repository
    committed: int = 0  # local commits this call made (changes not yet committed: a run's candidates)
    changed: list[str] = field(default_factory=list)  # skills the pull changed here
    pushed: bool = False
    conflicts: list[Conflict] = field(default_factory=list)
    offline: str | None = None  # the remote did not answer: git's reason; the local library is as it was

    def contract(self) -> dict[str, object]:
        return {"library": self.library, "remote": self.remote, "branch": self.branch, "created": self.created,
                "committed": self.committed, "changed": self.changed, "pushed": self.pushed,
                "conflicts": [c.contract() for c in self.conflicts], "offline": self.offline}


def is_shared(library: Library) -> bool:
    """True when ``library`` is a repository ``skillmill sync`` made."""
    return Repo(library.root).ours


def remote_of(library: Library) -> str | None:
    repo = Repo(library.root)
    if not repo.ours:
        return None
    return repo.run("remote", "get-url", "origin", check=False).out.strip() or None


def sync(library: Library, remote: str | None = None, *, publish: Callable[[Library], object] | None = None,
         branch: str | None = None, by: str | None = None) -> SyncResult:
    """Share ``library`` through ``remote`` (first call), or pull and push what changed since (later calls).
    ``branch``: push the candidates to that branch as approved instead (merging it in the forge approves them);
    nothing is pulled or pushed to the main branch then."""
    repo = Repo(library.root)
    with library.lock():
        created = _set_up(repo, library, remote)
        url = repo.run("remote", "get-url", "origin").out.strip()
        _rules(repo)
        fetched = repo.run("fetch", "--quiet", "--prune", "origin", check=False, network=True)
        main = _main_branch(repo) if fetched.ok else BRANCH
        result = SyncResult(str(library.root), url, branch or main, created=created)
        # (an empty library joining a team takes the team's as it is: no commit of its own first)
        if (repo.head() is not None or _has_files(repo)) and \
                repo.commit(f"skillmill: what changed in the library on {socket.gethostname()}", by):
            result.committed += 1
        if not fetched.ok:
            result.offline = fetched.why()
            return result
        if branch:
            result.pushed = _push_for_review(repo, library, branch, main, by)
            return result
        for _attempt in range(3):
            before = repo.head()
            result.conflicts += _merge(repo, library, main, by)
            result.changed = sorted(set(result.changed) | _changed(repo, before))
            if repo.head() is None:
                break  # nothing here and nothing there: nothing to push
            pushed = repo.run("push", "--quiet", "origin", f"HEAD:refs/heads/{main}", check=False, network=True)
            if pushed.ok:
                result.pushed = True
                break
            if "rejected" not in pushed.err and "fetch first" not in pushed.err:
                result.offline = pushed.why()
                break
            if not repo.run("fetch", "--quiet", "origin", check=False, network=True).ok:
                result.offline = pushed.why()
                break
        repo.run("branch", "--quiet", f"--set-upstream-to=origin/{main}", check=False)
    if result.changed and publish is not None:
        publish(library)
    return result


def record(library: Library, who: str, message: str, skill: str | None = None) -> str | None:
    """Commit a review decision already on disk, authored by ``who`` (a no-op for a library not shared): the files
    of ``skill`` and the review log only, so a run's candidates not synced yet are not made part of it."""
    repo = Repo(library.root)
    if not repo.ours:
        return None
    if skill is None:
        return repo.commit(message, who)
    places = [str(library.folder(skill, s).relative_to(library.root)) for s in STATUS_DIRS]  # type: ignore[arg-type]
    places += [f"{PROPOSED_DIR}/{skill}", f"_rejected/{PROPOSED_DIR}/{skill}", f"_history/{skill}",
               f"{CONFLICTS_DIR}/{skill}", "_audit.jsonl"]
    tracked = set(repo.run("ls-files", "-z", "--", *places).out.split("\0"))
    paths = [p for p in places if (library.root / p).exists() or any(t == p or t.startswith(f"{p}/") for t in tracked)]
    return repo.commit(message, who, paths) if paths else None


# -- setting up -----------------------------------------------------------------------------------
def _set_up(repo: Repo, library: Library, remote: str | None) -> bool:
    if repo.ours:
        if remote:
            current = repo.run("remote", "get-url", "origin", check=False).out.strip()
            if not current:
                repo.run("remote", "add", "origin", remote)
            elif current != remote:
                repo.run("remote", "set-url", "origin", remote)
        elif not repo.run("remote", "get-url", "origin", check=False).out.strip():
            raise UsageError("this library has no remote yet", hint="`skillmill sync --remote URL`")
        return False
    if repo.exists:
        raise UsageError(f"{library.root} is a git repository skillmill did not make",
                         hint="sync a library of its own (`--library DIR`, or SKILLMILL_LIBRARY); this one is "
                              "left alone")
    if not remote:
        raise UsageError("this library is not shared yet",
                         hint="`skillmill sync --remote URL` (a bare repository on a shared disk, GitHub, GitLab ...)")
    private.make_folders(library.root)
    repo.init()
    repo.run("remote", "add", "origin", remote)
    return True


def _rules(repo: Repo) -> None:
    """The ignore file (tracked: the same everywhere) and the log's union merge (the repository's own)."""
    ignore = repo.root / ".gitignore"
    wanted = "# skillmill: what a process writes while it works, never shared\n" + "\n".join(IGNORED) + "\n"
    if not ignore.is_file() or ignore.read_text(encoding="utf-8", errors="replace") != wanted:
        atomic_write(ignore, wanted)
    attributes = repo.root / ".git" / "info" / "attributes"
    attributes.parent.mkdir(parents=True, exist_ok=True)
    line = "_audit.jsonl merge=union\n"
    if not attributes.is_file() or line not in attributes.read_text(encoding="utf-8", errors="replace"):
        attributes.write_text(line, encoding="utf-8")


# -- merging --------------------------------------------------------------------------------------
def _main_branch(repo: Repo) -> str:
    """The team's branch: the one remembered, else the remote's default (``master`` on an older server), else
    ``main``."""
    known = repo.run("config", "--local", "--get", "skillmill.branch", check=False).out.strip()
    if known:
        return known
    found = BRANCH
    head = repo.run("ls-remote", "--symref", "origin", "HEAD", check=False, network=True).out
    if match := re.match(r"ref: refs/heads/([\w./-]+)\s+HEAD", head):
        named = match.group(1)
        if repo.run("rev-parse", "--verify", "--quiet", f"refs/remotes/origin/{named}", check=False).ok:
            found = named
    repo.run("config", "--local", "skillmill.branch", found)
    return found


def _has_files(repo: Repo) -> bool:
    """Whether the work tree holds anything to commit but the ignore file."""
    listed = repo.run("ls-files", "--others", "--exclude-standard", "-z", check=False).out.split("\0")
    return any(path and path != ".gitignore" for path in listed)


def _merge(repo: Repo, library: Library, main: str, by: str | None) -> list[Conflict]:
    theirs = repo.run("rev-parse", "--verify", "--quiet", f"refs/remotes/origin/{main}", check=False).out.strip()
    if not theirs:
        return []  # a new remote: it gets the library as it is
    if repo.head() is None:  # nothing here yet: the team's library as it is
        repo.run("reset", "--quiet", "--hard", theirs)
        return []
    merged = repo.run("merge", "--quiet", "--no-edit", "--allow-unrelated-histories", "-m",
                      f"skillmill sync: the team's library into {socket.gethostname()}'s", theirs,
                      check=False, env=repo.identity(by))
    conflicts: list[Conflict] = []
    if not merged.ok:
        unmerged = repo.run("diff", "--name-only", "--diff-filter=U", "-z").out.split("\0")
        unmerged = [p for p in unmerged if p]
        if not unmerged:
            repo.run("merge", "--abort", check=False)
            raise GitError(f"git merge failed: {merged.why()}")
        author = repo.run("log", "-1", "--format=%an", theirs, check=False).out.strip()
        # the files both sides have first: where a skill went is known before a one-sided change is placed
        one_sided = {p for p in unmerged if _stage(repo, 1, p) is not None
                     and (_stage(repo, 2, p) is None) != (_stage(repo, 3, p) is None)}
        for path in sorted(unmerged, key=lambda p: p in one_sided):
            conflicts += _settle_path(repo, library, path, author)
    conflicts += _settle_statuses(library)
    if not merged.ok or conflicts:
        repo.run("add", "-A", "--", ".")
        repo.run("commit", "--quiet", "--no-verify", "-m",
                 f"skillmill sync: {len(conflicts)} conflict(s) kept for review" if conflicts else
                 "skillmill sync: the team's library merged", env=repo.identity(by))
    return conflicts


def _stage(repo: Repo, stage: int, path: str) -> str | None:
    done = repo.run("show", f":{stage}:{path}", check=False)
    return done.out if done.ok else None


def _where(path: str) -> tuple[str, str] | None:
    """(status, name) of a skill file's path: ``_candidates/x/SKILL.md`` is ("candidate", "x")."""
    parts = path.split("/")
    if parts[-1] != SKILL_FILE:
        return None
    folders = {v: k for k, v in STATUS_DIRS.items()}
    if len(parts) == 2 and not parts[0].startswith("_"):
        return "approved", parts[0]
    if len(parts) == 3 and parts[0] and parts[0] in folders:
        return folders[parts[0]], parts[1]
    if len(parts) == 3 and parts[0] == PROPOSED_DIR:
        return "proposed", parts[1]
    return None


def _settle_path(repo: Repo, library: Library, path: str, author: str) -> list[Conflict]:
    """One file the merge could not settle. Both sides changed it: ours stays in place, theirs is kept beside it
    (a skill's). Added on one side (a move git took for a rename): it stays, and where the skill is decided
    below. Changed on one side and moved or removed on the other: where it went decides (``_one_side``)."""
    base, ours, theirs = _stage(repo, 1, path), _stage(repo, 2, path), _stage(repo, 3, path)
    file = repo.root / path
    if path == "_audit.jsonl":  # (a union merge leaves none; a log cut by hand on one side can)
        lines = dict.fromkeys([*(ours or "").splitlines(), *(theirs or "").splitlines()])
        atomic_write(file, "\n".join(line for line in lines if line.strip()) + "\n")
        return []
    kept = ours if ours is not None else theirs
    if kept is None:  # moved away on both sides
        file.unlink(missing_ok=True)
        _prune(file.parent)
        return []
    file.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(file, kept)
    where = _where(path)
    if where is None or (ours is None or theirs is None) and base is None:
        return []
    if ours is None or theirs is None:
        return _one_side(library, where, file, ours, theirs, author)
    status, name = where
    return [_keep_aside(library, name, status, f"{status}, edited by {author or 'a teammate'}", theirs)]


def _one_side(library: Library, where: tuple[str, str], file: Path, ours: str | None, theirs: str | None,
              author: str) -> list[Conflict]:
    """A skill file changed on one side and moved or removed on the other: where it went decides."""
    status, name = where
    text = ours if ours is not None else theirs
    elsewhere = [s for s in STATUS_DIRS if s != status and (library.folder(name, s) / SKILL_FILE).is_file()]  # type: ignore[arg-type]
    if not elsewhere:
        return []  # removed there (a withdrawn candidate), changed here: kept, nothing lost
    file.unlink(missing_ok=True)
    _prune(file.parent)
    if status == "candidate" and "approved" in elsewhere and text is not None:
        return _as_proposal(library, name, text)
    who = "here" if ours is not None else f"by {author or 'a teammate'}"
    return [_keep_aside(library, name, elsewhere[0], f"{status}, changed {who}", text or "")]


def _settle_statuses(library: Library) -> list[Conflict]:
    """A skill in two places after a merge (approved here, rejected there): the stricter decision stays."""
    found: dict[str, list[str]] = {}
    for status, sub in STATUS_DIRS.items():
        base = library.root / sub if sub else library.root
        if not base.is_dir():
            continue
        for folder in base.iterdir():
            if folder.name.startswith((".", "_")) or not (folder / SKILL_FILE).is_file():
                continue
            found.setdefault(folder.name, []).append(status)
    conflicts = []
    for name, statuses in sorted(found.items()):
        if len(statuses) < 2:
            continue
        kept = min(statuses, key=_STRICTER.index)
        for status in statuses:
            if status == kept:
                continue
            folder = library.folder(name, status)  # type: ignore[arg-type]
            text = (folder / SKILL_FILE).read_text(encoding="utf-8", errors="replace")
            shutil.rmtree(folder)
            if status == "candidate" and kept == "approved":
                conflicts += _as_proposal(library, name, text)
            else:
                conflicts.append(_keep_aside(library, name, kept, f"{status} on another machine", text))
    return conflicts


def _as_proposal(library: Library, name: str, text: str) -> list[Conflict]:
    """A candidate of a skill approved meanwhile: a proposed change to it (``Library.propose``: the rejection
    memory applies), unless an agent would be served the same text."""
    from pipeline.library import markdown

    try:
        draft = markdown.parse(text)
        approved = read_skill(library.folder(name, "approved") / SKILL_FILE)
    except (SkillFileError, OSError, ValueError):
        return [_keep_aside(library, name, "approved", "candidate on another machine", text)]
    if markdown.served(draft) != markdown.served(approved):
        library.propose(draft)
    return []


def _keep_aside(library: Library, name: str, kept: str, other: str, text: str) -> Conflict:
    folder = library.root / CONFLICTS_DIR / name
    folder.mkdir(parents=True, exist_ok=True)
    number = 1 + sum(1 for f in folder.glob("*.md"))
    file = folder / f"other-{number}.md"
    atomic_write(file, text)
    conflict = Conflict(name, kept, other, str(file.relative_to(library.root)),
                        datetime.now(UTC).isoformat(timespec="seconds"))
    notes = folder / CONFLICT_FILE
    try:
        known = json.loads(notes.read_text(encoding="utf-8")) if notes.is_file() else []
    except (OSError, ValueError):
        known = []
    known = [row for row in known if isinstance(row, dict)] if isinstance(known, list) else []
    rows = [*known, {k: v for k, v in conflict.contract().items() if k != "take"}]
    atomic_write(notes, json.dumps(rows, indent=2) + "\n")
    return conflict


def conflicts(library: Library) -> list[Conflict]:
    """The conflicts waiting to be settled (``review list`` shows them, ``review resolve`` settles one)."""
    base = library.root / CONFLICTS_DIR
    found = []
    for notes in sorted(base.glob(f"*/{CONFLICT_FILE}")) if base.is_dir() else []:
        try:
            rows = json.loads(notes.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        name = notes.parent.name  # a teammate's push wrote these: a name of a skill, a file of its folder
        if not isinstance(rows, list) or not re.fullmatch(NAME_PATTERN, name):
            continue
        for row in rows:
            row = row if isinstance(row, dict) else {}
            conflict = Conflict(**{k: " ".join(str(row.get(k, "")).split())[:200]
                                   for k in ("name", "kept", "other", "file", "when")})
            if conflict.name == name and re.fullmatch(rf"{CONFLICTS_DIR}/{re.escape(name)}/other-\d{{1,4}}\.md",
                                                      conflict.file) and (library.root / conflict.file).is_file():
                conflict.take = 1 + sum(1 for c in found if c.name == name)
                found.append(conflict)
    return found


def drop_conflict(library: Library, name: str) -> None:
    shutil.rmtree(library.root / CONFLICTS_DIR / name, ignore_errors=True)
    _prune(library.root / CONFLICTS_DIR)


def _prune(folder: Path) -> None:
    """Remove ``folder`` if a move left it empty (git keeps no empty folders; a stray one is noise)."""
    with contextlib.suppress(OSError):
        folder.rmdir()


def _changed(repo: Repo, before: str | None) -> set[str]:
    """The skills whose files the merge changed here."""
    after = repo.head()
    if after is None or before == after:
        return set()
    paths = (repo.run("ls-tree", "-r", "-z", "--name-only", after) if before is None else
             repo.run("diff", "--name-only", "-z", before, after)).out.split("\0")
    names = set()
    for path in filter(None, paths):
        where = _where(path)
        if where:
            names.add(where[1])
    return names


# -- the forge's review: a branch of candidates, approved by merging it ------------------------------
def _push_for_review(repo: Repo, library: Library, branch: str, main: str, by: str | None) -> bool:
    """Push a branch on the team's main branch where each candidate of this library is approved: merging it in
    the forge (a pull request) is the approval, and the merge's author the reviewer. The work tree is not
    touched: the commit is built in an index of its own."""
    import os
    import tempfile

    if not branch.replace("-", "").replace("/", "").replace("_", "").replace(".", "").isalnum() \
            or branch.startswith(("-", "/")) or ".." in branch or branch == main:
        raise UsageError(f"--branch {branch!r} is not a branch name for candidates",
                         hint="letters, digits, - _ . /; not the team's main branch")
    base = repo.run("rev-parse", "--verify", "--quiet", f"refs/remotes/origin/{main}", check=False).out.strip() \
        or repo.head()
    candidates = list(library.in_status("candidate"))
    if not candidates:
        raise UsageError("no candidates to push for review", hint="`skillmill run` drafts them")
    with tempfile.TemporaryDirectory() as scratch:
        env = {"GIT_INDEX_FILE": os.path.join(scratch, "index")}
        repo.run("read-tree", base or "--empty", env=env)
        for stored in candidates:
            name = stored.skill.name
            skill = stored.skill.model_copy(update={"status": "approved", "extra_metadata": {
                **stored.skill.extra_metadata, REVIEWED: f"approved by merging the branch {branch}"}})
            blob = repo.run("hash-object", "-w", "--stdin", stdin=render_file(skill)).out.strip()
            repo.run("update-index", "--add", "--cacheinfo", f"100644,{blob},{name}/{SKILL_FILE}", env=env)
            repo.run("update-index", "--force-remove", f"_candidates/{name}/{SKILL_FILE}", env=env)
        tree = repo.run("write-tree", env=env).out.strip()
        names = ", ".join(s.skill.name for s in candidates)
        message = f"skillmill: {len(candidates)} candidate(s) for review: {names}\n\nMerging this approves them."
        parents = ["-p", base] if base else []
        commit = repo.run("commit-tree", tree, *parents, "-m", message, env=repo.identity(by)).out.strip()
    pushed = repo.run("push", "--quiet", "--force", "origin", f"{commit}:refs/heads/{branch}", check=False,
                      network=True)
    if not pushed.ok:
        raise GitError(f"git push of {branch} failed: {pushed.why()}")
    return True
