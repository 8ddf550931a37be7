"""Approved skills that fell behind their repository, checked against a checkout at hand.

A skill bound to a repository is **stale** when, in that repository's checkout:

* a file or folder it names no longer exists (``tests/runtests.py``, ``scripts/lint.sh``);
* a command it gives runs a target or script that is gone (``make <target>``, ``npm run <script>``,
  ``just <recipe>``, ``nox -s <session>``, a path to a script);
* sessions since it was written contradict it: its command could not run where another did
  (``replaced`` facts of the sessions, checked by the run).

Works on the SKILL.md text (no pydantic: the hook calls it), and records what it finds in
``marks``; nothing is deleted or edited. A check of a checkout replaces that checkout's findings,
so a skill whose file came back is no longer stale.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path

from pipeline import checkout, confined
from pipeline.scan import marks
from pipeline.scan.targets import just_recipe, make_targets

#: A file that names a path with one of these endings is checked (module names like ``os.path`` are not paths).
_EXTENSIONS = ("py", "sh", "bash", "js", "mjs", "cjs", "ts", "tsx", "jsx", "toml", "cfg", "ini", "json", "yml",
               "yaml", "md", "rst", "txt", "go", "rs", "rb", "java", "kt", "c", "h", "cc", "cpp", "hpp", "mk",
               "lock", "sql", "html", "css", "scss", "vue", "php", "pl", "lua", "swift", "cs")
_PATH = re.compile(r"^(?:\./)?(?:[\w.@+-]+/)*[\w.@+-]+/?$")
_GENERATED = ("build/", "dist/", ".venv/", "venv/", "node_modules/", ".tox/", "target/", "__pycache__/", "tmp/")
_FENCE = re.compile(r"^[ \t]*(`{3,})[\w-]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S)
_INLINE = re.compile(r"`([^`\n]{1,200})`")
_COMMENT = re.compile(r"[ \t]*<!--.*?-->", re.S)
_SOURCES = re.compile(r"^## Sources[ \t]*\n(?:(?!## ).*(?:\n|\Z))*", re.M)
_REPO = re.compile(r'^\s+repo:\s*"?([^"\n]+)"?\s*$', re.M)
_STATUS = re.compile(r'^\s+status:\s*"?(\w+)"?\s*$', re.M)


def repo_of_text(text: str) -> str | None:
    head = text.split("\n---", 2)[0] if text.startswith("---") else ""
    match = _REPO.search(head)
    return match.group(1).strip() if match else None


def same_repo(a: str | None, b: str | None) -> bool:
    """``owner/name`` and a checkout folder ``name`` are one repository; two owners' of one name are not."""
    return checkout.same_repository(a, b)


def _body(text: str) -> str:
    body = text.split("\n---", 2)[-1] if text.startswith("---") else text
    return _COMMENT.sub("", _SOURCES.sub("", body))


def mentions(text: str) -> tuple[list[str], list[str]]:
    """The commands (code lines, inline code) and the inline code spans of a skill body."""
    body = _body(text)
    commands = [line.strip() for block in _FENCE.finditer(body) for line in block.group(2).split("\n")
                if line.strip() and not line.strip().startswith("#")]
    spans = [s.strip() for s in _INLINE.findall(_FENCE.sub("", body))]
    return commands + spans, spans


class Checkout:
    """What the staleness checks need of one checkout, read lazily and once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._targets: dict[str, set[str] | None] = {}

    def exists(self, relative: str) -> bool:
        try:  # inside the checkout: a link out of it proves nothing about it
            return os.path.lexists(confined.resolve(self.root, relative))
        except (confined.Refused, OSError):
            return False

    def targets(self, tool: str) -> set[str] | None:
        """Names ``tool`` can run here, or None when the checkout has no file for it."""
        if tool not in self._targets:
            self._targets[tool] = self._read(tool)
        return self._targets[tool]

    def _read(self, tool: str) -> set[str] | None:
        def text(*names: str) -> str | None:
            for name in names:
                if (found := confined.read_text(self.root, name, 512 * 1024)) is not None:
                    return found
            return None
        if tool == "make":
            found = text("GNUmakefile", "makefile", "Makefile")
            if found is None:
                return None
            names = set()
            for line in found.split("\n"):
                names.update(make_targets(line))
            return names
        if tool == "npm":
            found = text("package.json")
            if found is None:
                return None
            try:
                scripts = json.loads(found).get("scripts") or {}
            except (ValueError, AttributeError):
                return None
            return set(scripts) if isinstance(scripts, dict) else set()
        if tool == "just":
            found = text("justfile", "Justfile", ".justfile")
            return None if found is None else {r for line in found.split("\n") if (r := just_recipe(line))}
        if tool == "nox":
            found = text("noxfile.py")
            if found is None:
                return None
            names = set(re.findall(r"name\s*=\s*['\"]([\w-]+)['\"]", found))
            names |= set(re.findall(r"@nox\.session[^\n]*\n(?:\s*@[^\n]*\n)*\s*def\s+(\w+)", found))
            return names
        return None


_RUNNERS = (
    ("make", re.compile(r"(?:^|[;&|]\s*)make\s+(?:-\S+\s+)*([A-Za-z0-9][\w.-]*)(?=\s|$)")),
    ("npm", re.compile(r"(?:^|[;&|]\s*)(?:npm|pnpm|bun)\s+run(?:-script)?\s+([\w:.-]+)|(?:^|[;&|]\s*)yarn\s+(?!install\b|add\b)([\w:.-]+)")),
    ("npm-test", re.compile(r"(?:^|[;&|]\s*)(?:npm|pnpm|yarn)\s+(test|start)\b")),
    ("just", re.compile(r"(?:^|[;&|]\s*)just\s+([A-Za-z_][\w-]*)")),
    ("nox", re.compile(r"(?:^|[;&|]\s*)nox\s+(?:-\S+\s+)*(?:-s|--session)\s+([\w-]+)")),
)
_WHAT = {"make": ("make", "target", "the Makefile"), "npm": ("npm run", "script", "package.json"),
         "npm-test": ("npm", "script", "package.json"), "just": ("just", "recipe", "the justfile"),
         "nox": ("nox -s", "session", "noxfile.py")}


def check(text: str, checkout: Checkout) -> list[dict[str, str]]:
    """Why the skill in ``text`` is stale in ``checkout`` (``[{"kind", "text"}]``), [] when nothing is gone."""
    reasons: dict[str, dict[str, str]] = {}
    commands, spans = mentions(text)
    for command in commands:
        if "<" in command.split(" ", 1)[0]:
            continue
        for tool, pattern in _RUNNERS:
            for match in pattern.finditer(command):
                name = next(g for g in match.groups() if g)
                if "$" in name or "<" in name:
                    continue
                source = "npm" if tool == "npm-test" else tool
                names = checkout.targets(source)
                runner, kind, where = _WHAT[tool]
                said = f"`{runner} {name}`"
                if names is None:
                    reasons.setdefault(said, {"kind": "command", "text": f"{said}: the checkout has no {where} any more"})
                elif name not in names:
                    reasons.setdefault(said, {"kind": "command", "text": f"{said}: no {kind} `{name}` in {where} any more"})
    for token in _paths(commands, spans):
        if not checkout.exists(token.rstrip("/")):
            reasons.setdefault(token, {"kind": "file", "text": f"`{token}` no longer exists in the checkout"})
    return list(reasons.values())


def _paths(commands: list[str], spans: list[str]) -> list[str]:
    found: list[str] = []
    for words in [c.split() for c in commands] + [[s] for s in spans]:
        for position, word in enumerate(words):
            token = re.sub(r"(::\S*|:\d+(:\d+)?)$", "", word.strip("'\"(),;"))
            if not token or not _PATH.match(token) or token.startswith(("-", "/", "~", "http")) or ".." in token:
                continue
            token = token.removeprefix("./")
            if any(token.startswith(g) for g in _GENERATED) or token.startswith("."):
                continue
            ext = token.rsplit(".", 1)[-1].lower() if "." in token.rsplit("/", 1)[-1] else ""
            script = position == 0 and "/" in token  # bin/test, scripts/lint.sh
            if ext in _EXTENSIONS and ("/" in token or position > 0 or len(words) == 1) or script \
                    or (token.endswith("/") and len(words) == 1):
                found.append(token)
    return list(dict.fromkeys(found))


def contradicted(text: str, facts: Iterable) -> list[dict[str, str]]:
    """Sessions not among the skill's sources where one of its commands could not run and another did."""
    from pipeline.scan.reader import normal

    _, spans = mentions(text)
    said = {normal(s.replace(" <tests>", "")) for s in spans}
    sources = set(re.findall(r"^- `([0-9a-f]{16})`", text, re.M))
    out: dict[str, dict[str, str]] = {}
    for fact in facts:
        if fact.kind != "replaced" or not fact.text or fact.trajectory in sources:
            continue
        failed = normal(fact.text.replace(" <tests>", ""))
        if failed in said:
            symptom = (fact.symptom or "").strip().split("\n", 1)[0][:80].replace("`", "'")
            out.setdefault(failed, {"kind": "session", "text": f"`{fact.text}` could not run in session "
                                    f"{fact.trajectory} (`{symptom}`, {fact.when or 'date unknown'}); "
                                    f"`{fact.command}` ran instead"})
    return list(out.values())


def approved_for(library: Path, repo: str | None) -> list[tuple[str, Path, str]]:
    """``(name, SKILL.md, text)`` of the approved skills bound to ``repo`` (all bound ones when None)."""
    out = []
    try:
        names = sorted(os.listdir(library))
    except OSError:
        return []
    for name in names:
        if name.startswith(("_", ".")):
            continue
        file = library / name / "SKILL.md"
        try:
            text = file.read_text(encoding="utf-8")
        except OSError:
            continue
        bound = repo_of_text(text)
        if bound and (repo is None or same_repo(bound, repo)):
            out.append((name, file, text))
    return out


def refresh(library: Path | str, root: Path | str, repo: str | None, *, by: str, facts: Iterable = ()) -> dict[str, list]:
    """Check the approved skills bound to ``repo`` against the checkout at ``root``; update the marks.

    Returns ``name -> reasons`` for the skills found stale now. A skill's earlier findings in
    this checkout are replaced (a file that came back clears them); session evidence is kept
    until a check brings new session evidence (``facts`` given) that no longer shows it.
    """
    library, root = Path(library), Path(root)
    checkout = Checkout(root)
    facts = list(facts)
    current = dict(marks.load(library))
    found: dict[str, list] = {}
    changed = False
    for name, _file, text in approved_for(library, repo):
        reasons = check(text, checkout)
        sessions = contradicted(text, facts) if facts else [
            r for r in (current.get(name) or {}).get("reasons", []) if r.get("kind") == "session"]
        reasons += sessions
        old = current.get(name)
        if reasons:
            found[name] = reasons
            entry = {"reasons": reasons, "checkout": str(root), "by": by,
                     "checked": time.strftime("%Y-%m-%dT%H:%M:%S")}
            if not old or old.get("reasons") != reasons:
                current[name] = entry
                changed = True
        elif old:
            del current[name]
            changed = True
    if changed:
        marks.save(library, current)
    return found


def checkout_root(cwd: str | Path) -> Path:
    """The checkout ``cwd`` is in: the nearest folder up with ``.git``, else ``cwd`` itself."""
    return checkout.root_of(cwd) or Path(cwd)


def at_hook(cwd: str | Path, repo: str | None) -> None:
    """The hook's check: the approved skills of the repository the agent works in, against its checkout.

    Never raises (the hook must not get in the agent's way); cheap (only files named by approved
    skills of this repository are looked at).
    """
    if not repo:
        return
    try:
        from pipeline import settings

        refresh(settings.library_dir(), checkout_root(cwd), repo, by="hook")
    except Exception:  # noqa: BLE001 - a hook prints nothing rather than fail
        return
