"""``skillmill scan`` on real repositories (source distributions from PyPI, and this checkout), and staleness.

The sdists are fetched once with ``pip download --no-deps --no-binary :all:`` into ``build/sdists``
(gitignored, or ``$SKILLMILL_SDISTS``) and unpacked into the test's temporary folder. Without PyPI the
tests fail and say so: they never pass on nothing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.distill.facts import RepoFact
from pipeline.library import Library
from pipeline.library.markdown import render
from pipeline.library.model import Evidence, Item, Skill
from pipeline.scan import marks, stale
from pipeline.scan.manual import carry, items, manual
from pipeline.scan.reader import expand, normal, scan
from tests.conftest import ROOT

#: Pinned versions verified to ship these files: attrs (tox.ini, .pre-commit-config.yaml, CI workflows),
#: coverage (Makefile, tox.ini, CI workflows), sphinx-book-theme (package.json scripts, tox.ini), black (tox.ini,
#: a test workflow with a matrix expression beside a release one, docs/contributing/), flask (CONTRIBUTING.rst,
#: tox.ini, tools configured in pyproject.toml), tqdm (a tox env that runs pytest twice: a notebook, then the suite),
#: virtualenv (a {posargs:...} default with braces inside), rich (its sdist states no command at all).
SDISTS = {"attrs": "25.3.0", "coverage": "7.9.1", "sphinx-book-theme": "1.1.4", "black": "24.4.2", "flask": "3.0.3",
          "tqdm": "4.66.4", "virtualenv": "20.26.2", "rich": "13.7.1"}
CACHE = Path(os.environ.get("SKILLMILL_SDISTS") or ROOT / "build" / "sdists")


def sdist(name: str, into: Path) -> Path:
    version = SDISTS[name]
    stem = f"{name.replace('-', '_')}-{version}"
    archive = CACHE / f"{stem}.tar.gz"
    if not archive.is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                               "--quiet", "-d", str(CACHE), f"{name}=={version}"], capture_output=True, text=True,
                              timeout=300)
        if proc.returncode != 0 or not archive.is_file():
            pytest.fail(f"could not fetch the {name}=={version} sdist from PyPI (needed once, cached in {CACHE}):\n"
                        f"{proc.stderr[-1500:]}")
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / stem


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def ci_runs(root: Path) -> dict[str, list[str]]:
    """Every ``run:`` line of every workflow, read independently of the scanner (yaml.safe_load)."""
    out: dict[str, list[str]] = {}

    def walk(node: object, into: list[str]) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "run" and isinstance(value, str):
                    into += [" ".join(p.split()) for p in re.split(r"\n(?=\S)|&&", value.replace(">\n", " "))]
                    into.append(" ".join(value.split()))
                else:
                    walk(value, into)
        elif isinstance(node, list):
            for value in node:
                walk(value, into)
    for file in sorted((root / ".github" / "workflows").glob("*.yml")):
        runs: list[str] = []
        walk(yaml.safe_load(file.read_text()), runs)
        out[f".github/workflows/{file.name}"] = runs
    return out


def command_of(skill: Skill, label: str) -> Item:
    found = [i for i in skill.procedure if i.text.startswith(label + ":")]
    assert found, f"no {label} item in {[i.text for i in skill.procedure]}"
    return found[0]


def matrix_form(run: str) -> re.Pattern:
    """A CI line with its expressions (``$TOX_PYTHON``, ``${{ matrix.x }}``, ``$(...)``) as wildcards and its CI-only
    ``--installpkg`` left out: what a runnable form of it must match."""
    marked = re.sub(r"\$\{\{.*?\}\}|\$\(.*?\)|\$\w+", "\0", re.sub(r"\s--installpkg\s+\S+", "", run))
    return re.compile(r"\S+".join(re.escape(part) for part in marked.strip().split("\0")))


def assert_one_test_template(root: Path, skill: Skill) -> str:
    """pytest is the runner: a template that runs one test, in a test file the checkout has -- through tox
    (``tox -e ENV -- FILE::<test_name>``) when the tox line that runs pytest passes ``{posargs}`` on, bare otherwise."""
    item = command_of(skill, "One test (template)")
    one = item.text.split("`")[1]
    form = re.fullmatch(r"(?:pytest|(?:python -m )?tox -e \S+ --) (\S+\.py)::<test_name>", one)
    assert form, one
    assert (root / form.group(1)).is_file()
    if "tox" in one:  # the cited tox.ini line hands the path to pytest
        line = (root / "tox.ini").read_text().split("\n")[item.evidence[0].steps[0] - 1]
        assert "pytest" in line and "{posargs" in line, line
    return one


def stated_nowhere(skill: Skill, *commands: str) -> None:
    """No command a file's mere presence implies (any agent knows them)."""
    text = " ".join(i.text for i in skill.procedure)
    for command in commands:
        assert f"`{command}" not in text, (command, text)


def assert_matches_ci(root: Path, item: Item) -> None:
    """The item's command is what the workflow it cites runs (or one env of its matrix), at the line it cites."""
    command = item.text.split("`")[1]
    runs = ci_runs(root)
    cited = [e for e in item.evidence if e.trajectory.startswith(".github/workflows/")]
    assert cited, f"{item.text} cites no CI workflow"
    for evidence in cited:
        assert any(command in run or (at := re.search(rf"(?<![\w=-]){command.split()[0]}(?![\w-])", run))
                   and matrix_form(run[at.start():]).fullmatch(command) for run in runs[evidence.trajectory]), \
            (command, runs[evidence.trajectory])
        lines = (root / evidence.trajectory).read_text().split("\n")
        first = command.split()[0]
        assert all(first in lines[n - 1] for n in evidence.steps), [lines[n - 1] for n in evidence.steps]


# -- real repositories -----------------------------------------------------------------------
def test_attrs_manual_runs_tests_and_type_checks_as_its_ci_does(tmp_path: Path) -> None:
    root = sdist("attrs", tmp_path)
    found = scan(root)
    skill = manual(found)
    assert found.repo == "attrs" and skill.name == "working-in-attrs" and found.seconds < 5
    for label in ("Tests", "Type-check"):
        assert_matches_ci(root, command_of(skill, label))
    # CI writes `tox run -e $TOX_PYTHON-tests`: the manual gives an env of that matrix tox.ini defines
    assert command_of(skill, "Tests").text.split("`")[1] == "tox run -e py313-tests"
    assert command_of(skill, "Type-check").text.split("`")[1] == "tox run -e py313-mypy"
    assert "it runs `coverage run -m pytest" in command_of(skill, "Tests").text
    assert_one_test_template(root, skill)
    assert "tox" in found.targets and "pre-commit" in found.targets["tox"]
    lint = [f.command for f in found.commands("lint")]
    assert lint[0] == "tox -e pre-commit" and lint[-1].startswith("uvx zizmor")  # zizmor.yml audits workflows
    assert ("pre-commit", "lint") in [(f.command, f.purpose) for f in found.configured()]
    assert "pre-commit run --all-files" not in lint  # .pre-commit-config.yaml configures hooks, states no command


def test_coverage_manual_matches_its_makefile_and_ci(tmp_path: Path) -> None:
    root = sdist("coverage", tmp_path)
    found = scan(root)
    skill = manual(found)
    tests, lint, types = (command_of(skill, label) for label in ("Tests", "Lint", "Type-check"))
    assert tests.text.split("`")[1] == "python -m tox"
    assert lint.text.split("`")[1] == "python -m tox -e lint"
    assert types.text.split("`")[1] == "python -m tox -e mypy"
    for item in (tests, lint, types):
        assert_matches_ci(root, item)
    # every command CI runs for these purposes is one the scan found
    ci = {normal(" ".join(r.split())) for runs in ci_runs(root).values() for r in runs}
    for wanted in ("tox -e lint", "tox -e mypy", "tox -e doc"):
        assert wanted in ci and any(normal(f.command) == wanted for f in found.findings)
    # the Makefile's lint target is cited at its line
    make_lint = [f for f in found.findings if f.command == "make lint" and f.origin == "make"][0]
    assert (root / "Makefile").read_text().split("\n")[make_lint.line - 1].startswith("lint:")
    assert {"lint", "clean", "install"} <= set(found.targets["make"])


def test_sphinx_book_theme_npm_scripts(tmp_path: Path) -> None:
    root = sdist("sphinx-book-theme", tmp_path)
    found = scan(root)
    build = [f for f in found.findings if f.command == "npm run build"]
    assert build and build[0].purpose == "build"
    assert '"build"' in (root / "package.json").read_text().split("\n")[build[0].line - 1]
    assert found.targets["npm"] == ["build"]
    assert not found.commands("install")  # package.json and its lock file state no `npm ci`
    assert "npm run build" in [f.command for f in found.commands("build")]
    # its contributing docs say how: `tox -e compile` builds the assets (and wraps the npm script)
    assert command_of(manual(found), "Build").text.split("`")[1] == "tox -e compile"


def test_black_tests_come_from_its_test_workflow_and_tox_not_its_release_workflow(tmp_path: Path) -> None:
    root = sdist("black", tmp_path)
    found = scan(root)
    skill = manual(found)
    tests = command_of(skill, "Tests")
    cited = {e.trajectory: e.steps for e in tests.evidence}
    # the docs' `tox -e py`, with what the main test workflow runs (a matrix: `tox -e ci-py$(...)`, test.yml:53)
    assert tests.text.split("`")[1] == "tox -e py" and "CI runs `tox -e ci-py311`" in tests.text
    assert ".github/workflows/release_tests.yml" not in cited and "release_tests" not in tests.text
    workflow = (root / ".github/workflows/test.yml").read_text().split("\n")
    assert all("tox -e ci-py$(" in workflow[n - 1] for n in cited[".github/workflows/test.yml"])
    assert "ci-py311" in [e for p in found.targets["tox"] for e in expand(p)]
    # and what tox runs underneath, at its tox.ini line, so an agent can run pytest directly
    assert "it runs `pytest tests --run-optional no_jupyter`" in tests.text
    assert all("pytest tests" in (root / "tox.ini").read_text().split("\n")[n - 1] for n in cited["tox.ini"])
    assert_one_test_template(root, skill)
    stated_nowhere(skill, "python -m build", "pip install -e .`", "docker build", "mypy")
    setup = [i for i in skill.procedure if i.text.startswith("Set up:")]
    assert len(setup) == 1 and setup[0].text.split("`")[1] == "pip install -r test_requirements.txt && pip install -e .[d]"
    assert "mypy (type-check)" in command_of(skill, "Configured, no command stated").text
    assert short(skill)
    paths = [p.path for p in found.layout]
    assert "src/" not in paths and {"src/black/", "tests/"} <= set(paths) and "docs/" not in paths


def test_flask_states_what_its_contributing_guide_says_and_configured_tools_as_configured(tmp_path: Path) -> None:
    root = sdist("flask", tmp_path)
    skill = manual(scan(root))
    contributing = (root / "CONTRIBUTING.rst").read_text().split("\n")
    setup = command_of(skill, "Set up")
    assert setup.text.split("`")[1] == "pip install -r requirements/dev.txt && pip install -e ."
    assert setup.evidence[0].trajectory == "CONTRIBUTING.rst" and "requirements/dev.txt" in contributing[
        setup.evidence[0].steps[0] - 1]
    assert "it runs `pytest -v --tb=short`" in command_of(skill, "Tests").text
    assert_one_test_template(root, skill)
    assert command_of(skill, "Docs").text.split("`")[1] == "cd docs && make html"
    stated_nowhere(skill, "python -m build", "ruff check .", "pip install -e .`")
    assert not [i for i in skill.procedure if i.text.startswith(("Build:", "Lint:"))]
    configured = command_of(skill, "Configured, no command stated")
    line = configured.evidence[0].steps[0]
    assert "ruff (lint)" in configured.text and (root / "pyproject.toml").read_text().split("\n")[line - 1] == \
        "[tool.ruff]"
    assert short(skill)


def short(skill: Skill) -> bool:
    """Worth loading on every task: the scanned manual's body stays under ~300 tokens (4 characters a token)."""
    return len(render(skill).split("\n---\n", 1)[1]) / 4 < 300


def test_the_runner_under_tox_is_the_suite_with_its_defaults_filled(tmp_path: Path) -> None:
    """Read by a person against the checkouts: tqdm's tests line showed its notebook run, virtualenv's an
    unfilled ``{posargs:...}``."""
    tqdm = manual(scan(sdist("tqdm", tmp_path)))
    tests = command_of(tqdm, "Tests").text
    assert "it runs `pytest --cov=tqdm" in tests and ".ipynb" not in tests and '-k "not perf"' in tests
    assert command_of(tqdm, "Build").text.split("`")[1] == "make build"  # not install_build: it installs
    assert command_of(tqdm, "Run").text.split("`")[1] == "make run"  # not `docker run` of the published image
    virtualenv = manual(scan(sdist("virtualenv", tmp_path)))
    assert assert_one_test_template(tmp_path / "virtualenv-20.26.2", virtualenv).startswith("tox -e py -- tests/")
    tests = command_of(virtualenv, "Tests").text
    assert "it runs `coverage run -m pytest " in tests and "{" not in tests and " tests --int`" in tests
    assert re.search(r'--junitxml "\.tox/junit\.py\d+\.xml"', tests), tests  # {envname} is the env's name
    assert not [i for i in virtualenv.procedure if i.text.startswith("Run:")]  # `virtualenv` runs virtualenv


def test_a_checkout_that_states_no_command_gets_no_manual(tmp_path: Path) -> None:
    """rich's sdist has tools configured in pyproject.toml and folders, nothing run: no manual, said so."""
    root = sdist("rich", tmp_path)
    lib = tmp_path / "lib"
    code, out = cli("scan", str(root), "--library", str(lib))
    assert code == 0 and "No manual written for rich" in out, out
    assert not list(lib.rglob("SKILL.md"))
    code, out = cli("scan", str(root), "--library", str(lib), "--json")
    assert json.loads(out)["result"] == "nothing"


def test_this_repository() -> None:
    found = scan(ROOT)
    skill = manual(found)
    assert command_of(skill, "Tests").text.split("`")[1] == "make test"
    assert command_of(skill, "Lint").text.split("`")[1] == "make lint"
    cited = {e.trajectory for e in command_of(skill, "Tests").evidence}
    assert {"README.md", "Makefile"} <= cited
    assert any(p.path == "pipeline/" for p in found.layout) and found.seconds < 5
    assert len(found.files_read) <= 300


def test_bounded_and_ignores_vendored_trees(tmp_path: Path) -> None:
    (tmp_path / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / "node_modules" / "x" / "package.json").write_text('{"scripts": {"test": "jest"}}')
    (tmp_path / "Makefile").write_text("test:\n\tpytest\n")
    (tmp_path / ".gitignore").write_text("generated/\n")
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "__init__.py").write_text("")
    found = scan(tmp_path)
    assert [f.command for f in found.findings] == ["make test"]
    assert all("generated" not in p.path for p in found.layout)
    assert scan(tmp_path, max_files=0).truncated


# -- the CLI ---------------------------------------------------------------------------------
def test_cli_writes_a_candidate_then_proposes_changes_to_the_approved_manual(tmp_path: Path) -> None:
    root = sdist("sphinx-book-theme", tmp_path)
    code, out = cli("scan", str(root))
    assert code == 0 and "Manual: working-in-sphinx-book-theme (new candidate)" in out
    assert "tox -e compile" in out and "tox.ini:24]" in out
    lib = Library(Path(os.environ["SKILLMILL_HOME"]) / "skills")
    stored = lib.get("working-in-sphinx-book-theme")
    assert stored is not None and stored.skill.status == "candidate"
    assert "tox.ini:24 -->" in stored.file.read_text()
    assert "(unchanged)" in cli("scan", str(root))[1]
    code, out = cli("scan", "--json", str(root))
    data = json.loads(out)
    assert data["result"] == "unchanged" and "package.json:5" in [c["cite"] for c in data["commands"]["build"]]
    assert cli("review", "approve", "working-in-sphinx-book-theme", "--by", "tester")[0] == 0
    scripts = json.loads((root / "package.json").read_text())
    scripts["scripts"]["typecheck"] = "tsc --noEmit"
    (root / "package.json").write_text(json.dumps(scripts, indent=2))
    code, out = cli("scan", str(root))
    assert "proposed change to the approved manual" in out
    assert lib.get("working-in-sphinx-book-theme").skill.status == "approved"  # untouched until a person decides
    assert "npm run typecheck" in lib.proposal("working-in-sphinx-book-theme").file.read_text()


def test_cli_errors_are_clear(tmp_path: Path) -> None:
    file = tmp_path / "file.txt"
    file.write_text("x")
    result = CliRunner().invoke(main, ["scan", str(file)])
    assert result.exit_code == 2 and "not a folder" in result.output
    result = CliRunner().invoke(main, ["scan", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "no such folder" in result.output
    assert "Read a checkout's self-description" in cli("scan", "--help")[1]


# -- staleness -------------------------------------------------------------------------------
def approved(lib: Library, name: str, repo: str, text: str, command: str | None = None) -> None:
    skill = Skill(name=name, description=f"Use when building the {repo} theme assets: {text}", repo=repo,
                  status="approved", kind="procedure", title=name,
                  procedure=[Item(text=text, command=command, evidence=[Evidence(trajectory="0123456789abcdef",
                                                                                 steps=[3])])])
    lib.save(skill)


def test_removed_npm_script_and_deleted_file_make_a_skill_stale_at_the_next_hook(tmp_path: Path) -> None:
    from pipeline.agents.hook import respond
    from pipeline.recall import RecallIndex

    root = sdist("sphinx-book-theme", tmp_path)
    lib = Library(Path(os.environ["SKILLMILL_HOME"]) / "skills")
    approved(lib, "build-theme-assets", "executablebooks/sphinx-book-theme",
             "Rebuild the theme assets with webpack: `npm run build` reads `webpack.config.js`.",
             "npm run build")
    approved(lib, "theme-assets-compile", "executablebooks/sphinx-book-theme",
             "Rebuild the theme assets with webpack through tox: `tox -e compile` (webpack behind it).",
             "tox -e compile")
    assert cli("index", "--library", str(lib.root))[0] == 0
    with RecallIndex() as index:
        before = [h.name for h in index.search("rebuild theme assets webpack npm run build", limit=5)]
    assert before[0] == "build-theme-assets"

    (root / "webpack.config.js").unlink()
    data = json.loads((root / "package.json").read_text())
    del data["scripts"]["build"]
    (root / "package.json").write_text(json.dumps(data))
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text('[remote "origin"]\n\turl = https://github.com/executablebooks/'
                                          'sphinx-book-theme.git\n')
    payload = {"hook_event_name": "UserPromptSubmit", "cwd": str(root / "src"), "session_id": "s1",
               "prompt": "rebuild theme assets webpack npm run build"}
    answer = respond(payload, "claude-code")
    mark = marks.load(lib.root)["build-theme-assets"]
    texts = " ".join(r["text"] for r in mark["reasons"])
    assert "`npm run build`: no script `build` in package.json" in texts
    assert "`webpack.config.js` no longer exists" in texts and mark["by"] == "hook"
    assert "theme-assets-compile" not in marks.load(lib.root)
    context = json.loads(answer)["hookSpecificOutput"]["additionalContext"] if answer else ""
    assert "build-theme-assets" not in context  # never pushed
    with RecallIndex() as index:
        after = [h.name for h in index.search("rebuild theme assets webpack npm run build", limit=5)]
    assert after.index("build-theme-assets") > after.index("theme-assets-compile")  # ranked down, still there

    code, out = cli("review", "list")
    assert "STALE" in out.split("\n")[0] and "no script `build` in package.json" in out
    listed = json.loads(cli("review", "list", "--json")[1])
    assert listed[0]["name"] == "build-theme-assets" and listed[0]["stale"]
    assert lib.get("build-theme-assets").skill.status == "approved"  # nothing changed by itself

    data["scripts"]["build"] = "webpack"  # the script is back, the file too: no longer stale
    (root / "package.json").write_text(json.dumps(data))
    (root / "webpack.config.js").write_text("module.exports = {}\n")
    stale.refresh(lib.root, root, "sphinx-book-theme", by="scan")
    assert "build-theme-assets" not in marks.load(lib.root)


def test_a_run_scans_the_checkouts_of_its_sessions_and_marks_what_sessions_contradict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from pipeline import stages
    from pipeline.distill import tables as distill_tables
    from pipeline.index.state import StateDB
    from pipeline.summary import RunSummary

    checkout = tmp_path / "widgets"
    checkout.mkdir()
    (checkout / "Makefile").write_text("test:\n\tpytest\n")
    (checkout / "scripts").mkdir()
    lib = Library(tmp_path / "lib")
    approved(lib, "widgets-lint", "acme/widgets", "Lint with `make lint` then `scripts/check.sh`.", "make lint")
    approved(lib, "widgets-tests", "acme/widgets", "Run the tests with `bin/test <tests>`.", "bin/test tests/x.py")
    fact = RepoFact(trajectory="fedcba9876543210", repo="acme/widgets", kind="replaced", template="make test",
                    command="make test", text="bin/test <tests>", symptom="bash: bin/test: No such file or directory",
                    when="2026-11-30", steps=[4, 6])
    summary = RunSummary(run_id="r", library=str(lib.root))
    with StateDB() as state:
        state.con.execute("SELECT 1")
        original = distill_tables.facts
        monkeypatch.setattr(distill_tables, "facts", lambda db, repo: [fact] if repo else original(db, repo))
        stages.scan_checkouts(state, lib, [SimpleNamespace(cwd=str(checkout), repo="acme/widgets")], summary)
    found = marks.load(lib.root)
    lint = " ".join(r["text"] for r in found["widgets-lint"]["reasons"])
    assert "`make lint`: no target `lint` in the Makefile" in lint and "`scripts/check.sh` no longer exists" in lint
    tests = found["widgets-tests"]["reasons"]
    assert any(r["kind"] == "session" and "fedcba9876543210" in r["text"] and "`make test` ran instead" in r["text"]
               for r in tests)
    assert "working-in-widgets" in summary.written  # the checkout's manual, written by the same run
    text = lib.get("working-in-widgets").file.read_text()
    assert "Tests: `make test` (from the Makefile; confirmed by 1 session)." not in text  # replaced facts say "ran instead"


def test_sessions_confirm_or_contradict_scanned_items(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text("test:\n\tpytest\nlint:\n\truff check .\n")
    base = {"repo": "acme/w", "when": "2026-11-01", "steps": [2]}
    facts = [RepoFact(trajectory="a" * 16, kind="test", template="make test", command="make test", **base),
             RepoFact(trajectory="b" * 16, kind="lint", template="make lint", command="make lint", ok=False,
                      ran=False, symptom="make: *** No rule to make target 'lint'", **base)]
    found = scan(tmp_path)
    texts = {i.text.split(":")[0]: i for i in items(found, facts)}
    assert "confirmed by 1 session" in texts["Tests"].text
    assert {e.trajectory for e in texts["Tests"].evidence} == {"Makefile", "a" * 16}
    assert "contradicted: it could not run in 1 session" in texts["Lint"].text


def test_a_session_rebuild_of_the_manual_keeps_the_scanned_items(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text("test:\n\tpytest\n")
    (tmp_path / "CLAUDE.md").write_text("Run `make test` before committing.\n")
    scanned = manual(scan(tmp_path))
    session = Item(text="Tests: `bin/test <tests>` (2 sessions).", evidence=[Evidence(trajectory="c" * 16,
                                                                                     steps=[1])])
    draft = scanned.model_copy(update={"procedure": [session], "notes": "## Where things are\n- `src/` (code)"})
    merged = carry(draft, scanned)
    assert merged.procedure[0] == session and any("make test" in i.text for i in merged.procedure[1:])
    assert "## Where things are" in merged.notes and "CLAUDE.md" in merged.notes
    rescanned = manual(scan(tmp_path), merged)
    assert rescanned.procedure[0] == session and rescanned.notes.count("## Instruction files") == 1


def test_scan_is_registered_and_documented() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "`scan [PATH]" in readme and "[scan]" in readme
