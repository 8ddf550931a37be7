"""Review decisions: approve, reject, deprecate, edit, restore — each one logged and published.

Lifecycle (the folder a skill lives in is its status)::

    candidate --approve--> approved --deprecate--> deprecated
    candidate --reject---> rejected
    proposed change --approve--> replaces the approved file (new version)
    proposed change --reject---> _rejected/_proposed/ (remembered, not proposed again)
    restore vN: becomes the newest version; approved stays approved, anything else goes back
                to the queue as a candidate (the way to undo a rejection or a deprecation)

Every decision holds the library lock, appends one audit entry (who, when, action, skill,
version, before/after SHA-256 of the SKILL.md, reason, the flags it had) and republishes the
recall index, so an approval reaches agents at once and a rejection never does. Before its first
file changes it marks the index as behind (``recall.pending``): killed before the republish,
the next command republishes, and readers skip a skill whose folder has moved meanwhile.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pipeline.errors import SkillFileError, SkillmillError, UsageError
from pipeline.library import Library, markdown, sync
from pipeline.library.audit import Action, AuditEntry, sha256_file
from pipeline.library.history import REVIEW_KEYS, same_content
from pipeline.library.memory import REVIEWED
from pipeline.library.model import Skill
from pipeline.library.store import SKILL_FILE, atomic_write, render_file
from pipeline.recall import pending
from pipeline.review.flags import flag_codes, risk_flags
from pipeline.review.queue import Filters, NotFound, ReviewItem, check_name, find, items

ENV_REVIEWER = "SKILLMILL_REVIEWER"


class ReviewError(SkillmillError):
    """A decision that does not apply to the skill in its current state."""


@dataclass
class Decision:
    action: Action
    name: str
    version: int | None
    status: str
    entry: AuditEntry
    flags: list[str] = field(default_factory=list)

    def contract(self) -> dict[str, object]:
        return {"action": self.action, "name": self.name, "version": self.version, "status": self.status,
                "flags": self.flags, "seq": self.entry.seq}


@dataclass
class Batch:
    approved: list[Decision] = field(default_factory=list)
    refused: list[ReviewItem] = field(default_factory=list)  # flagged or not ordinary: approve them by name


def reviewer(who: str | None) -> str:
    """Who decides: ``--by``, else ``$SKILLMILL_REVIEWER``, else the login name."""
    value = who if who is not None else os.environ.get(ENV_REVIEWER) or _login()
    value = " ".join((value or "").split())
    if not value:
        raise UsageError("say who decides", hint=f"pass --by NAME or set {ENV_REVIEWER}")
    if len(value) > 100:
        raise UsageError("--by is longer than 100 characters")
    return value


def _login() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name in some containers
        return ""


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ")


def _noted(skill: Skill, note: str | None, **update: object) -> Skill:
    """The skill with its review note replaced (``metadata.reviewed``) and any reopen note dropped."""
    meta = {k: v for k, v in skill.extra_metadata.items() if k not in REVIEW_KEYS}
    if note and skill.generated:
        meta[REVIEWED] = note
    return skill.model_copy(update={"extra_metadata": meta, **update})


class Review:
    """Decisions on one library by one person."""

    def __init__(self, library: Library, who: str, *, publish: Callable[[Library], object] | None = None) -> None:
        from pipeline.review.publish import republish

        self.library = library
        self.who = reviewer(who)
        self.publish = publish or republish

    # -- approve ------------------------------------------------------------------------
    def approve(self, *names: str) -> list[Decision]:
        """Approve skills (or proposed changes) by name; flagged ones too: a person named them.

        All or nothing: a missing name, or one that is not pending, approves none of them.
        """
        with self.library.lock():
            found = [find(self.library, name) for name in dict.fromkeys(names)]
            for item in found:
                if item.status not in ("candidate", "proposed"):
                    raise ReviewError(f"{item.name} is {item.status}: only candidates and proposed changes are "
                                      "approved" + (" (nothing was approved)" if len(found) > 1 else ""),
                                      hint=_state_hint(item))
            decisions = []
            try:
                for item in found:
                    decisions.append(self._approve(item))
            finally:
                if decisions:
                    self.publish(self.library)
        return decisions

    def approve_matching(self, filters: Filters) -> Batch:
        """Approve every pending item the filters select that may join a batch: no risk flag, and
        every command an ordinary project command (default-deny). The others are refused, with
        their reasons (``ReviewItem.batch_reasons``), for a person to approve by name."""
        batch = Batch()
        with self.library.lock():
            for item in items(self.library, Filters(filters.repo, filters.kinds, filters.min_confidence, False)):
                if not item.batchable:
                    batch.refused.append(item)
                else:
                    batch.approved.append(self._approve(item))
            if batch.approved:
                self.publish(self.library)
        return batch

    def _changing(self) -> None:
        """Just before a decision changes files: the recall index must follow (see the module docstring)."""
        pending.mark(self.library.root)

    def _approve(self, item: ReviewItem) -> Decision:
        self._changing()
        if item.status == "proposed":
            return self._apply_proposal(item)
        if item.status != "candidate":
            raise ReviewError(f"{item.name} is {item.status}: only candidates and proposed changes are approved",
                              hint=_state_hint(item))
        skill = _noted(item.skill, f"approved {_stamp()} by {self.who}", status="approved")
        before = sha256_file(item.stored.file)
        self.library.save(skill)
        return self._log("approve", item, before, reason=None)

    def _apply_proposal(self, item: ReviewItem) -> Decision:
        current = self.library.get(item.name)
        before = sha256_file(current.file) if current else None
        skill = _noted(item.skill, f"approved {_stamp()} by {self.who}", status="approved")
        self.library.save(skill)
        self.library.discard_proposal(item.name)
        return self._log("approve", item, before, reason=None, target="proposal")

    # -- reject / deprecate ---------------------------------------------------------------
    def reject(self, name: str, reason: str) -> Decision:
        reason = _reason(reason, "reject")
        with self.library.lock():
            item = find(self.library, name)
            before = sha256_file(item.stored.file)
            note = f"rejected {_stamp()} by {self.who}: {reason}"
            if item.status in ("proposed", "candidate"):
                self._changing()
            if item.status == "proposed":
                self.library.reject_proposal(item.stored, _noted(item.skill, note))
                decision = self._log("reject", item, before, reason, target="proposal")
            elif item.status == "candidate":
                self.library.save(_noted(item.skill, note, status="rejected"))
                decision = self._log("reject", item, before, reason)
            else:
                raise ReviewError(f"{name} is {item.status}: only candidates and proposed changes are rejected",
                                  hint=_state_hint(item))
            self.publish(self.library)
        return decision

    def deprecate(self, name: str, reason: str) -> Decision:
        reason = _reason(reason, "deprecate")
        check_name(name)
        with self.library.lock():
            stored = self.library.get(name)
            if stored is None:
                raise NotFound(f"no skill named {name!r}", hint="`skillmill review list --status approved`")
            item = ReviewItem(stored, stored.skill.status, risk_flags(stored.skill))
            if item.status != "approved":
                raise ReviewError(f"{name} is {item.status}: only approved skills are deprecated",
                                  hint=_state_hint(item))
            before = sha256_file(stored.file)
            note = f"deprecated {_stamp()} by {self.who}: {reason}"
            self._changing()
            self.library.save(_noted(stored.skill, note, status="deprecated"))
            decision = self._log("deprecate", item, before, reason)
            self.publish(self.library)
        return decision

    # -- edit ---------------------------------------------------------------------------
    def edit(self, name: str, text: str) -> Decision | None:
        """Replace a skill's text (or a pending proposal's) after validating it; None when unchanged."""
        with self.library.lock():
            item = find(self.library, name)
            edited = validate_edit(item, text)
            if same_content(edited, item.skill):
                return None
            current = item.skill
            skill = edited.model_copy(update={
                "status": current.status, "version": current.version + 1,
                "extra_metadata": {**{k: v for k, v in edited.extra_metadata.items() if k not in REVIEW_KEYS},
                                   **{k: v for k, v in current.extra_metadata.items() if k in REVIEW_KEYS}}})
            before = sha256_file(item.stored.file)
            self._changing()
            if item.status == "proposed":
                skill = self.library.history.settle(skill)
                rendered = render_file(skill)
                self.library.history.keep(skill, rendered)
                atomic_write(item.stored.file, rendered)
            else:
                self.library.save(skill)
            decision = self._log("edit", item, before, reason=None,
                                 target="proposal" if item.status == "proposed" else "skill")
            self.publish(self.library)
        return decision

    # -- restore ------------------------------------------------------------------------
    def restore(self, name: str, version: int) -> Decision:
        """Make version N the newest version (see the module docstring for its status)."""
        history = self.library.history
        check_name(name)
        with self.library.lock():
            text = history.text(name, version)
            if text is None:
                known = history.versions(name)
                raise NotFound(f"{name} has no version {version}",
                               hint=f"kept versions: {', '.join(f'v{v}' for v in known)}" if known
                               else f"no version of {name!r} is kept in {history.folder(name)}")
            old = markdown.parse(text, path=str(history.file(name, version)))
            current = self.library.get(name)
            status = "approved" if current is not None and current.skill.status == "approved" else "candidate"
            if current is not None and current.skill.status == status and same_content(old, current.skill):
                raise ReviewError(f"{name} v{current.skill.version} already has the content of v{version}",
                                  hint="nothing to restore")
            was = current.skill.status if current else "gone"
            note = f"restored v{version} {_stamp()} by {self.who}" + ("" if status == "approved" else f" (was {was})")
            skill = _noted(old, note, status=status, version=max(history.latest(name), old.version) + 1)
            before = sha256_file(current.file) if current else None
            self._changing()
            self.library.save(skill)
            item = ReviewItem(self.library.get(name), status, risk_flags(skill))  # type: ignore[arg-type]
            decision = self._log("restore", item, before, reason=f"restored v{version}")
            self.publish(self.library)
        return decision

    # -- a conflict between two machines -----------------------------------------------------
    def resolve(self, name: str, take: int | None = None) -> Decision:
        """Settle a conflict ``sync`` kept: keep the version in place (``take`` None), or put the other version
        number ``take`` (``review list`` shows them) in its place, with the status it had there."""
        check_name(name)
        with self.library.lock():
            found = [c for c in sync.conflicts(self.library) if c.name == name]
            if not found:
                raise NotFound(f"{name} has no conflict to resolve", hint="`skillmill review list` shows conflicts")
            current = self.library.get(name)
            before = sha256_file(current.file) if current else None
            self._changing()
            if take is not None:
                if not 1 <= take <= len(found):
                    raise UsageError(f"{name} has {len(found)} other version(s): --take 1..{len(found)}")
                chosen = found[take - 1]
                file = self.library.root / chosen.file
                other = markdown.parse(file.read_text(encoding="utf-8"), path=str(file))
                status = chosen.other.split(",")[0].split(" ")[0]
                note = f"kept {_stamp()} by {self.who} over the version {chosen.kept} here"
                if status == "proposed":
                    self.library.propose(other)
                else:
                    status = status if status in ("candidate", "approved", "deprecated", "rejected") else "candidate"
                    self.library.save(_noted(other, note, status=status))
                reason = f"took the other version ({chosen.other})"
            else:
                reason = "kept the version in place" + (f" ({current.skill.status})" if current else "")
            sync.drop_conflict(self.library, name)
            stored = self.library.get(name)
            item = ReviewItem(stored, stored.skill.status, risk_flags(stored.skill)) if stored else None
            if item is None:
                raise NotFound(f"{name} has no version in place after resolving")
            decision = self._log("resolve", item, before, reason=reason)
            self.publish(self.library)
        return decision

    # -- the log ------------------------------------------------------------------------
    def _log(self, action: Action, item: ReviewItem, before: str | None, reason: str | None,
             target: str = "skill") -> Decision:
        """Append the audit entry for a decision already written to disk."""
        name = item.name
        if target == "proposal" and action in ("reject",):
            stored = self.library.rejected_proposal(name)
        elif target == "proposal" and action == "edit":
            stored = self.library.proposal(name)
        else:
            stored = self.library.get(name)
        after = sha256_file(stored.file) if stored else None
        skill = stored.skill if stored else item.skill
        status = "proposed" if (target == "proposal" and action == "edit") else skill.status
        if target == "proposal" and action == "reject":
            status = "rejected"
        codes = flag_codes(risk_flags(skill))
        entry = self.library.audit.append(who=self.who, action=action, skill=name, version=skill.version,
                                          status=status, target=target, before=before, after=after,
                                          reason=reason, flags=codes)
        what = f"{action} {name} v{skill.version}" + (" (proposed change)" if target == "proposal" else "")
        sync.record(self.library, self.who, f"{what}: {reason}" if reason else what, name)  # a team library: a commit
        return Decision(action, name, skill.version, status, entry, codes)


def validate_edit(item: ReviewItem, text: str) -> Skill:
    """Parse edited SKILL.md text and refuse what an edit may not change."""
    edited = markdown.parse(text, path=f"{item.name}/{SKILL_FILE} (edited)")
    if edited.name != item.name:
        raise SkillFileError(f"the name changed from {item.name!r} to {edited.name!r}",
                             hint="an edit keeps the name; reject this skill and let a run propose another")
    if item.skill.generated and not edited.generated:
        raise SkillFileError("the metadata block (generator: \"skillmill\", status, version, sources) was removed",
                             hint="keep the metadata lines; edit the description and the sections below them")
    if edited.generated and edited.status != item.skill.status:
        raise SkillFileError(f"the status changed from {item.skill.status} to {edited.status} in the text",
                             hint="status changes through `skillmill review approve/reject/deprecate`, not edits")
    return edited


def _reason(reason: str | None, action: str) -> str:
    text = " ".join((reason or "").split())
    if not text:
        raise UsageError(f"say why you {action} it", hint="pass --reason TEXT; it goes into the audit log")
    return text


def _state_hint(item: ReviewItem) -> str:
    return {
        "approved": "an approved skill is retired with `skillmill review deprecate NAME --reason ...`",
        "rejected": "to reconsider it, `skillmill review restore NAME --version N` puts it back in the queue",
        "deprecated": "to bring it back, `skillmill review restore NAME --version N` puts it back in the queue",
    }.get(item.status, "see `skillmill review show NAME`")

