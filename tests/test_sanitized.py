"""The Sanitized type: only the redactor makes one, and no plain text gets into a trajectory."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import pytest
from prefect.utilities.collections import visit_collection
from pydantic import ValidationError

from pipeline.cli import _output
from pipeline.errors import SkillmillError
from pipeline.ingest import ingest_file, iter_files
from pipeline.ingest.report import FileReport
from pipeline.library import Library
from pipeline.redact import PLACEHOLDER_RE, Sanitized, current, fallback_count, sanitize
from pipeline.summary import RunError, RunSummary
from pipeline.trajectory import Step, Trajectory
from pipeline.trajectory.transcript import transcript
from tests.conftest import SAMPLES
from tests.planted import SOURCES, Factory, Planter

SECRETS = {s.kind: s for s in reversed(Factory(21).secrets())}  # the first of each kind
KEY = SECRETS["openai-api-key"]
URL = SECRETS["url-password"]


def test_sanitized_text_only_comes_from_the_redactor() -> None:
    with pytest.raises(TypeError):
        Sanitized(KEY.line)
    clean = sanitize(KEY.line)
    assert type(clean) is Sanitized and clean == "export OPENAI_API_KEY=[REDACTED:openai-api-key]"
    assert type(clean[:5]) is str and type(clean + "x") is str  # derived text is plain again
    assert type(pickle.loads(pickle.dumps(clean))) is Sanitized and type(copy.deepcopy(clean)) is Sanitized


def test_plain_text_put_into_a_trajectory_is_redacted_on_every_way_in() -> None:
    step = Step(index=4, kind="tool_call", text=KEY.line, command=KEY.line, paths=[URL.line], diff=f"+{KEY.line}")
    assert all(type(v) is Sanitized for v in (step.text, step.command, step.paths[0], step.diff))
    assert KEY.value not in step.model_dump_json() and URL.value not in step.model_dump_json()
    step.text = SECRETS["github-token"].line  # validate_assignment
    assert SECRETS["github-token"].value not in step.text
    copied = step.model_copy(update={"command": SECRETS["stripe-key"].line})
    assert SECRETS["stripe-key"].value not in copied.command
    with pytest.raises(ValidationError):
        Step(index=0, kind="user", text=42)

    raw_step = {"index": 4, "kind": "user", "text": SECRETS["github-token"].line}
    trajectory = Trajectory(source_format="x", agent="y", task=KEY.line, cwd=URL.line, steps=[raw_step])
    found = {(r.step, r.field, r.kind) for r in trajectory.redactions}
    assert {(None, "task", "openai-api-key"), (None, "cwd", "url-password"), (4, "text", "github-token")} <= found
    back = Trajectory.model_validate_json(trajectory.model_dump_json())  # read back from storage
    assert back == trajectory and type(back.steps[0].text) is Sanitized


def test_prefect_hands_trajectories_between_tasks_without_losing_the_type() -> None:
    _, [trajectory] = ingest_file(SAMPLES / "mini_swe_agent" / "django__django-16255.traj.json")
    passed = visit_collection(trajectory, lambda x: x, return_data=True)  # what task parameters go through
    assert passed == trajectory
    assert all(type(s.text) is Sanitized for s in passed.steps) and type(passed.task) is Sanitized
    assert pickle.loads(pickle.dumps(trajectory)) == trajectory


def test_the_builder_redacts_each_text_once_on_the_real_corpus(corpus: Path) -> None:
    before = fallback_count()
    files = list(iter_files([corpus / "claude_code", corpus / "mini_swe_agent"]))
    steps = 0
    for path in files:
        _, trajectories = ingest_file(path)
        steps += sum(len(t.steps) for t in trajectories)
    after = fallback_count()
    builder_fields = {"text", "command", "paths", "diff", "tool", "call_id", "task", "cwd", "repo", "model",
                      "session_id", "parent_session_id", "git_branch", "agent", "agent_version", "source_path"}
    rescanned = {k: after.get(k, 0) - before.get(k, 0) for k in builder_fields}
    assert steps > 1000 and not any(rescanned.values()), rescanned


def test_redactions_name_the_step_and_field_that_held_the_secret(tmp_path: Path, corpus: Path) -> None:
    planter = Planter(seed=3)
    method, relative = SOURCES["claude-code"]
    planted = method(planter, corpus / relative, tmp_path / "session.jsonl")
    _, trajectories = ingest_file(planted)
    fields = set()
    for trajectory in trajectories:
        for record in trajectory.redactions:
            fields.add(record.field)
            if record.step is None:
                continue
            step = trajectory.steps[record.step]
            held = getattr(step, record.field)
            text = " ".join(held) if isinstance(held, list) else held
            # the placeholder is there, unless clipping (after redaction) cut it out of a long text
            assert f"[REDACTED:{record.kind}]" in text or "characters elided ...]" in text
    assert {"text", "command", "diff"} <= fields  # the task repeats the first prompt: not counted twice


def test_reports_summaries_and_errors_are_redacted(isolated_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = FileReport(path="x.jsonl")
    report.error(f"unexpected shape of a 'user' entry: KeyError({KEY.value!r})", 3)
    assert KEY.value not in report.model_dump_json() and "[REDACTED:openai-api-key]" in report.errors[0].reason
    summary = RunSummary()
    summary.errors.append(RunError(path=URL.line, reason=f"distilling failed: {KEY.line}"))
    assert KEY.value not in str(summary.contract()) and URL.value not in str(summary.contract())

    _output.fail(SkillmillError(f"cannot parse {KEY.line}", hint=f"check {URL.line}"))
    log = _output.save_traceback(ValueError(SECRETS["aws-secret-key"].line))
    printed = capsys.readouterr().err
    assert "Error: cannot parse" in printed and KEY.value not in printed and URL.value not in printed
    assert SECRETS["aws-secret-key"].value not in log.read_text()


def test_a_crashing_parser_becomes_a_redacted_file_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from pipeline.ingest.formats.claude_code import ClaudeCode

    def crash(self, path, report):  # type: ignore[no-untyped-def]
        raise KeyError(KEY.value)
        yield

    monkeypatch.setattr(ClaudeCode, "parse", crash)
    report, trajectories = ingest_file(SAMPLES / "claude_code" / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl")
    assert report.status == "failed" and not trajectories
    assert "claude-code parser" in report.errors[0].reason and "KeyError" in report.errors[0].reason
    assert KEY.value not in report.model_dump_json()


def test_the_prompt_transcript_holds_placeholders_only(tmp_path: Path, corpus: Path) -> None:
    planter = Planter(seed=9)
    method, relative = SOURCES["mini-swe-agent"]
    _, [trajectory] = ingest_file(method(planter, corpus / relative, tmp_path / "x.traj.json"))
    text = transcript(trajectory)
    assert type(text) is Sanitized and PLACEHOLDER_RE.search(text)
    assert not [s.kind for s in planter.secrets() if any(f in text for f in s.fragments())]
    assert current().find(text) == []  # what an LLM request body would carry: nothing left to find


def test_a_skill_file_is_checked_once_more_before_it_is_written(tmp_path: Path) -> None:
    from pipeline.library.model import Item, Skill

    skill = Skill(name="deploy-billing", description="Use when deploying billing.",
                  procedure=[Item(text="Log in to the registry.", command=SECRETS["npm-token"].line)])
    library = Library(tmp_path / "skills")
    assert library.save(skill) == "created"
    written = next((tmp_path / "skills").rglob("SKILL.md")).read_text()
    assert SECRETS["npm-token"].value not in written and "[REDACTED:npm-token]" in written


def test_log_records_are_redacted_tracebacks_included(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    current()  # the redactor is loaded: logs are redacted from now on
    logger = logging.getLogger("pipeline.ingest.some_plugin")
    try:
        raise KeyError(KEY.value)
    except KeyError:
        logger.exception("the parser failed on line %s: %s", 3, URL.line)
    logger.warning("token seen: %s", SECRETS["slack-token"].line)
    assert "the parser failed on line 3" in caplog.text and "KeyError" in caplog.text
    for secret in (KEY, URL, SECRETS["slack-token"]):
        assert secret.value not in caplog.text
