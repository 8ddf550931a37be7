"""Which repository a session worked in (pipeline.ingest.identity), on the real corpus files."""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

from pipeline.ingest import ingest_file, iter_files
from pipeline.ingest.identity import GENERIC, Identity, Rank, folder_name, manifest_name, usable
from pipeline.trajectory import Trajectory

CODEX = "codex/codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
CODEX_EXEC = "codex/codemie-code/rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl"
AIDER = "aider/aider-repo/tests_fixtures_chat-history.md"
WINDOWS = "aider/Aquaticat-Monochromatic/.aider.chat.history.md"


@cache
def _read(corpus: Path, name: str) -> list[Trajectory]:
    report, trajectories = ingest_file(corpus / name)
    assert report.status == "ok", report.errors
    return trajectories


Reader = Callable[[str], list[Trajectory]]


@pytest.fixture
def read(corpus: Path) -> Reader:
    """Trajectories of a corpus file, read once for all the tests."""
    return lambda name: _read(corpus, name)


# -- (a) a git remote the session recorded ---------------------------------------------------
def test_codex_names_the_repository_by_its_recorded_remote(read: Reader) -> None:
    for name in (CODEX, CODEX_EXEC):
        [t] = read(name)
        assert t.repo == "codemie-ai/codemie-code"  # session_meta.git.repository_url


def test_sessions_of_one_repository_pool_across_agents(read: Reader) -> None:
    """Codex knows owner/name, Claude Code and Gemini CLI only the folder: one manual, by name."""
    codex = read(CODEX)[0].repo
    claude = read("claude_code/codemie-code/incremental-subagents/turn-2.jsonl")
    gemini = read("gemini_cli/codemie-code/chats/session-2026-01-16T11-01-file-ops-37b7abef.json")
    names = {t.repo for t in [*claude, *gemini]}
    assert names == {"codemie-code"}
    assert {n.rsplit("/", 1)[-1].lower() for n in names | {codex}} == {"codemie-code"}  # consolidate_repos' key


def test_a_clone_the_person_started_aider_in_names_the_repository(read: Reader) -> None:
    # > $ git clone https://github.com/gabrielecirulli/2048 / > $ cd 2048 / > $ aider
    requests = read("aider/aider-website-examples/2048-game.md")
    assert {t.repo for t in requests} == {"gabrielecirulli/2048"}


def test_real_git_output_names_the_remote_and_the_root(tmp_path: Path) -> None:
    """What ``git remote -v``, ``git config`` and ``git rev-parse`` really print, read as evidence."""
    root = tmp_path / "checkout-of-name"
    (root / "pkg" / "sub").mkdir(parents=True)

    def git(*args: str, cwd: Path = root) -> str:
        return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    git("remote", "add", "upstream", "https://github.com/upstream-owner/name.git")
    git("remote", "add", "origin", "git@github.com:owner/name.git")
    remote = Identity()
    remote.shell("git remote -v", git("remote", "-v"), str(root))
    assert remote.repo == "owner/name"  # origin, not upstream
    config = Identity()
    config.shell("git config --get remote.upstream.url", git("config", "--get", "remote.upstream.url"), str(root))
    assert config.repo == "upstream-owner/name"
    elsewhere = Identity()
    elsewhere.shell("cd ../other && git remote -v", git("remote", "-v"), str(root))
    assert elsewhere.repo is None  # another checkout's remote says nothing about this one
    sub = root / "pkg" / "sub"
    toplevel = git("rev-parse", "--show-toplevel", cwd=sub)
    temporary = Identity()
    temporary.shell("git rev-parse --show-toplevel", toplevel, str(sub))
    assert temporary.repo is None  # pytest's tmp_path is in /tmp: a temporary checkout has no name
    top = Identity()  # the same output from a checkout in a home folder
    home = "/home/dev"
    top.shell("git rev-parse --show-toplevel", toplevel.replace(str(tmp_path), home), str(sub).replace(str(tmp_path), home))
    top.folder(f"{home}/checkout-of-name/pkg/sub")
    assert top.found[Rank.GIT_ROOT] == "checkout-of-name" and top.repo == "checkout-of-name"


def test_only_a_clone_the_session_works_in_is_its_checkout(read: Reader) -> None:
    here = Identity()
    here.shell("git clone https://github.com/owner/tool.git .", "Cloning into '.'...", "/home/dev/tool")
    assert here.repo == "owner/tool"
    named = Identity()
    named.shell("git clone git@github.com:owner/tool.git", "", "/home/dev/tool")
    assert named.repo == "owner/tool"
    dependency = Identity()
    dependency.shell("git clone https://github.com/anntzer/mplcursors && cd mplcursors && pip install -e .", "",
                     "/testbed")
    assert dependency.repo is None
    # sphinx-9711's issue text clones mplcursors to reproduce: the instance names the repository
    [t] = read("mini_swe_agent/swebench_verified_gemini-3-pro/resolved/sphinx-doc__sphinx-9711.traj.json")
    assert "$ git clone https://github.com/anntzer/mplcursors" in t.task and t.repo == "sphinx-doc/sphinx"


# -- (b) SWE-bench instances -----------------------------------------------------------------
@pytest.mark.parametrize(("name", "repo"), [
    ("mini_swe_agent/swebench_verified_gemini-3-pro/resolved/django__django-16255.traj.json", "django/django"),
    ("swe_agent/tests_test_data/gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1/"
     "pydicom__pydicom-1458.traj", "pydicom/pydicom"),
])
def test_swe_bench_instances_name_the_repository_not_the_harness_folder(read: Reader, name: str, repo: str) -> None:
    [t] = read(name)
    assert t.repo == repo
    assert folder_name("/testbed") is None and folder_name("/workspace") is None


def test_openhands_instances(read: Reader) -> None:
    assert {t.repo for t in read("openhands/eval_output/multi_swe_bench_output.jsonl")} == {"ponylang/ponyc"}


# -- (c) the git root aider shows ------------------------------------------------------------
def by_launch(trajectories: list[Trajectory]) -> dict[str, list[Trajectory]]:
    grouped: dict[str, list[Trajectory]] = {}
    for t in trajectories:
        grouped.setdefault(t.parent_session_id, []).append(t)
    return grouped


def test_aider_in_a_subfolder_is_named_after_the_git_root(read: Reader) -> None:
    """``Cur working dir: /Users/gauthier/Projects/aider/aider/coders`` + ``Git repo: ../../.git``."""
    launches = by_launch(read(AIDER))
    subfolders = {t.cwd for requests in launches.values() for t in requests if t.cwd}
    assert "/Users/gauthier/Projects/aider/aider/coders" in subfolders
    assert "/Users/gauthier/Projects/aider/tests/basic" in subfolders
    assert {t.repo for requests in launches.values() for t in requests if t.cwd} == {"aider"}
    # the tests' temporary checkouts (.../T/tmp9ds7z693/subdir) name nothing: the history's repository
    temporary = [t for requests in launches.values() for t in requests if t.cwd and "/T/tmp" in t.cwd]
    assert temporary and {t.repo for t in temporary} == {"aider"}


def test_aider_on_windows_is_named_after_the_git_root(read: Reader) -> None:
    """``Cur working dir: C:\\...\\monochromatic2025MAY24-pnpmTest\\packages\\module\\es`` with
    ``Git repo: ..\\..\\..\\.git``: not ``es``."""
    requests = [t for launch in by_launch(read(WINDOWS)).values() for t in launch]
    assert all(t.cwd.endswith("\\packages\\module\\es") for t in requests if t.cwd and t.cwd.startswith("C:"))
    names = Counter(t.repo for t in requests)
    # launches that show no folder take it from the launch before; the first one has only the
    # history's own folder, named by whoever copied it
    assert names == {"monochromatic2025MAY24-pnpmTest": 24, "Aquaticat-Monochromatic": 1}
    assert requests[0].repo == "Aquaticat-Monochromatic"


# -- (d) the package the session shows -------------------------------------------------------
def test_aider_edits_in_a_package_folder_name_the_repository(read: Reader) -> None:
    """complex-change edits aider/main.py and aider/getinput.py, and shows no folder at all."""
    requests = read("aider/aider-website-examples/complex-change.md")
    assert not any(t.cwd for t in requests)
    assert {t.repo for t in requests} == {"aider"}
    # one edited file, or only layout folders, is not enough to call a folder the package
    for name in ("hello-world-flask", "census", "add-test"):  # app.py; new_file/getdata.py; tests/...
        assert {t.repo for t in read(f"aider/aider-website-examples/{name}.md")} == {None}


def test_package_manifests_as_the_tools_showed_them(read: Reader) -> None:
    demo = read("claude_code/claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl")
    shown = [t.result_of(c).text for t in demo for c in t.tool_calls()
             if c.tool == "Read" and c.paths[0].endswith("todo-app/package.json")]
    assert shown and {manifest_name("package.json", text) for text in shown} == {"todo-app"}  # "  2→  "name"..."
    [codex] = read(CODEX)
    [cat] = [codex.result_of(c).text for c in codex.tool_calls() if c.command == "cat package.json"]
    assert manifest_name("package.json", cat) == "@codemieai/code"
    # the registry name is not the repository's: "code" (unscoped) is a placeholder, no evidence
    identity = Identity()
    identity.read(codex.steps, codex.cwd)
    assert Rank.PACKAGE not in identity.found


def test_a_manifest_below_the_folder_names_a_package_inside_it_not_the_repository(read: Reader) -> None:
    """The Demo sessions read todo-app/package.json: todo-app is a package in the folder, not its name."""
    demo = [t for name in ("5c0375b4-57a5-4f26-b12d-d022ee4e51b7", "fe5e1c67-53e7-4862-81ae-d0e013e3270b",
                           "1af7fc5e-8455-4414-9ccd-011d40f70b2a")
            for t in read(f"claude_code/claude-code-viewer/{name}.jsonl")]
    assert {t.cwd.rsplit("/", 1)[0] for t in demo} <= {"/path/to", "/path/to/Demo", "/path/to/Demo/todo-app"}
    assert {t.repo for t in demo} == {None}


# -- (e) the folder's name, and the names that say nothing -----------------------------------
@pytest.mark.parametrize(("name", "cwd"), [
    ("claude_code/codemie-code/session-196820da.jsonl", "/Users/user/repo"),
    ("claude_code/codemie-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl", "/tmp/private"),
    ("codex/localpush_redacted/rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl",
     "/redacted/path/da0ba47443"),
    ("codex/synthetic_schema_coverage/codemie_turn-spawn-skill.jsonl", "/home/user/project"),
])
def test_placeholder_temporary_and_hashed_folders_give_no_repository(read: Reader, name: str, cwd: str) -> None:
    trajectories = read(name)
    assert {t.cwd for t in trajectories} == {cwd}
    assert {t.repo for t in trajectories} == {None}


def test_a_folder_with_a_name_names_the_repository(read: Reader) -> None:
    [t] = read("codex/codemie-code/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl")
    assert t.cwd == "/Users/Sample_User/naya" and t.repo == "naya"  # no git metadata: the folder


def test_the_rules_for_names() -> None:
    assert {"repo", "project", "tmp", "src", "app", "code", "workspace", "testbed", "demo"} <= GENERIC
    assert not usable("Demo") and not usable("da0ba47443") and not usable("tmp9ds7z693")
    assert usable("2048") and usable("codemie-code") and usable("aider") and usable("deadbeef")
    assert folder_name("/private/var/folders/49/kxrdwwbx0h9bchx99397477c0000gn/T/tmp3zo0ofsk/subdir") is None
    assert folder_name("C:\\Users\\user\\AppData\\Local\\Temp\\work\\mylib") is None
    assert folder_name("C:\\Users\\user\\Text\\Projects\\Aquaticat\\monochromatic2025MAY24-pnpmTest") == \
        "monochromatic2025MAY24-pnpmTest"


def test_no_trajectory_of_the_corpus_is_named_after_a_placeholder(corpus: Path) -> None:
    """The whole corpus: every repo value can tell one repository from another."""
    names: Counter[str | None] = Counter()
    for path in iter_files([corpus]):
        _, trajectories = ingest_file(path)
        names.update(t.repo for t in trajectories)
    for name in names:
        if name is not None:
            assert usable(name.rsplit("/", 1)[-1]), name
    assert not {"repo", "coders", "Demo", "basic", "es", "subdir", "tmp", "private", "project"} & set(names)
    assert names["aider"] > 900  # the aider repository's own history, launch after launch


def test_a_session_cut_short_is_read_without_error(read: Reader) -> None:
    """Evidence is read from built steps: a call whose result is not (yet) among them."""
    [t] = read(CODEX)
    identity = Identity()
    cut = next(c.index for c in t.tool_calls() if c.result_index is not None) + 1
    identity.read(t.steps[:cut], t.cwd)
    identity.folder(t.cwd)
    assert identity.found.get(Rank.FOLDER) == "codemie-code"
