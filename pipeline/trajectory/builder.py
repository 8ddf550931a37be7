"""Append steps in order; calls and results pair themselves; ``build()`` derives the rest.

Format plugins only translate their records into builder calls, so pairing, truncation,
task selection and redaction are written once. The content id is not set here: it hashes the
outcome too, which ``pipeline.ingest.ingest_file`` infers after the parser is done, so that is
where it is computed (once -- it serializes the whole trajectory).

Redaction happens here, at the boundary: every text a plugin hands over (messages, commands,
outputs, paths, diffs, the task, header fields such as ``cwd``) is redacted once, before it
is clipped -- a secret cut in half by clipping would no longer match its detector -- and
before anything can store, index, log or prompt it. What was redacted is recorded as
``Trajectory.redactions`` (kind, count, step, field).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pipeline import voice
from pipeline.redact import Sanitized, current
from pipeline.trajectory.model import MAX_STEP_TEXT, Outcome, Redaction, Step, StepKind, Trajectory, clip


def parse_time(value: Any) -> datetime | None:
    """ISO-8601 strings (with ``Z``) or epoch seconds / milliseconds; None when unreadable."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            seconds = value / 1000 if value > 1e11 else value
            return datetime.fromtimestamp(seconds, tz=UTC)
        if isinstance(value, str):
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None


class TrajectoryBuilder:
    """Collects steps of one session; keeps the header fields in ``fields``."""

    def __init__(self, *, source_format: str, agent: str, source_path: str = "") -> None:
        self.steps: list[Step] = []
        self._open_calls: dict[str, int] = {}  # sanitized call id -> the call's index
        self._task: Sanitized | None = None
        self.outcome: Outcome | None = None
        self.redactions: list[Redaction] = []
        self._redactor = current()
        # Header text is redacted as it comes in (here and in ``set``), not at ``build``: an
        # incremental read pickles the builder into the state database between reads.
        self.fields: dict[str, Any] = {
            "source_format": source_format,
            "agent": self._clean(agent, None, "agent"),  # ATIF's comes from the file
            "source_path": self._clean(source_path, None, "source_path"),
        }

    def __getstate__(self) -> dict[str, Any]:
        # Incremental reads pickle a parser's builder (``TrajectoryFormat.resume``); the redactor
        # is process state (compiled rules, config), taken afresh when the read resumes.
        state = self.__dict__.copy()
        state.pop("_redactor", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._redactor = current()

    # -- redaction --------------------------------------------------------------------
    def _clean(self, text: str, step: int | None, field: str, *, clipped: bool = False) -> Sanitized:
        """Redact ``text`` (then clip it) and record what was replaced."""
        sanitized, counts = self._redactor.sanitize(text, then=_clip if clipped else None)
        for kind, count in counts.items():
            self.redactions.append(Redaction(step=step, field=field, kind=kind, count=count))
        return sanitized

    @property
    def task(self) -> Sanitized | None:
        """The task, when the format knows it better than "the first user message"."""
        return self._task

    @task.setter
    def task(self, value: str | None) -> None:
        self._task = None if value is None else self._clean(value.strip(), None, "task", clipped=True)

    # -- header -----------------------------------------------------------------------
    def set(self, **fields: Any) -> None:
        """Set header fields; the first non-empty value wins (sessions repeat them per line)."""
        for key, value in fields.items():
            if value not in (None, "") and self.fields.get(key) in (None, ""):
                self.fields[key] = self._clean(value, None, key) if isinstance(value, str) and \
                    key in _HEADER_TEXT else value

    # -- steps ------------------------------------------------------------------------
    def _add(self, kind: StepKind, text: str, timestamp: Any, **extra: Any) -> int:
        index = len(self.steps)
        same_as_command = bool(text) and text == extra.get("command")
        for name in ("tool", "call_id", "command", "diff"):
            if isinstance(extra.get(name), str):
                extra[name] = self._clean(extra[name], index, name, clipped=name == "diff")
        if extra.get("paths"):
            extra["paths"] = [self._clean(p, index, "paths") for p in extra["paths"]]
        # A shell call's text is its command: redacted (and counted) once.
        full = extra["command"] if same_as_command else self._clean(text or "", index, "text")
        # Clipped after redaction, never before; text that fits is the redacted text itself (no copy).
        shown = full if len(full) <= MAX_STEP_TEXT else self._redactor.sanitize(full, then=_clip)[0]
        step = Step(index=index, kind=kind, timestamp=parse_time(timestamp), text=shown, text_size=len(full),
                    **extra)
        self.steps.append(step)
        return index

    def user(self, text: str, *, timestamp: Any = None, meta: bool = False, sidechain: bool = False) -> int:
        """A user turn; one in skillmill's or an agent's harness's voice (``voice.is_harness``) is the CLI's (``meta``)."""
        return self._add(StepKind.USER, text, timestamp, meta=meta or voice.is_harness(text), sidechain=sidechain)

    def assistant(self, text: str, *, timestamp: Any = None, sidechain: bool = False) -> int:
        return self._add(StepKind.ASSISTANT, text, timestamp, sidechain=sidechain)

    def call(self, tool: str, *, call_id: str | None = None, text: str = "", command: str | None = None,
             paths: list[str] | None = None, diff: str | None = None, timestamp: Any = None,
             sidechain: bool = False) -> int:
        index = self._add(StepKind.TOOL_CALL, text or command or "", timestamp, tool=tool, call_id=call_id,
                          command=command, paths=list(dict.fromkeys(paths or [])), diff=diff,
                          sidechain=sidechain)
        self._open_calls[self.steps[index].call_id or f"#{index}"] = index
        return index

    def result(self, *, call_id: str | None = None, text: str = "", exit_code: int | None = None,
               is_error: bool | None = None, timestamp: Any = None, sidechain: bool = False) -> int:
        """Record a tool result; without ``call_id`` it pairs with the latest unanswered call."""
        clean_id = self._clean(call_id, len(self.steps), "call_id") if call_id is not None else None
        key = clean_id if clean_id is not None else self._latest_open_key()
        call_index = self._open_calls.pop(key, None) if key is not None else None
        tool = self.steps[call_index].tool if call_index is not None else None
        if is_error is None and exit_code is not None:
            is_error = exit_code != 0
        index = self._add(StepKind.TOOL_RESULT, text, timestamp, tool=tool, call_id=clean_id,
                          exit_code=exit_code, is_error=is_error, call_index=call_index,
                          sidechain=sidechain)
        if call_index is not None:
            self.steps[call_index].result_index = index
        return index

    @property
    def has_open_call(self) -> bool:
        return bool(self._open_calls)

    def _latest_open_key(self) -> str | None:
        return next(reversed(self._open_calls), None) if self._open_calls else None

    def amend_result(self, call_id: str, *, exit_code: int | None = None, is_error: bool | None = None,
                     paths: list[str] | None = None, diff: str | None = None) -> bool:
        """Late facts about a call (e.g. an exit code reported by a separate event)."""
        call_id = self._redactor.sanitize(call_id)[0]  # as the steps hold it
        for step in reversed(self.steps):
            if step.call_id != call_id:
                continue
            if step.kind is StepKind.TOOL_RESULT:
                if exit_code is not None:
                    step.exit_code = exit_code
                    step.is_error = exit_code != 0 if is_error is None else is_error
                elif is_error is not None:
                    step.is_error = is_error
            if step.kind is StepKind.TOOL_CALL:
                if paths:
                    clean = [self._clean(p, step.index, "paths") for p in paths]
                    step.paths = list(dict.fromkeys([*step.paths, *clean]))
                if diff and not step.diff:
                    step.diff = self._clean(diff, step.index, "diff", clipped=True)
                return True
        return False

    # -- result -----------------------------------------------------------------------
    def build(self) -> Trajectory:
        stamps = [s.timestamp for s in self.steps if s.timestamp is not None]
        fields = {key: self._clean(value, None, key) if isinstance(value, str) and key in _HEADER_TEXT else value
                  for key, value in self.fields.items()}
        fields.setdefault("started_at", min(stamps) if stamps else None)
        fields.setdefault("ended_at", max(stamps) if stamps else None)
        if fields.get("started_at") is None and stamps:
            fields["started_at"] = min(stamps)
        if fields.get("ended_at") is None and stamps:
            fields["ended_at"] = max(stamps)
        task = self.task
        if task is None:
            first = next((s for s in self.steps if s.kind is StepKind.USER and not s.meta and s.text.strip()), None)
            task = self._redactor.sanitize(first.text, then=str.strip)[0] if first is not None else None
        return Trajectory(**fields, task=task, steps=self.steps, outcome=self.outcome or Outcome(),
                          redactions=self.redactions)


def _clip(text: str) -> str:
    return clip(text)[0]


#: Header fields that hold free text (a path, a branch name ...); ``source_format`` is the plugin's name.
_HEADER_TEXT = frozenset({"source_path", "agent", "agent_version", "model", "session_id", "parent_session_id", "cwd",
                          "repo", "git_branch"})
