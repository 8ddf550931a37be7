"""The zero-LLM distiller on real trajectories: what it keeps, what it refuses, where it came from."""

from __future__ import annotations

from pathlib import Path

from pipeline.distill import consolidate, distill
from pipeline.distill.abstraction import Abstractor
from pipeline.distill.analysis import template
from pipeline.ingest import ingest_file
from pipeline.trajectory.commands import Purpose, shell_purpose
from tests.conftest import SAMPLES

SITEMAPS = SAMPLES / "mini_swe_agent/django__django-16255.traj.json"


def trajectory(path: Path):
    return ingest_file(path)[1][0]


def test_a_resolved_run_gives_a_procedure_grounded_in_its_steps() -> None:
    t = trajectory(SITEMAPS)
    [skill] = distill(t).skills
    assert skill.kind == "procedure" and skill.outcome == "resolved" and skill.status == "candidate"
    assert skill.name.startswith("django-sitemaps")
    assert skill.description.startswith("Use when") and "django/django" in skill.description
    edit = next(i for i in skill.procedure if i.text.startswith("Edit `django/contrib/sitemaps/__init__.py`"))
    assert "ValueError" in edit.text  # the change itself, from the submitted patch
    [check] = skill.verification
    assert check.command == "python3 tests/runtests.py sitemaps_tests"
    # every item points at steps that really hold what the item says
    for item in [*skill.procedure, *skill.verification]:
        for evidence in item.evidence:
            assert evidence.trajectory == t.id
            steps = [t.steps[i] for i in evidence.steps]
            if item.command:
                assert any(s.command and item.command in Abstractor(t.cwd)(s.command) for s in steps)
    assert skill.sources[0].trajectory == t.id


def test_a_failed_run_gives_pitfalls_only(corpus: Path) -> None:
    t = trajectory(corpus / "mini_swe_agent/swebench_verified_gemini-3-pro/unresolved/django__django-11999.traj.json")
    [skill] = distill(t).skills
    assert skill.kind == "pitfall" and skill.outcome == "failed"
    assert skill.procedure == [] and skill.verification == [] and skill.pitfalls
    assert "did not resolve" in skill.notes


def test_sessions_with_nothing_reusable_say_why(corpus: Path) -> None:
    cases = {
        "claude_code/codemie-code/-tmp-private/agent-36541525.jsonl": "no tool activity",
        "claude_code/codemie-code/incremental-simple/3fb74381-turn-2.jsonl": "smoke test",
        "claude_code/claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": "read-only",
    }
    for name, reason in cases.items():
        result = distill(trajectory(corpus / name))
        assert result.skills == [] and reason in (result.reason or ""), (name, result.reason)


def test_instance_values_are_abstracted() -> None:
    abstract = Abstractor("/testbed")
    assert abstract("cd /testbed && python /testbed/tests/runtests.py x") == "cd . && python tests/runtests.py x"
    assert abstract("ls /Users/jane/.claude/projects/3fb74381-aaaa-bbbb-cccc-123456789abc") == \
        "ls ~/.claude/projects/<uuid>"
    assert abstract("git show 8e8d4ce5ad2dfae14cb26caf5d3cddebee929990") == "git show <hash>"


def test_commands_are_classified_and_templated() -> None:
    assert shell_purpose("cd /testbed && python -m pytest tests/test_x.py -q 2>&1 | tail -20") is Purpose.TEST
    assert shell_purpose("ls tests/runtests.py") is Purpose.EXPLORE
    assert shell_purpose("cat <<'EOF' > reproduce.py\nprint(1)\nEOF") is Purpose.EDIT
    assert shell_purpose("pip install -e .") is Purpose.INSTALL
    assert shell_purpose("npx tsc --noEmit --skipLibCheck") is Purpose.LINT
    assert template("python3 tests/runtests.py sitemaps_tests") == "python3 tests/runtests.py <tests>"
    assert template("cd . && python -m pytest tests/a.py::test_b -k foo -q 2>&1 | tail -5") == \
        "python -m pytest <tests> -q"


def test_the_repo_skill_counts_what_worked_across_sessions() -> None:
    facts = []
    for path in sorted((SAMPLES / "mini_swe_agent").glob("django__*.traj.json")):
        facts.extend(distill(trajectory(path)).facts)
    skill = consolidate("django/django", facts)
    assert skill is not None and skill.name == "working-in-django" and skill.kind == "repo"
    assert len(skill.sources) == 3
    tests = [i for i in skill.procedure if i.text.startswith("Run the tests")]
    assert tests and all("<tests>" in i.text and "worked" in i.text for i in tests)
    assert all(len({e.trajectory for e in i.evidence}) >= 1 for i in skill.procedure)


def test_quoted_separators_stay_in_their_command(tmp_path: Path) -> None:
    """The repo skill writes each check as it ran: a ``;`` or ``&&`` inside quotes does not split it.

    The real sitemaps session, with its test run preceded by an import check and followed by a
    commit, the way agents write them. Split at every ``;``, the skill said ``python -c "import
    django && print(django.VERSION)"`` and ``git commit -m "fix && tests"``: commands that never ran.
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

    skill = consolidate("django/django", distill(t).facts)
    assert skill is not None
    commands = [i.command for i in skill.procedure if i.command] + [p.command for p in skill.pitfalls if p.command]
    [written] = [c for c in commands if "runtests.py" in c]
    assert written == ('python -c "import django; print(django.VERSION)" && python3 tests/runtests.py sitemaps_tests '
                       '&& git commit -m "fix; tests"')
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
