"""The skill auditor (benchmarks/audit): each rule's detector fires on a skill modelled on a real bad one
the baseline distiller wrote, judged against the real session it cites, and stays quiet on a good skill.

Only the eight corpus files the skills cite are read (well under a second). Skill texts cite
their sessions by id; ids are taken from the parsed files, so a change to parsing that changes
content ids does not break these tests.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from benchmarks.audit import audit, lessons, load_sessions, manual_body, served_text, summary
from benchmarks.audit.rules import (
    Context,
    content_free,
    content_free_edits,
    duplicates,
    gutted_fixes,
    harness_edits,
    line_pinned_sed,
    mispaired_fixes,
    non_coding,
    pinned_sed,
    protocol_errors,
    raw_prompt_names,
    sandbox_paths,
    scratch_scripts,
    unverified_advice,
)
from benchmarks.audit.sessions import Session, is_check
from benchmarks.audit.skills import read_library, read_skill
from tests.conftest import ROOT

FILES = {
    "marsh": "swe_agent/demonstrations/replay__marshmallow-code__marshmallow-1867__xml_sys-env_window100__t-0.20__"
             "p-0.95__c-2.00__install-1/marshmallow-code__marshmallow-1867.traj",
    "marsh2": "swe_agent/legacy_v0.7.0/replay__marshmallow-code__marshmallow-1867__default__t-0.20__p-0.95__c-2.00__"
              "install-1___install_from_source/marshmallow-code__marshmallow-1867.traj",
    "todo": "claude_code/claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
    "japanese": "claude_code/claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    "mpl": "mini_swe_agent/swebench_verified_gemini-3-pro/unresolved/matplotlib__matplotlib-21568.traj.json",
    "sphinx": "mini_swe_agent/swebench_verified_gemini-3-pro/resolved/sphinx-doc__sphinx-9367.traj.json",
    "django": "mini_swe_agent/swebench_verified_gemini-3-pro/resolved/django__django-16255.traj.json",
    "naya": "codex/codemie-code/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl",
}
#: Files holding several sessions: the one the skills cite starts with this prompt.
TASKS = {"todo": "Implement state management", "japanese": "/orchestrator @CLAUDE.md"}


@pytest.fixture(scope="module")
def sessions(corpus: Path) -> dict[str, Session]:
    """Name -> the session the skills below cite (parsed by the ingest stage from the real file)."""
    found = {}
    for key, path in FILES.items():
        parsed = load_sessions([corpus / path]).values()
        found[key] = next(s for s in parsed if (s.t.task or "").startswith(TASKS.get(key, "")))
    return found


def skill(name: str, body: str, *, kind: str = "procedure", repo: str = "", sources: str = "",
          description: str = "Use when ...") -> str:
    meta = f'  kind: "{kind}"\n  sources: "{sources}"\n' + (f'  repo: "{repo}"\n' if repo else "")
    return (f'---\nname: {name}\ndescription: "{description}"\nmetadata:\n  generator: "skillmill"\n'
            f'  status: "candidate"\n{meta}---\n\n{body.strip()}\n')


def library(tmp_path: Path, *texts: str) -> Path:
    root = tmp_path / "library"
    for text in texts:
        name = text.split("name: ", 1)[1].split("\n", 1)[0]
        folder = root / "_candidates" / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(text, encoding="utf-8")
    return root


def judge(detector, tmp_path: Path, sessions: dict[str, Session], *texts: str) -> dict[str, list]:
    """Run one detector over a library of these skill texts: skill name -> its findings (only skills with any)."""
    root = library(tmp_path, *texts)
    skills = read_library(root)
    ctx = Context({s.t.id: s for s in sessions.values()}, skills)
    found = {s.name: detector(s, ctx) for s in skills}
    return {k: v for k, v in found.items() if v}


# -- skills modelled on what the baseline distiller (fc61df2) wrote -------------------------------
def marshmallow(ids: dict[str, str], key: str = "marsh", suffix: str = "") -> str:
    """pitfalls-marshmallow-timedelta-serialization-precision: the correct fix, labelled a failure."""
    return skill(
        f"pitfalls-marshmallow-timedelta-serialization-precision{suffix}", f"""
# TimeDelta serialization precision

## Pitfalls
- **Symptom:** edit on `src/marshmallow/fields.py` failed: `Your proposed edit has introduced new syntax error(s). \
Please understand the fixes and retry your edit commmand.` <!-- from {ids[key]}:20,21,23,24 -->
  **Fix:** retry with corrected input; the call that worked: `edit 1475:1475`

## Notes
Approach that did not resolve the task (submitted without any project test or build covering the change: nothing \
ran after the last change): editing `src/marshmallow/fields.py`. Look for a different cause before repeating it.

## Sources
- `{ids[key]}` swe-agent, failed: TimeDelta serialization precision
""", kind="pitfall", repo="marshmallow-code/marshmallow", sources=ids[key],
        description="Use when working in marshmallow-code/marshmallow on: TimeDelta serialization precision. "
                    "Pitfalls met in an attempt that did not resolve it, errors: `Your proposed edit has "
                    "introduced new syntax error(s).`.")


def todo_app(ids: dict[str, str]) -> str:
    """demo-implement-state-management-crud-operations-todo: a missing module 'fixed' by gutting the test."""
    t = ids["todo"]
    return skill("demo-implement-state-management-crud-operations-todo", f"""
# Implement state management and CRUD operations for the TODO app using React hooks (useReducer or...

## Procedure
1. Edit `/path/to/Demo/todo-app/src/hooks/useTodos.ts`: add `import {{ useReducer }} from 'react';`. \
<!-- from {t}:32,33 -->
2. Edit `src/hooks/index.ts`: add `/**`. <!-- from {t}:40,41 -->
3. Edit `src/components/TodoApp.tsx`. <!-- from {t}:43,44 -->

## Pitfalls
- **Symptom:** `cd . && npx tsc --noEmit --skipLibCheck` failed: `src/hooks/useTodos.test.ts(6,33): error TS2307: \
Cannot find module '@testing-library/react' or its corresponding type declarations.` <!-- from {t}:48,49,56,57 -->
  **Fix:** edit `src/hooks/useTodos.test.ts`, then run it again
- **Symptom:** Edit on `src/hooks/useTodos.test.ts` failed: `<tool_use_error>File has not been read yet. Read it \
first before writing to it.</tool_use_error>` <!-- from {t}:51,52 -->
  **Fix:** read `src/hooks/useTodos.test.ts` first, then retry

## Sources
- `{t}` claude-code, resolved: Implement state management and CRUD operations for the TODO app
""", repo="Demo", sources=t, description="Use when in Demo you need to: Implement state management and CRUD "
                                         "operations for the TODO app using React hooks (useReducer or useState).")


def usetex(ids: dict[str, str]) -> str:
    """pitfalls-matplotlib-datetime-axis-usetex-unclear: the pandas error 'fixed' by installing dvipng."""
    m = ids["mpl"]
    return skill("pitfalls-matplotlib-datetime-axis-usetex-unclear", f"""
# Datetime axis with usetex is unclear

## Pitfalls
- **Symptom:** `python reproduce_issue.py` failed: `ValueError: Multi-dimensional indexing (e.g. `obj[:, None]`) \
is no longer supported. Convert to a numpy array before indexing instead.` <!-- from {m}:11,12,23,24 -->
  **Fix:** install what was missing, then run it again
  ```bash
  apt-get update && apt-get install -y dvipng
  ```

## Notes
Approach that did not resolve the task (SWE-bench report matplotlib__matplotlib-21568.report.json: \
resolved=False): editing `lib/matplotlib/dates.py`. Look for a different cause before repeating it.

## Sources
- `{m}` mini-swe-agent, failed: Datetime axis with usetex is unclear
""", kind="pitfall", repo="matplotlib/matplotlib", sources=m,
        description="Use when working in matplotlib/matplotlib on: Datetime axis with usetex is unclear.")


def sphinx_tuple(ids: dict[str, str]) -> str:
    """sphinx-element-tuple-rendered-incorrectly: the harness's setup.py pins shown as the agent's steps."""
    s = ids["sphinx"]
    return skill("sphinx-element-tuple-rendered-incorrectly", f"""
# 1-element tuple rendered incorrectly

## Procedure
1. Edit `setup.py`: replace `'sphinxcontrib-applehelp',` with `'sphinxcontrib-applehelp<=1.0.7',`. \
<!-- from {s}:53 -->
2. Edit `tox.ini`: replace `python -X dev -m pytest --durations 25 {{posargs}}` with \
`python -X dev -m pytest -rA --durations 25 {{posargs}}`. <!-- from {s}:53 -->
""", repo="sphinx-doc/sphinx", sources=s, description="Use when in sphinx-doc/sphinx you need to: "
                                                       "1-element tuple rendered incorrectly.")


def sitemaps(ids: dict[str, str]) -> str:
    """django-sitemaps-without-items-raise-valueerror-callable: a line-pinned sed, a deleted repro script."""
    d = ids["django"]
    return skill("django-sitemaps-without-items-raise-valueerror-callable", f"""
# Sitemaps without items raise ValueError on callable lastmod.

## Procedure
1. Reproduce the problem before changing code. <!-- from {d}:11,12 -->
   ```bash
   python3 reproduce_issue.py
   ```
2. Edit `django/contrib/sitemaps/__init__.py`: replace `except TypeError:` with `except (TypeError, ValueError):`. \
<!-- from {d}:14,15 -->
   ```bash
   sed -i '171s/except TypeError:/except (TypeError, ValueError):/' django/contrib/sitemaps/__init__.py
   ```
""", repo="django/django", sources=d, description="Use when in django/django you need to: Sitemaps without "
                                                   "items raise ValueError on callable lastmod.")


def naya(ids: dict[str, str]) -> str:
    """pitfalls-naya-analyze-trascript-summarzie-action-items-related: a meeting summary, the prompt's typos."""
    n = ids["naya"]
    return skill("pitfalls-naya-analyze-trascript-summarzie-action-items-related", f"""
# analyze trascript and summarzie action items related to codemie and demo preapration, specificall...

## Pitfalls
- **Symptom:** `ps -ef | rg -i "codemie"` failed: `zsh:1: operation not permitted: ps` <!-- from {n}:35,36 -->
  **Fix:** the same command passed after the steps in between; rerun it once they are done
""", kind="pitfall", repo="naya", sources=n,
        description="Use when working in naya on: analyze trascript and summarzie action items related to codemie "
                    "and demo preapration, specifically focus on demo, User and Vadym.")


def japanese(ids: dict[str, str]) -> str:
    """demo-orchestrator-claude-md: a Japanese request reduced to its Latin words."""
    j = ids["japanese"]
    return skill("demo-orchestrator-claude-md", f"""
# Update CLAUDE.md

## Procedure
1. Read `CLAUDE.md` before editing it. <!-- from {j}:24,25 -->
""", repo="Demo", sources=j, description="Use when the project notes in CLAUDE.md are out of date.")


# -- good skills, written like the good examples in skill-quality.md --------------------------------
def good_sitemaps(ids: dict[str, str]) -> str:
    d = ids["django"]
    return skill("django-sitemaps-callable-lastmod", f"""
# Sitemaps whose items() is empty and lastmod is callable

## Procedure
1. In `django/contrib/sitemaps/__init__.py`, `get_latest_lastmod()` calls `max()` on the lastmods of \
`items()`: with no items `max()` raises `ValueError`, so catch `ValueError` beside `TypeError` there. \
<!-- from {d}:14,15 -->
   ```bash
   sed -i 's/except TypeError:/except (TypeError, ValueError):/' django/contrib/sitemaps/__init__.py
   ```

## Verification
- Django's own suite runs with its runner, not pytest: <!-- from {d}:44,45 -->
  ```bash
  python3 tests/runtests.py sitemaps_tests
  ```

## Sources
- `{d}` mini-swe-agent, resolved: Sitemaps without items raise ValueError on callable lastmod.
""", repo="django/django", sources=d,
        description="Use when a Django sitemap with a callable lastmod fails on an empty items() list, or when "
                    "running the sitemaps tests.")


def good_usetex(ids: dict[str, str]) -> str:
    m = ids["mpl"]
    return skill("matplotlib-usetex-needs-dvipng", f"""
# usetex rendering needs dvipng

## Pitfalls
- **Symptom:** rendering with `text.usetex` fails: `RuntimeError: Failed to process string with tex because \
dvipng could not be found` <!-- from {m}:20,21,23,24,26,27 -->
  **Fix:** install dvipng in the environment:
  ```bash
  apt-get update && apt-get install -y dvipng
  ```
- pandas indexes passed to `ax.plot` fail with "Multi-dimensional indexing" on pandas 2: convert them with \
`.to_numpy()` in the calling code. <!-- from {m}:11,12,17,18 -->
""", kind="pitfall", repo="matplotlib/matplotlib", sources=m,
        description="Use when matplotlib tests or scripts with usetex=True fail in a fresh environment.")


@pytest.fixture(scope="module")
def ids(sessions: dict[str, Session]) -> dict[str, str]:
    return {key: s.t.id for key, s in sessions.items()}


# -- the parser ---------------------------------------------------------------------------------
def test_reader_strips_provenance_and_reads_citations(tmp_path, ids):
    root = library(tmp_path, usetex(ids))
    parsed = read_skill(root / "_candidates" / "pitfalls-matplotlib-datetime-axis-usetex-unclear" / "SKILL.md",
                        "candidate")
    pitfall = parsed.items[0]
    assert pitfall.section == "pitfalls" and pitfall.bullet
    assert pitfall.cites == {ids["mpl"]: [11, 12, 23, 24]}
    assert "<!--" not in pitfall.text and "**Fix:** install what was missing" in pitfall.text
    assert pitfall.code == ["apt-get update && apt-get install -y dvipng"]
    assert [i.section for i in parsed.items] == ["pitfalls", "notes", "sources"]
    assert parsed.sources == [ids["mpl"]] and parsed.kind == "pitfall"


# -- one test per rule: fires on the real bad example, not on a good skill ----------------------
def test_protocol_errors(tmp_path, sessions, ids):
    found = judge(protocol_errors, tmp_path, sessions, marshmallow(ids), todo_app(ids), good_sitemaps(ids))
    assert set(found) == {"pitfalls-marshmallow-timedelta-serialization-precision",
                          "demo-implement-state-management-crud-operations-todo"}
    marsh = found["pitfalls-marshmallow-timedelta-serialization-precision"]
    assert len(marsh) == 2  # the description and the pitfall
    assert "SWE-agent" in marsh[0].reason
    assert "File has not been read yet" in found["demo-implement-state-management-crud-operations-todo"][0].reason


def test_unverified_advice(tmp_path, sessions, ids):
    """The marshmallow demo replay succeeded (its repro printed 345) but ran no project check; the matplotlib
    run carries a real failure label, so the same words are allowed there."""
    found = judge(unverified_advice, tmp_path, sessions, marshmallow(ids), usetex(ids), good_sitemaps(ids))
    assert list(found) == ["pitfalls-marshmallow-timedelta-serialization-precision"]
    lines = found["pitfalls-marshmallow-timedelta-serialization-precision"]
    assert any(f.line.startswith("Approach that did not resolve the task") for f in lines)
    # a heuristic outcome is not a failure: fc61df2's ingest called this run failed, today's unknown
    assert re.search(r"outcome (?:failed|unknown) \(heuristic\)", lines[0].reason)
    assert sessions["mpl"].labelled_failure and not sessions["marsh"].labelled_failure


def test_gutted_fixes(tmp_path, sessions, ids):
    found = judge(gutted_fixes, tmp_path, sessions, todo_app(ids), good_usetex(ids), good_sitemaps(ids))
    assert list(found) == ["demo-implement-state-management-crud-operations-todo"]
    reason = found["demo-implement-state-management-crud-operations-todo"][0].reason
    assert "removes" in reason and "useTodos.test.ts" in reason


def test_mispaired_fixes(tmp_path, sessions, ids):
    """dvipng fixed the next error; the ValueError went away with the code change before it."""
    found = judge(mispaired_fixes, tmp_path, sessions, usetex(ids), good_usetex(ids), todo_app(ids))
    assert list(found) == ["pitfalls-matplotlib-datetime-axis-usetex-unclear"]
    assert "dvipng" in found["pitfalls-matplotlib-datetime-axis-usetex-unclear"][0].reason


def test_content_free_edits(tmp_path, sessions, ids):
    same = skill("pr-viewer-add-toggle-dark-mode", """
## Procedure
1. Edit `src/PullRequestViewer.tsx` (3 edits): replace `const [pullRequests, setPullRequests] = useState([]);` \
with `const [pullRequests, setPullRequests] = useState([]);`.
2. Edit `src/App.css`: add `body {`.
""")
    found = judge(content_free_edits, tmp_path, sessions, todo_app(ids), same, good_sitemaps(ids), sitemaps(ids))
    assert set(found) == {"demo-implement-state-management-crud-operations-todo", "pr-viewer-add-toggle-dark-mode"}
    reasons = [f.reason for f in found["demo-implement-state-management-crud-operations-todo"]]
    assert reasons == ["the added text `/**` says nothing", "names the file, not the change"]
    assert [f.reason for f in found["pr-viewer-add-toggle-dark-mode"]] == ["replaces a text with the same text"]
    assert content_free(")") and content_free("</div>") and content_free("—")
    assert not content_free('<div className="min-h-screen">') and not content_free("import os")


def test_harness_edits(tmp_path, sessions, ids):
    assert sessions["sphinx"].harness_files == {"setup.py", "tox.ini"}
    good = skill("sphinx-one-element-tuple", f"""
## Procedure
1. In `sphinx/pycode/ast.py`, `visit_Tuple` must keep the trailing comma of a 1-element tuple. \
<!-- from {ids['sphinx']}:23,24 -->
""", repo="sphinx-doc/sphinx", sources=ids["sphinx"])
    found = judge(harness_edits, tmp_path, sessions, sphinx_tuple(ids), good)
    assert list(found) == ["sphinx-element-tuple-rendered-incorrectly"]
    assert [f.reason.split(":")[0] for f in found["sphinx-element-tuple-rendered-incorrectly"]] == ["setup.py",
                                                                                                   "tox.ini"]


def test_scratch_scripts(tmp_path, sessions, ids):
    assert "reproduce_issue.py" in sessions["django"].scratch_scripts
    found = judge(scratch_scripts, tmp_path, sessions, sitemaps(ids), good_sitemaps(ids))
    assert list(found) == ["django-sitemaps-without-items-raise-valueerror-callable"]
    assert found["django-sitemaps-without-items-raise-valueerror-callable"][0].line == "python3 reproduce_issue.py"


def test_line_pinned_sed(tmp_path, sessions, ids):
    found = judge(line_pinned_sed, tmp_path, sessions, sitemaps(ids), good_sitemaps(ids))
    assert list(found) == ["django-sitemaps-without-items-raise-valueerror-callable"]
    assert pinned_sed("sed -i '389a\\        if not self.get_visible():' lib/axes3d.py")
    assert pinned_sed('cd x && sed -i.bak -e "10,20d" f.py')
    assert not pinned_sed("sed -n '165,175p' django/contrib/sitemaps/__init__.py")
    assert not pinned_sed("sed -i 's/a/b/' f.py")


def test_sandbox_paths_and_session_ids(tmp_path, sessions, ids):
    by_id = skill(f"session-{ids['naya'][:8]}", "## Procedure\n1. Run `npm test`.", sources=ids["naya"])
    found = judge(sandbox_paths, tmp_path, sessions, todo_app(ids), by_id, good_sitemaps(ids))
    assert set(found) == {"demo-implement-state-management-crud-operations-todo", f"session-{ids['naya'][:8]}"}
    assert found["demo-implement-state-management-crud-operations-todo"][0].reason == "sandbox path /path/to/"
    assert found[f"session-{ids['naya'][:8]}"][0].reason.startswith(f"session id {ids['naya'][:8]}")


def test_raw_prompt_names(tmp_path, sessions, ids):
    found = judge(raw_prompt_names, tmp_path, sessions, naya(ids), japanese(ids), good_sitemaps(ids),
                  good_usetex(ids))
    assert set(found) == {"pitfalls-naya-analyze-trascript-summarzie-action-items-related",
                          "demo-orchestrator-claude-md"}
    reasons = " | ".join(f.reason for f in found["pitfalls-naya-analyze-trascript-summarzie-action-items-related"])
    assert "repeats the first prompt verbatim" in reasons and "cut mid-word" in reasons
    assert "the name is the first prompt's words" in reasons
    assert "non-English prompt" in found["demo-orchestrator-claude-md"][0].reason


def test_duplicates(tmp_path, sessions, ids):
    copies = (marshmallow(ids), marshmallow(ids, "marsh2", "-53c641"))
    found = judge(duplicates, tmp_path, sessions, *copies, usetex(ids), good_usetex(ids))
    assert list(found) == ["pitfalls-marshmallow-timedelta-serialization-precision-53c641"]
    assert "near-copy of pitfalls-marshmallow-timedelta-serialization-precision" in \
        found["pitfalls-marshmallow-timedelta-serialization-precision-53c641"][0].reason


def test_non_coding(tmp_path, sessions, ids):
    assert not sessions["naya"].is_coding and sessions["django"].is_coding
    found = judge(non_coding, tmp_path, sessions, naya(ids), good_sitemaps(ids))
    assert list(found) == ["pitfalls-naya-analyze-trascript-summarzie-action-items-related"]


def test_good_skills_break_no_rule(tmp_path, sessions, ids):
    root = library(tmp_path, good_sitemaps(ids), good_usetex(ids))
    report = audit(root, {s.t.id: s for s in sessions.values()})
    assert report.findings == [] and report.missing_sources == set()


# -- session facts the rules rest on ----------------------------------------------------------
def test_checks_are_project_commands():
    assert is_check("cd /testbed && python3 tests/runtests.py sitemaps_tests")
    assert is_check("npm test -- --run src/a.test.ts") and is_check("make clean && make")
    assert is_check("PYTHONPATH=. timeout 60 python -m pytest -x tests/test_a.py")
    assert not is_check("find /workspace/ponyc -name ponyc") and not is_check("test -f setup.py")
    assert not is_check("grep -n pytest setup.cfg")


# -- lessons ------------------------------------------------------------------------------------
def test_lessons_semantics(tmp_path, ids):
    rules = {lesson.id: lesson for lesson in lessons.load(_lessons_file(tmp_path))}
    bad = read_library(library(tmp_path / "bad", usetex(ids), marshmallow(ids)))
    good = read_library(library(tmp_path / "good", good_usetex(ids), good_sitemaps(ids)))
    # never_together: the pandas error and dvipng in one bullet (its code block included)
    assert not lessons.check(rules["matplotlib-dvipng"], bad).found
    assert lessons.check(rules["matplotlib-dvipng"], good).found
    # never_any beats expect_any; the repo is matched inside metadata.repo
    assert "did not resolve" in lessons.check(rules["marshmallow-round"], bad).why
    # bullet_with / bullet_any
    assert lessons.check(rules["django-runner-bullet"], good).found
    assert not lessons.check(rules["django-runner-bullet-wrong"], good).found
    # a repo no skill has in metadata.repo is matched in names
    assert lessons.check(rules["by-name"], good).found


def test_the_shared_lessons_load(corpus):
    dev = lessons.load(corpus.parent / "lessons" / "lessons-dev.jsonl")
    assert {lesson.id for lesson in dev} >= {"matplotlib-dvipng", "marshmallow-round", "django-runner"}
    assert next(x for x in dev if x.id == "matplotlib-dvipng").never_together == [["Multi-dimensional indexing",
                                                                                   "dvipng"]]


def _lessons_file(tmp_path: Path) -> Path:
    path = tmp_path / "lessons.jsonl"
    path.write_text("\n".join([
        '{"id": "matplotlib-dvipng", "repo": "matplotlib", "expect_any": ["dvipng"], '
        '"never_together": [["Multi-dimensional indexing", "dvipng"]]}',
        '{"id": "marshmallow-round", "repo": "marshmallow", "expect_any": ["fields.py"], '
        '"never_any": ["did not resolve", "different cause"]}',
        '{"id": "django-runner-bullet", "repo": "django", "bullet_with": "tests/runtests.py", '
        '"bullet_any": ["not pytest"]}',
        '{"id": "django-runner-bullet-wrong", "repo": "django", "bullet_with": "tests/runtests.py", '
        '"bullet_any": ["pytest tests/"]}',
        '{"id": "by-name", "repo": "usetex-needs", "expect_any": ["dvipng"]}',
    ]) + "\n", encoding="utf-8")
    return path


def test_manual_body_leaves_out_provenance_and_sources(tmp_path, ids):
    manual = skill("working-in-django", f"""
# Working in django/django

## Procedure
1. Run the tests: `python3 tests/runtests.py <tests>`. <!-- from {ids['django']}:44,45 -->

## Sources
- `{ids['django']}` mini-swe-agent, resolved: Sitemaps
""", kind="repo", repo="django/django", sources=ids["django"])
    root = library(tmp_path, manual)
    body = manual_body(read_library(root)[0])
    assert body == "# Working in django/django\n\n## Procedure\n1. Run the tests: `python3 tests/runtests.py <tests>`."
    # served as an agent is given it: name and description kept, metadata left out too
    assert served_text(read_library(root)[0]) == (
        '---\nname: working-in-django\ndescription: "Use when ..."\n---\n\n' + body + "\n")


def test_summary_is_per_skill_json(tmp_path, sessions, ids):
    """What the audit process hands the benchmark: every skill with its findings, manuals with their texts."""
    manual = skill("working-in-django", "# Working in django/django\n\n## Procedure\n1. Run `pytest`.",
                   kind="repo", repo="django/django", sources=ids["django"])
    root = library(tmp_path, marshmallow(ids), manual)
    report = audit(root, {s.t.id: s for s in sessions.values()})
    data = summary(report)
    by_name = {s["name"]: s for s in data["skills"]}
    assert {f["rule"] for f in by_name["pitfalls-marshmallow-timedelta-serialization-precision"]["findings"]} \
        >= {"protocol", "unverified"}
    assert by_name["working-in-django"]["served"].startswith("---\nname: working-in-django\n")
    assert "metadata" not in by_name["working-in-django"]["served"] and data["missing_sources"] == []
    assert json.loads(json.dumps(data)) == data


def test_each_library_is_audited_with_its_own_versions_ingest(tmp_path):
    """The audit process has the version's code first on PYTHONPATH (its ``pipeline.ingest`` made the ids
    the library cites), this repository behind it for ``benchmarks.audit``, and runs without its folder
    on sys.path (``-P``)."""
    from benchmarks import skill_quality as bench

    code = tmp_path / "baseline" / "src"
    argv, env = bench.audit_command(code, tmp_path / "library", tmp_path / "corpus", tmp_path / "lessons.jsonl",
                                    tmp_path / "home")
    assert env["PYTHONPATH"].split(os.pathsep) == [str(code), str(ROOT)]
    assert argv[1:] == ["-P", str(ROOT / "benchmarks" / "audit" / "audit_run.py"), str(tmp_path / "library"),
                        str(tmp_path / "corpus"), str(tmp_path / "lessons.jsonl")]
    assert env["SKILLMILL_HOME"] == str(tmp_path / "home") and env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    argv, env = bench.audit_command(ROOT, tmp_path / "library", tmp_path / "corpus", None, tmp_path / "home")
    assert env["PYTHONPATH"] == str(ROOT) and len(argv) == 5  # the current checkout: once, no lessons


# -- the benchmark's baseline column ----------------------------------------------------------
@pytest.mark.slow
def test_benchmark_distils_the_baseline_in_its_own_process(tmp_path, ids):
    """The baseline's code comes from git and runs in a subprocess: its library is audited like any other."""
    from benchmarks import skill_quality as bench

    known = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{bench.BASELINE_REF}^{{commit}}"],
                           capture_output=True, check=False)
    if known.returncode != 0:
        pytest.skip(f"this checkout does not hold {bench.BASELINE_REF} (a shallow clone?)")
    small = tmp_path / "corpus"
    small.mkdir()
    for name in ("django__django-16255.traj.json", "django__django-16255.report.json"):
        (small / name).write_bytes((ROOT / "samples" / "mini_swe_agent" / name).read_bytes())
    code = bench.extract(bench.BASELINE_REF, tmp_path / "baseline" / "src")
    assert (code / "pipeline" / "distill" / "heuristic.py").is_file() and (code / "flows").is_dir()
    run = bench.distil("baseline", code, small, tmp_path / "baseline")
    assert run["pipeline"] == str(code / "pipeline") and run["sessions"] == 1
    audited = bench.audit_library("baseline", code, small, _lessons_file(tmp_path), tmp_path / "baseline")
    assert audited["pipeline"] == str(code / "pipeline") and audited["sessions"] == 1
    assert audited["missing_sources"] == []  # its ingest made the ids its library cites
    assert audited["served_by"] == "the auditor's stripping"  # fc61df2 has no pipeline.library.markdown.served
    assert {s["name"] for s in audited["skills"] if s["kind"] == "repo"} == {"working-in-django"}
    assert "python3 reproduce_issue.py" in {f["line"] for f in bench.offenders(audited, "scratch").get(
        next(s["name"] for s in audited["skills"] if any(f["rule"] == "scratch" for f in s["findings"])), [])}
    text = bench.table({"baseline": bench.figures(run, audited, len)}, "characters")
    assert "candidates written" in text and "line-pinned sed (5)" in text and "lessons found" in text
    assert "served size in tokens" in text and "cited ids not in the corpus (not judged)" in text
