"""Issue 23.7: what skillmill reads of a checkout is bounded, regular files only, and never through a link
out of it -- at every prompt (the hook reads ``.git/config``), in ``scan``, in staleness and in the
repository's identity. And what ``scan`` prints is redacted like what it writes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline import checkout
from pipeline.scan import stale
from pipeline.scan.reader import scan
from tests.conftest import ROOT

HOSTILE = ("/dev/zero", "fifo", "huge")


def make(folder: Path, relative: str, kind: str) -> Path:
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "/dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "huge":  # sparse: 3 GB that cost no disk
        with path.open("wb") as handle:
            handle.truncate(3 << 30)
    return path


def hook_rss(repo: Path) -> tuple[float, int]:
    """Seconds and peak RSS (KB) of one hook call whose working folder is ``repo``."""
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "cwd": str(repo), "session_id": "s",
                          "prompt": "the tests fail with ImportError in the parser module"})
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", "import resource, runpy, sys; sys.argv = ['skillmill', 'hook', "
                           "'claude-code', '--timeout', '5']; "
                           "import atexit; atexit.register(lambda: sys.stderr.write('maxrss=%d\\n' % "
                           "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)); runpy.run_module('pipeline', "
                           "run_name='__main__')"],
                          input=payload, capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    return time.monotonic() - started, int(done.stderr.rsplit("maxrss=", 1)[1].split()[0])


@pytest.mark.parametrize("kind", HOSTILE)
def test_the_hook_reads_a_hostile_git_config_in_bounded_time_and_memory(tmp_path: Path, kind: str) -> None:
    plain = tmp_path / "plain"
    (plain / ".git").mkdir(parents=True)
    (plain / ".git" / "config").write_text('[remote "origin"]\n\turl = https://github.com/a/b.git\n')
    base_s, base_kb = hook_rss(plain)  # the same hook on an ordinary checkout, in the same run
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    make(repo, ".git/config", kind)
    seconds, kb = hook_rss(repo)
    assert seconds < base_s + 3, "the hook waited on the file"
    assert kb < base_kb + 20_000, f"{kb} KB against {base_kb} KB"
    assert checkout.repo_of(repo) == "repo"  # no remote read: the folder's name, as for any checkout without one


def test_a_crafted_remote_url_costs_nothing(tmp_path: Path) -> None:
    """A 250 KB URL built to make a regular expression backtrack (it took the hook 2 minutes)."""
    repo = tmp_path / "redos"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text('[remote "origin"]\n\turl = a:b' + "/" * 250_000 + "c\n")
    from pipeline.ingest.identity import repo_slug

    started = time.monotonic()
    assert checkout.repo_of(repo) == "redos" and repo_slug("a:b" + "/" * 250_000 + "c") is None
    assert repo_slug("https://github.com/" + "a/" * 100_000) is None
    assert time.monotonic() - started < 1


def test_the_remote_of_a_checkout_anywhere_is_its_identity(tmp_path: Path) -> None:
    """A folder with .git is a checkout, under /tmp too; origin first, else the first remote."""
    repo = tmp_path / "some-folder"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text('[core]\n\tbare = false\n[remote "upstream"]\n\turl = git@github.com:a/b.git\n'
                                          '[remote "origin"]\n\turl = https://github.com/Aquaticat/Monochromatic.git\n')
    assert checkout.repo_of(repo / "deep" / "inside") == "Aquaticat/Monochromatic"
    (repo / ".git" / "config").write_text('[remote "fork"]\n\turl = ssh://git@gitlab.example/group/sub/proj\n')
    assert checkout.repo_of(repo) == "sub/proj"
    assert checkout.repo_of(tmp_path / "elsewhere") is None


def test_a_git_config_that_is_a_link_out_of_the_checkout_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.cfg"
    outside.write_text('[remote "origin"]\n\turl = https://github.com/victim/private.git\n')
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").symlink_to(outside)
    assert checkout.repo_of(repo) == "repo"


@pytest.mark.parametrize("kind", HOSTILE)
def test_scan_survives_hostile_manifests(tmp_path: Path, kind: str) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("pyproject.toml", "Makefile", "package.json", "README.md"):
        make(repo, name, kind)
    (repo / "tox.ini").write_text("[testenv]\ncommands = pytest {posargs}\n")
    started = time.monotonic()
    found = scan(repo)  # a huge regular file is read up to the cap; a device or a FIFO not at all
    assert time.monotonic() - started < 10 and "tox.ini" in found.files_read
    if kind != "huge":
        assert not {"pyproject.toml", "Makefile", "package.json"} & set(found.files_read)


def test_scan_follows_no_link_out_of_the_checkout_and_prints_nothing_secret(tmp_path: Path) -> None:
    secret = tmp_path / "private-notes.md"
    secret.write_text("Run `make deploy-prod` with the key in ~/.ssh/prod\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "CONTRIBUTING.md").symlink_to(secret)
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    (repo / "README.md").write_text(f"## Testing\n\nRun `GITHUB_TOKEN={token} pytest tests`\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "guide.md").symlink_to(secret)
    found = scan(repo)
    assert "CONTRIBUTING.md" not in found.files_read
    done = subprocess.run([sys.executable, "-m", "pipeline", "scan", str(repo), "--json", "--dry-run"],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "deploy-prod" not in done.stdout and token not in done.stdout and token not in done.stderr
    plain = subprocess.run([sys.executable, "-m", "pipeline", "scan", str(repo), "--dry-run"], capture_output=True,
                           text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert token not in plain.stdout and "deploy-prod" not in plain.stdout


def test_staleness_reads_nothing_through_a_link_out_of_the_checkout(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "scripts").mkdir(parents=True)
    (outside / "scripts" / "lint.sh").write_text("")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "scripts").symlink_to(outside / "scripts")
    make(repo, "Makefile", "fifo")
    view = stale.Checkout(repo)
    assert not view.exists("scripts/lint.sh")  # it is not the checkout's
    started = time.monotonic()
    assert view.targets("make") is None
    assert time.monotonic() - started < 2


def test_scan_lists_no_folder_reached_through_a_link_and_survives_an_alias_bomb(tmp_path: Path) -> None:
    secret = tmp_path / "secretdir"
    (secret / "internal_billing_pkg").mkdir(parents=True)
    (secret / "internal_billing_pkg" / "__init__.py").write_text("")
    repo = tmp_path / "repo"
    (repo / "lib" / "real_pkg").mkdir(parents=True)
    (repo / "lib" / "real_pkg" / "__init__.py").write_text("")
    (repo / "src").symlink_to(secret)
    (repo / "lib" / "linked_pkg").symlink_to(secret / "internal_billing_pkg")
    workflow = repo / ".github" / "workflows" / "ci.yml"
    workflow.parent.mkdir(parents=True)
    lines = ["a0: &a0 {x: 1}", *[f"a{n}: &a{n} [*a{n - 1}, *a{n - 1}]" for n in range(1, 30)],
             "jobs: {t: {steps: [*a29]}}"]
    workflow.write_text("\n".join(lines) + "\n")
    started = time.monotonic()
    found = scan(repo)
    assert time.monotonic() - started < 10
    shown = [p.path for p in found.layout]
    assert "lib/real_pkg/" in shown and not any("billing" in p or p.startswith("src") for p in shown), shown


#: Lines that made a backtracking pattern take time quadratic in their length (the second attack: a 100 KB line of
#: a Makefile held the hook 36 s, a 60 KB justfile line held scan 72 s; at the 512 KB cap, half an hour).
LONG_LINES = {"spaces": "a" + " " * 400_000, "words": "a" * 400_000, "separators": "a" + " " * 200_000 + ";" + "b",
              "spaced words": "a " * 200_000, "tabs": "x\t" * 200_000}


@pytest.mark.parametrize("line", sorted(LONG_LINES))
def test_a_long_line_in_a_makefile_or_justfile_costs_linear_time(tmp_path: Path, line: str) -> None:
    from pipeline.scan.targets import just_recipe, make_targets, split_commands

    text = LONG_LINES[line]
    started = time.process_time()
    make_targets(text), just_recipe(text), split_commands(text)
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("Makefile", "justfile"):
        (repo / name).write_text(f"test:\n\tpytest\n{text}\n")
    found = scan(repo)
    view = stale.Checkout(repo)
    assert view.targets("make") == {"test"} and view.targets("just") == {"test"}
    assert found.targets.get("make") == ["test"] and found.targets.get("just") == ["test"]
    assert time.process_time() - started < 10  # a quadratic reading takes minutes here


@pytest.mark.parametrize("line, targets, recipe", [
    ("build test: deps", ["build", "test"], "build"), ("X := 1", [], None), ("\tpytest -q", [], None),
    ("# test: x", [], None), ("x = a:b", [], None), ("test $(OBJ): x", ["test"], "test"),
    ("@lint *ARGS: build", [], "lint"), ("    indented: x", [], None), (".PHONY: test", [], None),
    ("check:: more", ["check"], "check"),
])
def test_rule_lines_read_as_make_and_just_read_them(line: str, targets: list[str], recipe: str | None) -> None:
    from pipeline.scan.targets import just_recipe, make_targets

    assert make_targets(line) == targets and just_recipe(line) == recipe
