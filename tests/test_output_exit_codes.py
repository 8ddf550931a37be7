"""Exit codes read from a command's output, for formats that record none (``exit_code_from_output``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.ingest import ingest_file
from pipeline.ingest.formats._common import exit_code_from_output

TRACEBACK = ('Traceback (most recent call last):\n  File "/testbed/reproduce.py", line 2, in <module>\n'
             "    import numpy as np\nModuleNotFoundError: No module named 'numpy'\n")


@pytest.mark.parametrize(("output", "code"), [
    ("collected 3 items\n\ntests/test_a.py ..F\n=== 1 failed, 2 passed in 0.12s ===", 1),
    ("....\n4 passed in 0.31s\n", 0),  # -q: no rules around the summary
    ("==== 2 passed, 1 skipped, 3 warnings in 1.02s (0:00:01) ====", 0),
    ("ERROR tests/test_a.py\n!!! Interrupted: 1 error during collection !!!\n===== 1 error in 0.40s =====", 1),
    ("============ no tests ran in 0.01s ============", 5),
    ("===== 7 deselected in 0.05s =====", 5),
    ("..\n----------------------------------------------------------------------\nRan 2 tests in 0.001s\n\nOK\n", 0),
    ("Ran 5 tests in 0.2s\n\nFAILED (failures=1, errors=1)\n"
     "Destroying test database for alias 'default'...\n", 1),  # Django's runner, then its clean-up
    ("Ran 0 tests in 0.000s\n\nNO TESTS RAN\n", 5),
    ("bash: line 1: pytest: command not found\n", 127),
    ("/bin/sh: 1: ponyc: not found", 127),
    ("zsh: command not found: rg", 127),
    (TRACEBACK, 1),
    # Not said beyond doubt: None.
    ("", None),
    ("344\n", None),
    ("OK\n", None),  # a script printing OK is not unittest's verdict
    ("FAILED (failures=1)\n", None),  # nor without "Ran N tests" before it
    ("=== 1 failed in 0.2s ===\nretrying...\n", None),  # the summary is not the last thing printed
    ("bash: line 1: pytest: command not found\nbut this ran on\n", None),
    (TRACEBACK + "done\n", None),  # the program went on after printing a traceback
    ("Traceback (most recent call last):\n  File \"x.py\", line 1\nsome output\nValueError: x\n", None),
    ("ValueError: bad value\n", None),  # an exception line without its traceback
])
def test_what_an_output_says_about_its_exit(output: str, code: int | None) -> None:
    assert exit_code_from_output(output) == code


def test_it_agrees_with_the_exit_codes_the_corpus_records(corpus: Path) -> None:
    """mini-swe-agent records every command's returncode: where the output alone answers, it agrees.

    The one miss is a script the agent wrote to catch the bug's exception and print its traceback
    (``traceback.print_exc()``), which exits 0: a traceback printed last cannot tell them apart.
    """
    answered, misses = 0, []
    for path in sorted((corpus / "mini_swe_agent").rglob("*.traj.json")):
        _, trajectories = ingest_file(path)
        for t in trajectories:
            for call in t.tool_calls():
                result = t.result_of(call)
                if result is None or result.exit_code is None:
                    continue
                read = exit_code_from_output(result.text)
                if read is None:
                    continue
                answered += 1
                if read != result.exit_code:
                    misses.append((path.name, call.command, read, result.exit_code))
    assert answered == 52
    assert misses == [("scikit-learn__scikit-learn-12585.traj.json", "python3 reproduce_issue.py", 1, 0)]
