"""Which repository a session worked in: one answer, by the same rules, for every format.

``Trajectory.repo`` names the repository whose "working in <repo>" manual the session feeds,
and sessions of one repository pool by the name's last part (``consolidate_repos``), whichever
agent recorded them. So the name must be the repository's, not whatever folder the agent
happened to start in, and when the evidence is only a placeholder (``/Users/user/repo``,
``/tmp/xyz``) there is no name rather than a wrong one that would pool unrelated sessions.

Evidence, strongest first (``Identity.repo`` gives the strongest one found):

1. **remote** -- a git remote the session recorded: Codex's ``session_meta.git.repository_url``,
   the output of ``git remote -v`` / ``git remote get-url`` / ``git config --get
   remote.origin.url`` / ``git ls-remote --get-url`` (``origin`` first), the ``To <url>`` /
   ``From <url>`` lines of a push, pull or fetch, and a ``git clone <url>`` the session made its
   own checkout with (cloned into ``.`` or into the folder it works in; a dependency cloned to
   be installed is not the session's repository) -> ``owner/name``. Commands run elsewhere (``cd other && ...``, ``git -C other``)
   are not about this checkout and are skipped.
2. **known** -- an ``owner/name`` the format knows otherwise: a SWE-bench instance id
   (``django__django-16255``), the issue a resolver run worked on.
3. **git root** -- the top of the checkout, when the session shows it: aider's ``Git working
   dir:`` or ``Cur working dir:`` + ``Git repo: ../.git``, the output of
   ``git rev-parse --show-toplevel`` -> its folder name.
4. **folder** -- the name of the folder the session ran in (its cwd).
5. **package** -- the name in a manifest the session read at the top of its folder:
   ``package.json`` ``"name"`` (without the npm scope), ``pyproject.toml`` ``[project]`` /
   ``[tool.poetry]`` ``name``, ``setup.py`` ``name=``, ``setup.cfg`` ``[metadata] name``,
   ``Cargo.toml`` ``[package] name``, ``go.mod`` ``module`` (``owner/name`` on a forge).
   A manifest further down (``todo-app/package.json``, ``node_modules/...``) names a package
   inside the repository, not the repository.
6. **package folder** -- the top-level folder most edited files are in, when it is clearly a
   package: an identifier that is not a common layout folder (``src``, ``tests``, ``docs``
   ...), holding at least two edited files and more than half of them (aider editing
   ``aider/coders/base_coder.py`` and ``aider/main.py`` -> ``aider``).

The folder comes before the package name although issue 14 put the package first: a checkout
is named after its repository by ``git clone`` and so pools with the ``owner/name`` another
agent recorded, where registry names often differ from the repository's (``aider-chat`` for
Aider-AI/aider, ``@codemieai/code`` for codemie-ai/codemie-code). The package name decides
when the folder name says nothing.

Names that say nothing give no evidence, at every rank: placeholders many unrelated folders
share (``GENERIC``: repo, project, app, src, code, workspace, testbed, demo, tmp ...), folders
in a temporary directory (``/tmp``, ``/var/folders``, ``AppData\\Local\\Temp``, ``mkdtemp``'s
``tmpXXXXXXXX``) and hashed or redacted names (``da0ba47443``, a uuid). ``demo`` is among the
placeholders: a demo folder is where one tries things, and two people's demos are not one
repository.
"""

from __future__ import annotations

import fnmatch
import os
import re
import tomllib
from collections import Counter
from collections.abc import Sequence
from enum import IntEnum
from pathlib import Path
from typing import Any

import orjson

from pipeline import checkout
from pipeline.trajectory import Step, StepKind


class Rank(IntEnum):
    """How much a piece of evidence says; the highest found names the repository."""

    PACKAGE_FOLDER = 1
    PACKAGE = 2
    FOLDER = 3
    GIT_ROOT = 4
    KNOWN = 5
    REMOTE = 6


#: Folder and package names many unrelated projects share: no identity, never a manual.
GENERIC = frozenset({
    "repo", "repos", "repository", "project", "projects", "proj", "tmp", "temp", "src", "source", "app", "apps",
    "code", "workspace", "workspaces", "work", "testbed", "demo", "demos", "example", "examples", "sample",
    "samples", "test", "tests", "sandbox", "playground", "scratch", "private", "home", "user", "users", "root",
    "desktop", "documents", "downloads", "dev", "git", "github", "build", "dist", "lib", "out", "output", "main",
    "master", "untitled", "new", "new_file", "my-app", "myapp", "my-project", "myproject", "hello", "hello-world",
    "files", "folder", "dir", "subdir", "data", "packages", "package", "module", "modules", "pkg", "docs",
    "scripts", "bin", "testing", "local", "mnt", "opt", "var", "volumes", "content", "working",
})
#: Top-level folders of common layouts: where code lives, not what the repository is called.
_LAYOUT = GENERIC | {
    "doc", "js", "css", "static", "public", "assets", "components", "types", "pages", "benchmark", "benchmarks",
    "website", "tools", "config", "configs", "include", "vendor", "node_modules", "third_party", "migrations",
    "templates", "resources", "spec", "specs", "fixtures", "utils", "util", "common", "core", "internal", "cmd",
    "api", "web", "server", "client", "frontend", "backend", "site", "notebooks", "examples", "samples",
}
_TEMP_DIRS = ("/tmp/", "/var/tmp/", "/var/folders/", "/private/var/folders/", "/private/tmp/", "/dev/shm/",
              "/appdata/local/temp/", "/windows/temp/", "/redacted/")
_HASHED = re.compile(r"^(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}$|"
                     r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_MKDTEMP = re.compile(r"^tmp[a-z0-9_]{6,}$", re.I)
_NAME = re.compile(r"^[\w][\w.+-]*$")
_PACKAGE_FOLDER = re.compile(r"^[a-z_][a-z0-9_]*$")
_OWNER_NAME = re.compile(r"^[\w.-]+/[\w.-]+$")

_REMOTE_COMMAND = re.compile(r"\bgit\b[^;&|\n]*?\s(?:remote(?:\s+-v\b|\s+--verbose\b|\s+get-url\b|\s+show\b)|"
                             r"config\s+(?:--get\s+)?remote\.[\w.-]+\.url\b|ls-remote\s+--get-url\b)")
_SYNC_COMMAND = re.compile(r"\bgit\b[^;&|\n]*?\s(?:push|pull|fetch)\b")
_TOPLEVEL_COMMAND = re.compile(r"\bgit\b[^;&|\n]*?\srev-parse\s+(?:--\S+\s+)*--show-toplevel\b")
_CLONE = re.compile(r"\bgit\s+clone\s+(?:-{1,2}[\w-]+(?:[= ](?!\S*://|git@)\S+)?\s+)*(?P<url>\S+)(?:\s+(?P<dir>[^\s;&|]+))?")
_CD = re.compile(r"(?:^|[;&|(]\s*)cd\s+(?P<dir>[^\s;&|)]+)")
_GIT_C = re.compile(r"\bgit\s+-C\s+(?P<dir>\S+)")
_REMOTE_LINE = re.compile(r"^(?P<name>[\w.-]+)\s+(?P<url>\S+)\s+\((?:fetch|push)\)\s*$")
_SYNC_LINE = re.compile(r"^(?:To|From) (?P<url>\S+)\s*$")
_URL = re.compile(r"^(?:[\w+.-]+://\S+|[\w.-]+@[\w.-]+:\S+)$")

#: Manifests that name a package, and the shell commands that show one.
_MANIFESTS = ("package.json", "pyproject.toml", "setup.py", "setup.cfg", "Cargo.toml", "go.mod")
_SHOW_MANIFEST = re.compile(r"^\s*(?:cat|head|bat|less|more|type|Get-Content|jq\s+\S+|sed\s+-n\s+\S+)\s+(?:\./)?"
                            r"(?P<file>package\.json|pyproject\.toml|setup\.py|setup\.cfg|Cargo\.toml|go\.mod)\s*$")
#: A file's lines as read tools print them: ``     2→``, ``     2\t`` (cat -n), ``2:`` (SWE-agent's open).
_LINE_NUMBER = re.compile(r"(?m)^ *\d+(?:→|\t|:) ?")
_JSON_NAME = re.compile(r'(?m)^(?P<indent>[ \t]*)"name"\s*:\s*"(?P<name>[^"]+)"')
_SETUP_NAME = re.compile(r"""\bname\s*=\s*['"](?P<name>[^'"]+)['"]""")
_SECTION_NAME = re.compile(r"(?ms)^\[(?P<section>[^\]]+)\]\s*$(?P<body>.*?)(?=^\[|\Z)")
_KEY_NAME = re.compile(r"""(?m)^\s*name\s*=\s*['"]?(?P<name>[^'"\s#]+)""")
_GO_MODULE = re.compile(r"(?m)^module\s+(?P<module>\S+)")
_FORGES = ("github.com/", "gitlab.com/", "bitbucket.org/", "codeberg.org/")

_EDIT_TOOLS = frozenset({"edit", "write", "multiedit", "apply_patch", "create", "replace", "write_file",
                         "edit_file", "str_replace", "insert"})


class Identity:
    """Evidence of a session's repository, gathered from wherever the format finds it."""

    def __init__(self) -> None:
        self.found: dict[Rank, str] = {}
        self.edited: Counter[str] = Counter()  # top-level folder -> edited files in it
        self.edited_files: set[str] = set()

    # -- evidence ---------------------------------------------------------------------------
    def add(self, rank: Rank, repo: str | None) -> None:
        """Record ``repo`` at ``rank``; the first value of a rank stays."""
        if repo and rank not in self.found:
            self.found[rank] = repo

    def remote(self, url: str | None) -> None:
        """A git remote URL (or an ``owner/name`` already read from one)."""
        if not url:
            return
        slug = url if _OWNER_NAME.match(url) and "://" not in url else repo_slug(url)
        if slug and usable(slug.rsplit("/", 1)[-1]):
            self.add(Rank.REMOTE, slug)

    def known(self, owner_name: str | None) -> None:
        self.add(Rank.KNOWN, owner_name or None)

    def git_root(self, path: str | None) -> None:
        self.add(Rank.GIT_ROOT, folder_name(path))

    def folder(self, path: str | None) -> None:
        self.add(Rank.FOLDER, folder_name(path))

    def package(self, name: str | None) -> None:
        if not name:
            return
        if "/" in name and not name.startswith("@"):  # a Go module on a forge: owner/name
            self.add(Rank.PACKAGE, name)
            return
        name = name.rsplit("/", 1)[-1]  # @scope/name
        if usable(name):
            self.add(Rank.PACKAGE, name)

    def edited_file(self, relative: str) -> None:
        relative = relative.replace("\\", "/").removeprefix("./")
        if relative in self.edited_files:
            return
        self.edited_files.add(relative)
        top, slash, _ = relative.partition("/")
        self.edited[top if slash else ""] += 1

    def shell(self, command: str, output: str, cwd: str | None) -> None:
        """One shell command the session ran in ``cwd``, with what it printed."""
        if not command or "git" not in command and not _SHOW_MANIFEST.match(command):
            return
        if clone := _CLONE.search(command):
            # Only a clone the session then works in is its own checkout: into ".", or into the
            # folder it runs in. A dependency cloned to install it (``cd x && pip install .``) is not.
            url, target = clone["url"], clone["dir"]
            name = (target or url.rstrip("/").removesuffix(".git")).rstrip("/").rsplit("/", 1)[-1]
            if (target == "." or (cwd is not None and name == _base(cwd))) and _URL.match(url):
                self.remote(url)
        if not _runs_here(command, cwd):
            return
        if _REMOTE_COMMAND.search(command):
            self.remote(_remote_in(output))
        elif _SYNC_COMMAND.search(command):
            self.remote(next((m["url"] for m in map(_SYNC_LINE.match, output.splitlines()) if m), None))
        if _TOPLEVEL_COMMAND.search(command):
            first = next((line.strip() for line in output.splitlines() if line.strip()), "")
            if first.startswith(("/", "~")) or re.match(r"^[A-Za-z]:[\\/]", first):
                self.git_root(first)
        if show := _SHOW_MANIFEST.match(command):
            self.package(manifest_name(show["file"], output))

    def read(self, steps: Sequence[Step], cwd: str | None) -> None:
        """What the steps show: commands and their output, manifests read, files edited."""
        calls = [s for s in steps if s.kind is StepKind.TOOL_CALL]
        for call in calls:
            answer = call.result_index
            result = steps[answer].text if answer is not None and answer < len(steps) else ""
            if call.command:
                self.shell(call.command, result, cwd)
            edit = call.diff is not None or (call.tool or "").lower() in _EDIT_TOOLS
            for path in call.paths:
                relative = relative_to(path, cwd)
                if relative is None:
                    continue
                if edit:
                    self.edited_file(relative)
                elif relative in _MANIFESTS and result:
                    self.package(manifest_name(relative, result))

    def merge(self, other: Identity) -> None:
        """Take ``other``'s evidence where this one has none of a rank, and its edited files."""
        for rank, repo in other.found.items():
            self.add(rank, repo)
        for relative in other.edited_files:
            self.edited_file(relative)

    # -- answer -----------------------------------------------------------------------------
    @property
    def repo(self) -> str | None:
        found = dict(self.found)
        if Rank.PACKAGE_FOLDER not in found and (folder := self._package_folder()):
            found[Rank.PACKAGE_FOLDER] = folder
        return found[max(found)] if found else None

    def _package_folder(self) -> str | None:
        if not self.edited:
            return None
        top, count = self.edited.most_common(1)[0]
        total = sum(self.edited.values())
        if count >= 2 and count * 2 > total and _PACKAGE_FOLDER.match(top) and top not in _LAYOUT:
            return top
        return None


def resolve_repo(steps: Sequence[Step] = (), *, cwd: str | None = None, remote: str | None = None,
                 known: str | None = None, git_root: str | None = None, folder: bool = True) -> str | None:
    """The repository of one session: what the format knows, then what its steps show.

    ``folder=False`` when the cwd's name is no checkout's (a container's mount named after a
    challenge, a path the harness mangled): its name is then not evidence, its files still are.
    """
    identity = Identity()
    identity.remote(remote)
    identity.known(known)
    identity.git_root(git_root)
    if folder:
        identity.folder(cwd)
    identity.read(steps, cwd)
    return identity.repo


# -- names and paths ------------------------------------------------------------------------
def repo_slug(url: Any) -> str | None:
    """``git@github.com:owner/name.git``, ``https://github.com/owner/name/issues/1`` -> ``owner/name``.

    On the big forges the repository is the first two path parts (issue and tree URLs go on
    after it); elsewhere it is the last two (``https://git.example.com/group/sub/name``). Split by hand
    (``pipeline.checkout``): a session's text may hold a URL crafted to make a regular expression backtrack.
    """
    if not isinstance(url, str):
        return None
    url = url.strip()
    if not url or len(url) > checkout.MAX_URL or any(c.isspace() for c in url):
        return None
    path = checkout.after_host(url)
    if path is None:
        return None
    host = url.partition("://")[2] if "://" in url else url.partition(":")[0]
    host = host.partition("/")[0].rpartition("@")[2].partition(":")[0].lower()
    parts = [p for p in path.split("/") if p]
    if len(parts) < 2:
        return None
    forge = host in ("github.com", "gitlab.com", "bitbucket.org", "codeberg.org")
    chosen = parts[:2] if forge else parts[-2:]
    return "/".join(chosen).removesuffix(".git")


def usable(name: str) -> bool:
    """A name that can tell one repository from another."""
    return bool(_NAME.match(name)) and name.lower() not in GENERIC and not _HASHED.match(name) \
        and not _MKDTEMP.match(name)


def temporary(path: str) -> bool:
    """A path inside a temporary directory, where checkouts do not live."""
    flat = "/" + path.replace("\\", "/").strip("/").lower() + "/"
    flat = re.sub(r"^/[a-z]:/", "/", flat)
    return flat.startswith(_TEMP_DIRS) or "/appdata/local/temp/" in flat


def folder_name(path: str | None) -> str | None:
    """The name of the folder at ``path`` when it can name a repository."""
    if not path or temporary(path):
        return None
    name = _base(path)
    return name if name and usable(name) else None


def relative_to(path: str, cwd: str | None) -> str | None:
    """``path`` relative to the session's folder; None when it lies outside it."""
    path = path.replace("\\", "/")
    if not path.startswith("/") and not re.match(r"^[A-Za-z]:/", path) and not path.startswith("~"):
        return path.removeprefix("./")
    if not cwd:
        return None
    root = cwd.replace("\\", "/").rstrip("/") + "/"
    return path[len(root):] if path.startswith(root) else None


def _base(path: str) -> str:
    return re.split(r"[\\/]", path.rstrip("\\/"))[-1]


def _runs_here(command: str, cwd: str | None) -> bool:
    """False when the command moves to another folder before it asks git anything."""
    here = {".", "./", "$PWD", "${PWD}"}
    if cwd:
        here |= {cwd, cwd.rstrip("/") + "/"}
    targets = [m["dir"] for m in _CD.finditer(command)] + [m["dir"] for m in _GIT_C.finditer(command)]
    return all(t.strip("'\"") in here for t in targets)


def _remote_in(output: str) -> str | None:
    """The fetch URL of ``origin`` (else of the first remote) in ``git remote -v``-like output,
    or the URL a ``get-url`` printed."""
    remotes: dict[str, str] = {}
    for line in output.splitlines():
        line = line.strip()
        if match := _REMOTE_LINE.match(line):
            remotes.setdefault(match["name"], match["url"])
        elif line.startswith(("Fetch URL:", "Push URL:")):
            remotes.setdefault("origin", line.split(":", 1)[1].strip())
        elif _URL.match(line) and not remotes:
            return line
    return remotes.get("origin") or next(iter(remotes.values()), None)


def manifest_name(manifest: str, text: str) -> str | None:
    """The package name in a manifest's text as a tool showed it (line numbers are dropped)."""
    body = _LINE_NUMBER.sub("", text) if _LINE_NUMBER.search(text) else text
    body = re.sub(r"^\[File: [^\]]*\]\n", "", body)
    if manifest == "package.json":
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            data = None
        if isinstance(data, dict):
            return data["name"] if isinstance(data.get("name"), str) else None
        names = sorted(((len(m["indent"]), m["name"]) for m in _JSON_NAME.finditer(body)), key=lambda n: n[0])
        return names[0][1] if names else None
    if manifest in ("pyproject.toml", "Cargo.toml", "setup.cfg"):
        wanted = {"pyproject.toml": ("project", "tool.poetry"), "Cargo.toml": ("package",),
                  "setup.cfg": ("metadata",)}[manifest]
        if manifest != "setup.cfg":
            try:
                data = tomllib.loads(body)
            except tomllib.TOMLDecodeError:
                data = {}
            for section in wanted:
                table: object = data
                for key in section.split("."):
                    table = table.get(key) if isinstance(table, dict) else None
                if isinstance(table, dict) and isinstance(table.get("name"), str):
                    return table["name"]
        for match in _SECTION_NAME.finditer(body):
            if match["section"].strip() in wanted and (name := _KEY_NAME.search(match["body"])):
                return name["name"]
        return None
    if manifest == "setup.py":
        match = _SETUP_NAME.search(body)
        return match["name"] if match and "{" not in match["name"] else None
    if manifest == "go.mod" and (match := _GO_MODULE.search(body)):
        module = re.sub(r"/v\d+$", "", match["module"])
        if module.startswith(_FORGES) and module.count("/") >= 2:
            return "/".join(module.split("/")[1:3])
        return module.rsplit("/", 1)[-1]
    return None



# -- on this machine: the checkout itself, and what the user mapped -----------------------------
class Locator:
    """Where a session ran, as this machine knows it now: stronger than anything the session's text shows.

    1. ``[sources] repos_map`` -- a folder (it and everything below it) or a glob, matched against the
       session's working folder, else the folder of its file -> ``owner/name``: the user's word, for
       anonymised, moved or copied folders;
    2. the checkout at the working folder, when it exists here -- its git remote (``owner/name``), else
       the checkout's folder name (a folder holding ``.git`` is a checkout wherever it is, ``/tmp`` too).

    Plain data (a tuple of pairs), so it travels to Dask workers with the read it configures.
    """

    def __init__(self, repos_map: dict[str, str] | None = None) -> None:
        self.repos_map = tuple((str(Path(k).expanduser()) if not _GLOB.search(k) else os.path.expanduser(k), v)
                               for k, v in (repos_map or {}).items())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Locator) and other.repos_map == self.repos_map

    def __hash__(self) -> int:
        return hash(self.repos_map)

    def mapped(self, *folders: str | None) -> str | None:
        for folder in folders:
            if not folder:
                continue
            flat = folder.replace("\\", "/").rstrip("/")
            for key, repo in self.repos_map:
                if _GLOB.search(key):
                    if fnmatch.fnmatchcase(flat, key.rstrip("/")) or fnmatch.fnmatchcase(flat, key.rstrip("/") + "/*"):
                        return repo
                elif flat == key.rstrip("/") or flat.startswith(key.rstrip("/") + "/"):
                    return repo
        return None

    def locate(self, trajectory: Any) -> None:
        """Set ``trajectory.repo`` from the map or the checkout on disk, when either knows it."""
        source_folder = os.path.dirname(trajectory.source_path) if trajectory.source_path else None
        repo = self.mapped(trajectory.cwd, source_folder) or on_disk(trajectory.cwd, trajectory.source_path)
        if repo:
            trajectory.repo = repo


_GLOB = re.compile(r"[*?\[]")


def on_disk(cwd: str | None, source_path: str | None = None) -> str | None:
    """The repository of the checkout at ``cwd`` on this machine: its remote, else its folder's name.

    A session file lying deep inside another checkout (a fixture, a copied corpus: ``samples/aider/x/
    .aider.chat.history.md`` in skillmill's own clone) is not that checkout's session: an agent keeps
    its log at the checkout's top (aider) or outside it (Claude Code, Codex ...).
    """
    if not cwd or not os.path.isabs(cwd) or not os.path.isdir(cwd):
        return None
    root = checkout.root_of(cwd)
    if root is None or root == Path(root.anchor):
        return None
    if source_path:
        folder = Path(os.path.abspath(source_path)).parent
        if folder != root and root in folder.parents:
            return None
    text = checkout.config_text(root)
    url = checkout.remote_url(text) if text else None
    slug = repo_slug(url) if url else None
    if slug and usable(slug.rsplit("/", 1)[-1]):
        return slug
    return root.name if usable(root.name) and not _MKDTEMP.match(root.name) else None


def why_unknown(cwd: str | None, source_path: str | None) -> tuple[str, str]:
    """Why a session has no repository, and what would give it one (for ``skillmill show`` and run reports)."""
    fix = "map its folder in skillmill.toml: [sources] repos_map = {\"%s\" = \"owner/name\"}"
    if not cwd:
        folder = os.path.dirname(source_path) if source_path else "<folder>"
        return ("the session recorded no working folder, and nothing in it names a repository (no git remote, "
                "no manifest)", fix % folder)
    where = cwd.replace("\\", "/").rstrip("/")
    name = _base(where)
    if not os.path.isdir(cwd):
        if temporary(cwd):
            reason = f"it ran in {cwd}, a temporary folder that is gone"
        elif not usable(name):
            reason = f"it ran in {cwd}, whose name '{name}' says nothing (a placeholder or a hash)"
        else:
            reason = f"it ran in {cwd}, which is not on this machine, and the session shows no git remote"
        return reason, fix % cwd + ", or run skillmill where that checkout is"
    if checkout.root_of(cwd) is None:
        return (f"{cwd} is here but is no git checkout, and its name '{name}' is not used as one"
                if not usable(name) else f"{cwd} is here but is no git checkout", fix % cwd)
    return f"the checkout at {cwd} has no remote and a name that says nothing ('{name}')", fix % cwd
