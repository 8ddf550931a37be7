"""What the LLM distiller sends: prompt bytes vs raw trajectory bytes, and requests/tokens per trajectory.

Run from the repository root (it uses the stand-in server of the test suite, nothing leaves
the machine)::

    PYTHONPATH=$PWD python benchmarks/llm_distill.py [CORPUS] [--serve]

Part 1 renders every trajectory file skillmill reads under CORPUS (default: the shared
corpus) and prints, per format, raw bytes, the compact transcript, the whole prompts (system
prompt and response schema included, ~6 KB per request), and as a baseline measured in the
same run the trajectory's steps as parsed (all step texts, commands and diffs: what sending
the session without compaction would cost). It also counts exit codes and error
lines that the rendering lost (the goal is 0).

Part 2 (``--serve``) runs the real nightly flow over CORPUS with
``SKILLMILL_MODEL=openai/stand-in`` against the stand-in OpenAI-compatible server on
127.0.0.1 (it answers with drafts built from the commands in each prompt), prints requests
and tokens per trajectory, then runs again and prints what the second run sent.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

from pipeline.distill.abstraction import Abstractor  # noqa: E402
from pipeline.distill.llm.extract import jobs  # noqa: E402
from pipeline.distill.render import render  # noqa: E402
from pipeline.ingest import ingest_file, iter_files  # noqa: E402
from pipeline.trajectory.commands import ERROR_LINE, error_signature  # noqa: E402
from pipeline.trajectory.model import StepKind  # noqa: E402


def default_corpus() -> Path:
    for candidate in (os.environ.get("SKILLMILL_SHARED"), ROOT.parent / "shared", Path("/work/shared")):
        if candidate and (Path(candidate) / "trajectories").is_dir():
            return Path(candidate) / "trajectories"
    raise SystemExit("no corpus found: pass a folder or set SKILLMILL_SHARED")


def _norm(text: str) -> str:
    return " ".join(text.split())


def compaction(corpus: Path) -> None:
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0])  # files, trajs, raw, parsed, body, prompt
    ratios: list[tuple[float, str]] = []
    lost_codes = lost_errors = codes = errors = chunked = 0
    started = time.perf_counter()
    for path in iter_files([corpus]):
        _, trajectories = ingest_file(path)
        if not trajectories:
            continue
        raw = path.stat().st_size
        parsed = body = prompt = 0
        for t in trajectories:
            parsed += sum(len((s.text or "") + (s.command or "") + (s.diff or "")) for s in t.steps)
            rendering = render(t)
            body += len(rendering.text().encode())
            requests = jobs(t, "openai/any")
            chunked += len(requests) > 1
            prompt += sum(job.prompt_bytes for job in requests)
            blocks = {s: b.text for b in rendering.blocks for s in b.steps}
            abstract = Abstractor(t.cwd)
            for step in t.steps:
                if step.kind is not StepKind.TOOL_RESULT:
                    continue
                block = blocks.get(step.index, "")
                if step.exit_code is not None:
                    codes += 1
                    lost_codes += f"exit {step.exit_code}" not in block
                if step.exit_code not in (None, 0) or step.is_error:
                    found = [m.group(1).strip() for m in ERROR_LINE.finditer(step.text)]  # without pytest's E gutter
                    found += [error_signature(step.text) or ""]
                    text = _norm(rendering.text())
                    for line in (f for f in found if len(f) > 3):
                        errors += 1
                        wanted = _norm(abstract(line))  # as tests/test_render.py: a long line keeps its ends
                        parts = [wanted] if len(wanted) <= 350 else [wanted[:250], wanted[-100:]]
                        lost_errors += not all(part in text for part in parts)
        row = rows[trajectories[0].source_format]
        for i, value in enumerate((1, len(trajectories), raw, parsed, body, prompt)):
            row[i] += value
        ratios.append((prompt / raw, str(path.relative_to(corpus))))
    elapsed = time.perf_counter() - started

    print(f"Compaction on {corpus} ({elapsed:.1f} s)")
    print(f"{'format':<16}{'files':>6}{'trajs':>6}{'raw MB':>9}{'parsed MB':>11}{'prompt MB':>11}"
          f"{'transcript/raw':>16}{'prompt/raw':>12}{'prompt/parsed':>15}")
    total = [0] * 6
    for fmt, row in sorted(rows.items()):
        total = [a + b for a, b in zip(total, row, strict=True)]
        _line(fmt, row)
    _line("all", total)
    ordered = sorted(ratios)
    print(f"per file prompt/raw: median {statistics.median(r for r, _ in ordered):.3f}, "
          f"max {ordered[-1][0]:.3f} ({ordered[-1][1]}); files above 1/5: "
          f"{sum(r > 0.2 for r, _ in ordered)} of {len(ordered)}; trajectories sent in several chunks: {chunked}")
    print(f"kept: exit codes {codes - lost_codes}/{codes}, error lines {errors - lost_errors}/{errors}")


def _line(name: str, row: list[int]) -> None:
    files, trajs, raw, parsed, body, prompt = row
    mb = 1024 * 1024
    print(f"{name:<16}{files:>6}{trajs:>6}{raw / mb:>9.2f}{parsed / mb:>11.2f}{prompt / mb:>11.2f}"
          f"{body / raw:>16.3f}{prompt / raw:>12.3f}{prompt / max(parsed, 1):>15.3f}")


def serve(corpus: Path) -> None:
    from tests.fake_llm import FakeLLM, grounded_answer

    work = Path(tempfile.mkdtemp(prefix="skillmill-bench-"))
    os.environ.update(SKILLMILL_HOME=str(work / "home"), PREFECT_HOME=str(work / "prefect"),
                      PREFECT_LOGGING_LEVEL="CRITICAL", PREFECT_SERVER_LOGGING_LEVEL="CRITICAL",
                      SKILLMILL_MODEL="openai/stand-in", PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180")
    from flows.nightly import nightly
    from pipeline.index.state import StateDB

    with FakeLLM(grounded_answer) as fake:
        os.environ["SKILLMILL_API_BASE"] = fake.url
        started = time.perf_counter()
        summary = nightly(paths=[str(corpus)], library=str(work / "skills"))
        elapsed = time.perf_counter() - started
        first = len(fake.requests)
        sent = sum(len(m.get("content") or "") for body in fake.requests for m in body["messages"]
                   if "NEW DRAFT" not in body["messages"][-1]["content"])
        again = nightly(paths=[str(corpus)], library=str(work / "skills"))
    with StateDB() as state:
        per = state.con.execute("""
            SELECT trajectory_id, count(*), sum(input_tokens), sum(output_tokens),
                   count(*) FILTER (WHERE purpose = 'extract')
            FROM llm_calls WHERE run_id = ? GROUP BY trajectory_id""", [summary["run_id"]]).fetchall()
    llm, info = summary["llm"], summary["distillation"]
    seen = summary["trajectories"]["seen"]
    print(f"\nStand-in run over {corpus}: {seen} trajectories, {elapsed:.1f} s (flow, parse, model, write)")
    print(f"requests: {llm['requests']} ({sum(r[4] for r in per)} extract, "
          f"{llm['requests'] - sum(r[4] for r in per)} merge decisions); "
          f"tokens in {llm['input_tokens']:,}, out {llm['output_tokens']:,}; cost ${llm['cost_usd']:.4f} (unpriced)")
    requests = [r[1] for r in per]
    tokens_in = [r[2] for r in per]
    raw = sum(p.stat().st_size for p in iter_files([corpus]) if ingest_file(p)[1])
    print(f"prompt text actually sent for extraction (messages as received by the server, schema included): "
          f"{sent / 1024 / 1024:.2f} MB for {raw / 1024 / 1024:.2f} MB of trajectory files = {sent / raw:.3f}")
    print(f"per trajectory sent: requests mean {statistics.mean(requests):.2f} max {max(requests)}; "
          f"input tokens mean {statistics.mean(tokens_in):,.0f} median {statistics.median(tokens_in):,.0f} "
          f"max {max(tokens_in):,}; output tokens mean {statistics.mean(r[3] for r in per):,.0f}")
    print(f"skills: {summary['skills']}; drafts {info['drafts']}; grounding {info['grounding']}; "
          f"flagged {len(info['flagged'])}; nothing reusable {len(summary['nothing_reusable'])}")
    print(f"second run: {len(fake.requests) - first} requests sent, llm {again['llm']}")
    print(f"(state and skills in {work})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path)
    parser.add_argument("--serve", action="store_true", help="also run the flow against the stand-in server")
    args = parser.parse_args()
    corpus = args.corpus or default_corpus()
    compaction(corpus)
    if args.serve:
        serve(corpus)


if __name__ == "__main__":
    main()
