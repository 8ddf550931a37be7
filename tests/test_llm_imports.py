"""`import litellm` (~2 s, and a price-map download when not offline) stays out of paths that call no model.

Checked in a fresh interpreter, since this test process imports litellm elsewhere: ingest, a
run with the zero-LLM distiller, recall, and a run with a model configured whose every
answer is already cached (a rerun over unchanged input makes no request, so imports nothing).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SAMPLES
from tests.fake_llm import FakeLLM, grounded_answer

pytestmark = pytest.mark.usefixtures("prefect_server")

SCRIPT = """
import json, os, sys
from pipeline.cli import main

def go(*args):
    try:
        main(list(args), standalone_mode=False)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
    return {name: name in sys.modules for name in ("litellm", "instructor", "openai")}

report = {}
os.environ["SKILLMILL_HOME"] = sys.argv[1]
report["ingest"] = go("ingest", "--json", sys.argv[3])
report["run"] = go("run", sys.argv[3], "--library", sys.argv[1] + "/skills")
report["recall"] = go("recall", "--include-candidates", "django test")
os.environ["SKILLMILL_HOME"] = sys.argv[2]  # the home of a model run whose answers are all cached
os.environ["SKILLMILL_MODEL"] = sys.argv[4]
os.environ["SKILLMILL_API_BASE"] = sys.argv[5]
report["rerun with a model, all cached"] = go("run", sys.argv[3], "--library", sys.argv[2] + "/skills")
print("REPORT " + json.dumps(report))
"""


def test_litellm_is_imported_only_when_a_model_is_called(stand_in: FakeLLM, tmp_path: Path,
                                                         isolated_home: Path) -> None:
    from click.testing import CliRunner

    from pipeline.cli import main

    inputs = SAMPLES / "mini_swe_agent"
    stand_in.responder = grounded_answer
    first = CliRunner().invoke(main, ["run", str(inputs), "--library", str(isolated_home / "skills")],
                               catch_exceptions=False)
    assert first.exit_code == 0, first.output
    sent = len(stand_in.requests)
    assert sent >= 4

    from prefect.settings import PREFECT_API_URL

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLMILL_", "PREFECT_API"))}
    env.update(PYTHONPATH=str(ROOT), PREFECT_HOME=str(tmp_path / "prefect"), PREFECT_LOGGING_LEVEL="CRITICAL",
               PREFECT_API_URL=str(PREFECT_API_URL.value()))  # the session's test server: no second server
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "plain"), str(isolated_home), str(inputs),
         os.environ["SKILLMILL_MODEL"], os.environ["SKILLMILL_API_BASE"]],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.split("REPORT ", 1)[1])
    assert len(report) == 4
    for path, modules in report.items():
        assert modules == {"litellm": False, "instructor": False, "openai": False}, path
    assert len(stand_in.requests) == sent  # the rerun asked nothing
