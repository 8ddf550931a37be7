"""The library's own git repository: the one place skillmill runs git on it.

The library folder is the work tree. Its repository is made by skillmill (``skillmill sync``) and
marked so (``skillmill.library = true`` in its config); a library without that mark is left alone,
so a library that sits inside a project checkout never commits into the project's repository.

What a teammate's push can put in the tree is data: the repository is made with
``core.symlinks = false`` (a link in the remote's history is checked out as a small file holding the
link's text, not a link to ``~/.bashrc``), and hooks never run (``core.hooksPath`` is an empty folder
of ours). Pushing and fetching use the user's own git and credentials; git never asks on a terminal
(``GIT_TERMINAL_PROMPT=0``): an unreachable remote is an answer, not a hang.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import SkillmillError

MARK = "skillmill.library"
#: Network operations (fetch, push, ls-remote) give up after this long.
NETWORK_TIMEOUT_S = 120.0
LOCAL_TIMEOUT_S = 60.0


class GitError(SkillmillError):
    """git said no: its own words are in the message."""


@dataclass(frozen=True)
class Done:
    code: int
    out: str
    err: str

    @property
    def ok(self) -> bool:
        return self.code == 0

    def why(self) -> str:
        """git's reason in one line (its last non-empty line of stderr, else stdout)."""
        lines = [line.strip() for line in (self.err or self.out).splitlines() if line.strip()]
        return lines[-1][:300] if lines else f"git exited with {self.code}"


class Repo:
    """``git -C <library>`` with the settings above."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @property
    def exists(self) -> bool:
        return (self.root / ".git").is_dir()

    @property
    def ours(self) -> bool:
        """A repository skillmill made for this library (not a project's that happens to hold it)."""
        return self.exists and self.run("config", "--local", "--get", MARK, check=False).out.strip() == "true"

    def run(self, *args: str, check: bool = True, network: bool = False, env: dict[str, str] | None = None,
            stdin: str | None = None) -> Done:
        command = ["git", "-C", str(self.root), "-c", f"core.hooksPath={self._no_hooks()}", *args]
        full = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **(env or {})}
        try:
            proc = subprocess.run(command, capture_output=True, text=True, env=full, input=stdin,
                                  timeout=NETWORK_TIMEOUT_S if network else LOCAL_TIMEOUT_S)
        except FileNotFoundError as exc:
            raise GitError("git is not installed", hint="install git: the team library is a git repository") from exc
        except subprocess.TimeoutExpired as exc:
            if check:
                raise GitError(f"git {args[0]} did not finish within {exc.timeout:.0f} s") from exc
            return Done(124, "", f"git {args[0]} did not finish within {exc.timeout:.0f} s")
        done = Done(proc.returncode, proc.stdout, proc.stderr)
        if check and not done.ok:
            raise GitError(f"git {args[0]} failed: {done.why()}")
        return done

    def init(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.run("init", "--quiet", "-b", "main")
        for key, value in ((MARK, "true"), ("core.symlinks", "false"), ("core.autocrlf", "false"),
                           ("merge.renames", "false"), ("pull.rebase", "false")):
            self.run("config", "--local", key, value)

    def identity(self, who: str | None = None) -> dict[str, str]:
        """The author: ``who`` (the reviewer) by name, else git's user; the e-mail git knows on this machine. When
        git knows no user, the committer too, so a machine never set up for git still records decisions."""
        name = self.run("config", "user.name", check=False).out.strip()
        email = self.run("config", "user.email", check=False).out.strip()
        author = who or name or os.environ.get("USER") or "skillmill"
        address = email or f"{'.'.join(author.split()) or 'skillmill'}@skillmill.invalid"
        found = {"GIT_AUTHOR_NAME": author, "GIT_AUTHOR_EMAIL": address}
        if not (name and email):
            found |= {"GIT_COMMITTER_NAME": name or author, "GIT_COMMITTER_EMAIL": address}
        return found

    def commit(self, message: str, who: str | None = None, paths: list[str] | None = None) -> str | None:
        """Stage ``paths`` (everything: None) and commit them; the new commit's hash, or None when nothing changed."""
        self.run("add", "-A", "--", *(paths or ["."]))
        if self.run("diff", "--cached", "--quiet", check=False).ok:
            return None
        self.run("commit", "--quiet", "--no-verify", "-m", message, env=self.identity(who))
        return self.head()

    def head(self) -> str | None:
        done = self.run("rev-parse", "--verify", "--quiet", "HEAD", check=False)
        return done.out.strip() or None

    def _no_hooks(self) -> str:
        folder = self.root / ".git" / "skillmill-no-hooks"
        if (self.root / ".git").is_dir():
            folder.mkdir(exist_ok=True)
        return str(folder)
