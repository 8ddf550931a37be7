"""Claude Code session transcripts: ``~/.claude/projects/<cwd-slug>/<sessionId>.jsonl``.

One JSON entry per line. Assistant API responses are split over several lines sharing
``message.id``; tool results come back as *user* entries holding ``tool_result`` blocks.
Entry types we do not use (file-history-snapshot, permission-mode, custom-title, agent-name,
api_error and compaction boundaries ...) are skipped, never fatal; the 2.x ones that carry
something are read (``_Transcript.add``): a prompt queued while the agent was busy and handed
to it mid-turn (``queue-operation`` ``remove``; 2.1.x writes a ``queued_command`` attachment
instead), a local slash command (``system`` ``local_command``), the pull request the session
opened (``pr-link``: its repository), and a subagent's own messages streamed into the parent
(``progress`` ``agent_progress``). See ../shared/docs/trajectory-formats.md §1, §12.

Subagents. Claude Code has written them three ways: inline in the session file with
``isSidechain: true`` (1.0.x), as ``agent-<id>.jsonl`` beside the session (<= 2.0) and as
``<session>/subagents/agent-<id>.jsonl`` (2.1.x). Every subagent run becomes its own
trajectory whatever the layout: ``session_id`` ``agent-<agentId>`` (the id the parent's Task
result names) or ``sidechain-<uuid of its first entry>`` (1.0.x, which has no agent id),
``parent_session_id`` the parent's session id, its task the prompt the parent gave it. The
parent keeps its Task call and the subagent's final report as that call's result. Why split
rather than merge into the parent: a subagent run is the best unit to distil (one focused,
self-contained task, its own tool calls, its own end), parallel subagents written inline would
otherwise interleave their steps in the parent and muddle "last check after the last edit",
and the same session reads the same way whichever Claude Code version recorded it.

2.1.x also streams each subagent message into the parent as ``progress`` entries
(``data.type: agent_progress``, ``data.agentId``, the message in ``data.message``; the older
``data.normalizedMessages`` repeats every message so far and is never read). Those are the same
messages as the subagent's own file, so they are read only when that file is not beside the
session (``<session>/subagents/agent-<id>.jsonl`` or ``agent-<id>.jsonl``): a subagent's calls
are counted once, from its file when there is one, from its parent otherwise.

Branches. Entries form a tree through ``uuid`` / ``parentUuid``. Parallel tool calls branch
it too (2.1.x hangs each result under its own tool_use line), so only a *turn* branch is a
rewind: a node with two or more children that each start a turn (a prompt, or an assistant
response with a new ``message.id``). The later child is what the person went on with; the
earlier subtrees were abandoned (and with "rewind code", their edits undone), so their steps
are left out. ``supersedesUuids`` / ``retractedMessageUuids`` drop entries the same way. An
entry whose ``uuid`` was seen before is skipped, so nothing is read twice.
"""

from __future__ import annotations

import difflib
import pickle
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from pipeline import voice
from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats._common import add_record
from pipeline.ingest.identity import Identity
from pipeline.ingest.reader import Checkpoint, Probe, iter_jsonl
from pipeline.ingest.report import FileReport
from pipeline.redact import sanitize
from pipeline.trajectory import Trajectory, TrajectoryBuilder
from pipeline.trajectory.commands import is_shell_tool

_ENTRY_TYPES = {"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation",
                "progress", "attachment", "custom-title", "ai-title", "agent-name", "agent-setting",
                "permission-mode", "mode", "pr-link", "last-prompt", "bridge-session", "worktree-state"}
_EXIT_CODE = re.compile(r"^Exit code (-?\d+)")
_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
#: Tool results that mean the tool never ran: the person said no, or the input was invalid.
_NOT_RUN = ("The user doesn't want to proceed with this tool use", "The user doesn't want to take this action",
            "Claude requested permissions to", "Permission to use", "<tool_use_error>")
_PATH_KEYS = ("file_path", "notebook_path", "path")
_HEAD_CHARS = 2000
#: Built-in slash commands that manage the session rather than ask for work.
_SESSION_COMMANDS = {"/clear", "/compact", "/model", "/cost", "/help", "/login", "/logout", "/status", "/config",
                     "/resume", "/exit", "/mcp", "/memory", "/permissions", "/doctor", "/context", "/hooks",
                     "/agents", "/ide", "/vim", "/terminal-setup", "/add-dir", "/bug", "/release-notes",
                     "/export", "/usage", "/rewind", "/statusline", "/output-style", "/todos", "/plugin"}
_MAIN = "main"

#: Claude Code refusing a tool call (in the corpus: 19 results of 439). Its validation errors come
#: wrapped in ``<tool_use_error>``: "File has not been read yet. Read it first before writing to
#: it." (14), "InputValidationError: Task failed due to the following issue: The required
#: parameter `prompt` is missing" (1), "File does not exist." (2), and elsewhere "String to
#: replace not found in file.", "Found 2 matches of the string to replace, but replace_all is
#: false", "File has been modified since read", "No such tool available", "Sibling tool call
#: errored"; the same messages bare (``toolUseResult`` keeps them as "Error: ..."); a Read of a
#: directory, "EISDIR: illegal operation on a directory, read" (1); a permission not granted,
#: "Claude requested permissions to write to <file>, but you haven't granted it yet." (1).
#: Not refusals: Bash's "Exit code N" (the command ran), the person declining a call ("The user
#: doesn't want to proceed with this tool use"), a Write failing on the file system (EACCES).
PROTOCOL_ERRORS = re.compile(
    r"\A\s*(?:<tool_use_error>|(?:Error: )?(?:InputValidationError: |File has not been read yet|"
    r"String to replace not found in file|Found \d+ matches of the string to replace|"
    r"File has (?:been )?(?:unexpectedly )?modified since (?:it was )?read|No such tool available|"
    r"No changes to make: old_string and new_string are exactly the same)|"
    r"EISDIR: illegal operation on a directory|Claude requested permissions to .{1,300}?, but you haven't granted it yet)")


class ClaudeCode(TrajectoryFormat):
    name = "claude-code"
    agent = "claude-code"
    description = "Claude Code session transcripts (JSONL; subagents of all three layouts linked to their session)"
    locations = ("~/.claude/projects/*/*.jsonl", "~/.claude/projects/*/agent-*.jsonl",
                 "~/.claude/projects/*/*/subagents/agent-*.jsonl")
    suffixes = (".jsonl",)
    priority = 10
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        for record in probe.records:
            if not isinstance(record, dict):
                return False
            kind = record.get("type")
            if not isinstance(kind, str):
                return False
            if kind in ("user", "assistant", "system") and "sessionId" in record and "uuid" in record:
                message = record.get("message")  # Qwen Code's records: the same keys, a Gemini Content
                return not (isinstance(message, dict) and "parts" in message) and "systemPayload" not in record
            if kind == "summary" and "leafUuid" in record:
                return True
            if kind not in _ENTRY_TYPES:
                return False
        return False

    incremental = True

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        return self._read(path, report, None)

    def resume(self, path: Path, report: FileReport, checkpoint: Checkpoint) -> Iterator[Trajectory]:
        """Incremental hook (watermarks, issue 3): continue a growing session where the last read stopped.

        Claude Code only appends to a session file. The whole ``_Transcript`` (the entry tree, one
        ``_Session`` per agent with its builder, open calls and de-duplication keys) is pickled into
        ``checkpoint.state`` as it stood after the last *complete* line, and the next read unpickles
        it and feeds only the appended lines, so calls pair across the boundary, the task stays the
        first request, and rewound branches are still resolved over the whole tree at the end. The
        caller (``pipeline.ingest.watermark``) checks that the already-read bytes are unchanged and
        that the state was written by this same code; otherwise it reads the file whole.
        """
        return self._read(path, report, checkpoint)

    def _read(self, path: Path, report: FileReport, checkpoint: Checkpoint | None) -> Iterator[Trajectory]:
        transcript = pickle.loads(checkpoint.state) if checkpoint and checkpoint.state else _Transcript(path)
        snapshot = None
        for line, record in iter_jsonl(path, report, checkpoint=checkpoint):
            if checkpoint is not None and snapshot is None and line > checkpoint.line:
                snapshot = pickle.dumps(transcript)  # a last line without newline: resume from before it
            add_record(record, line, report, transcript.add, "entry")
        if checkpoint is not None:
            checkpoint.state = snapshot or pickle.dumps(transcript)  # before trajectories() prunes branches
        yield from transcript.trajectories()


def _turn(kind: Any, message: dict[str, Any]) -> int:
    """1: a prompt (a user entry that is not tool results), 2: a response, 0: neither."""
    if kind == "assistant":
        return 2
    if kind != "user":
        return 0
    content = message.get("content")
    if isinstance(content, list):
        return 0 if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content) else 1
    return 1 if isinstance(content, str) else 0


def _str(value: Any) -> str | None:
    """The value when it is a non-empty string: fields of the wrong type are ignored, not fatal."""
    return value if isinstance(value, str) and value else None


def _sanitized(value: Any) -> Any:
    """``value`` with every string in it redacted (a tool call's arguments)."""
    if isinstance(value, str):
        return sanitize(value)
    if isinstance(value, dict):
        return {key: _sanitized(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_sanitized(item) for item in value]
    return value


class _Transcript:
    """The entry tree of one file, and one ``_Session`` per agent (the main one, each subagent)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sessions: dict[str, _Session] = {}
        #: uuid -> (message id, agent group, 1 if it starts a turn as a prompt, 2 as a response)
        self.nodes: dict[str, tuple[str | None, str, int]] = {}
        self.children: dict[str, list[str]] = {}
        self.sidechain_group: dict[str, str] = {}
        self.dropped: set[str] = set()
        #: agent id -> whether the subagent's own file lies beside the session (``_own_file``)
        self.agent_files: dict[str, bool] = {}
        #: a pull request the session opened (``pr-link``), already redacted: its repository
        self.pr_url: str | None = None

    def add(self, entry: dict[str, Any], line: int) -> None:
        kind = entry.get("type")
        uuid = _str(entry.get("uuid"))
        parent = _str(entry.get("parentUuid")) or _str(entry.get("logicalParentUuid"))
        if uuid is not None and uuid in self.nodes:
            return  # the same entry written again
        group = self._group(entry, uuid, parent, line)
        message = entry.get("message")
        shaped = isinstance(message, dict)
        if not shaped:
            message = {}
        if uuid is not None:
            self.nodes[uuid] = (_str(message.get("id")), group, _turn(kind, message) if shaped else 0)
            if parent is not None:
                self.children.setdefault(parent, []).append(uuid)
        if "supersedesUuids" in entry or "retractedMessageUuids" in entry:
            for key in ("supersedesUuids", "retractedMessageUuids"):
                if isinstance(entry.get(key), list):
                    self.dropped.update(u for u in entry[key] if isinstance(u, str))
        if kind == "progress":
            self._progress(entry, line)
            return
        if kind == "pr-link":
            url = _str(entry.get("prRepository")) or _str(entry.get("prUrl"))  # owner/name, else its URL
            self.pr_url = self.pr_url or (sanitize(url) if url else None)
            return
        if kind == "queue-operation":
            self._session(_MAIN).queue(entry)
            return
        if kind == "system" and entry.get("subtype") == "local_command":
            self._session(group).local_command(entry, uuid)
            return
        if kind not in ("user", "assistant", "attachment"):
            return
        self._session(group).add(entry, kind, uuid, message)

    def _session(self, group: str) -> _Session:
        session = self.sessions.get(group)
        if session is None:
            session = self.sessions[group] = _Session(self.path, group)
        return session

    def _progress(self, entry: dict[str, Any], line: int) -> None:
        """A subagent's message streamed into its parent (2.1.x ``agent_progress``), read as the
        subagent's own entry -- unless the subagent's file is beside the session (read from there)."""
        data = entry.get("data")
        if not isinstance(data, dict) or data.get("type") != "agent_progress":
            return  # hook, bash, search progress: what the final entries say anyway
        agent, inner = _str(data.get("agentId")), data.get("message")
        if agent is None or not isinstance(inner, dict) or inner.get("type") not in ("user", "assistant"):
            return
        if self._own_file(agent):
            return
        nested = {key: entry[key] for key in ("sessionId", "cwd", "gitBranch", "version") if key in entry}
        nested.update(inner)
        nested.update(isSidechain=True, agentId=agent)
        self.add(nested, line)

    def _own_file(self, agent: str) -> bool:
        """Is ``agent-<agent>.jsonl`` beside the session (2.1.x ``<session>/subagents/``, or <= 2.0)?"""
        known = self.agent_files.get(agent)
        if known is None:
            name = f"agent-{agent}.jsonl"
            folder = self.path.parent
            try:
                known = (folder / self.path.stem / "subagents" / name).is_file() or (folder / name).is_file()
            except OSError:
                known = False
            self.agent_files[agent] = known
        return known

    def _group(self, entry: dict[str, Any], uuid: str | None, parent: str | None, line: int) -> str:
        if entry.get("isSidechain") is not True:
            return _MAIN
        agent = _str(entry.get("agentId"))
        if agent:
            return f"agent-{agent}"
        group = (self.sidechain_group.get(parent) if parent else None) or f"sidechain-{uuid or line}"
        if uuid:
            self.sidechain_group[uuid] = group
        return group

    def abandoned(self) -> set[str]:
        """Entries on branches the person rewound away from (with everything below them), and
        entries a later one superseded or retracted (alone: what follows them still happened)."""
        stack: list[str] = []
        for parent, kids in self.children.items():
            if len(kids) < 2:
                continue
            parent_message = self.nodes[parent][0] if parent in self.nodes else None
            turns: dict[str, list[str]] = {}  # per agent: a subagent starting under an entry is no rewind
            for kid in kids:
                message, group, turn = self.nodes[kid]
                if turn == 1 or (turn == 2 and (message is None or message != parent_message)):
                    turns.setdefault(group, []).append(kid)
            for started in turns.values():
                stack.extend(started[:-1])
        found: set[str] = set()
        while stack:
            uuid = stack.pop()
            if uuid not in found:
                found.add(uuid)
                stack.extend(self.children.get(uuid, ()))
        return found | self.dropped

    def trajectories(self) -> Iterator[Trajectory]:
        abandoned = self.abandoned()
        main = self.sessions.get(_MAIN)
        for session in self.sessions.values():
            session.prune(abandoned)
        # Subagents often work in a subfolder (``todo-app/types``): the repository is the session's,
        # and what any of its agents showed of it (a remote, a manifest) names it for all of them.
        project = main.builder.fields.get("cwd") if main is not None else None
        ordered = sorted(self.sessions.values(), key=lambda s: s.group != _MAIN)
        identity = Identity()
        identity.remote(self.pr_url)
        for session in ordered:
            cwd = project or session.builder.fields.get("cwd")
            identity.folder(cwd)
            identity.read(session.builder.steps, cwd)
        for session in ordered:
            if session.builder.steps:
                yield session.build(identity.repo)


class _Session:
    """The steps of one agent (main or subagent) of the file."""

    def __init__(self, path: Path, group: str, source_format: str = "claude-code") -> None:
        self.group = group
        self.builder = TrajectoryBuilder(source_format=source_format, agent=ClaudeCode.agent,
                                         source_path=str(path))
        self.step_entries: list[str | None] = []
        self.models: dict[str, int] = {}
        self.seen_blocks: set[str] = set()
        self.answered: set[str] = set()
        self.call_tools: dict[str, str] = {}
        self.diffed: set[str] = set()
        self.pending_diffs: dict[str, tuple[str, dict[str, Any], str]] = {}
        self.header_done = False
        #: prompts typed while the agent was busy, waiting in Claude Code's queue (``queue``)
        self.queued: list[str] = []
        #: queued prompts added from one record kind, by text, until the other kind names them too:
        #: ``queue`` for ``queue-operation`` ``remove``, ``attachment`` for ``queued_command`` (``_deliver``)
        self.delivered: dict[str, list[str]] = {"queue": [], "attachment": []}

    def __getstate__(self) -> dict[str, Any]:
        """What an incremental read stores in the state database: no session text unredacted.

        Call ids are redacted as they come in (``_id``); edit arguments waiting for their result,
        tool names and model names only here, when the session is pickled (rare, and cheap).
        """
        state = self.__dict__.copy()
        state["pending_diffs"] = {call_id: (sanitize(name), _sanitized(args), sanitize(path))
                                  for call_id, (name, args, path) in self.pending_diffs.items()}
        state["call_tools"] = {call_id: sanitize(name) for call_id, name in self.call_tools.items()}
        models: dict[str, int] = {}
        for model, count in self.models.items():
            clean = sanitize(model)
            models[clean] = models.get(clean, 0) + count
        state["models"] = models
        state["queued"] = [sanitize(text) for text in self.queued]
        return state

    def add(self, entry: dict[str, Any], kind: str, uuid: str | None, message: dict[str, Any]) -> None:
        b = self.builder
        if not self.header_done:  # every entry repeats them: the first complete one is enough
            b.set(session_id=_str(entry.get("sessionId")), cwd=_str(entry.get("cwd")),
                  git_branch=_str(entry.get("gitBranch")), agent_version=_str(entry.get("version")))
            # (gitBranch is "" outside a repository: it may never come)
            self.header_done = all(b.fields.get(k) for k in ("session_id", "cwd", "agent_version"))
        sidechain = self.group != _MAIN
        stamp = entry.get("timestamp")
        if kind == "assistant":
            self._assistant(entry, message, stamp, sidechain)
        elif kind == "user":
            self._user(entry, message, stamp, sidechain)
        else:
            self._attachment(entry.get("attachment"), stamp, sidechain)
        self.step_entries.extend([uuid] * (len(b.steps) - len(self.step_entries)))

    # -- assistant ------------------------------------------------------------------------
    def _assistant(self, entry: dict[str, Any], message: dict[str, Any], stamp: Any, sidechain: bool) -> None:
        model = _str(message.get("model"))
        synthetic = model == "<synthetic>" or entry.get("isApiErrorMessage") is True
        if model and not synthetic:
            self.models[model] = self.models.get(model, 0) + 1
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            return
        for position, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            # zlib.crc32, not hash(): the key must match across processes when a read resumes.
            btype = block.get("type")
            text = _str(block.get("text"))
            block_id = self._id(block.get("id"))  # redacted: the keys of seen_blocks are pickled
            key = block_id or f"{message.get('id')}:{position}:{zlib.crc32((text or '').encode())}"
            if key in self.seen_blocks:
                continue  # the same block written again by a later line of the same response
            self.seen_blocks.add(key)
            if btype == "text" and text and text.strip():
                if synthetic:
                    # API errors and Claude Code's own notices: neither the model nor a person.
                    self.builder.user(text, timestamp=stamp, meta=True, sidechain=sidechain)
                else:
                    self.builder.assistant(text, timestamp=stamp, sidechain=sidechain)
            elif btype == "tool_use":
                self._tool_use(block, block_id, stamp, sidechain)

    def _tool_use(self, block: dict[str, Any], call_id: str | None, stamp: Any, sidechain: bool) -> None:
        name = _str(block.get("name")) or "tool"
        args = block.get("input") if isinstance(block.get("input"), dict) else {}
        paths = [args[k] for k in _PATH_KEYS if _str(args.get(k))]
        command = _str(args.get("command")) if is_shell_tool(name) else None
        diff = None
        if call_id and name.lower() in ("edit", "multiedit"):
            # The result's structuredPatch is the better diff (real line numbers, what was applied)
            # and costs nothing; difflib over the arguments only when a successful result has no
            # patch, or no result came. A refused edit changed nothing and gets no diff.
            self.pending_diffs[call_id] = (name, args, paths[0] if paths else "file")
        else:
            diff = _edit_diff(name, args, paths[0] if paths else "file")
        if call_id:
            self.call_tools[call_id] = name
            if diff:
                self.diffed.add(call_id)
        self.builder.call(name, call_id=call_id, text=command or _describe(name, args), command=command,
                          paths=paths, diff=diff, timestamp=stamp, sidechain=sidechain)

    # -- user -----------------------------------------------------------------------------
    def _user(self, entry: dict[str, Any], message: dict[str, Any], stamp: Any, sidechain: bool) -> None:
        content = message.get("content")
        # A compact summary ("This session is being continued ...") is Claude Code talking, not a person; an entry
        # with a sourceToolUseID is a slash command the model ran through its SlashCommand tool.
        meta = entry.get("isMeta") is True or entry.get("isCompactSummary") is True or bool(entry.get("sourceToolUseID"))
        if isinstance(content, str):
            self._user_text(content, stamp, meta, sidechain)
            return
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "tool_result":
                self._tool_result(block, entry, stamp, sidechain)
            elif btype == "text":
                self._user_text(_str(block.get("text")) or "", stamp, meta, sidechain)
            elif btype in ("image", "document"):
                self.builder.user(f"[{btype}]", timestamp=stamp, meta=meta, sidechain=sidechain)

    def _user_text(self, text: str, stamp: Any, meta: bool, sidechain: bool) -> None:
        if not text.strip():
            return
        head = text[:_HEAD_CHARS].lstrip()  # what marks a text is at its start; outputs can be huge
        # a slash command's record opens with its tags; the tags inside other text (a command's output in bash
        # mode, a hook's: `<bash-stdout><command-name>/deploy...`) are that text's words, never the person's
        typed = head.startswith(("<command-message>", "<command-name>"))
        name = _COMMAND_NAME.search(head) if typed else None
        if name:  # a slash command: keep "/name args" as what the person asked
            args = _COMMAND_ARGS.search(text)
            command = name.group(1).strip()
            text = f"{command} {args.group(1).strip() if args else ''}".strip()
            meta = meta or command in _SESSION_COMMANDS
        elif voice.is_harness(head):  # text Claude Code puts in user entries that no person typed
            meta = True
        self.builder.user(text, timestamp=stamp, meta=meta, sidechain=sidechain)

    def _attachment(self, attachment: Any, stamp: Any, sidechain: bool) -> None:
        """2.1.x: a prompt typed while the agent was busy arrives as a ``queued_command`` attachment."""
        if not isinstance(attachment, dict) or attachment.get("type") != "queued_command":
            return
        if attachment.get("commandMode") not in (None, "prompt"):
            return
        prompt = attachment.get("prompt")
        text = prompt if isinstance(prompt, str) else _result_text(prompt)
        origin = attachment.get("origin")  # who queued it: a person ("human"), or the CLI or another agent's task
        person = origin is None or isinstance(origin, dict) and origin.get("kind") == "human"
        self._deliver("attachment", text, stamp, attachment.get("isMeta") is True or not person, sidechain)

    def queue(self, entry: dict[str, Any]) -> None:
        """Claude Code's prompt queue (``queue-operation``, 2.0.x on): what the person typed while the
        agent worked. ``enqueue`` adds a prompt; ``dequeue`` takes the first for the next turn (it is
        then written as a user entry); ``remove`` hands the first to the agent mid-turn, with the next
        tool result -- written nowhere else before 2.1.x, so it becomes the person's step here;
        ``popAll`` takes them all back into the input box (the edited prompt is queued again)."""
        operation = entry.get("operation")
        if operation == "enqueue":
            content = entry.get("content")
            text = content if isinstance(content, str) else _result_text(content) if content else ""
            if text.strip():
                self.queued.append(text)
        elif operation == "popAll":
            self.queued.clear()
        elif operation in ("dequeue", "remove") and self.queued:
            text = self.queued.pop(0)
            if operation == "remove":
                self._deliver("queue", text, entry.get("timestamp"), False, False)
                self.step_entries.extend([None] * (len(self.builder.steps) - len(self.step_entries)))

    def _deliver(self, source: str, text: str, stamp: Any, meta: bool, sidechain: bool) -> None:
        """A queued prompt handed over mid-turn. Should both records of it be written (the queue's
        ``remove`` and a ``queued_command`` attachment), the second is not another prompt."""
        clean = sanitize(text)  # kept to compare, and pickled with the session: redacted
        other = self.delivered["attachment" if source == "queue" else "queue"]
        if clean in other:
            other.remove(clean)
            return
        self.delivered[source].append(clean)
        self._user_text(text, stamp, meta, sidechain)

    def local_command(self, entry: dict[str, Any], uuid: str | None) -> None:
        """A slash command Claude Code ran itself (2.1.x ``system`` ``local_command``): the person's
        doing, not a request to the model, so it is kept as context."""
        content = entry.get("content")
        if isinstance(content, str) and content.strip():
            before = len(self.builder.steps)
            self._user_text(content, entry.get("timestamp"), True, self.group != _MAIN)
            self.step_entries.extend([uuid] * (len(self.builder.steps) - before))

    def _tool_result(self, block: dict[str, Any], entry: dict[str, Any], stamp: Any, sidechain: bool) -> None:
        call_id = self._id(block.get("tool_use_id"))
        if call_id:
            if call_id in self.answered:
                return  # the same result written again
            self.answered.add(call_id)
        extra = entry.get("toolUseResult")
        text = _result_text(block.get("content"))
        if not text and isinstance(extra, str):
            text = extra  # on failure Claude Code stores the message as a plain string
        not_run = text[:_HEAD_CHARS].lstrip().startswith(_NOT_RUN) or bool(entry.get("toolDenialKind"))
        is_error = block.get("is_error") is True or not_run
        exit_code = None
        if is_shell_tool(self.call_tools.get(call_id or "")):
            match = _EXIT_CODE.match(text)
            if match:
                exit_code = int(match.group(1))
            elif isinstance(extra, dict) and extra.get("interrupted") is True:
                exit_code = 130
            elif not not_run:  # a command that never ran has no exit code
                exit_code = 1 if is_error else 0
        self.builder.result(call_id=call_id, text=text, exit_code=exit_code, is_error=is_error,
                            timestamp=stamp, sidechain=sidechain)
        pending = self.pending_diffs.pop(call_id, None) if call_id else None
        patch = extra.get("structuredPatch") if isinstance(extra, dict) else None
        if call_id and call_id not in self.diffed and (pending or isinstance(patch, list)):
            diff = None
            if isinstance(patch, list):
                diff = _structured_patch(_str(extra.get("filePath")) or (pending[2] if pending else "file"), patch)
            if diff is None and pending and not is_error:  # a refused edit changed nothing: no diff
                diff = _edit_diff(*pending)
            if diff:
                self.builder.amend_result(call_id, diff=diff)

    # -- result ---------------------------------------------------------------------------
    def prune(self, abandoned: set[str]) -> None:
        """Drop the steps of abandoned branches; renumber and re-pair what is left."""
        if not abandoned or not any(e in abandoned for e in self.step_entries):
            return
        steps = self.builder.steps
        kept = [s for s, e in zip(steps, self.step_entries, strict=True) if e not in abandoned]
        new_index = {s.index: position for position, s in enumerate(kept)}
        for position, step in enumerate(kept):
            step.index = position
            step.call_index = new_index.get(step.call_index) if step.call_index is not None else None
            step.result_index = new_index.get(step.result_index) if step.result_index is not None else None
        self.builder.steps = kept
        self.step_entries = [e for e in self.step_entries if e not in abandoned]

    def _id(self, value: Any) -> str | None:
        """A call id, redacted (and the redaction recorded) once, before the session keys its maps by it."""
        if not isinstance(value, str) or not value:
            return None
        return self.builder._clean(value, len(self.builder.steps), "call_id")

    def build(self, repo: str | None = None) -> Trajectory:
        b = self.builder
        for call_id, pending in self.pending_diffs.items():  # edits whose result never came
            diff = _edit_diff(*pending)
            if diff:
                b.amend_result(call_id, diff=diff)
        self.pending_diffs = {}
        if self.models:
            b.set(model=max(self.models, key=lambda m: self.models[m]))
        if self.group != _MAIN:
            # A subagent: its own trajectory, linked to the session that started it.
            b.fields["parent_session_id"] = b.fields.get("session_id")
            b.fields["session_id"] = self.group
        b.set(repo=repo)
        return b.build()


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, dict):
                text = item.get("text")
                parts.append(text if isinstance(text, str) else f"[{item.get('type')}]" if item.get("type") else "")
            elif isinstance(item, str):
                parts.append(item)
        return "\n".join(p for p in parts if p)
    return "" if content is None else str(content)[:10000]


def _describe(name: str, args: dict[str, Any]) -> str:
    for key in ("pattern", "query", "url", "description", "prompt", "file_path", "path", "notebook_path"):
        value = _str(args.get(key))
        if value:
            return f"{name} {value}"
    try:
        shown = orjson.dumps(args, default=str).decode()
    except (orjson.JSONEncodeError, RecursionError):
        shown = "(arguments nested too deeply to show)"
    return f"{name} {shown[:500]}"


def _edit_diff(name: str, args: dict[str, Any], path: str) -> str | None:
    lowered = name.lower()
    if lowered == "edit" and isinstance(args.get("old_string"), str):
        return _unified(path, args["old_string"], str(args.get("new_string") or ""))
    if lowered == "multiedit" and isinstance(args.get("edits"), list):
        return "\n".join(_unified(path, str(e.get("old_string", "")), str(e.get("new_string", "")))
                         for e in args["edits"] if isinstance(e, dict))
    if lowered == "write" and isinstance(args.get("content"), str):
        return _created(path, args["content"])
    return None


def _created(path: str, content: str) -> str:
    """The diff that creates a file: what difflib gives for "" -> content, without its O(n) matching."""
    lines = content.splitlines()
    if not lines:
        return ""
    count = f",{len(lines)}" if len(lines) != 1 else ""
    return f"--- a/{path}\n+++ b/{path}\n@@ -0,0 +1{count} @@\n+" + "\n+".join(lines)


def _unified(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{path}", f"b/{path}", lineterm="", n=1)
    return "\n".join(lines)


def _structured_patch(path: Any, hunks: list[Any]) -> str | None:
    out = [f"--- a/{path}", f"+++ b/{path}"]
    for hunk in hunks:
        if not isinstance(hunk, dict):
            continue
        out.append(f"@@ -{hunk.get('oldStart')},{hunk.get('oldLines')} +{hunk.get('newStart')},{hunk.get('newLines')} @@")
        lines = hunk.get("lines")
        if isinstance(lines, list):
            out.extend(str(line) for line in lines)
    return "\n".join(out) if len(out) > 2 else None
