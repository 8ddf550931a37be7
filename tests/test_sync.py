"""Issue 26: a team's library on git (``skillmill sync``), with two people on one machine and one bare repository.

Ann and Bob have a home each (``HOME``, ``SKILLMILL_HOME``, their own git identity) and share ``team.git``. Ann's
run over the sample sessions proposes; Bob approves; Ann's hook serves the skill after her sync; Bob deprecates,
and the folder Ann exported loses it at her next sync; the same skill edited on both machines is a conflict kept
with both versions; the remote's whole history holds no handoff, usage log, feedback note or planted secret.
Every step is the ``skillmill`` command a person types, in a process of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq3SECRETKEY"  # an AWS secret key's shape, planted in a session
NOTE_SECRET = "ghp_4nN0tReAlT0k3nF0rTh3F33dbackN0te0000"  # in Ann's feedback note: personal, never shared


@dataclass
class Person:
    name: str
    root: Path

    @property
    def home(self) -> Path:
        return self.root / "skillmill"

    @property
    def library(self) -> Path:
        return self.home / "skills"

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLMILL_", "GIT_"))}
        return {**keep, "HOME": str(self.root), "SKILLMILL_HOME": str(self.home), "GIT_CONFIG_NOSYSTEM": "1",
                "SKILLMILL_SERVER_IDLE_MINUTES": "0", "SKILLMILL_REVIEWER": self.name, "PYTHONPATH": str(ROOT),
                "EDITOR": f"{sys.executable} {self.root / 'editor.py'}"}

    def run(self, *args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True,
                              env=self.env(), cwd=self.root, input=stdin, timeout=300)
        if check:
            assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
        return done

    def json(self, *args: str) -> object:
        return json.loads(self.run(*args, "--json").stdout)

    def sync(self, *args: str) -> dict:
        return self.json("sync", *args)  # type: ignore[return-value]

    def edits_with(self, line: str) -> None:
        """The $EDITOR ``review edit`` opens: gives the skill a Notes section holding ``line``."""
        (self.root / "editor.py").write_text(
            "import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
            f"p.write_text(p.read_text().replace('\\n## Sources', '\\n## Notes\\n' + {line!r} + "
            "'\\n\\n## Sources', 1))\n")


def person(tmp_path: Path, name: str) -> Person:
    root = tmp_path / name.lower()
    root.mkdir()
    (root / ".gitconfig").write_text(f"[user]\n\tname = {name}\n\temail = {name.lower()}@example.com\n")
    return Person(name, root)


@pytest.fixture
def team(tmp_path: Path) -> tuple[Person, Person, Path]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    remote = tmp_path / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    return person(tmp_path, "Ann"), person(tmp_path, "Bob"), remote


def with_candidate(who: Person, name: str = "working-in-sympy", as_name: str | None = None) -> Path:
    """A candidate of this repository's demo library (skills/_candidates), in ``who``'s library, as a run leaves it."""
    target = who.library / "_candidates" / (as_name or name)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "skills" / "_candidates" / name, target)
    return target


def samples_with_a_secret(tmp_path: Path) -> Path:
    copy = tmp_path / "samples"
    shutil.copytree(ROOT / "samples", copy)
    traj = copy / "mini_swe_agent" / "sympy__sympy-20428.traj.json"
    text = traj.read_text()
    traj.write_text(text.replace("THOUGHT: I need to understand",
                                 f"THOUGHT: aws_secret_access_key = {SECRET} I need to understand", 1))
    assert SECRET in traj.read_text()
    return copy


def history(remote: Path) -> str:
    """Every path and every byte the remote's history holds, all branches."""
    log = subprocess.run(["git", "--git-dir", str(remote), "log", "--all", "-p", "--binary", "--format=%H %an %s"],
                         capture_output=True, text=True, check=True).stdout
    names = subprocess.run(["git", "--git-dir", str(remote), "log", "--all", "--name-only", "--format="],
                           capture_output=True, text=True, check=True).stdout
    return log + "\n" + names


def hook_context(who: Person, prompt: str) -> str:
    event = {"session_id": "s-1", "transcript_path": str(who.root / "t.jsonl"), "cwd": str(who.root),
             "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    done = who.run("hook", "claude-code", stdin=json.dumps(event))
    return json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"] if done.stdout.strip() else ""


def test_what_one_person_proposes_a_teammate_approves_and_everyones_agents_get(
        team: tuple[Person, Person, Path], tmp_path: Path) -> None:
    ann, bob, remote = team
    first = ann.sync("--remote", str(remote))  # an empty library shared: nothing to push yet
    assert first["created"] and not first["pushed"] and first["committed"] == 0
    ann.run("run", str(samples_with_a_secret(tmp_path)))  # a run of a shared library syncs when it ends
    pushed = subprocess.run(["git", "--git-dir", str(remote), "log", "--all", "--format=%an|%s"], capture_output=True,
                            text=True, check=True).stdout
    assert pushed.startswith("Ann|skillmill: what changed in the library on"), pushed
    ann.run("feedback", "add", "working-in-django", "helpful", "--note", f"used it with {NOTE_SECRET}", check=False)
    assert not ann.sync()["committed"]  # (a note is personal: it is not in the library)

    joined = bob.sync("--remote", str(remote))  # Bob has no library yet: he gets the team's as it is
    assert joined["created"] and not joined["conflicts"]
    queue = {i["name"]: i["status"] for i in bob.json("review", "list")}  # type: ignore[union-attr]
    assert queue.get("working-in-sympy") == "candidate", queue

    bob.run("review", "approve", "working-in-sympy")
    author = subprocess.run(["git", "-C", str(bob.library), "log", "-1", "--format=%an|%s"], capture_output=True,
                            text=True, check=True).stdout.strip()
    assert author == "Bob|approve working-in-sympy v1"  # the decision is a commit by the reviewer
    assert bob.sync()["pushed"]

    assert "working-in-sympy" not in hook_context(ann, "sympy tests fail with pytest: command not found")
    pulled = ann.sync()
    assert "working-in-sympy" in pulled["changed"]
    assert "working-in-sympy" in hook_context(ann, "sympy tests fail with pytest: command not found")

    project = ann.root / "project"
    project.mkdir()
    ann.run("export", "--agent", "claude-code", "--project", str(project), "--all-repos")
    assert (project / ".claude" / "skills" / "working-in-sympy" / "SKILL.md").is_file()
    bob.sync()
    bob.run("review", "deprecate", "working-in-sympy", "--reason", "sympy moved its test runner")
    bob.sync()
    ann.sync()
    assert not (project / ".claude" / "skills" / "working-in-sympy").exists()  # gone from Ann's agents too
    assert "working-in-sympy" not in hook_context(ann, "sympy tests fail with pytest: command not found")

    log = ann.run("review", "log", "--verify").stdout
    assert "chain intact" in log, log  # both machines' decisions, merged, still verify

    shared = history(remote)
    assert SECRET not in shared and NOTE_SECRET not in shared
    for personal in ("handoff", "usage", "feedback", "state.duckdb", "recall", ".skillmill.lock", "capture/"):
        assert personal not in "\n".join(line for line in shared.splitlines() if "/" in line and " " not in line)
    assert "working-in-sympy/SKILL.md" in shared  # (the history was read: it holds the library)


def test_the_same_skill_changed_on_two_machines_is_kept_twice_and_settled_by_a_person(
        team: tuple[Person, Person, Path], tmp_path: Path) -> None:
    ann, bob, remote = team
    with_candidate(ann)
    ann.sync("--remote", str(remote))
    bob.sync("--remote", str(remote))

    ann.edits_with("Ann: run bin/test from the checkout's root.")
    ann.run("review", "edit", "working-in-sympy")
    bob.edits_with("Bob: the slow tests need --slow.")
    bob.run("review", "edit", "working-in-sympy")
    ann.sync()
    settled = bob.sync()
    [conflict] = settled["conflicts"]
    assert conflict["name"] == "working-in-sympy" and "edited by Ann" in conflict["other"]
    here = (bob.library / "_candidates" / "working-in-sympy" / "SKILL.md").read_text()
    kept = (bob.library / conflict["file"]).read_text()
    assert "Bob: the slow tests" in here and "<<<<<<<" not in here  # never merged into one file
    assert "Ann: run bin/test" in kept and "Bob:" not in kept  # and never lost
    shown = [i for i in bob.json("review", "list") if i["status"] == "conflict"]  # type: ignore[union-attr]
    assert [i["name"] for i in shown] == ["working-in-sympy"] and shown[0]["conflict"]["take"] == 1

    bob.run("review", "resolve", "working-in-sympy", "--take", "1")
    assert "Ann: run bin/test" in (bob.library / "_candidates" / "working-in-sympy" / "SKILL.md").read_text()
    assert not (bob.library / "_conflicts").exists()
    assert bob.sync()["pushed"] and not ann.sync()["conflicts"]
    assert "Ann: run bin/test" in (ann.library / "_candidates" / "working-in-sympy" / "SKILL.md").read_text()


def test_one_approves_what_the_other_rejects_the_stricter_decision_stays(team: tuple[Person, Person, Path]) -> None:
    ann, bob, remote = team
    with_candidate(ann)
    ann.sync("--remote", str(remote))
    bob.sync("--remote", str(remote))
    ann.run("review", "approve", "working-in-sympy")
    bob.run("review", "reject", "working-in-sympy", "--reason", "one session is not enough")
    ann.sync()
    [conflict] = bob.sync()["conflicts"]
    assert conflict["kept"] == "rejected" and conflict["other"].startswith("approved")
    assert (bob.library / "_rejected" / "working-in-sympy" / "SKILL.md").is_file()
    assert not (bob.library / "working-in-sympy").exists()  # not served while two people disagree
    ann.sync()
    assert not (ann.library / "working-in-sympy").exists() and (ann.library / "_conflicts" / "working-in-sympy").is_dir()


def test_an_unreachable_remote_leaves_the_library_working(team: tuple[Person, Person, Path]) -> None:
    ann, _, remote = team
    with_candidate(ann, as_name="x")
    ann.sync("--remote", str(remote))
    moved = remote.with_name("gone.git")
    remote.rename(moved)
    done = ann.run("sync")
    assert done.returncode == 0 and len(done.stderr.strip().splitlines()) == 1 and "did not answer" in done.stderr
    assert ann.sync()["offline"]
    assert ann.json("review", "list")  # the library here works as before


def test_a_library_inside_another_repository_is_left_alone(tmp_path: Path) -> None:
    alice = person(tmp_path, "Alice")
    project = alice.root / "project"
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    done = alice.run("sync", "--library", str(project), "--remote", str(tmp_path / "x.git"), check=False)
    assert done.returncode == 2 and "skillmill did not make" in done.stderr
    unshared = alice.run("sync", "--library", str(alice.root / "lib"), check=False)  # no remote named yet
    assert unshared.returncode == 2 and "skillmill sync --remote URL" in unshared.stderr


def test_candidates_pushed_to_a_branch_are_approved_by_merging_it(team: tuple[Person, Person, Path]) -> None:
    ann, bob, remote = team
    with_candidate(ann)
    ann.sync("--remote", str(remote))
    assert ann.sync("--branch", "skills/ann-1")["pushed"]
    assert (ann.library / "_candidates" / "working-in-sympy").is_dir()  # nothing changed here
    # the forge's merge button, as git does it: Bob merges the branch into main
    work = bob.root / "forge"
    env = bob.env()
    subprocess.run(["git", "clone", "-q", str(remote), str(work)], check=True, env=env)
    subprocess.run(["git", "-C", str(work), "merge", "-q", "--no-edit", "origin/skills/ann-1"], check=True, env=env)
    subprocess.run(["git", "-C", str(work), "push", "-q", "origin", "HEAD:main"], check=True, env=env)
    ann.sync()
    assert (ann.library / "working-in-sympy" / "SKILL.md").is_file()
    assert not (ann.library / "_candidates" / "working-in-sympy").exists()
    assert "approved by merging the branch skills/ann-1" in (ann.library / "working-in-sympy" / "SKILL.md").read_text()


def test_a_link_in_the_teams_history_is_a_plain_file_here(team: tuple[Person, Person, Path]) -> None:
    """A teammate's push is data: a link to ~/.bashrc in the remote checks out as a small file holding its text."""
    ann, bob, remote = team
    with_candidate(ann, as_name="x")
    ann.sync("--remote", str(remote))
    work = bob.root / "plain-clone"
    env = bob.env()
    subprocess.run(["git", "clone", "-q", "-b", "main", str(remote), str(work)], check=True, env=env)
    (work / "evil").mkdir()
    (work / "evil" / "SKILL.md").symlink_to(bob.root / ".gitconfig")
    subprocess.run(["git", "-C", str(work), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(work), "commit", "-qm", "a link"], check=True, env=env)
    subprocess.run(["git", "-C", str(work), "push", "-q", "origin", "HEAD:main"], check=True, env=env)
    ann.sync()
    planted = ann.library / "evil" / "SKILL.md"
    assert planted.exists() and not planted.is_symlink() and planted.read_text() == str(bob.root / ".gitconfig")


def test_a_decision_commits_its_own_skill_only(team: tuple[Person, Person, Path]) -> None:
    """A review decision is a commit of the skill decided (and the log); a run's candidates not synced yet wait
    for the next sync's own commit."""
    ann, _, remote = team
    with_candidate(ann)
    ann.sync("--remote", str(remote))
    with_candidate(ann, "working-in-flask")  # as a run writes it, after the sync
    ann.run("review", "approve", "working-in-sympy")
    files = subprocess.run(["git", "-C", str(ann.library), "show", "--name-only", "--format=%s", "HEAD"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert "working-in-sympy/SKILL.md" in files and not any("working-in-flask" in f for f in files), files
    assert ann.sync()["committed"] == 1  # the run's candidate, in a commit of its own
