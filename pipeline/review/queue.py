"""What waits for review: candidates and proposed changes, with their risk flags, filtered.

The CLI (``review list``) and the web page show the same items in the same order, so "next"
means the same skill in both: proposed changes first, then by repository, then by name.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import SkillFileError, SkillmillError
from pipeline.library import Library, StoredSkill, markdown, sync
from pipeline.library.history import REVIEW_KEYS
from pipeline.library.memory import REOPENED, REVIEWED
from pipeline.library.model import MAX_NAME, NAME_PATTERN, Skill
from pipeline.library.store import file_key
from pipeline.library.sync import Conflict
from pipeline.review.batch import batch_refusals
from pipeline.review.flags import Flag, flag_codes, risk_flags

#: ``conflict``: a skill two machines changed or decided differently (``pipeline.library.sync``): the other version.
PENDING = ("conflict", "proposed", "candidate")
STATUSES = ("conflict", "proposed", "candidate", "approved", "rejected", "deprecated")
KINDS = ("procedure", "pitfall", "repo", "reference")


class NotFound(SkillmillError):
    """No skill (or version) by that name."""


@dataclass
class ReviewItem:
    """A skill as the reviewer sees it: what it is, where it lives, what is risky about it."""

    stored: StoredSkill
    status: str  # conflict | candidate | proposed | approved | rejected | deprecated
    flags: list[Flag] = field(default_factory=list)
    base: StoredSkill | None = None  # for a proposed change: the skill it would replace; for a conflict: in place
    refusals: list[str] | None = None  # why a batch may not approve it (None: not computed yet)
    conflict: Conflict | None = None

    @property
    def batch_reasons(self) -> list[str]:
        """Why a batch approval refuses this skill (empty: it is flag-free and every command is ordinary)."""
        if self.conflict is not None:
            return [f"a conflict: {self.conflict.other}, while {self.conflict.kept} here (`skillmill review resolve`)"]
        if self.refusals is None:
            self.refusals = batch_refusals(self.skill, self.flags)
        return self.refusals

    @property
    def batchable(self) -> bool:
        return not self.batch_reasons

    @property
    def skill(self) -> Skill:
        return self.stored.skill

    @property
    def name(self) -> str:
        return self.stored.skill.name

    def agents(self) -> list[str]:
        return sorted({s.agent for s in self.skill.sources if s.agent})

    def contract(self) -> dict[str, object]:
        """One object of ``skillmill review list --json``."""
        s = self.skill
        return {
            "name": s.name, "status": self.status, "kind": s.kind, "confidence": s.confidence,
            "flags": flag_codes(self.flags), "risks": [f.contract() for f in self.flags],
            "version": s.version, "outcome": s.outcome, "agents": self.agents(), "repo": s.repo,
            "sources": len(s.sources), "title": s.title, "description": s.description,
            "path": str(self.stored.path), "reopened": s.extra_metadata.get(REOPENED),
            "reviewed": s.extra_metadata.get(REVIEWED),
            "batchable": self.batchable, "batch_reasons": self.batch_reasons,
            "updates": ({"version": self.base.skill.version, "status": self.base.skill.status}
                        if self.base else None),
            "conflict": self.conflict.contract() if self.conflict else None,
        }


@dataclass(frozen=True)
class Filters:
    """``--repo``, ``--kind``, ``--min-confidence``, ``--flagged`` (and which statuses to show)."""

    repo: str | None = None
    kinds: tuple[str, ...] = ()
    min_confidence: float | None = None
    flagged: bool = False
    statuses: tuple[str, ...] = PENDING

    @property
    def narrows(self) -> bool:
        """True when something beyond the status selects items (what batch approval needs)."""
        return bool(self.repo or self.kinds or self.min_confidence is not None or self.flagged)

    def match(self, item: ReviewItem) -> bool:
        s = item.skill
        if item.status not in self.statuses:
            return False
        if self.repo and not repo_matches(self.repo, s.repo):
            return False
        if self.kinds and s.kind not in self.kinds:
            return False
        if self.min_confidence is not None and s.confidence < self.min_confidence:
            return False
        return not (self.flagged and not item.flags)


def repo_matches(wanted: str, repo: str | None) -> bool:
    """``django/django``, ``django`` (the part after the owner) or a glob (``pallets/*``), any case."""
    if not repo:
        return False
    wanted, repo = wanted.lower(), repo.lower()
    if any(c in wanted for c in "*?["):
        return fnmatch.fnmatchcase(repo, wanted)
    return wanted in (repo, repo.rsplit("/", 1)[-1])


#: Flags and batch refusals by skill file state: the queue is recomputed on every page, the files rarely change.
_FLAGS: dict[tuple[str, int, int, int], tuple[list[Flag], list[str]]] = {}


def _item(stored: StoredSkill, status: str, base: StoredSkill | None = None) -> ReviewItem:
    try:
        key = file_key(stored.file)
    except OSError:
        return ReviewItem(stored, status, risk_flags(stored.skill), base)
    if key not in _FLAGS:
        if len(_FLAGS) > 8192:
            _FLAGS.clear()
        flags = risk_flags(stored.skill)
        _FLAGS[key] = (flags, batch_refusals(stored.skill, flags))
    flags, refusals = _FLAGS[key]
    return ReviewItem(stored, status, list(flags), base, list(refusals))


def items(library: Library, filters: Filters | None = None,
          on_error: Callable[[Path, SkillFileError], None] | None = None) -> list[ReviewItem]:
    """The skills that match, in review order."""
    filters = filters or Filters()
    found: list[ReviewItem] = []
    skip = on_error or (lambda *_: None)
    if "conflict" in filters.statuses:
        found += _conflicts(library, skip)
    if "proposed" in filters.statuses:
        for proposal in library.proposals(on_error=skip):
            found.append(_item(proposal, "proposed", _base(library, proposal.skill.name)))
    for status in ("candidate", "approved", "rejected", "deprecated"):
        if status in filters.statuses:
            found += [_item(s, status) for s in library.in_status(status, on_error=skip)]  # type: ignore[arg-type]
    order = {s: i for i, s in enumerate(STATUSES)}
    found.sort(key=lambda i: (order[i.status], (i.skill.repo or "~").lower(), i.name))
    return [i for i in found if filters.match(i)]


def _conflicts(library: Library, skip: Callable[[Path, SkillFileError], None]) -> list[ReviewItem]:
    found = []
    for conflict in sync.conflicts(library):
        file = library.root / conflict.file
        try:
            skill = markdown.parse(file.read_text(encoding="utf-8"), path=str(file))
        except (OSError, UnicodeDecodeError, SkillFileError) as exc:
            skip(file, exc if isinstance(exc, SkillFileError) else SkillFileError(str(exc), path=str(file)))
            continue
        item = ReviewItem(StoredSkill(skill, file.parent), "conflict", risk_flags(skill),
                          _base(library, conflict.name), conflict=conflict)
        found.append(item)
    return found


def _base(library: Library, name: str) -> StoredSkill | None:
    try:
        return library.get(name)
    except SkillFileError:
        return None


def check_name(name: str) -> str:
    """A skill name, or NotFound: names reach file paths (``..`` must never walk out of the library)."""
    if not re.fullmatch(NAME_PATTERN, name) or len(name) > MAX_NAME:
        raise NotFound(f"{name!r} is not a skill name",
                       hint="names are lowercase letters, digits and single hyphens; see `skillmill review list`")
    return name


def find(library: Library, name: str) -> ReviewItem:
    """The item a decision about NAME applies to: a pending proposed change first, else the skill."""
    check_name(name)
    proposal = library.proposal(name)
    if proposal is not None:
        return _item(proposal, "proposed", _base(library, name))
    stored = library.get(name)
    if stored is None:
        raise NotFound(f"no skill named {name!r} in {library.root}",
                       hint="`skillmill review list` shows what waits for review; `skillmill review list --status all` "
                            "every skill")
    return _item(stored, stored.skill.status)


def neighbours(order: list[str], name: str) -> tuple[str | None, str | None]:
    """The names before and after NAME in a review order (None at the ends or when absent)."""
    if name not in order:
        return None, order[0] if order else None
    i = order.index(name)
    return (order[i - 1] if i > 0 else None), (order[i + 1] if i + 1 < len(order) else None)


# -- diffs --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Diff:
    """A unified diff between two versions of a skill, with what it compares."""

    title: str
    lines: list[str]

    @property
    def text(self) -> str:
        return "".join(self.lines)


def unified(old_text: str, new_text: str, old_label: str, new_label: str) -> list[str]:
    return list(difflib.unified_diff(old_text.splitlines(keepends=True), new_text.splitlines(keepends=True),
                                     fromfile=old_label, tofile=new_label, n=2))


def diff_for(library: Library, item: ReviewItem) -> Diff | None:
    """What the reviewer should compare: a proposal against the approved file; a reopened or
    re-distilled candidate against its previous version."""
    new_text = item.stored.file.read_text(encoding="utf-8")
    name = item.name
    if item.status == "proposed" and item.base is not None:
        base = item.base
        # compare content, not review state: show the proposal as it would read once it replaced the base
        review_state = {k: v for k, v in base.skill.extra_metadata.items() if k in REVIEW_KEYS}
        others = {k: v for k, v in item.skill.extra_metadata.items() if k not in REVIEW_KEYS}
        as_base = item.skill.model_copy(update={"status": base.skill.status,
                                                "extra_metadata": {**review_state, **others}})
        label = f"{name} v{base.skill.version} ({base.skill.status})"
        return Diff(f"Changes against the {base.skill.status} version v{base.skill.version}",
                    unified(base.file.read_text(encoding="utf-8"), markdown.render(as_base), label,
                            f"{name} v{item.skill.version} (proposed)"))
    if item.status == "candidate" and item.skill.generated:
        earlier = [v for v in library.history.versions(name) if v < item.skill.version]
        if earlier:
            old_text = library.history.text(name, earlier[-1]) or ""
            why = "since it was rejected" if item.skill.extra_metadata.get(REOPENED) else "since the previous version"
            return Diff(f"Changes {why} (v{earlier[-1]} → v{item.skill.version})",
                        unified(old_text, new_text, f"{name} v{earlier[-1]}", f"{name} v{item.skill.version}"))
    return None


def render_text(item: ReviewItem) -> str:
    return markdown.render(item.skill)
