"""The zero-LLM distiller on real trajectories: facts that are true, nothing that is noise (issue 13).

Each rule is tested on the real session that broke it before: the agent's tool-protocol errors,
advice from runs nobody verified, fixes paired with the wrong error, a test emptied to make a check
pass, scratch scripts, line-pinned ``sed``, sandbox paths, names from raw prompts, copies.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.distill import consolidate, distill
from pipeline.distill.abstraction import Abstractor
from pipeline.distill.analysis import analyze, check_key, template
from pipeline.distill.corrections import corrections
from pipeline.distill.lessons import generalize
from pipeline.ingest import ingest_file
from pipeline.library import markdown
from pipeline.trajectory.commands import Purpose, shell_purpose
from tests.conftest import SAMPLES
from tests.hostile import Session

SWEBENCH = "mini_swe_agent/swebench_verified_gemini-3-pro"
SITEMAPS = SAMPLES / "mini_swe_agent/django__django-16255.traj.json"


def trajectory(path: Path):
    return ingest_file(path)[1][0]


def trajectories(*paths: Path) -> list:
    return [t for path in paths for t in ingest_file(path)[1]]


def facts_of(*paths: Path) -> list:
    return [f for t in trajectories(*paths) for f in distill(t).facts]


def text_of(skill) -> str:
    return markdown.render(skill)


# -- what the manual holds -----------------------------------------------------------------
def test_the_django_manual_names_its_own_runner_with_a_scoped_example() -> None:
    facts = facts_of(*sorted((SAMPLES / "mini_swe_agent").glob("django__*.traj.json")))
    skill = consolidate("django/django", facts)
    assert skill is not None and skill.name == "working-in-django" and skill.kind == "repo"
    tests = skill.procedure[0]
    assert tests.text.startswith("Tests: `python3 tests/runtests.py <tests>`") and "3 sessions" in tests.text
    assert tests.command and tests.command.startswith(("python3 tests/runtests.py ", "./tests/runtests.py "))
    assert all(e.trajectory and e.steps for e in tests.evidence)
    assert "## Commands" in text_of(skill), "a manual names its sections for what they hold"


def test_sympy_says_pytest_does_not_run_there_and_what_to_run_instead(corpus: Path) -> None:
    files = sorted((corpus / SWEBENCH).glob("*/sympy__*.traj.json"))
    skill = consolidate("sympy/sympy", facts_of(*files))
    assert skill is not None
    line = skill.procedure[0].text
    assert line.startswith("Tests: `bin/test <tests>`")
    assert "Not `pytest <tests>`" in line and "command not found" in line


def test_an_environment_error_is_paired_with_the_change_that_got_the_same_command_past_it(corpus: Path) -> None:
    """matplotlib-21568: the pandas ValueError was fixed in code (the script's ``to_numpy()``), the
    ``dvipng`` RuntimeError by installing dvipng. The old distiller paired the first with the second."""
    t = trajectories(corpus / SWEBENCH / "unresolved/matplotlib__matplotlib-21568.traj.json")[0]
    fixes = {(f.failed.error or "")[:30]: f for f in analyze(t).fixes()}
    value_error = fixes["ValueError: Multi-dimensional "]
    assert value_error.kind == "code" and all(e.purpose is not Purpose.INSTALL for e in value_error.between)
    dvipng = fixes["RuntimeError: Failed to proces"]
    assert dvipng.kind == "environment" and "dvipng" in (dvipng.remedy[-1].command or "")
    skill = consolidate("matplotlib/matplotlib", distill(t).facts)
    assert skill is not None
    pitfall = skill.pitfalls[0]
    assert "dvipng" in pitfall.symptom and "apt-get install -y dvipng" in (pitfall.command or "")
    assert "Multi-dimensional" not in text_of(skill)


def test_gutting_the_failing_test_is_never_a_fix(corpus: Path) -> None:
    """claude-code-viewer: ``Cannot find module '@testing-library/react'`` "fixed" by deleting the import
    and commenting out the test's code."""
    found = trajectories(corpus / "claude_code/claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
    session = next(t for t in found if any("@testing-library/react" in s.text for s in t.steps))
    errors = [f.failed.error or "" for f in analyze(session).fixes()]
    assert not any("testing-library" in e for e in errors)
    assert not any("testing-library" in (f.symptom or "") for f in distill(session).facts)


def test_the_agents_tool_protocol_errors_are_never_lessons(corpus: Path) -> None:
    found = trajectories(corpus / "claude_code/claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
                         corpus / "openhands/runtime_replay_trajs" / "ponylang__ponyc-4595.json")
    refused = [s for t in found for s in t.steps if s.protocol_error]
    assert refused, "the corpus sessions hold harness refusals"
    for t in found:
        assert all(e.ok is None for e in analyze(t).events if e.protocol)
        for fact in distill(t).facts:
            blob = " ".join(filter(None, [fact.symptom, fact.text, fact.command]))
            assert not re.search(r"File has not been read|No replacement was performed|old_str|tool_use_error", blob)


def test_runs_nobody_verified_give_no_advice_about_approaches(corpus: Path) -> None:
    """The marshmallow-1867 demo replays fixed the bug (344 -> 345) without a recorded check."""
    replays = sorted((corpus / "swe_agent").glob("*/replay__marshmallow*/*.traj"))
    assert len(replays) >= 8
    for t in trajectories(*replays):
        assert t.outcome.status != "failed"
        result = distill(t)
        assert result.skills == []
        blob = " ".join(str(f.model_dump()) for f in result.facts)
        assert "did not resolve" not in blob and "different cause" not in blob


def test_commands_in_facts_are_the_projects_own_and_runnable_as_written(corpus: Path) -> None:
    """Scratch scripts (``reproduce_issue.py``), one-liners, temporary paths, line-pinned ``sed`` and
    sandbox paths never become commands; the SWE-bench harness's ``tox.ini`` edit is not a location."""
    files = sorted((corpus / SWEBENCH).glob("*/*.traj.json"))
    facts = facts_of(*files)
    commands = [f.command for f in facts if f.command]
    assert commands
    for command in commands:
        assert not re.search(r"reproduce|verify_fix|test_fix\.py|python3? -c |sed -i '\d|/testbed|/workspace/|"
                             r"/path/to/", command), command
    locations = {p for f in facts if f.kind == "location" for p in f.paths}
    assert locations and "tox.ini" not in locations and "setup.py" not in locations


def test_a_session_that_is_not_coding_gives_nothing(corpus: Path) -> None:
    naya = next(t for t in trajectories(*sorted((corpus / "codex/codemie-code").glob("*.jsonl"))) if t.repo == "naya")
    result = distill(naya)
    assert result.skills == [] and consolidate("naya", result.facts) is None


def test_a_manual_says_when_it_applies_in_the_words_of_the_repository_not_of_a_prompt() -> None:
    facts = facts_of(*sorted((SAMPLES / "mini_swe_agent").glob("django__*.traj.json")))
    skill = consolidate("django/django", facts)
    assert skill is not None
    assert skill.description.startswith("Use when working in the django/django repository")
    assert "runtests.py" in skill.description
    for source in skill.sources:
        assert source.task not in skill.description


def test_only_what_no_capable_agent_knows_makes_a_manual(corpus: Path) -> None:
    """flask's one session ran ``pytest <tests>``: nothing to tell an agent, so no manual."""
    files = [corpus / SWEBENCH / "resolved/pallets__flask-5014.traj.json"]
    assert consolidate("pallets/flask", [f for f in facts_of(*files) if f.kind != "preexisting"]) is None


def test_the_users_corrections_are_kept_in_their_words(corpus: Path) -> None:
    found = trajectories(*sorted((corpus / "claude_code/codemie-code").glob("session-*.jsonl")))
    quotes = [c.quote for t in found for c in corrections(t, analyze(t))]
    assert "don't produce code, design solution first" in quotes
    assert not any(q.lower().startswith(("great", "thanks", "proceed")) for q in quotes)


def test_the_aider_manual_holds_what_the_user_told_the_agent(corpus: Path) -> None:
    """aider's own history: "don't use --no-git in those tests", "don't use `IgnorantTemporaryDirectory`
    use GitTemporaryDirectory", "no, don't mock completion, mock the httpx library" -- each a request that
    answers the one before it, in the person's words, with what the agent had changed."""
    facts = facts_of(corpus / "aider/aider-repo/tests_fixtures_chat-history.md")
    skill = consolidate("aider", facts)
    assert skill is not None
    notes = skill.notes
    assert '"don\'t use --no-git in those tests"' in notes
    assert "GitTemporaryDirectory" in notes and "mock the httpx library" in notes
    assert "## The user's corrections" in notes and "tests/basic/test_main.py" in notes
    assert len(markdown.served(skill)) / 3.3 < 900


def test_a_manual_stays_short_when_served() -> None:
    facts = facts_of(*sorted((SAMPLES / "mini_swe_agent").glob("*.traj.json")))
    skill = consolidate("django/django", facts)
    served = markdown.served(skill)
    assert "<!--" not in served and "## Sources" not in served and "metadata" not in served
    assert len(served) // 4 < 800


# -- lessons that generalize -----------------------------------------------------------------
def _code_fix(task: str, tmp: Path) -> Path:
    return Session(task=task, fix_command="ls shop", error="KeyError: 'total'", edit_path="shop/cart.py",
                   edit_old="return cart['total']", edit_new="return cart.get('total', 0)").write(tmp)


def test_one_task_s_fix_is_history_two_tasks_with_the_same_fix_are_a_lesson(tmp_path: Path) -> None:
    one = facts_of(_code_fix("Fix checkout for empty carts", tmp_path / "a"))
    assert [f.kind for f in one if f.kind == "pair"] == ["pair"]
    assert generalize(one) == []
    replay = facts_of(_code_fix("Fix checkout for empty carts", tmp_path / "b"))
    assert generalize(one + replay) == [], "replays of one task are one lesson seen again"
    other = facts_of(_code_fix("Show the cart summary page without items", tmp_path / "c"))
    lessons = generalize(one + other)
    assert len(lessons) == 1
    lesson = lessons[0]
    assert lesson.kind == "pitfall" and len(lesson.sources) == 2 and lesson.repo == "shop"
    assert "KeyError" in lesson.description and "cart.get('total', 0)" in lesson.pitfalls[0].fix


# -- helpers the facts rest on ------------------------------------------------------------------
def test_instance_values_are_abstracted() -> None:
    a = Abstractor("/home/alice/proj")
    assert a("cd /home/alice/proj && pytest tests/test_x.py") == "cd . && pytest tests/test_x.py"
    assert a("/home/alice/proj/src/app.py") == "src/app.py"
    assert a("run 123e4567-e89b-12d3-a456-426614174000 at /tmp/tmpab12cd/x") == "run <uuid> at <tmp>/x"
    assert a("/Users/bob/.cache/thing") == "~/.cache/thing"


def test_commands_are_classified_and_templated() -> None:
    assert shell_purpose("cd /testbed && python -m pytest tests/test_a.py -q") is Purpose.TEST
    assert shell_purpose("pip install -e .") is Purpose.INSTALL
    assert shell_purpose("ruff check src") is Purpose.LINT
    assert shell_purpose("grep -rn foo src") is Purpose.EXPLORE
    assert shell_purpose("sed -i 's/a/b/' x.py") is Purpose.EDIT
    assert shell_purpose("npm run build") is Purpose.BUILD
    assert template("python3 tests/runtests.py sitemaps_tests") == "python3 tests/runtests.py <tests>"
    assert template("pytest tests/test_a.py::test_x -q 2>&1 | tail -20") == "pytest <tests> -q"


@pytest.mark.parametrize(("command", "key"), [
    ("python3 -m pytest tests/a.py -q | tail -5", "python -m pytest tests/a.py"),
    ("./tests/runtests.py model_fields", "tests/runtests.py model_fields"),
    ("python3 tests/runtests.py model_fields --parallel 1", "tests/runtests.py model_fields"),
    ("cd /x && pytest -p no:cacheprovider tests/x.py 2>&1", "pytest tests/x.py"),
])
def test_one_check_however_it_was_spelled(command: str, key: str) -> None:
    assert check_key(command) == key


def test_quoted_separators_stay_in_their_command(tmp_path: Path) -> None:
    """The manual writes each check as it ran: a ``;`` or ``&&`` inside quotes does not split it.

    The real sitemaps session, with its test run preceded by an import check and followed by a
    commit, the way agents write them. Split at every ``;``, the skill said ``python -c "import
    django && print(django.VERSION)"`` and ``git commit -m "fix && tests"``: commands that never ran.
    Now the check's own segment is kept, cut where the shell cuts.
    """
    import json
    import shlex

    ran = ('python -c "import django; print(django.VERSION)" && python3 tests/runtests.py sitemaps_tests; '
           'git commit -m "fix; tests"')
    data = json.loads(SITEMAPS.read_text(encoding="utf-8"))
    message = next(m for m in data["messages"] if m["role"] == "assistant"
                   and "```bash\npython3 tests/runtests.py sitemaps_tests\n```" in m["content"])
    message["content"] = message["content"].replace("python3 tests/runtests.py sitemaps_tests\n", ran + "\n")
    copy = tmp_path / SITEMAPS.name
    copy.write_text(json.dumps(data), encoding="utf-8")
    t = trajectory(copy)
    assert any(s.command == ran for s in t.steps)

    facts = distill(t).facts
    assert [f.command for f in facts if f.kind == "test"] == ["python3 tests/runtests.py sitemaps_tests"], \
        "the check's own command, not the chain around it"
    skill = consolidate("django/django", facts)
    assert skill is not None
    commands = [i.command for i in skill.procedure if i.command] + [p.command for p in skill.pitfalls if p.command]
    assert commands == ["python3 tests/runtests.py sitemaps_tests"]
    for command in commands:
        shlex.split(command)  # a command cut inside its quotes does not even parse


def test_the_shell_split_respects_quotes_escapes_and_substitutions() -> None:
    from pipeline.trajectory.commands import split_shell

    assert split_shell('python3 -c "from sympy import Rational; print(str(Rational(2, 1)))"') == [
        'python3 -c "from sympy import Rational; print(str(Rational(2, 1)))"']
    assert split_shell("nl -ba astropy/units/core.py | sed -n '1700,1720p;1810,1830p'") == [
        "nl -ba astropy/units/core.py | sed -n '1700,1720p;1810,1830p'"]
    assert split_shell('find . -name "package.json" -exec cat {} \\; | grep -A 5 \'"scripts"\'') == [
        'find . -name "package.json" -exec cat {} \\; | grep -A 5 \'"scripts"\'']
    assert split_shell("echo $(date; whoami) && (cd x; make) || true") == ["echo $(date; whoami)", "(cd x; make)",
                                                                          "true"]
    assert split_shell("cd /testbed && python -m pytest -q; echo done") == ["cd /testbed", "python -m pytest -q",
                                                                            "echo done"]
    assert split_shell("cat > f.py <<'EOF'\nx = 1; y = 2\nEOF") == ["cat > f.py <<'EOF'"], "a heredoc body is not a command"
    assert split_shell('python -c "import a\nprint(a)" && pytest') == ['python -c "import a\nprint(a)"', "pytest"]


def test_failures_that_are_not_yours_come_from_a_resolved_run_that_compared_with_its_change_reverted() -> None:
    """flask-5014: the agent ran the whole suite, reverted its change, ran it again: the same eight failures."""
    skill = consolidate("pallets/flask", facts_of(SAMPLES / "mini_swe_agent/pallets__flask-5014.traj.json"))
    assert skill is not None and skill.procedure == [] and skill.pitfalls == []
    notes = skill.notes
    assert notes.startswith("## Failures that are not yours")
    assert "`tests/test_testing.py`: `test_session_transaction_needs_cookies`" in notes
    assert "already fail in this environment" in notes and "8 tests in" in skill.description


def test_instruction_files_are_cited_and_where_things_are_is_by_folder() -> None:
    """The aider history of a TypeScript monorepo: every request read CONVENTIONS.md; edits went to one folder."""
    history = SAMPLES / "aider/Aquaticat-Monochromatic/.aider.chat.history.md"
    facts = [f for f in facts_of(history) if f.repo == "monochromatic2025MAY24-pnpmTest"]
    skill = consolidate("monochromatic2025MAY24-pnpmTest", facts)
    assert skill is not None
    notes = skill.notes
    assert "## Instruction files\n- `CONVENTIONS.md` holds the repository's instructions for agents" in notes
    assert "CONVENTIONS.md" in skill.description and "Use when working in the" in skill.description
    where = notes.split("## Where things are\n", 1)[1]
    assert where.startswith("- `packages/module/es/src/` (code): ") and "sessions" in where
    assert "## Instruction files" in markdown.render(skill) and "CONVENTIONS.md" in markdown.served(skill)


def test_powershell_output_plumbing_is_not_part_of_a_command() -> None:
    """Read in a real Copilot CLI session on Windows (softwaresalt/agent-engram): `2>&1 | Out-File logs\\x.txt` and
    `| Select-Object -Last 20` cut or keep output, as `| tail -20` does; a manual showed them as the command."""
    assert template(r"cargo test --test contract_read 2>&1 | Out-File logs\contract-test-output.txt") == \
        "cargo test --test <tests>"
    assert template("cargo test --test contract_task_removal 2>&1 | Select-Object -Last 20") == "cargo test --test <tests>"
    assert template("make test | tee build.log") == "make test"
    assert template("npm test | grep FAIL") == "npm test | grep FAIL"  # a filter that says what it looks for stays


def test_a_runner_named_inside_quotes_is_data_not_the_program() -> None:
    """Read in a real session (softwaresalt/agent-engram): `bd create "..." --description="... Verify cargo test
    passes."` files an issue; a manual listed it under Tests."""
    from pipeline.trajectory.commands import Purpose, shell_purpose

    assert shell_purpose('bd create "Phase 4" --description="Verify cargo test passes." --json') is not Purpose.TEST
    assert shell_purpose('git commit -m "make the tests pass"') is not Purpose.TEST
    assert shell_purpose('pytest -k "slow and db"') is Purpose.TEST
    assert shell_purpose('python -m pytest "tests/a b.py"') is Purpose.TEST
