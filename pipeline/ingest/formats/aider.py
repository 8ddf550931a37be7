"""Aider chat histories: ``.aider.chat.history.md`` in a repository's root.

Aider appends Markdown to one file for every launch in the repository (``aider/io.py``):
``# aider chat started at <local time>`` opens a launch, each line the person typed is written
``#### <line>``, aider's own output (``tool_output`` / ``tool_error``) as a blockquote
``> <text>`` ending in two spaces -- a multi-line message keeps ``> `` on its first line only, so
the lines after it belong to it up to the one ending in two spaces -- and the model's replies
verbatim. One file therefore holds many launches (the aider repository's own history: 1,133),
and a launch often holds several unrelated requests. The file is streamed line by line, one
launch in memory.

One trajectory per request, not per launch, so that a task's title, its edits and its checks
belong together. A request is a typed message asking for work (the ``####`` lines of one
multi-line message are one message; ``/ask``, ``/code``, ``/architect`` with a question are
requests too) with everything up to the next request: the model's replies, its edits and
commits, lint runs, and the commands that act on that work -- ``/run``, ``/test``, ``!``,
``/git``, ``/undo``, ``/diff``, ``/commit``, ``/lint`` -- with their output. Commands that manage
the chat (``/add``, ``/drop``, ``/clear``, ``/model``, ``/web``, ``/help`` ...) prepare the next
request and open it; after the last request they close it. A message that only says go on
("do that" after an ``/ask`` plan, "go ahead", "ok, make those changes") or how it went
("nice, that worked!") stays in the request it answers. A launch in which nobody typed anything
(aider started and quit) gives none; a request without a reply or a tool call is still one.

The requests of a launch share its facts (version, directory, repository, start) and name it
as ``parent_session_id`` = ``<started>#<n>`` (n > 1 when two launches started the same
second; ``#1`` for the part of a file before its first header, and for published transcripts);
each is ``<parent>.<k>``, k counting from 1 in the launch, so they can be told apart and
ordered, and a request that corrects the one before ("don't use --no-git in those tests") can be
read next to what the agent did. The model is the one that answered most in the request, else
the one in use.

The repository (``pipeline.ingest.identity``): the git root the launch shows (``Git working dir:``,
or ``Cur working dir:`` with ``Git repo: ../.git``), a ``$ git clone`` a published transcript
started in, else the package folder its edits are in (``aider/coders/...`` -> ``aider``); a
launch that shows none of these takes what an earlier launch of the same file showed (aider
writes the history into the repository root, so its launches share one repository), and last
the history's folder. Only earlier launches count, and a launch is named as a whole when it
ends, so a history that grows keeps every name it gave before its last launch.

What becomes a step: the person's input (slash commands that manage the chat -- ``/add``,
``/undo``, ``/diff`` ... -- are kept as ``meta``); the model's reply; every SEARCH/REPLACE
(or older ORIGINAL/UPDATED) block and ``diff`` fence of a reply as an ``edit`` call with its
path and a unified diff, answered by ``Applied edit to X`` (+ the ``Commit <sha> <msg>`` lines),
by ``SearchReplaceNoExactMatch`` (an error), ``Skipping edits to X`` or a dry run; a file that is
applied without a block (the ``whole`` edit format) gets its call then; ``/run``, ``!``,
``/git`` and ``/test`` as calls with their output (``/test`` only sends failing output to the
model, so its exit code is 1 when the output was added to the chat, else 0); lint runs
(``## Running: <cmd>``, shown only when the linter found errors) as failed calls; shell commands
the model proposed and the person accepted (``Running <cmd>``) as calls without output (aider
does not log it). The model comes from ``Main model:`` / ``Models:`` / ``Model:``, the version
from ``Aider vX``, the directory from ``Cur working dir:`` (else the history file's folder, which
aider uses as the repository root). Aider records no per-message times: ``started_at`` is the
launch header, read as UTC because aider writes local time without a zone.

Published transcripts (aider.chat examples) wrap the same content in Jekyll front matter and
``<div class="chat-transcript">`` blocks: only the content inside the blocks is read.
See ../shared/docs/trajectory-formats.md §6.
"""

from __future__ import annotations

import difflib
import itertools
import ntpath
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.identity import Identity
from pipeline.ingest.reader import Probe, iter_text_lines
from pipeline.ingest.report import FileReport
from pipeline.trajectory import Trajectory, TrajectoryBuilder

_SESSION = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)")
_SNIFF_SESSION = re.compile(rb"(?m)^# aider chat started at \d{4}-")
_SNIFF_INPUT = re.compile(rb"(?m)^#### \S[^\n]*  \r?$")
_SNIFF_TOOL = re.compile(rb"(?m)^> \S[^\n]*  \r?$")
_VERSION = re.compile(r"^Aider v(\d\S*)")
_MODEL = re.compile(r"^(?:Main model|Models|Model): (\S+)")
_CWD = re.compile(r"^Cur working dir: (.+)$")
_GIT_REPO = re.compile(r"^Git repo: (\S+?)(?: with [\d,]+ files)?$")
_GIT_DIR = re.compile(r"^Git working dir: (.+)$")
_SHELL_PREAMBLE = re.compile(r"^\$ (.+)$")  # a published transcript's shell lines before aider starts
_APPLIED = re.compile(r"^Applied edit to (.+)$")
_NOT_APPLIED = re.compile(r"^Did not apply edit to (.+?)(?: \(--dry-run\))?$")
_SKIPPED = re.compile(r"^Skipping edits to (.+)$")
_OTHERS_APPLIED = re.compile(r"^# The other \d+ SEARCH/REPLACE blocks? (?:were|was) applied successfully")
_COMMIT = re.compile(r"^Commit ([0-9a-f]{7,40}) (.+)$")
#: Aider refusing an edit (in the corpus: 60 results of 792): the result this parser writes for a
#: SEARCH/REPLACE block aider reported as "SearchReplaceNoExactMatch: This SEARCH block failed to
#: exactly match lines in <file>" (the edit was not applied), and aider's own "The LLM did not
#: conform to the edit format." Not refusals: lint and test failures (the project), "Edit to <file>
#: skipped" (the person answered no to "Allow edits to file ...?" / "Create new file?").
PROTOCOL_ERRORS = re.compile(r"\A\s*(?:(?:#+ )?(?:SearchReplaceNoExactMatch: This )?SEARCH block failed to exactly "
                             r"match lines in |The LLM did not conform to the edit format)")
_NO_MATCH = re.compile(r"^(?:#+ )?SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in (.+)$")
_LINT = re.compile(r"^## Running: (.+)$")
_RUNNING = re.compile(r"^Running (.+)$")
_RUN_PROMPT = re.compile(r"^Run shell commands?(?:\(s\))?\? .*\b(y|yes|Y|Yes)\s*$")
_PYTEST_SUMMARY = re.compile(r"(?m)^=+ (.*\b(?:passed|failed|errors?|no tests ran)\b.*?) in [\d.]+m?s\b")
_UNITTEST_VERDICT = re.compile(r"(?m)^(OK|FAILED) ?(?:\(.*\))?\s*$")
_ADD_OUTPUT = re.compile(r"^Add (?:the|command) output to the chat\?")
#: Aider picks a fence the file content does not use: backticks, or one of these tags.
_FENCE = re.compile(r"^(`{3,}|~{3,}|<(?:source|code|pre|codeblock|sourcecode)>)\s*([\w+.-]*)\s*$")
_CLOSER = re.compile(r"^(`{3,}|~{3,}|</(?:source|code|pre|codeblock|sourcecode)>)\s*$")
_HEAD = re.compile(r"^<{5,9} (SEARCH|ORIGINAL)\s*$")
_DIVIDER = re.compile(r"^={5,9}\s*$")
_TAIL = re.compile(r"^>{5,9} (REPLACE|UPDATED)\s*$")
#: What the lines of aider's output that we read start with (a cheap filter before the patterns).
_TOOL_PREFIXES = ("#", "SearchReplaceNoExactMatch", "Applied edit", "Commit ", "Did not apply", "Skipping edits",
                  "Running ", "Run shell", "Aider v", "Main model", "Models:", "Model:", "Cur working dir", "Git ", "$ ")
_FRONT_MATTER = "---"
_NO_REQUESTS = "aider history without messages: {launches}, left before anything was asked"
_UNNAMED = "unknown"
_DIV_OPEN = '<div class="chat-transcript"'
#: Published transcripts were edited by hand: ``>text`` without the space is aider output there too.
_LOOSE_QUOTE = re.compile(r"^>[^>\s]")

#: Commands whose argument is work for the model: the input is a request, not chat management.
_REQUESTS = {"ask", "code", "architect", "context", "agent"}
#: Commands that run a shell command; their output follows as a blockquote.
_SHELL = {"run": "run", "test": "test", "git": "run"}
_COMMANDS = ("add", "agent", "architect", "ask", "chat-mode", "clear", "code", "commit", "context", "copy",
             "copy-context", "diff", "drop", "edit", "editor", "editor-model", "exit", "git", "help", "lint",
             "load", "ls", "map", "map-refresh", "model", "models", "multiline-mode", "paste", "quit", "read",
             "read-only", "reasoning-effort", "report", "reset", "run", "save", "settings", "test",
             "think-tokens", "tokens", "undo", "voice", "weak-model", "web", "clipboard", "add-clipboard-image")
#: Commands that act on what the request being worked on did: they belong to it.
_WITHIN = {"run", "test", "git", "undo", "diff", "commit", "lint"}
#: A message that only says "go on" with what was just discussed (``/ask`` a plan, then "do that"),
#: or how it went ("nice, that worked!"): part of that request, not a new one.
_GO_ON = re.compile(r"^(?:(?:yes|yeah|yep|y|ok(?:ay)?|sure|great|good|nice|perfect|cool|awesome|excellent|"
                    r"thanks?|thank you|please)\b[\s,.!]*)*"
                    r"(?:(?:please\s+)?(?:do (?:it|that|this|so)|go ahead|proceed|continue|go on|keep going|"
                    r"make (?:that|those|the|these) changes?|try (?:it|that|again)|fix (?:it|that)|"
                    r"implement (?:it|that)|apply (?:it|that|them)|that (?:worked|works|fixed it)|"
                    r"it works|works(?: now)?|looks good)\b[\s,.!]*)?$", re.I)


class Aider(TrajectoryFormat):
    name = "aider"
    agent = "aider"
    description = "Aider chat histories (.aider.chat.history.md: one trajectory per request) and published transcripts"
    locations = ("<repository>/.aider.chat.history.md",)
    suffixes = (".md",)
    priority = 0
    protocol_errors = PROTOCOL_ERRORS

    def sniff(self, probe: Probe) -> bool:
        head = probe.head
        if _SNIFF_SESSION.search(head):
            return True
        # No header in the first 64 KiB (a history cut at the front, a published transcript):
        # aider's own line endings -- two spaces after a typed line and after its output.
        return bool(_SNIFF_INPUT.search(head)) and (bool(_SNIFF_TOOL.search(head)) or _DIV_OPEN.encode() in head)

    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        history = _History(path)
        launch = _Launch(None, 1)
        starts: dict[str, int] = {}
        found = 0
        for kind, _line, text in _events(path, report):
            if kind == "session":
                for trajectory in history.requests(launch):
                    found += 1
                    yield trajectory
                seen = starts[text] = starts.get(text, 0) + 1  # two launches started the same second
                launch = _Launch(text or None, seen)
            else:
                launch.feed(kind, text)
        for trajectory in itertools.chain(history.requests(launch), history.rest()):
            found += 1
            yield trajectory
        if not found and not report.errors:
            # Aider started and was left before anything was typed (a header, its warnings and
            # questions): nothing went wrong reading it, there is just no work in it.
            report.status = "skipped"
            launches = sum(starts.values())
            report.error(_NO_REQUESTS.format(launches="1 launch" if launches <= 1 else f"{launches} launches"))


def _events(path: Path, report: FileReport) -> Iterator[tuple[str, int, str]]:
    """``(kind, line, text)``: kind is session, input, tool (a new blockquote line), more (the
    lines of a multi-line blockquote after its first) or text (the model's reply).

    The hot loop of the format (a history has ~100k lines): dispatch on the first character.
    """
    published = False
    inside = True
    continued = False
    editing = False  # inside a SEARCH/REPLACE block of a reply: no person types while the model writes
    for number, line in iter_text_lines(path, report):
        if number == 1:
            if line.startswith("-*-") and line.rstrip().endswith("-*-"):
                continue  # an Emacs mode line
            if line.rstrip() == _FRONT_MATTER:
                published, inside = True, False
                continue
        if published:
            stripped = line.strip()
            if stripped.startswith(_DIV_OPEN):
                inside = True
                continue
            if stripped == "</div>":
                inside, continued = False, False
                continue
            if not inside:
                continue
        first = line[:1]
        if continued and not (first == "#" and line.startswith(("#### ", "# aider chat started at"))):
            # A message aider logged is not over before the line ending in two spaces, whatever the
            # lines in between look like (pytest marks failing lines with "> ").
            continued = not _ends_message(line) and not (published and not line.strip())
            yield "more", number, line.rstrip()
            continue
        if first == "#":
            if editing:
                yield "text", number, line  # an edit to a file that shows aider transcripts (docs)
                continue
            if line.startswith("#### ") or line.rstrip() == "####":
                yield "input", number, line[5:].rstrip()
                continue
            if line.startswith("# aider chat started at"):
                match = _SESSION.match(line)
                editing = False
                yield "session", number, match.group(1).replace(" ", "T") if match else ""
                continue
        elif first == ">" and (line.startswith("> ") or line.rstrip() == ">" or (published and _LOOSE_QUOTE.match(line))):
            body = line[2:] if line.startswith("> ") else line[1:]
            continued = not _ends_message(line) and bool(body.strip())
            editing = False
            yield "tool", number, body.rstrip()
            continue
        if first in "<>" and first:
            if _HEAD.match(line):
                editing = True
            elif _TAIL.match(line):
                editing = False
        yield "text", number, line


def _ends_message(line: str) -> bool:
    """aider strips a message's trailing blanks, then adds two spaces: only such a line can end it."""
    return line.endswith("  ") and len(line) > 2 and not line[-3].isspace()


class _History:
    """What one history file says across its launches: the repository they all ran in.

    Aider writes the history into the repository's root, so every launch in it is of one
    repository: what an earlier launch showed of it (a git root, edited package folders) names
    the later ones that show nothing, and the file's own folder comes last. A launch's own
    evidence comes first (a history can be shared through ``--chat-history-file``). Launches
    before the first one that shows the repository take its name too.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.waiting: list[Trajectory] = []
        self.carried = Identity()
        if path.name == ".aider.chat.history.md":  # aider writes the history into the repository root
            self.carried.folder(str(path.parent))

    def requests(self, launch: _Launch) -> Iterator[Trajectory]:
        """The launch's requests; those of early launches that showed no repository wait until one does.

        Every launch in one history ran in one repository, so the first launch that shows it names the
        earlier ones too (a history read again whole gives them the same name).
        """
        found = list(launch.requests(self.path, self.carried))
        self.carried.merge(launch.identity)
        repo = self.carried.repo
        if repo is None:
            self.waiting.extend(found)
            return
        for trajectory in self.waiting:
            trajectory.repo = repo
        yield from self.waiting
        self.waiting = []
        yield from found

    def rest(self) -> Iterator[Trajectory]:
        """What is still waiting at the end of the file: no launch ever showed the repository."""
        yield from self.waiting
        self.waiting = []


class _Launch:
    """One ``# aider chat started at`` launch, held until it ends, then split into requests.

    A request is a message asking for work (a ``####`` block; the lines of a multi-line message
    are one block) with everything up to the next one: the model's replies, its edits and
    commits, lint runs, and the commands that act on that work (``/run``, ``/test``, ``!``,
    ``/git``, ``/undo``, ``/diff``, ``/commit``, ``/lint``). Commands that manage the chat
    (``/add``, ``/drop``, ``/clear``, ``/model``, ``/web``, ``/help`` ... and ``/ask`` without a
    question) prepare what comes next: they open the next request, or close the last one when
    none follows. "do that", "go ahead", "ok, make those changes" only say go on with what was
    just discussed (``/ask`` a plan, then "do that"): they stay in the request too.
    """

    def __init__(self, started: str | None, number: int) -> None:
        self.started = started
        self.number = number
        self.header: list[tuple[str, str]] = []  # what aider printed before the first input
        self.segments: list[list[tuple[str, str]]] = []  # an input block and what followed it
        self.last_kind = ""
        self.identity = Identity()

    @property
    def id(self) -> str:
        return f"{self.started or ''}#{self.number}"

    def feed(self, kind: str, text: str) -> None:
        if kind == "input" and self.last_kind != "input":
            self.segments.append([])
        (self.segments[-1] if self.segments else self.header).append((kind, text))
        self.last_kind = kind

    def groups(self) -> list[list[tuple[str, str]]]:
        """The launch's events, one list per request (the header goes with the first)."""
        groups: list[list[tuple[str, str]]] = []
        waiting: list[tuple[str, str]] = []
        asked: str | None = None
        for segment in self.segments:
            text = "\n".join(t for k, t in itertools.takewhile(lambda e: e[0] == "input", segment)).strip()
            role, asked = _role(text, asked)
            if role == "request":
                groups.append([*waiting, *segment])
                waiting = []
            elif role == "prepare" or not groups:
                waiting.extend(segment)
            else:
                groups[-1].extend([*waiting, *segment])
                waiting = []
        if waiting:
            if groups:
                groups[-1].extend(waiting)
            else:
                groups.append(waiting)
        if groups:
            groups[0][:0] = self.header
        return groups

    def requests(self, path: Path, carried: Identity) -> Iterator[Trajectory]:
        """The launch's requests, each with the launch's facts and the repository it shows."""
        facts = _Facts()
        shown = Identity()  # what the requests' steps show: edited package folders, a remote ...
        requests = []
        for events in self.groups() or [self.header]:  # no request: the header still shows the repository
            request = _Session(path, facts)
            for kind, text in events:
                request.feed(kind, text)
            request.close()
            shown.read(request.builder.steps, None)  # aider's paths are relative to the git root
            if request.inputs:
                requests.append(request)
        self.identity = facts.identity()
        self.identity.merge(shown)
        repo = self.identity.repo or carried.repo
        for number, request in enumerate(requests, 1):
            yield request.build(session_id=f"{self.id}.{number}", parent=self.id, started=self.started, repo=repo)
        self.header, self.segments = [], []


def _role(text: str, asked: str | None) -> tuple[str, str | None]:
    """Whether an input opens a request, prepares the next one or goes on with the current one;
    and the question a request command asked (``/ask X`` logs X again: that is no new request)."""
    first = text.split("\n", 1)[0].strip()
    if not text or text == "<blank>" or first.startswith("# Fix any errors below") or text == asked:
        return "continue", None
    if first.startswith("!"):
        return "continue", None
    if first.startswith("/") and len(first) > 1 and first[1].isalpha():
        word, _, rest = text[1:].partition(" ")
        name = _resolve(word.split("\n", 1)[0].strip())
        if name in _REQUESTS:
            return ("request", rest.strip()) if rest.strip() else ("prepare", None)
        return ("continue" if name in _WITHIN else "prepare"), None
    return ("continue" if _GO_ON.match(text) else "request"), None


@dataclass
class _Facts:
    """What a launch says about itself, shared by its requests: aider's header, the model in use."""

    version: str | None = None
    cwd: str | None = None
    model: str | None = None
    git_repo: str | None = None  # ``.git``, ``../.git``, ``none``: where the repository is from the cwd
    git_dir: str | None = None  # ``Git working dir:`` (newer aider says it outright)
    shell: list[str] = field(default_factory=list)  # a published transcript's ``$`` lines

    def git_root(self) -> str | None:
        if self.git_dir:
            return self.git_dir
        if not self.cwd or not self.git_repo or not self.git_repo.endswith(".git"):
            return None
        up = self.git_repo[:-len(".git")].rstrip("\\/")
        paths = ntpath if "\\" in self.cwd or re.match(r"^[A-Za-z]:", self.cwd) else posixpath
        return paths.normpath(paths.join(self.cwd, up)) if up else self.cwd

    def identity(self) -> Identity:
        """What the launch's header shows: its git root, the clone it was started in."""
        identity = Identity()
        root = self.git_root()
        identity.git_root(root)
        identity.folder(self.cwd)
        folder = None
        for command in self.shell:  # $ git clone <url> / $ cd <name> / $ aider
            if command.startswith("cd "):
                folder = command[3:].strip()
        for command in self.shell:
            identity.shell(command, "", folder)
        return identity


@dataclass
class _Edit:
    """An edit block of a reply, waiting for aider's verdict before it becomes a call + result."""

    path: str
    old: str | None = None
    new: str | None = None
    diff: str | None = None  # a ``diff`` fence, as the model wrote it
    first: str = ""
    status: str = ""
    whole: bool = False

    def unified(self) -> str | None:
        if self.old is not None and self.new is not None:
            return _unified(self.path, self.old, self.new) or None
        return self.diff


@dataclass
class _Shell:
    """A shell command waiting for its output: ``/run``, ``/test``, ``!``, a lint run."""

    call_id: str
    kind: str
    lines: list[str] = field(default_factory=list)
    emitted: bool = False
    failing: bool = False
    echo: set[str] = field(default_factory=set)


class _Session:
    """One request of a launch, read event by event."""

    def __init__(self, path: Path, facts: _Facts) -> None:
        self.builder = TrajectoryBuilder(source_format=Aider.name, agent=Aider.agent, source_path=str(path))
        # aider writes the history into the repository root
        self.folder = str(path.parent) if path.name == ".aider.chat.history.md" else None
        self.facts = facts
        self.inputs = 0
        self.calls = 0
        self.replies: dict[str, int] = {}
        self.block_kind = ""
        self.block: list[str] = []
        self.previous_tool: list[str] = []
        self.edits: list[_Edit] = []
        self.commits: list[str] = []
        self.fenced: dict[str, str] = {}
        self.shell: _Shell | None = None
        self.proposed: list[str] = []
        self.no_match: str | None = None
        self.echo_of_request: str | None = None

    # -- events ---------------------------------------------------------------------------
    def feed(self, kind: str, text: str) -> None:
        if kind == "more":
            if self.block_kind == "tool":
                self.block.append(text)
                self._tool_line(text, continuation=True)
            return
        if kind != self.block_kind or kind == "tool":
            self._flush()
            self.block_kind = kind
        self.block.append(text)
        if kind == "tool":
            self._tool_line(text, continuation=False)

    def _flush(self) -> None:
        kind, lines = self.block_kind, self.block
        self.block_kind, self.block = "", []
        if kind == "input":
            self._input(lines)
        elif kind == "text" and any(line.strip() for line in lines):
            self._reply(lines)
        elif kind == "tool":
            self.previous_tool = lines

    # -- the person -----------------------------------------------------------------------
    def _input(self, lines: list[str]) -> None:
        self._settle(end_of_turn=True)
        text = "\n".join(lines).strip()
        if not text or text == "<blank>":
            return
        first = lines[0].strip()
        self.inputs += 1
        if first.startswith("# Fix any errors below"):
            self._lint_message(lines)  # aider <= 0.4x logged the lint output it sent as typed input
            return
        if text == self.echo_of_request:
            self.echo_of_request = None
            return  # /ask X logs X again when the chat coder takes it
        self.echo_of_request = None
        if first.startswith("!") or (first.startswith("/") and len(first) > 1 and first[1].isalpha()):
            self._command(text, first)
            return
        self.builder.user(text)

    def _command(self, text: str, first: str) -> None:
        if first.startswith("!"):
            name, args = "run", text[1:].strip()
        else:
            word, _, rest = text[1:].partition(" ")
            name, args = _resolve(word.strip()), rest.strip()
        self.builder.user(text, meta=name not in _REQUESTS)
        if name in _REQUESTS:
            self.echo_of_request = args
        if name in _SHELL and args:
            command = f"git {args}" if name == "git" else args
            self.shell = _Shell(self._shell_call(_SHELL[name], command), _SHELL[name])

    # -- the model ------------------------------------------------------------------------
    def _reply(self, lines: list[str]) -> None:
        if self.shell is not None and self.shell.kind == "test":
            self.shell.failing = True  # aider sends /test output to the model only when it failed
        self._settle(end_of_turn=True)
        if self.facts.model:
            self.replies[self.facts.model] = self.replies.get(self.facts.model, 0) + 1
        prose, self.edits, self.fenced = _split_reply(lines)
        if prose.strip():
            self.builder.assistant(prose.strip())

    def _edit_call(self, edit: _Edit) -> str:
        """The call of an edit block, made once aider said what became of it (so its path is final)."""
        self.calls += 1
        call_id = f"edit-{self.calls}"
        text = f"edit {edit.path} (whole file)" if edit.whole else f"edit {edit.path}"
        self.builder.call("edit", call_id=call_id, text=text, paths=[edit.path], diff=edit.unified())
        return call_id

    def _shell_call(self, kind: str, command: str) -> str:
        self.calls += 1
        call_id = f"{kind}-{self.calls}"
        self.builder.call(kind, call_id=call_id, text=command, command=command)
        return call_id

    # -- aider ----------------------------------------------------------------------------
    def _tool_line(self, text: str, continuation: bool) -> None:
        if self.shell is not None and self._shell_output(self.shell, text, continuation):
            return
        line = text.strip()
        if self.no_match is not None:  # the failed SEARCH block is echoed: its first line tells which
            if line and not _HEAD.match(line):
                self._edit_status(self.no_match, "failed", first=line)
                self.no_match = None
            return
        if not line.startswith(_TOOL_PREFIXES):
            return  # most of aider's output says nothing we use (tokens, repo map, warnings ...)
        if match := _NO_MATCH.match(line):
            self.no_match = match.group(1).strip()
        elif match := _APPLIED.match(line):
            self._edit_status(match.group(1).strip(), "applied")
        elif _COMMIT.match(line):
            self.commits.append(line)
        elif match := _NOT_APPLIED.match(line):
            self._edit_status(match.group(1).strip(), "not applied (dry run)")
        elif match := _SKIPPED.match(line):
            self._edit_status(match.group(1).strip(), "skipped")
        elif _OTHERS_APPLIED.match(line):
            for edit in self.edits:
                edit.status = edit.status or "applied"
        elif match := _LINT.match(line):
            self._settle()
            self.shell = _Shell(self._shell_call("lint", match.group(1).strip()), "lint")
        elif match := _RUNNING.match(line):
            command = match.group(1).strip()
            self.proposed = [c for c in self.proposed if c != command]
            self._settle()
            self._shell_call("run", command)  # aider does not log the output of these
        elif _RUN_PROMPT.match(line):
            self.proposed = [c.strip() for c in self.previous_tool if c.strip()]
        elif not continuation:
            self._header(line)

    def _header(self, line: str) -> None:
        facts = self.facts
        if match := _VERSION.match(line):
            facts.version = facts.version or match.group(1)
        elif match := _MODEL.match(line):
            facts.model = match.group(1)
        elif match := _CWD.match(line):
            facts.cwd = facts.cwd or match.group(1).strip()
        elif match := _GIT_REPO.match(line):
            facts.git_repo = facts.git_repo or match.group(1)
        elif match := _GIT_DIR.match(line):
            facts.git_dir = facts.git_dir or match.group(1).strip()
        elif match := _SHELL_PREAMBLE.match(line):
            facts.shell.append(match.group(1).strip())

    def _shell_output(self, shell: _Shell, text: str, continuation: bool) -> bool:
        """Collect a shell command's output; True when the line belonged to it."""
        line = text.strip()
        if shell.kind == "lint":
            if line.startswith(("Attempt to fix lint errors", "Fix lint errors")) or _LINT.match(line):
                self._close_shell()
                return False
            shell.lines.append(text)
            return True
        if not shell.emitted and (continuation or not shell.lines):
            shell.lines.append(text)  # cmd_run logs the whole output as one message
            return True
        if not shell.emitted:
            self._emit_shell(shell)
        if _ADD_OUTPUT.match(line):
            return True
        if not line:
            return True
        if line in shell.echo:  # the output logged again line by line: it was added to the chat
            shell.failing = True
            return True
        self._close_shell()
        return False

    def _emit_shell(self, shell: _Shell) -> None:
        shell.emitted = True
        text = "\n".join(shell.lines).strip()
        shell.echo = {out.strip() for out in text.splitlines()}
        # The linter's output is shown only on errors; /test's code is settled when the shell closes;
        # /run logs no exit code, but a test runner's own summary line says how it ended.
        exit_code = 1 if shell.kind == "lint" else _runner_exit_code(text) if shell.kind == "run" else None
        self.builder.result(call_id=shell.call_id, text=text, exit_code=exit_code)

    def _close_shell(self) -> None:
        shell, self.shell = self.shell, None
        if shell is None:
            return
        if not shell.emitted:
            self._emit_shell(shell)
        if shell.kind == "test":
            self.builder.amend_result(shell.call_id, exit_code=1 if shell.failing else 0)

    # -- edit results ---------------------------------------------------------------------
    def _edit_status(self, path: str, status: str, first: str = "") -> None:
        waiting = [e for e in self.edits if not e.status and _same_path(e.path, path)]
        if status == "failed":
            match = next((e for e in waiting if e.first and e.first.strip() == first), None)
            waiting = [match or waiting[0]] if waiting else []
        elif not waiting and any(e.status == status and _same_path(e.path, path) for e in self.edits):
            return  # older aider says it once per block, newer once per file: the file's blocks are answered
        elif not waiting and (open_edits := [e for e in self.edits if not e.status]):
            # aider read another name than we did (the fence's language, a path we left unnamed):
            # what it reports is what changed on disk.
            waiting = [next((e for e in open_edits if e.path == _UNNAMED), open_edits[0])]
            waiting[0].path = path
        elif not waiting and status == "applied":
            # The whole-file edit format: no block, the reply held the file.
            waiting = [_Edit(path, old="", new=self.fenced[path], whole=True) if path in self.fenced
                       else _Edit(path, whole=True)]
            self.edits.extend(waiting)
        for edit in waiting:
            edit.status = status

    def _settle(self, end_of_turn: bool = False) -> None:
        """Answer what waited for aider's verdict, in order: edits (with their commits), shell calls."""
        commits = "\n".join(self.commits)
        for edit in self.edits:
            if not edit.status:
                if end_of_turn:  # aider never said (an interrupted or --dry-run reply): a call, no result
                    self._edit_call(edit)
                continue
            call_id = self._edit_call(edit)
            if edit.status == "applied":
                text = f"Applied edit to {edit.path}" + (f"\n{commits}" if commits else "")
                self.builder.result(call_id=call_id, text=text, is_error=False)
            elif edit.status == "failed":
                self.builder.result(call_id=call_id, is_error=True,
                                    text=f"SEARCH block failed to exactly match lines in {edit.path}")
            else:
                self.builder.result(call_id=call_id, text=f"Edit to {edit.path} {edit.status}",
                                    is_error=edit.status == "skipped")
        self.edits = [] if end_of_turn else [e for e in self.edits if not e.status]
        self.commits = []
        self.no_match = None
        if self.shell is not None:
            self._close_shell()
        if self.proposed and end_of_turn:  # accepted commands aider did not report running (<= 0.50)
            for command in self.proposed:
                self._shell_call("run", command)
            self.proposed = []

    def _lint_message(self, lines: list[str]) -> None:
        command, output = None, []
        for line in lines[1:]:
            if match := _LINT.match(line.strip()):
                if command:
                    self._lint_call(command, output)
                command, output = match.group(1).strip(), []
            elif command is not None:
                output.append(line)
        if command:
            self._lint_call(command, output)

    def _lint_call(self, command: str, output: list[str]) -> None:
        call_id = self._shell_call("lint", command)
        self.builder.result(call_id=call_id, text="\n".join(output).strip(), exit_code=1)

    # -- result ---------------------------------------------------------------------------
    def close(self) -> None:
        """Answer what still waits (the request's events are all read)."""
        self._flush()
        self._settle(end_of_turn=True)

    def build(self, *, session_id: str, parent: str, started: str | None, repo: str | None) -> Trajectory:
        self.close()
        b = self.builder
        b.set(session_id=session_id, parent_session_id=parent, started_at=started,
              agent_version=self.facts.version, cwd=self.facts.cwd or self.folder, repo=repo)
        if self.replies:
            b.set(model=max(self.replies, key=lambda m: self.replies[m]))
        b.set(model=self.facts.model)
        return b.build()


def _runner_exit_code(output: str) -> int | None:
    """pytest's and unittest's last summary line, read as the exit code they end with."""
    summaries = _PYTEST_SUMMARY.findall(output)
    if summaries:
        last = summaries[-1]
        return 1 if re.search(r"\b(failed|errors?)\b", last) else 5 if "no tests ran" in last else 0
    verdicts = _UNITTEST_VERDICT.findall(output)
    return (0 if verdicts[-1] == "OK" else 1) if verdicts else None


def _resolve(word: str) -> str:
    """Aider accepts any unambiguous prefix of a command (``/ex`` is ``/exit``)."""
    if word in _COMMANDS:
        return word
    matches = [c for c in _COMMANDS if c.startswith(word)]
    return matches[0] if len(matches) == 1 else word


def _same_path(a: str, b: str) -> bool:
    a, b = a.replace("\\", "/").strip("`*"), b.replace("\\", "/").strip("`*")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _split_reply(lines: list[str]) -> tuple[str, list[_Edit], dict[str, str]]:
    """The reply's prose, its edit blocks, and the files it shows whole in a fence (by name)."""
    prose: list[str] = []
    edits: list[_Edit] = []
    fenced: dict[str, str] = {}
    last_path = ""
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if _HEAD.match(line):
            end = _block_end(lines, i)
            if end is None:  # an unfinished block (the reply was interrupted): no edit was made
                prose.append(line)
                i += 1
                continue
            name, fenced_block = _block_path(prose)
            path = last_path = name or last_path or _UNNAMED
            divider = next(j for j in range(i + 1, end) if _DIVIDER.match(lines[j]))
            search, replace = lines[i + 1:divider], lines[divider + 1:end]
            edits.append(_Edit(path, old="\n".join(search), new="\n".join(replace),
                               first=next((s for s in search if s.strip()), "")))
            i = end + 1
            if fenced_block and i < n and _CLOSER.match(lines[i].strip()):
                i += 1  # the fence closing around the block
            continue
        fence = _FENCE.match(line)
        if fence:
            closer = fence.group(1).replace("<", "</") if fence.group(1).startswith("<") else fence.group(1)
            close = next((j for j in range(i + 1, n) if lines[j].strip() == closer), None)
            if close is not None:
                body = lines[i + 1:close]
                if fence.group(2) == "diff" and any(b.startswith("+++ ") for b in body):
                    path = next(b[4:].strip() for b in body if b.startswith("+++ "))
                    path = path[2:] if path.startswith(("a/", "b/")) else path
                    edits.append(_Edit(path, diff="\n".join(body)))
                    i = close + 1
                    continue
                if not any(_HEAD.match(b) for b in body):
                    name = prose[-1].strip().strip("`*:") if prose else ""
                    if name and " " not in name and ("." in name or "/" in name):
                        fenced[name] = "\n".join(body)
                    prose.extend(lines[i:close + 1])
                    i = close + 1
                    continue
        prose.append(line)
        i += 1
    return "\n".join(prose), edits, fenced


def _block_end(lines: list[str], start: int) -> int | None:
    divider = False
    for j in range(start + 1, len(lines)):
        if _DIVIDER.match(lines[j]):
            divider = True
        elif _TAIL.match(lines[j]):
            return j if divider else None
        elif _HEAD.match(lines[j]):
            return None
    return None


def _block_path(prose: list[str]) -> tuple[str, bool]:
    """The file name aider expects just before a block, and whether a fence opened around it.

    Both layouts occur: name, fence, block (``diff``) and fence, name, block (``diff-fenced``).
    The name and the fence are taken off ``prose``, which holds the reply's lines before the block.
    """
    name, fenced = "", False
    for _ in range(3):
        if not prose:
            break
        candidate = prose[-1].strip()
        if _FENCE.match(candidate) and not fenced:
            fenced = True
        elif not name and candidate:
            cleaned = candidate.strip("`*:#").strip()
            if not cleaned or len(cleaned) > 250 or (" " in cleaned and "/" not in cleaned and "." not in cleaned):
                break
            name = cleaned
        else:
            break
        prose.pop()
    return name, fenced


def _unified(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{path}", f"b/{path}", lineterm="", n=1)
    return "\n".join(lines)
