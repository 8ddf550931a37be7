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
import time
import tomllib
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pipeline.errors import UsageError

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
ORIGINS = ("ci", "instructions", "docs", "make", "just", "tox", "nox", "npm", "pyproject", "pre-commit", "cargo",
           "go", "docker")
INSTRUCTION_FILES = ("CLAUDE.md", "AGENTS.md", "GEMINI.md", "CONVENTIONS.md", ".cursorrules",
                     ".github/copilot-instructions.md")
DOC_FILES = ("README.md", "README.rst", "README.txt", "README", "CONTRIBUTING.md", "CONTRIBUTING.rst",
             ".github/CONTRIBUTING.md", "docs/CONTRIBUTING.md", "HACKING.md", "DEVELOPMENT.md", "docs/development.md",
             "docs/contributing.md", "docs/contributing.rst", "docs/development.rst", "doc/contributing.rst")


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
    files_read: list[str] = field(default_factory=list)
    truncated: bool = False
    seconds: float = 0.0

    def commands(self, purpose: str) -> list[Finding]:
        """The findings of one purpose, most authoritative origin first, one per command."""
        mine = [f for f in self.findings if f.purpose == purpose]
        agree: dict[str, int] = defaultdict(int)
        for f in mine:
            agree[normal(f.command)] += 1
        seen: dict[str, Finding] = {}
        for f in sorted(mine, key=lambda f: (_RANK[f.origin], -agree[normal(f.command)], *_authority(f)[1:])):
            seen.setdefault(normal(f.command), f)
        return list(seen.values())

    def cites(self, finding: Finding) -> list[Finding]:
        """Every place that gives the same command for the same purpose, most authoritative first."""
        same = normal(finding.command)
        return sorted((f for f in self.findings if f.purpose == finding.purpose and normal(f.command) == same),
                      key=_authority)

    def contract(self) -> dict:
        """What ``skillmill scan --json`` prints."""
        return {"root": self.root, "repo": self.repo, "seconds": self.seconds, "files_read": len(self.files_read),
                "truncated": self.truncated,
                "commands": {p: [asdict(f) | {"cite": f.cite} for f in self.commands(p)] for p in PURPOSES
                             if self.commands(p)},
                "layout": [asdict(p) for p in self.layout], "instructions": self.instructions,
                "targets": self.targets}


_RANK = {o: i for i, o in enumerate(ORIGINS)}
#: The workflows that gate changes, before the ones that publish, benchmark or build a docset.
_MAIN_WORKFLOW = re.compile(r"(^|[/_-])(ci|tests?|testsuite|main|checks?|lint|quality|build|push|pr|pull_request)"
                            r"\.ya?ml$")


def _authority(f: Finding) -> tuple:
    side = 0 if f.origin != "ci" or _MAIN_WORKFLOW.search(f.file) or f.file == ".gitlab-ci.yml" else 1
    return (_RANK[f.origin], side, f.file, f.line)


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
    ("run", re.compile(r"^(cargo run|go run|npm start|flask run|uvicorn|docker run|python manage\.py runserver)\b")),
)
_WRAPPERS = re.compile(r"^(uvx( --with[= ]\S+)*|uv run( --\S+)*|poetry run|pdm run|hatch run( \S+:)?|pipx run|"
                       r"npx|python3? -m|sudo|time|env( \w+=\S*)*)\s+")
_DEV_INSTALL = re.compile(r"\s(-e|--editable|-r|--requirement)\s|\s\.(\[[\w,-]+\])?$|\s'?\.\[")
_TOX_ENV = re.compile(r"\s-e\s*(\S+)|\s--env[= ](\S+)")
_NOX_SESSION = re.compile(r"\s(?:-s|--session|--sessions)\s+(\S+)")


def named_purpose(name: str) -> str | None:
    low = name.lower()
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
        env = _TOX_ENV.search(" " + bare) if words[0] == "tox" else _NOX_SESSION.search(" " + bare)
        name = next((g for g in env.groups() if g), "") if env else ""
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
        path = self.root / relative
        if len(self.read) >= self.limit:
            self.truncated = True
            return None
        try:
            if not path.is_file():
                return None
            with path.open("rb") as handle:
                data = handle.read(MAX_BYTES)
        except OSError:
            return None
        self.read.append(relative)
        return data.decode("utf-8", "replace")


def _ignored(root: Path) -> Callable[[str], bool]:
    """The top ``.gitignore``'s patterns, for names met while listing (a simple, common subset)."""
    patterns: list[str] = []
    try:
        for raw in (root / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()[:500]:
            line = raw.strip()
            if line and not line.startswith(("#", "!")):
                patterns.append(line.strip("/"))
    except OSError:
        pass

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
    result.layout = _layout(root, top, ignored, result)
    result.files_read = budget.read
    result.truncated = budget.truncated
    result.seconds = round(time.monotonic() - started, 3)
    return result


def repo_name(root: Path, budget: _Budget | None = None) -> str | None:
    """``owner/name`` from the checkout's git remote, else the name its manifest declares, else the folder's."""
    from_git = _git_remote(root)
    if from_git:
        return from_git
    for manifest in ("pyproject.toml", "package.json", "Cargo.toml", "setup.cfg"):
        try:
            text = (root / manifest).read_text(encoding="utf-8", errors="replace")[:MAX_BYTES]
        except OSError:
            continue
        name = _manifest_name(manifest, text)
        if name:
            return name
    name = re.sub(r"-\d+(\.\d+)+([a-z]+\d*)?$", "", root.name)  # an unpacked sdist: attrs-25.3.0
    return name or None


def _git_remote(root: Path) -> str | None:
    config = root / ".git" / "config"
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    match = re.search(r'\[remote "origin"\][^\[]*?url\s*=\s*(\S+)', text) or re.search(r"url\s*=\s*(\S+)", text)
    if not match:
        return None
    url = match.group(1)
    found = re.match(r"^(?:[\w+.-]+://)?(?:[^@/\s]+@)?([^/:\s]+)[:/]([^\s]+?)(?:\.git)?/*$", url)
    if not found:
        return None
    parts = [p for p in found.group(2).split("/") if p]
    return "/".join(parts[-2:]) if len(parts) >= 2 else None


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


def _values_of(node: object, keys: tuple[str, ...]) -> Iterator[object]:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value in keys:
                if isinstance(value, yaml.SequenceNode):
                    yield from (v for v in value.value if isinstance(v, yaml.ScalarNode))
                elif isinstance(value, yaml.ScalarNode):
                    yield value
            else:
                yield from _values_of(value, keys)
    elif isinstance(node, yaml.SequenceNode):
        for value in node.value:
            yield from _values_of(value, keys)


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
        for part in re.split(r"\s*(?:&&|;|\|\|)\s*", full):
            yield part, line


class _Makefile(_Reader):
    names = ("Makefile", "makefile", "GNUmakefile")

    def read(self, relative: str, text: str, scan: Scan) -> None:
        targets = scan.targets.setdefault("make", [])
        for number, line in enumerate(text.split("\n"), 1):
            match = re.match(r"^([A-Za-z0-9][\w.-]*(?:\s+[A-Za-z0-9][\w.-]*)*)\s*::?(?![=])", line)
            if not match or line.startswith("\t"):
                continue
            for target in match.group(1).split():
                if target.startswith(".") or target in targets:
                    continue
                targets.append(target)
                _add(scan, named_purpose(target), f"make {target}", relative, number, "make")


class _Justfile(_Reader):
    names = ("justfile", "Justfile", ".justfile")

    def read(self, relative: str, text: str, scan: Scan) -> None:
        recipes = scan.targets.setdefault("just", [])
        for number, line in enumerate(text.split("\n"), 1):
            match = re.match(r"^@?([A-Za-z_][\w-]*)(?:\s+[^:=]*)?:(?!=)", line)
            if match and not line.startswith((" ", "\t")):
                recipes.append(match.group(1))
                _add(scan, named_purpose(match.group(1)), f"just {match.group(1)}", relative, number, "just")


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
        install = {"npm": "npm ci" if "package-lock.json" in top else "npm install", "yarn": "yarn install",
                   "pnpm": "pnpm install"}[tool]
        _add(scan, "install", install, relative, 1, "npm")


def _toml_line(lines: list[str], header: str, key: str | None = None) -> int:
    at = next((i for i, raw in enumerate(lines, 1) if raw.strip() == f"[{header}]"), 0)
    if key is None or not at:
        return at or 1
    return next((i for i in range(at + 1, len(lines) + 1) if re.match(rf'^\s*"?{re.escape(key)}"?\s*=',
                                                                       lines[i - 1])), at)


class _Pyproject(_Reader):
    names = ("pyproject.toml",)
    _TOOLS = (("pytest.ini_options", "test", "pytest"), ("ruff", "lint", "ruff check ."),
              ("ruff", "format", "ruff format ."), ("black", "format", "black ."), ("isort", "format", "isort ."),
              ("mypy", "type-check", "mypy"), ("pyright", "type-check", "pyright"), ("flake8", "lint", "flake8"))

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
            if isinstance(table, dict):
                _add(scan, purpose, command, relative, _toml_line(lines, f"tool.{section}"), "pyproject")
        scripts = data.get("project", {}).get("scripts") if isinstance(data.get("project"), dict) else None
        for name in (scripts or {}) if isinstance(scripts, dict) else ():
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
        if isinstance(data.get("build-system"), dict):
            _add(scan, "build", "python -m build", relative, _toml_line(lines, "build-system"), "pyproject")
            if isinstance(data.get("project"), dict):
                _add(scan, "install", "pip install -e .", relative, _toml_line(lines, "project"), "pyproject")


class _Tox(_Reader):
    names = ("tox.ini",)

    def read(self, relative: str, text: str, scan: Scan) -> None:
        envs = scan.targets.setdefault("tox", [])
        for number, line in enumerate(text.split("\n"), 1):
            match = re.match(r"^\[(tox|testenv)(?::([^\]]+))?\]", line.strip())
            if not match:
                continue
            if match.group(1) == "tox":
                _add(scan, "test", "tox", relative, number, "tox")
            elif match.group(2):
                name = match.group(2).strip()
                envs.append(name)
                if "{" not in name:
                    _add(scan, named_purpose(name), f"tox -e {name}", relative, number, "tox")


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


class _PreCommit(_Reader):
    names = (".pre-commit-config.yaml",)

    def read(self, relative: str, text: str, scan: Scan) -> None:
        _add(scan, "lint", "pre-commit run --all-files", relative, 1, "pre-commit")


class _Cargo(_Reader):
    names = ("Cargo.toml",)

    def read(self, relative: str, text: str, scan: Scan) -> None:
        line = _toml_line(text.split("\n"), "package") if "[package]" in text else _toml_line(text.split("\n"),
                                                                                                "workspace")
        for purpose, command in (("build", "cargo build"), ("test", "cargo test"), ("lint", "cargo clippy"),
                                 ("format", "cargo fmt"), ("run", "cargo run")):
            _add(scan, purpose, command, relative, line, "cargo")


class _GoMod(_Reader):
    names = ("go.mod",)

    def read(self, relative: str, text: str, scan: Scan) -> None:
        line = next((i for i, raw in enumerate(text.split("\n"), 1) if raw.startswith("module ")), 1)
        for purpose, command in (("build", "go build ./..."), ("test", "go test ./..."), ("lint", "go vet ./..."),
                                 ("format", "gofmt -l .")):
            _add(scan, purpose, command, relative, line, "go")


class _Dockerfile(_Reader):
    names = ("Dockerfile",)

    def read(self, relative: str, text: str, scan: Scan) -> None:
        first = next((i for i, raw in enumerate(text.split("\n"), 1) if raw.upper().startswith("FROM ")), 1)
        _add(scan, "build", "docker build .", relative, first, "docker")


class _Docs(_Reader):
    """Shell lines of README / CONTRIBUTING / development docs and of the agent instruction files."""

    def files(self, root: Path, top: list[str]) -> Iterator[str]:
        yield from (n for n in INSTRUCTION_FILES if n in top or "/" in n)
        rules = root / ".cursor" / "rules"
        if rules.is_dir():
            with contextlib.suppress(OSError):
                yield from (f".cursor/rules/{n}" for n in sorted(os.listdir(rules))[:20])
        yield from (n for n in DOC_FILES if n in top or "/" in n)

    def read(self, relative: str, text: str, scan: Scan) -> None:
        instruction = relative in INSTRUCTION_FILES or relative.startswith(".cursor/rules/")
        if instruction:
            scan.instructions.append(relative)
        origin = "instructions" if instruction else "docs"
        fence: str | None = None
        shell = False
        lines = text.split("\n")
        for number, raw in enumerate(lines, 1):
            stripped = raw.strip()
            opening = re.match(r"^(`{3,}|~{3,})\s*([\w+-]*)", stripped)
            if opening and fence is None:
                language = opening.group(2).lower()
                fence, shell = opening.group(1), language in ("", "bash", "sh", "shell", "zsh")
                continue
            if fence is not None and stripped.startswith(fence):
                fence = None
                continue
            if re.match(r"^\.\. (code-block|code|sourcecode)::\s*(bash|sh|shell|console)", stripped):
                shell = True
                continue
            candidate = None
            if stripped.startswith("$ "):
                candidate = stripped[2:]
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
                    _add(scan, command_purpose(part), part, relative, number, origin)


_READERS: tuple[_Reader, ...] = (_Workflows(), _Docs(), _Makefile(), _Justfile(), _Tox(), _Noxfile(), _PackageJson(),
                                  _Pyproject(), _PreCommit(), _Cargo(), _GoMod(), _Dockerfile())


# -- layout ---------------------------------------------------------------------------------
def _layout(root: Path, top: list[str], ignored: Callable[[str], bool], scan: Scan) -> list[Place]:
    places: list[Place] = []
    for name in top:
        if name.startswith(".") and name not in (".github",) or ignored(name):
            continue
        path = root / name
        try:
            is_dir = path.is_dir()
        except OSError:
            continue
        if not is_dir:
            if name in ("manage.py", "main.py", "app.py", "__main__.py", "main.go"):
                places.append(Place(name, "entry"))
            continue
        low = name.lower()
        if low in ("tests", "test", "testing", "spec", "__tests__"):
            places.append(Place(name + "/", "tests"))
        elif low in ("docs", "doc", "documentation"):
            places.append(Place(name + "/", "docs"))
        elif low in ("scripts", "bin", "tools", "ci"):
            places.append(Place(name + "/", "scripts"))
        elif low == ".github":
            continue
        elif low in ("src", "lib", "pkg", "cmd", "internal", "packages", "apps", "crates"):
            inner = _packages(path, ignored, name)
            places.append(Place(name + "/", "package"))
            places += inner
        elif (path / "__init__.py").is_file() or (path / "package.json").is_file() or (path / "Cargo.toml").is_file():
            places.append(Place(name + "/", "package"))
    return places[:24]


def _packages(path: Path, ignored: Callable[[str], bool], prefix: str) -> list[Place]:
    try:
        names = sorted(os.listdir(path))[:200]
    except OSError:
        return []
    return [Place(f"{prefix}/{n}/", "package") for n in names
            if not ignored(n) and (path / n / "__init__.py").is_file()][:8]
