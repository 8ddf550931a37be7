"""Read what a checkout says about itself: its commands by purpose, its layout, its instruction files.

Offline, read-only and bounded: only the files a repository describes itself in are opened
(:data:`MAX_FILES` at most, each read up to :data:`MAX_BYTES`), vendored and generated trees
(``node_modules``, ``.venv``, build folders, what the top ``.gitignore`` names) are never walked.
Every finding cites the file and line it came from, as a session item cites its steps.

Imports nothing of skillmill but its errors, so the hook and recall can use what it knows.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import re
import shlex
import time
import tomllib
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pipeline import checkout, confined
from pipeline.errors import UsageError
from pipeline.redact import sanitize
from pipeline.scan.targets import just_recipe, make_targets, split_commands

#: At most this many files are read; a scan of a huge monorepo stops there and says so.
MAX_FILES = 300
#: A file is read up to this many bytes (a generated 40 MB README is not a self-description).
MAX_BYTES = 512 * 1024
#: Folders never walked: vendored, generated, virtual environments, caches.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "env", ".env", "__pycache__",
                       ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "build", "dist", "target",
                       "vendor", "third_party", "third-party", "site-packages", ".eggs", "bower_components",
                       ".next", ".nuxt", "htmlcov", ".idea", ".vscode", ".skillmill"})
#: The purposes a manual lists commands under, in its order.
PURPOSES = ("install", "build", "test", "one-test", "lint", "format", "type-check", "run", "docs")
#: Where a command was found, most authoritative first: what CI runs is what the project holds itself to.
#: ``config`` is a tool a file configures (``[tool.ruff]``, ``.pre-commit-config.yaml``) without stating a command:
#: said as configured, never listed as a command. A file's mere presence states nothing (no ``python -m build``
#: for every pyproject.toml, no ``cargo test`` for every Cargo.toml): any agent knows those.
ORIGINS = ("ci", "instructions", "docs", "make", "just", "tox", "nox", "npm", "pyproject", "config")
INSTRUCTION_FILES = ("CLAUDE.md", "AGENTS.md", "GEMINI.md", "CONVENTIONS.md", ".cursorrules",
                     ".github/copilot-instructions.md")
DOC_FILES = ("README.md", "README.rst", "README.txt", "README", "CONTRIBUTING.md", "CONTRIBUTING.rst",
             ".github/CONTRIBUTING.md", "docs/CONTRIBUTING.md", "HACKING.md", "DEVELOPMENT.md", "docs/development.md",
             "docs/contributing.md", "docs/contributing.rst", "docs/development.rst", "doc/contributing.rst")
#: Folders whose pages are the development docs (``docs/contributing/the_basics.md``), a few pages each.
DOC_DIRS = ("docs/contributing", "docs/development", "doc/contributing", "doc/development")


class ScanError(UsageError):
    """The path cannot be scanned (missing, not a folder, unreadable)."""


@dataclass(frozen=True)
class Finding:
    """One command the repository runs for one purpose, and where it says so."""

    purpose: str
    command: str
    file: str  # relative to the checkout, '/'-separated
    line: int  # 1-based
    origin: str
    written: str = ""  # the command as the file writes it, when that is not runnable as is (``${{ matrix.x }}``)

    @property
    def cite(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Place:
    """A top-level part of the tree: a package, the tests, the docs, an entry point."""

    path: str
    kind: str  # package | tests | docs | scripts | ci | entry
    file: str = ""
    line: int = 0


@dataclass
class Scan:
    root: str
    repo: str | None = None
    findings: list[Finding] = field(default_factory=list)
    layout: list[Place] = field(default_factory=list)
    instructions: list[str] = field(default_factory=list)
    targets: dict[str, list[str]] = field(default_factory=dict)  # make / npm / just / tox / nox -> names
    #: what a tox env or nox session runs: ``tox:<section>`` / ``nox:<session>`` -> [(line, command)]
    runs: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    tests_dir: str | None = None
    files_read: list[str] = field(default_factory=list)
    truncated: bool = False
    seconds: float = 0.0

    def commands(self, purpose: str) -> list[Finding]:
        """The commands stated for one purpose, most authoritative first, one per command.

        What the main CI workflows run comes first, then the instruction files and the docs (the docs
        first for setting up: CI installs for CI, the docs for development), then a CI command rewritten
        into a runnable form, then task runners; workflows that release, publish or benchmark come last.
        """
        mine = [f for f in self.findings if f.purpose == purpose and f.origin != "config"]
        agree: dict[str, int] = defaultdict(int)
        for f in mine:
            agree[normal(f.command)] += 1
        seen: dict[str, Finding] = {}
        for f in sorted(mine, key=lambda f: (_tier(f), -agree[normal(f.command)], f.file, f.line)):
            seen.setdefault(normal(f.command), f)
        ranked = list(seen.values())
        top = ranked[0] if ranked else None
        if top is not None and top.origin == "ci" and top.written:  # CI's is one env of a matrix: the docs' form
            # of the same tool is the one to type here
            local = [f for f in ranked if f.origin in ("instructions", "docs") and runnable(f.command)
                     and not re.search(r"[{<]", f.command) and not f.file.upper().startswith("README")
                     and tool_of(f.command) == tool_of(top.command)]
            if local:
                ranked.remove(local[0])
                ranked.insert(0, local[0])
        return ranked

    def configured(self) -> list[Finding]:
        """Tools a file configures without stating a command (``[tool.ruff]``), one per tool and purpose."""
        seen: dict[tuple[str, str], Finding] = {}
        for f in self.findings:
            if f.origin == "config":
                seen.setdefault((f.command, f.purpose), f)
        return list(seen.values())

    def cites(self, finding: Finding) -> list[Finding]:
        """Every place that gives the same command for the same purpose, most authoritative first."""
        same = normal(finding.command)
        return sorted((f for f in self.findings if f.purpose == finding.purpose and normal(f.command) == same
                       and f.origin != "config"), key=lambda f: (_tier(f), f.file, f.line))

    def contract(self) -> dict:
        """What ``skillmill scan --json`` prints."""
        return {"root": self.root, "repo": self.repo, "seconds": self.seconds, "files_read": len(self.files_read),
                "truncated": self.truncated,
                "commands": {p: [asdict(f) | {"cite": f.cite} for f in self.commands(p)] for p in PURPOSES
                             if self.commands(p)},
                "configured": [{"tool": f.command, "purpose": f.purpose, "cite": f.cite} for f in self.configured()],
                "layout": [asdict(p) for p in self.layout], "instructions": self.instructions,
                "targets": self.targets}


_RANK = {o: i for i, o in enumerate(ORIGINS)}
#: Workflows that release, publish, benchmark or babysit: what they run is not how changes are checked.
_SIDE_WORKFLOW = re.compile(r"release|publish|deploy|upload|pypi|bench|nightly|docker|fuzz|diff[_-]?shades|"
                            r"changelog|stale|label|codeql|zizmor|scorecard|dependabot|backport|comment|triage",
                            re.I)
#: A shell or CI expression: the command cannot be run as written.
_EXPRESSION = re.compile(r"\$\{\{|\$\(|\$\{?[A-Za-z_]|`")


def side_workflow(file: str) -> bool:
    return file.startswith(".github/workflows/") and bool(_SIDE_WORKFLOW.search(file.rsplit("/", 1)[-1]))


def runnable(command: str) -> bool:
    return not _EXPRESSION.search(command)


def _tier(f: Finding) -> float:
    """Lower is more authoritative; see :meth:`Scan.commands`."""
    if f.origin == "ci":
        if side_workflow(f.file):
            tier = 20.0
        elif not runnable(f.command):
            tier = 30.0  # not even a runnable form was found
        else:
            tier = 3.0 if f.purpose == "install" else 0.5 if f.written else 0.0  # .5: rewritten from a matrix
            tier += 1.0 if "pypy" in f.command else 0.0  # the CPython matrix's command before PyPy's
    else:
        tier = float(_RANK[f.origin])
        if not runnable(f.command):
            tier += 30
    return tier


def tool_of(command: str) -> str:
    """The program a command runs, past its wrappers: ``uvx --with=tox-uv tox run -e x`` -> ``tox``."""
    bare = normal(command)
    while (m := _WRAPPERS.match(bare)) and m.end() < len(bare):
        bare = bare[m.end():]
    return (bare.split() or [""])[0]


def normal(command: str) -> str:
    """One spelling of a command: ``python -m tox`` and ``tox``, ``python3`` and ``python``."""
    words = command.split()
    if words[:2] in (["python", "-m"], ["python3", "-m"]) and len(words) > 2 and words[2] in ("tox", "nox",
                                                                                            "pytest", "mypy"):
        words = words[2:]
    return " ".join(words)


# -- what a command is for -------------------------------------------------------------------
_NAMED = (  # a make target, npm script, tox env, nox session or just recipe, by its name
    ("one-test", re.compile(r"^(test[-_]?one|single[-_]?test)$")),
    ("type-check", re.compile(r"(^|[-_:])(mypy|pyright|typecheck|type[-_]check|types|typing|tsc|check[-_]?types)"
                              r"($|[-_:])")),
    ("format", re.compile(r"(^|[-_:])(fmt|format|fix|prettier|black|isort|style)($|[-_:])")),
    ("lint", re.compile(r"(^|[-_:])(lint|linters?|flake8|pylint|ruff|eslint|pre-?commit|quality|clippy|vet)($|[-_:])")),
    ("docs", re.compile(r"(^|[-_:])(docs?|html|sphinx|mkdocs|doc-?build)($|[-_:])")),
    ("test", re.compile(r"(^|[-_:])(tests?|check|unit|integration|e2e|coverage|cov|ci|py\d*|pypy\d*)($|[-_:])")),
    ("install", re.compile(r"^(install|dev|develop|setup|bootstrap|deps|requirements|venv|init)$")),
    ("build", re.compile(r"(^|[-_:])(build|dist|compile|package|wheel|sdist|bundle)($|[-_:])")),
    ("run", re.compile(r"^(run|start|serve|server|dev-?server|watch)$")),
)
_COMMANDS = (  # a command line, by its program and arguments
    ("one-test", re.compile(r"\b(pytest|py\.test|tox|nox)\b.*(::|\s-k\s)|\bgo test\b.*\s-run\s|\bcargo test \w")),
    ("type-check", re.compile(r"^(mypy|pyright|tsc\b.*--noEmit|npx tsc)\b")),
    ("format", re.compile(r"^(ruff format|black|isort|prettier|gofmt|cargo fmt|npx prettier|autopep8|yapf)\b")),
    ("lint", re.compile(r"^(ruff( check)?|flake8|pylint|eslint|npx eslint|pre-commit run|cargo clippy|go vet|"
                        r"golangci-lint|shellcheck|codespell|zizmor)\b")),
    ("test", re.compile(r"^(pytest|py\.test|tox|nox|cargo test|go test|npm (run )?test|yarn test|pnpm test|"
                        r"python -m unittest|bin/test|\S*runtests\.py|coverage run|hatch test|make test)\b")),
    ("install", re.compile(r"^(pip3? install|uv sync|uv pip install|poetry install|pdm install|npm (ci|install)|"
                           r"yarn( install)?$|pnpm install|bundle install|go mod download|cargo fetch|"
                           r"python -m pip install)\b")),
    ("build", re.compile(r"^(python -m build|hatch build|poetry build|cargo build|go build|docker build|"
                         r"npm run build|uv build|pyproject-build)\b")),
    ("docs", re.compile(r"^(sphinx-build|mkdocs (build|serve)|make (html|docs))\b")),
    ("run", re.compile(r"^(cargo run|go run|npm start|flask run|uvicorn|python manage\.py runserver)\b")),
)
_WRAPPERS = re.compile(r"^(uvx( --with[= ]\S+)*|uv run( --\S+)*|poetry run|pdm run|hatch run( \S+:)?|pipx run|"
                       r"npx|python3? -m|sudo|time|env( \w+=\S*)*)\s+")
_DEV_INSTALL = re.compile(r"\s(-e|--editable|-r|--requirement)\s|\s\.(\[[\w,-]+\])?$|\s'?\.\[")
_TOX_ENV = re.compile(r"\s-e\s*(\S+)|\s--env[= ](\S+)")
_NOX_SESSION = re.compile(r"\s(?:-s|--session|--sessions)\s+(\S+)")


def named_purpose(name: str) -> str | None:
    low = name.lower()
    if re.match(r"^(install|setup|deps|bootstrap)([-_:]|$)", low):  # install_build installs what a build needs
        return "install"
    for purpose, pattern in _NAMED:
        if pattern.search(low):
            return purpose
    return None


def command_purpose(command: str) -> str | None:
    """What a command line is for, or None when it is none of the purposes a manual lists."""
    line = re.sub(r"\s+", " ", re.sub(r"\s#\s.*$", "", command).strip().lstrip("$ ").strip())
    if not line or line.startswith(("#", "echo ", "cd ", "export ", "if ", "fi", "then", "else", "for ", "done")):
        return None
    bare = line
    while (m := _WRAPPERS.match(bare)) and m.end() < len(bare):
        bare = bare[m.end():]
    bare = re.sub(r"^python3?(\.\d+)? -m ", "", bare)
    words = bare.split()
    if not words:
        return None
    for purpose, pattern in _COMMANDS[:1]:
        if pattern.search(bare):
            return purpose
    if words[0] == "tox" or words[0] == "nox":
        marked = re.sub(r"\$\{\{.*?\}\}", "${{}}", bare)
        env = _TOX_ENV.search(" " + marked) if words[0] == "tox" else _NOX_SESSION.search(" " + marked)
        name = next((g for g in env.groups() if g), "") if env else ""
        if name and not runnable(name):  # `-e ${{ matrix.env }}`: a matrix of envs is the test suite's
            name = re.sub(r"\$\{\{\}\}|\$\([^)]*\)|\$\{?\w+\}?", "", name).strip("-_")
            return named_purpose(name) if name else "test"
        return named_purpose(name.split(",")[0]) if name else "test"  # an env of unknown purpose says nothing
    if words[0] in ("make", "just") and len(words) > 1 and not words[1].startswith("-"):
        return named_purpose(words[1])
    if words[0] in ("npm", "yarn", "pnpm", "bun") and len(words) > 1:
        script = words[2] if words[1] == "run" and len(words) > 2 else words[1]
        if script in ("install", "i", "ci"):
            return "install"
        return named_purpose(script) or ("run" if script in ("start", "dev", "serve") else None)
    for purpose, pattern in _COMMANDS[1:]:
        if pattern.search(bare):
            if purpose == "install" and re.match(r"^(pip3?|uv pip) install\b", bare) and not _DEV_INSTALL.search(bare):
                return None  # installing the released package (or a task's dependency) is not setting up a checkout
            return purpose
    return None


# -- the walk -------------------------------------------------------------------------------
class _Budget:
    def __init__(self, root: Path, limit: int) -> None:
        self.root, self.limit, self.read, self.truncated = root, limit, [], False

    def text(self, relative: str) -> str | None:
        if len(self.read) >= self.limit:
            self.truncated = True
            return None
        data = confined.read(self.root, relative, MAX_BYTES)  # regular files inside the checkout, bounded
        if data is None:
            return None
        self.read.append(relative)
        # redacted where it enters, as sessions are: what scan prints (terminal, --json) is what it would write
        return str(sanitize(data.decode("utf-8", "replace")))


def _ignored(root: Path) -> Callable[[str], bool]:
    """The top ``.gitignore``'s patterns, for names met while listing (a simple, common subset)."""
    patterns: list[str] = []
    for raw in (confined.read_text(root, ".gitignore", MAX_BYTES) or "").splitlines()[:500]:
        line = raw.strip()
        if line and not line.startswith(("#", "!")):
            patterns.append(line.strip("/"))

    def ignored(relative: str) -> bool:
        name = relative.rsplit("/", 1)[-1]
        if name in SKIP_DIRS or name.endswith(".egg-info"):
            return True
        return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(relative, p) for p in patterns if p)
    return ignored


def check_root(path: str | Path) -> Path:
    root = Path(path).expanduser()
    if not root.exists():
        raise ScanError(f"{root}: no such folder", hint="give the path of a checkout, or run it inside one")
    if not root.is_dir():
        raise ScanError(f"{root}: not a folder", hint="give the checkout's folder, not a file in it")
    if not os.access(root, os.R_OK | os.X_OK):
        raise ScanError(f"{root}: not readable", hint="scan a folder you can read (check its permissions)")
    return root.resolve()


def scan(path: str | Path = ".", *, max_files: int = MAX_FILES, on_file: Callable[[str], None] | None = None) -> Scan:
    """Scan one checkout (read-only). Raises :class:`ScanError` when ``path`` is no readable folder."""
    started = time.monotonic()
    root = check_root(path)
    budget = _Budget(root, max_files)
    result = Scan(root=str(root))
    ignored = _ignored(root)
    try:
        top = sorted(os.listdir(root))
    except OSError as exc:
        raise ScanError(f"{root}: not readable ({exc.strerror})", hint="check the folder's permissions") from exc
    result.repo = repo_name(root, budget)
    for reader in _READERS:
        for relative in reader.files(root, top):
            if ignored(relative) and relative not in (".gitignore",):
                continue
            text = budget.text(relative)
            if text is None:
                continue
            if on_file is not None:
                on_file(relative)
            reader.read(relative, text, result)
    _runnable_forms(result)
    result.layout = _layout(root, top, ignored, result)
    result.tests_dir = next((p.path for p in result.layout if p.kind == "tests"), None)
    result.files_read = budget.read
    result.truncated = budget.truncated
    result.seconds = round(time.monotonic() - started, 3)
    return result


def repo_name(root: Path, budget: _Budget | None = None) -> str | None:
    """``owner/name`` from the checkout's git remote, else the name its manifest declares, else the folder's."""
    from_git = checkout.remote(root)
    if from_git:
        return from_git
    for manifest in ("pyproject.toml", "package.json", "Cargo.toml", "setup.cfg"):
        text = confined.read_text(root, manifest, MAX_BYTES)
        if text is None:
            continue
        name = _manifest_name(manifest, text)
        if name:
            return name
    name = re.sub(r"-\d+(\.\d+)+([a-z]+\d*)?$", "", root.name)  # an unpacked sdist: attrs-25.3.0
    return name or None


def _manifest_name(manifest: str, text: str) -> str | None:
    try:
        if manifest == "package.json":
            data = json.loads(text)
            return data.get("name") if isinstance(data, dict) and isinstance(data.get("name"), str) else None
        if manifest == "setup.cfg":
            match = re.search(r"^\[metadata\][^\[]*?^name\s*=\s*(\S+)", text, re.M | re.S)
            return match.group(1) if match else None
        data = tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError):
        return None
    for section in ("project", "package"):
        table = data.get(section)
        if isinstance(table, dict) and isinstance(table.get("name"), str):
            return table["name"]
    poetry = data.get("tool", {}).get("poetry", {})
    return poetry.get("name") if isinstance(poetry, dict) and isinstance(poetry.get("name"), str) else None


# -- readers: one per kind of file -------------------------------------------------------------
class _Reader:
    names: tuple[str, ...] = ()

    def files(self, root: Path, top: list[str]) -> Iterator[str]:
        yield from (n for n in self.names if n in top or "/" in n)

    def read(self, relative: str, text: str, scan: Scan) -> None:
        raise NotImplementedError


def _add(scan: Scan, purpose: str | None, command: str, file: str, line: int, origin: str) -> None:
    command = " ".join(re.sub(r"\s#\s.*$", "", command).split())
    if purpose and command and len(command) <= 300:
        scan.findings.append(Finding(purpose, command, file, line, origin))


class _Workflows(_Reader):
    """``run:`` steps of GitHub workflows and ``script:`` lines of GitLab CI, each with its line."""

    def files(self, root: Path, top: list[str]) -> Iterator[str]:
        if ".gitlab-ci.yml" in top:
            yield ".gitlab-ci.yml"
        folder = root / ".github" / "workflows"
        if folder.is_dir():
            try:
                names = sorted(os.listdir(folder))
            except OSError:
                return
            yield from (f".github/workflows/{n}" for n in names if n.endswith((".yml", ".yaml")))

    def read(self, relative: str, text: str, scan: Scan) -> None:
        import yaml

        try:
            node = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError:
            return
        keys = ("script", "before_script") if relative.endswith(".gitlab-ci.yml") else ("run",)
        for value in _values_of(node, keys):
            for command, line in _script_lines(value, text):
                _add(scan, command_purpose(command), command, relative, line, "ci")


#: Nodes of one YAML document visited at most (aliases make a small file a huge graph: a "billion laughs").
MAX_YAML_NODES = 20_000


def _values_of(node: object, keys: tuple[str, ...], seen: set[int] | None = None) -> Iterator[object]:
    """Scalars under ``keys`` anywhere in the node graph; each node visited once (an alias is not walked again)."""
    import yaml

    seen = set() if seen is None else seen
    if id(node) in seen or len(seen) >= MAX_YAML_NODES:
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value in keys:
                if isinstance(value, yaml.SequenceNode):
                    yield from (v for v in value.value if isinstance(v, yaml.ScalarNode))
                elif isinstance(value, yaml.ScalarNode):
                    yield value
            else:
                yield from _values_of(value, keys, seen)
    elif isinstance(node, yaml.SequenceNode):
        for value in node.value:
            yield from _values_of(value, keys, seen)


def _script_lines(node: object, text: str) -> Iterator[tuple[str, int]]:
    """The command lines of a ``run:`` value with their 1-based lines (folded ``>`` values are one line)."""
    value: str = node.value  # type: ignore[attr-defined]
    start = node.start_mark.line  # type: ignore[attr-defined]
    style = node.style  # type: ignore[attr-defined]
    lines = text.split("\n")
    if style == ">":
        yield " ".join(value.split()), start + 2
        return
    offset = start + (1 if style == "|" else 0)  # 0-based index of the first content line
    carried, carried_at = "", 0
    for raw in value.split("\n"):
        piece = raw.strip()
        if not piece:
            continue
        at = next((i for i in range(offset, min(len(lines), offset + 400)) if piece in lines[i]), offset)
        offset = at + 1
        line = carried_at or at + 1
        full = f"{carried} {piece}".strip() if carried else piece
        if full.endswith("\\"):
            carried, carried_at = full[:-1].strip(), line
            continue
        carried, carried_at = "", 0
        for part in split_commands(full):
            yield part, line


class _Makefile(_Reader):
    names = ("Makefile", "makefile", "GNUmakefile")

    def read(self, relative: str, text: str, scan: Scan) -> None:
        targets = scan.targets.setdefault("make", [])
        for number, line in enumerate(text.split("\n"), 1):
            for target in make_targets(line):
                if target.startswith(".") or target in targets:
                    continue
                targets.append(target)
                _add(scan, named_purpose(target), f"make {target}", relative, number, "make")


class _Justfile(_Reader):
    names = ("justfile", "Justfile", ".justfile")

    def read(self, relative: str, text: str, scan: Scan) -> None:
        recipes = scan.targets.setdefault("just", [])
        for number, line in enumerate(text.split("\n"), 1):
            if recipe := just_recipe(line):
                recipes.append(recipe)
                _add(scan, named_purpose(recipe), f"just {recipe}", relative, number, "just")


class _PackageJson(_Reader):
    names = ("package.json",)

    def read(self, relative: str, text: str, scan: Scan) -> None:
        try:
            data = json.loads(text)
        except ValueError:
            return
        scripts = data.get("scripts") if isinstance(data, dict) else None
        if not isinstance(scripts, dict):
            return
        top = set(os.listdir(scan.root))
        tool = "pnpm" if "pnpm-lock.yaml" in top else "yarn" if "yarn.lock" in top else "npm"
        scan.targets["npm"] = list(scripts)
        lines = text.split("\n")
        for name in scripts:
            number = next((i for i, raw in enumerate(lines, 1) if f'"{name}"' in raw and ":" in raw), 1)
            command = f"{tool} test" if name == "test" else f"{tool} run {name}"
            _add(scan, named_purpose(name) or ("run" if name in ("start", "dev", "serve") else None), command,
                 relative, number, "npm")
            if isinstance(scripts[name], str):
                scan.runs[f"npm:{name}"] = [(number, scripts[name])]


def _toml_line(lines: list[str], header: str, key: str | None = None) -> int:
    at = next((i for i, raw in enumerate(lines, 1) if raw.strip() == f"[{header}]"), 0)
    if key is not None and not at:  # a dotted key under the parent table: `scripts.virtualenv = ...` in [project]
        dotted = rf'^\s*{re.escape(header.rsplit(".", 1)[-1])}\.\s*"?{re.escape(key)}"?\s*='
        return next((i for i, raw in enumerate(lines, 1) if re.match(dotted, raw)), 1)
    if key is None or not at:
        return at or 1
    return next((i for i in range(at + 1, len(lines) + 1) if re.match(rf'^\s*"?{re.escape(key)}"?\s*=',
                                                                       lines[i - 1])), at)


class _Pyproject(_Reader):
    names = ("pyproject.toml",)
    _TOOLS = (("pytest.ini_options", "test", "pytest"), ("ruff", "lint", "ruff"), ("black", "format", "black"),
              ("isort", "format", "isort"), ("mypy", "type-check", "mypy"), ("pyright", "type-check", "pyright"),
              ("flake8", "lint", "flake8"), ("pylint", "lint", "pylint"))

    def read(self, relative: str, text: str, scan: Scan) -> None:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return
        lines = text.split("\n")
        tool = data.get("tool", {}) if isinstance(data.get("tool"), dict) else {}
        for section, purpose, command in self._TOOLS:
            table: object = tool
            for part in section.split("."):
                table = table.get(part) if isinstance(table, dict) else None
            if isinstance(table, dict):  # configured, not a command anyone states
                _add(scan, purpose, command, relative, _toml_line(lines, f"tool.{section}"), "config")
        scripts = data.get("project", {}).get("scripts") if isinstance(data.get("project"), dict) else None
        own = re.sub(r"[-_.]+", "-", str(data.get("project", {}).get("name", ""))).lower()
        for name in (scripts or {}) if isinstance(scripts, dict) else ():
            if re.sub(r"[-_.]+", "-", name).lower() != own:  # `virtualenv` runs virtualenv: nothing to learn
                _add(scan, "run", name, relative, _toml_line(lines, "project.scripts", name), "pyproject")
        envs = tool.get("hatch", {}).get("envs", {}) if isinstance(tool.get("hatch"), dict) else {}
        for env, table in (envs.items() if isinstance(envs, dict) else ()):
            for name in (table.get("scripts") or {}) if isinstance(table, dict) else ():
                prefix = "" if env == "default" else f"{env}:"
                _add(scan, named_purpose(name) or named_purpose(env), f"hatch run {prefix}{name}", relative,
                     _toml_line(lines, f"tool.hatch.envs.{env}.scripts", name), "pyproject")
        pdm = tool.get("pdm", {}).get("scripts") if isinstance(tool.get("pdm"), dict) else None
        for name in pdm if isinstance(pdm, dict) else ():
            _add(scan, named_purpose(name), f"pdm run {name}", relative, _toml_line(lines, "tool.pdm.scripts", name),
                 "pyproject")


class _Tox(_Reader):
    names = ("tox.ini",)

    def read(self, relative: str, text: str, scan: Scan) -> None:
        envs = scan.targets.setdefault("tox", [])
        section: str | None = None
        key = ""
        for number, line in enumerate(text.split("\n"), 1):
            match = re.match(r"^\[(tox|testenv|pytest)(?::([^\]]+))?\]", line.strip())
            if match:
                section, key = None, ""
                if match.group(1) == "tox":
                    section = "[tox]"
                    _add(scan, "test", "tox", relative, number, "tox")
                elif match.group(1) == "pytest":
                    _add(scan, "test", "pytest", relative, number, "config")
                else:
                    name = (match.group(2) or "").strip()
                    section = name
                    scan.runs.setdefault(f"tox:{name}", [])
                    if name:
                        envs.append(name)
                    if name and "{" not in name:
                        _add(scan, named_purpose(name), f"tox -e {name}", relative, number, "tox")
                continue
            if line.startswith("["):
                section = None
            if section is None or not line.strip() or line.lstrip().startswith(("#", ";")):
                continue
            assigned = re.match(r"^([\w-]+)\s*=\s*(.*)$", line)
            if assigned and not line[0].isspace():
                key, line = assigned.group(1), assigned.group(2)
            if section == "[tox]":
                if key in ("envlist", "env_list"):  # the env list's names, before the sections'
                    listed = [e.strip() for e in re.split(r",(?![^{]*\})|\s+", line) if e.strip()]
                    envs[:0] = [e for e in listed if e not in envs]
                continue
            if key == "commands" and line.strip():
                scan.runs[f"tox:{section}"].append((number, line.strip()))


class _Noxfile(_Reader):
    names = ("noxfile.py",)

    def read(self, relative: str, text: str, scan: Scan) -> None:
        sessions = scan.targets.setdefault("nox", [])
        lines = text.split("\n")
        for number, line in enumerate(lines, 1):
            if not line.lstrip().startswith("@nox.session"):
                continue
            named = re.search(r"name\s*=\s*['\"]([\w-]+)['\"]", line)
            definition = next((re.match(r"^\s*def\s+(\w+)", raw) for raw in lines[number:number + 6]
                               if re.match(r"^\s*def\s+\w+", raw)), None)
            name = named.group(1) if named else definition.group(1) if definition else None
            if name:
                sessions.append(name)
                _add(scan, named_purpose(name), f"nox -s {name}", relative, number, "nox")
                body = []
                for at in range(number, min(len(lines), number + 60)):
                    if at > number and re.match(r"^(@|def |class )", lines[at]):
                        break
                    run = re.search(r"session\.run\(\s*((?:['\"][^'\"]*['\"]\s*,?\s*)+)", lines[at])
                    if run:
                        body.append((at + 1, " ".join(re.findall(r"['\"]([^'\"]*)['\"]", run.group(1)))))
                scan.runs[f"nox:{name}"] = body


class _PreCommit(_Reader):
    names = (".pre-commit-config.yaml",)

    def read(self, relative: str, text: str, scan: Scan) -> None:
        _add(scan, "lint", "pre-commit", relative, 1, "config")


class _SetupCfg(_Reader):
    names = ("setup.cfg", "pytest.ini", ".flake8", "mypy.ini")
    _SECTIONS = {"tool:pytest": ("test", "pytest"), "pytest": ("test", "pytest"), "flake8": ("lint", "flake8"),
                 "mypy": ("type-check", "mypy")}

    def read(self, relative: str, text: str, scan: Scan) -> None:
        for number, line in enumerate(text.split("\n"), 1):
            match = re.match(r"^\[([\w:-]+)\]", line)
            if match and match.group(1) in self._SECTIONS:
                purpose, tool = self._SECTIONS[match.group(1)]
                _add(scan, purpose, tool, relative, number, "config")


class _Docs(_Reader):
    """Shell lines of README / CONTRIBUTING / development docs and of the agent instruction files."""

    def files(self, root: Path, top: list[str]) -> Iterator[str]:
        yield from (n for n in INSTRUCTION_FILES if n in top or "/" in n)
        rules = root / ".cursor" / "rules"
        if rules.is_dir():
            with contextlib.suppress(OSError):
                yield from (f".cursor/rules/{n}" for n in sorted(os.listdir(rules))[:20])
        yield from (n for n in DOC_FILES if n in top or "/" in n)
        for folder in DOC_DIRS:
            with contextlib.suppress(OSError):
                yield from (f"{folder}/{n}" for n in sorted(os.listdir(root / folder))[:8]
                            if n.endswith((".md", ".rst")) and f"{folder}/{n}" not in DOC_FILES)

    def read(self, relative: str, text: str, scan: Scan) -> None:
        instruction = relative in INSTRUCTION_FILES or relative.startswith(".cursor/rules/")
        if instruction:
            scan.instructions.append(relative)
        origin = "instructions" if instruction else "docs"
        fence: str | None = None
        shell = False
        cwd = ""  # a `cd docs` earlier in the same block: the commands after it run there
        lines = text.split("\n")
        for number, raw in enumerate(lines, 1):
            stripped = raw.strip()
            opening = re.match(r"^(`{3,}|~{3,})\s*([\w+-]*)", stripped)
            if opening and fence is None:
                language = opening.group(2).lower()
                fence, shell, cwd = opening.group(1), language in ("", "bash", "sh", "shell", "zsh"), ""
                continue
            if fence is not None and stripped.startswith(fence):
                fence, cwd = None, ""
                continue
            if re.match(r"^\.\. (code-block|code|sourcecode)::\s*(bash|sh|shell|console)", stripped):
                shell = True
                continue
            candidate = None
            prompt = re.match(r"^(?:\([\w.-]+\)\s*)?\$\s+(.*)$", stripped)  # "$ make", "(.venv)$ make"
            if fence is None and not prompt and stripped and not stripped.startswith((".. ", ":")):
                cwd = ""  # prose between `$ ` lines ends a block
            if prompt:
                candidate = re.sub(r"\s#\s.*$", "", prompt.group(1)).strip()
            elif fence is not None and shell:
                candidate = stripped
            elif fence is None and instruction and (inline := re.findall(r"`([^`]{3,120})`", stripped)):
                for code in inline:
                    purpose = command_purpose(code)
                    if purpose and " " in code.strip():
                        _add(scan, purpose, code, relative, number, origin)
                continue
            if candidate and not candidate.startswith(("#", ">>>", "...")):
                for part in re.split(r"\s*(?:&&|;)\s*", candidate):
                    moved = re.match(r"^cd\s+([\w./-]+)$", part)
                    if moved:
                        cwd = "" if moved.group(1) in ("..", "-", "~") else moved.group(1)
                        continue
                    purpose = command_purpose(part)
                    _add(scan, purpose, f"cd {cwd} && {part}" if cwd and purpose else part, relative, number, origin)


_READERS: tuple[_Reader, ...] = (_Workflows(), _Docs(), _Makefile(), _Justfile(), _Tox(), _Noxfile(), _PackageJson(),
                                  _Pyproject(), _SetupCfg(), _PreCommit())


# -- CI commands written with expressions, and what a tox env or nox session runs ------------------
def expand(pattern: str) -> list[str]:
    """A tox env pattern's names: ``{,ci-}py{38,311}`` -> ``py38, py311, ci-py38, ci-py311``."""
    match = re.search(r"\{([^{}]*)\}", pattern)
    if not match:
        return [pattern]
    return [name for choice in match.group(1).split(",")
            for name in expand(pattern[:match.start()] + choice.strip() + pattern[match.end():])]


def tox_envs(scan: Scan) -> list[str]:
    """Every env name tox.ini defines (its env list and sections), expanded."""
    names: list[str] = []
    for pattern in scan.targets.get("tox", []):
        names += expand(pattern)
    return list(dict.fromkeys(names))


def _version(name: str) -> tuple:
    digits = re.findall(r"\d+", name)
    return (0 if "pypy" in name else 1, int(digits[-1]) if digits else -1, name)


def _runnable_forms(scan: Scan) -> None:
    """Give a CI ``tox``/``nox`` command written with expressions (``tox -e ci-py$(...)``, ``-e ${{ matrix.env }}``)
    a form that runs here: the newest tox env its pattern matches, or the whole env list."""
    for at, f in enumerate(list(scan.findings)):
        if f.origin != "ci" or runnable(f.command):
            continue
        marked = re.sub(r"\$\{\{.*?\}\}", "\0", f.command)
        while re.search(r"\$\([^()]*\)", marked):
            marked = re.sub(r"\$\([^()]*\)", "\0", marked)
        marked = re.sub(r"\$\{?\w+\}?", "\0", marked)
        words = marked.split()
        tool = next((w for w in words if w in ("tox", "nox")), None)
        if tool is None or "\0" in " ".join(words[:words.index(tool)]):
            continue
        rest = " ".join(words[words.index(tool):]).split(" -- ")[0]
        rest = re.sub(r"\s--installpkg\s+\S+", "", rest)  # a wheel CI built first
        env = (_TOX_ENV if tool == "tox" else _NOX_SESSION).search(" " + rest)
        name = next((g for g in env.groups() if g), "") if env else ""
        if "\0" in re.sub(r"\s(-e|--env|-s|--sessions?)\s*\S+", "", rest) or "\0" not in name:
            continue  # an expression elsewhere than the env's name: no runnable form
        parts = name.split("\0")
        if all(not p for p in parts):
            chosen = ""
        else:
            known = tox_envs(scan) if tool == "tox" else scan.targets.get("nox", [])
            wanted = re.compile("^" + ".+".join(re.escape(p) for p in parts) + "$")
            matches = sorted((n for n in known if wanted.match(n)), key=_version)
            if not matches:
                continue
            chosen = matches[-1]
        flag = env.group(0).strip() if env else ""
        command = rest.replace(flag, f"{flag.split()[0]} {chosen}" if chosen and " " in flag else
                               (flag[:2] + chosen if chosen else "")) if flag else rest
        scan.findings[at] = Finding(f.purpose, " ".join(command.split()), f.file, f.line, f.origin, f.command)


_RUNNER = re.compile(r"^(?:python3? -m |coverage run (?:-m )?)?(pytest|py\.test|unittest|nose2?|trial|stestr)\b|"
                     r"(?:^|/)runtests\.py\b|^(?:jest|vitest|mocha|ava|tap)\b")


def _tox_section(scan: Scan, env: str) -> tuple[str, list[str]]:
    """The tox.ini section an env's commands come from, and the env's factors."""
    factors = env.split("-")
    for key in scan.runs:
        if key.startswith("tox:") and key != "tox:" and env in expand(key[4:]) and scan.runs[key]:
            return key, factors
    return "tox:", factors


def _defaults(command: str, name: str) -> str:
    """``{posargs:DEFAULT}`` -> DEFAULT, braces inside DEFAULT included (``{posargs:-o "{toxworkdir}/x" tests}``)."""
    out, at, opening = [], 0, "{" + name + ":"
    while (start := command.find(opening, at)) >= 0:
        depth, end = 0, start
        for end in range(start, len(command)):
            depth += {"{": 1, "}": -1}.get(command[end], 0)
            if depth == 0:
                break
        else:
            break  # unbalanced: leave the rest as it is
        out += [command[at:start], command[start + len(opening):end]]
        at = end + 1
    return "".join(out) + command[at:]


def _substitute(command: str, env: str = "py") -> str:
    command = re.sub(r"\{env:\w+:([^{}]*)\}", r"\1", command)  # {env:X:pytest} -> pytest
    command = _defaults(command, "posargs")
    command = command.replace("{toxworkdir}", ".tox").replace("{work_dir}", ".tox").replace("{envname}", env)
    command = re.sub(r"\{(posargs|envtmpdir|envname|env_site_packages_dir)[^{}]*\}", "", command)
    command = re.sub(r"--basetemp=\s*(\s|$)", " ", command)
    command = command.replace("{toxinidir}/", "").replace("{tox_root}/", "")
    return " ".join(command.split())


_VALUED = {"-k", "-m", "-W", "-p", "-o", "-c", "-n", "--rootdir", "--junitxml", "--cov", "--cov-report",
           "--sanitize-with", "--basetemp", "--ignore", "--deselect"}


def _special(command: str) -> bool:
    """A runner line aimed at particular files that are not tests (``pytest notebook.ipynb --nbval``): when an env
    runs its runner more than once, the line an agent wants is the general one (``pytest -k "not perf"``)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    targets = [w for prev, w in zip(["", *words], words, strict=False)
               if not w.startswith("-") and prev not in _VALUED and "=" not in w]
    return any(re.search(r"\.(?!py\b)\w+$", w) and "test" not in w.rsplit("/", 1)[-1].split(".")[-1]
               for w in targets[1:])


def underneath(scan: Scan, command: str) -> tuple[str, int, str] | None:
    """``(runner command, line, file)``: what ``tox [-e env]`` / ``nox -s session`` / ``npm test`` runs, when that is
    a test runner (``pytest tests``), so an agent can run it directly."""
    words = normal(command).split()
    tool = next((w for w in words if w in ("tox", "nox", "npm", "yarn", "pnpm")), None)
    if tool == "tox":
        env = _TOX_ENV.search(" " + command)
        name = next((g for g in env.groups() if g), "") if env else ""
        if not name:
            listed = [e for e in tox_envs(scan) if re.match(r"^py\d+$", e)]
            name = max(listed, key=_version) if listed else "py"
        key, factors = _tox_section(scan, name.split(",")[0])
        found = []
        for line, raw in scan.runs.get(key, []):
            text = raw.rstrip("\\").strip()
            cond = re.match(r"^(!?)([\w,-]+):\s+(.*)$", text)
            if cond:
                hit = any(c in factors for c in cond.group(2).split(","))
                if hit == bool(cond.group(1)):
                    continue
                text = cond.group(3)
            text = _substitute(text, name.split(",")[0])
            if _RUNNER.search(text):
                found.append((text, line, "tox.ini"))
        return min(found, key=lambda f: _special(f[0])) if found else None  # the suite, not a side run
    elif tool == "nox":
        env = _NOX_SESSION.search(" " + command)
        for line, text in scan.runs.get(f"nox:{env.group(1) if env else ''}", []):
            if _RUNNER.search(text):
                return text, line, "noxfile.py"
    elif tool in ("npm", "yarn", "pnpm") and words[1:2] in (["test"], ["run"]):
        script = words[2] if words[1] == "run" and len(words) > 2 else "test"
        for line, text in scan.runs.get(f"npm:{script}", []):
            if _RUNNER.search(text.strip()):
                return text.strip(), line, "package.json"
    return None


# -- layout ---------------------------------------------------------------------------------
def _layout(root: Path, top: list[str], ignored: Callable[[str], bool], scan: Scan) -> list[Place]:
    places: list[Place] = []
    for name in top:
        if name.startswith(".") and name not in (".github",) or ignored(name):
            continue
        path = root / name
        try:  # a link is not the checkout's folder (it may lead anywhere): not listed, not entered
            is_dir = path.is_dir() and not path.is_symlink()
        except OSError:
            continue
        if not is_dir:
            if name in ("manage.py", "main.py", "app.py", "__main__.py", "main.go"):
                places.append(Place(name, "entry"))
            continue
        low = name.lower()
        if low in ("tests", "test", "testing", "spec", "__tests__"):
            places.append(Place(name + "/", "tests"))
        elif low in ("docs", "doc", "documentation", "scripts", "bin", "tools", "ci", ".github"):
            continue  # found at a glance; the manual lists where the code and the tests are
        elif low in ("src", "lib", "pkg", "cmd", "internal", "packages", "apps", "crates"):
            inner = _packages(path, ignored, name)
            places += inner or [Place(name + "/", "package")]
        elif (path / "__init__.py").is_file() or (path / "package.json").is_file() or (path / "Cargo.toml").is_file():
            places.append(Place(name + "/", "package"))
    return places[:24]


def _packages(path: Path, ignored: Callable[[str], bool], prefix: str) -> list[Place]:
    try:
        names = sorted(os.listdir(path))[:200]
    except OSError:
        return []
    return [Place(f"{prefix}/{n}/", "package") for n in names
            if not ignored(n) and not (path / n).is_symlink() and (path / n / "__init__.py").is_file()][:8]
