"""The compact rendering on the real corpus: small, yet every exit code and error line is kept."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from pipeline.distill.llm.extract import jobs
from pipeline.distill.render import render
from pipeline.ingest import ingest_file, iter_files
from pipeline.trajectory import Trajectory
from pipeline.trajectory.commands import ERROR_LINE, error_signature
from pipeline.trajectory.model import StepKind
from tests.conftest import SAMPLES


@cache
def _corpus(root: Path) -> tuple[tuple[Path, tuple[Trajectory, ...]], ...]:
    found = []
    for path in iter_files([root]):
        _, trajectories = ingest_file(path)
        if trajectories:
            found.append((path, tuple(trajectories)))
    return tuple(found)


def _norm(text: str) -> str:
    return " ".join(text.split())


def _errors(text: str) -> list[str]:
    """Error lines of a tool output, found independently of the renderer: each as the error it names
    (pytest's ``E   `` gutter left off, as ``error_signature`` gives it), and the signature."""
    lines = [m.group(1).strip() for m in ERROR_LINE.finditer(text)]
    signature = error_signature(text)
    return [line for line in [*lines, signature or ""] if len(line) > 3]


def test_every_exit_code_and_error_line_is_kept(corpus: Path) -> None:
    checked_codes = checked_errors = 0
    for path, trajectories in _corpus(corpus):
        for t in trajectories:
            rendering = render(t)
            blocks = {s: b for b in rendering.blocks for s in b.steps}
            for step in t.steps:
                if step.kind is not StepKind.TOOL_RESULT:
                    continue
                block = blocks.get(step.index)
                assert block is not None, (path, step.index)
                if step.exit_code is not None:
                    assert f"exit {step.exit_code}" in block.text, (path, step.index)
                    checked_codes += 1
                if step.exit_code not in (None, 0) or step.is_error:
                    text = _norm(block.text)
                    same = re.search(r"same output as \[(\d+)\]", block.text)
                    if same:  # a repeated output points at the block that shows it
                        text = _norm(blocks[int(same.group(1))].text)
                    for error in _errors(step.text):
                        wanted = _norm(_abstracted(t, error))
                        # up to 350 characters, the whole error; a longer one (an assertion showing a
                        # whole dict) is a line cut to LINE_CHARS: its start and its end
                        parts = [wanted] if len(wanted) <= 350 else [wanted[:250], wanted[-100:]]
                        assert all(part in text for part in parts), (path, step.index, error)
                        checked_errors += 1
    assert checked_codes > 500 and checked_errors > 100


def _abstracted(t: Trajectory, text: str) -> str:
    from pipeline.distill.abstraction import Abstractor

    return Abstractor(t.cwd)(text)


def test_prompts_are_at_most_a_fifth_of_the_raw_trajectories(corpus: Path) -> None:
    """On the whole corpus, what is sent (system prompt and response schema included) is <= 1/5.

    Per JSON format, the transcript itself is <= 1/5 too; the whole prompt only where the format
    has enough data (>= 1 MB) for the fixed ~6 KB per request to be amortised. Formats with under
    10 KB of files are too small to measure (a synthetic OpenCode tree, whose session file is
    220 bytes and whose trajectory is assembled from other files). Aider's history is already a
    compact Markdown rendering made mostly of its edits (kept whole, as diffs): it shrinks to
    ~0.3, which the corpus-wide figure absorbs.
    """
    raw = sent = 0
    per_format: dict[str, list[int]] = {}
    for path, trajectories in _corpus(corpus):
        size = path.stat().st_size
        prompt = sum(job.prompt_bytes for t in trajectories for job in jobs(t, "openai/any"))
        transcript = sum(len(render(t).text().encode()) for t in trajectories)
        raw += size
        sent += prompt
        counts = per_format.setdefault(trajectories[0].source_format, [0, 0, 0])
        counts[0] += size
        counts[1] += prompt
        counts[2] += transcript
    assert sent * 5 <= raw, f"{sent} prompt bytes for {raw} raw bytes"
    for fmt, (size, prompt, transcript) in per_format.items():
        if fmt == "aider":
            assert transcript * 3 <= size, (fmt, transcript, size)
            continue
        if fmt == "cursor-specstory":  # a Markdown rendering already, as aider's: about 0.45 of it is the talk
            assert transcript * 2 <= size, (fmt, transcript, size)
            continue
        if size >= 10_000:
            assert transcript * 5 <= size, (fmt, transcript, size)
        if size >= 1_000_000:
            assert prompt * 5 <= size, (fmt, prompt, size)


def test_long_trajectories_are_chunked_never_cut(corpus: Path) -> None:
    path = corpus / "claude_code/codemie-code/session-3fe1b6bc.jsonl"
    [t, *_] = ingest_file(path)[1]
    rendering = render(t)
    limit = 4000
    chunks = rendering.chunks(limit)
    assert len(chunks) > 5
    assert "".join(c.body for c in chunks) == rendering.body
    assert all(len(c.body) <= limit for c in chunks)
    assert [c.number for c in chunks] == list(range(1, len(chunks) + 1))
    assert all(c.total == len(chunks) for c in chunks)
    # every step rendered lands in a chunk, in order
    firsts = [c.first_step for c in chunks]
    assert firsts == sorted(firsts)
    # each request carries the session header and says which part it is
    requests = jobs(t, "openai/any", chunk_chars=limit)
    assert len(requests) == len(chunks)
    for job in requests:
        user = job.messages[1]["content"]
        assert "Task:" in user and f"Part {job.part} of {job.parts}" in user


def test_a_block_longer_than_a_chunk_is_split_not_dropped() -> None:
    [t] = ingest_file(SAMPLES / "mini_swe_agent/django__django-16255.traj.json")[1]
    rendering = render(t)
    longest = max(len(b.text) for b in rendering.blocks)
    chunks = rendering.chunks(longest // 3)
    assert "".join(c.body for c in chunks) == rendering.body


def test_dumps_are_elided_and_repeated_outputs_referenced(corpus: Path) -> None:
    repeated = 0
    for _, trajectories in _corpus(corpus):
        for t in trajectories:
            rendering = render(t)
            seen: dict[str, int] = {}
            for step in t.steps:
                text = _abstracted(t, step.text).strip("\n")
                if step.kind is not StepKind.TOOL_RESULT or len(text) <= 80:
                    continue
                key = _norm(text)
                if key in seen and step.call_index is not None:
                    block = rendering.block_of(step.index)
                    assert block is not None and f"same output as [{seen[key]}]" in block.text
                    repeated += 1
                seen.setdefault(key, step.index)
    assert repeated > 0
    [t] = ingest_file(SAMPLES / "mini_swe_agent/django__django-16255.traj.json")[1]
    text = render(t).text()
    assert "lines elided" in text  # the file listings and source dumps
    assert "python3 tests/runtests.py sitemaps_tests" in text and "Ran 60 tests" in text  # the final test run
    assert "-            except TypeError:" in text  # the submitted change, as a diff
    assert "/testbed" not in text  # instance paths abstracted


@pytest.mark.parametrize("name", ["claude_code/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"])
def test_edits_are_rendered_as_diffs(name: str) -> None:
    [t, *_] = ingest_file(SAMPLES / name)[1]
    edits = [s for s in t.tool_calls() if s.diff]
    assert edits
    text = render(t).text()
    assert text.count(" EDIT ") + text.count("] EDIT ") >= len(edits)
    for call in edits:
        changed = next(line for line in call.diff.splitlines() if line.startswith(("+", "-")) and len(line) > 3)
        assert _norm(_abstracted(t, changed))[:200] in _norm(text)
