"""Helpers for the review tests: a library distilled from real sessions by the pipeline's own stages.

A run over ``samples/`` writes one ``working-in-<repo>`` manual per repository (the zero-LLM
distiller drafts no skill per session): django, flask, matplotlib (its Environment pitfall runs
``apt-get install``; learned from one failed run, so flagged low-evidence), sympy, and the aider
history's ``monochromatic...`` (learned only from unverified sessions). A test that needs a
per-session procedure skill adds :func:`serialization_skill`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pipeline import stages
from pipeline.index.state import StateDB
from pipeline.library import Library
from pipeline.library.model import Evidence, Item, Pitfall, Skill, SourceRef
from pipeline.summary import RunSummary
from tests.conftest import SAMPLES

DJANGO = ("django__django-16255", "django__django-16938", "django__django-10999")
#: What a run over samples/ writes, by name.
MANUALS = ("working-in-django", "working-in-flask", "working-in-matplotlib",
           "working-in-monochromatic2025may24-pnpmtest", "working-in-sympy")
SERIALIZATION = "django-serialization-m2m-relation-fails-custom-manager"
#: The samples' django-16938 session (resolved), as the trajectory id the pipeline gives it.
SERIALIZATION_SESSION = "1bb3ae7abf453349"


def build(paths: list[Path], library: Path) -> RunSummary:
    """What `skillmill run` does, minus Prefect: parse, store, distill, write, index (same stage functions)."""
    lib = Library(library)
    summary = RunSummary(library=str(lib.root))
    trajectories = []
    for file in stages.discover(paths):
        report, found = stages.parse(file)
        summary.add_file(report)
        trajectories.extend(found)
    with StateDB() as state:
        stages.store_trajectories(state, trajectories)
        results = [stages.distill_one(t) for t in stages.pending(state, trajectories)]
        stages.write(state, lib, results, summary)
        stages.index(state, lib, summary)
    return summary


def django_inputs(tmp_path: Path, *names: str) -> Path:
    """A folder holding some of the real mini-swe-agent django sessions (with their report.json labels)."""
    folder = tmp_path / ("in-" + "-".join(n.rsplit("-", 1)[-1] for n in names))
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        for file in (SAMPLES / "mini_swe_agent").glob(f"{name}.*"):
            shutil.copy(file, folder / file.name)
    return folder


def serialization_skill() -> Skill:
    """A per-session procedure skill: the one the earlier distiller drafted from the real django-16938
    session (steps cite that session), whose fix is two ``sed -i`` edits -- unflagged, and not ordinary."""
    t = SERIALIZATION_SESSION

    def ev(*steps: int) -> list[Evidence]:
        return [Evidence(trajectory=t, steps=list(steps))]

    old = 'return getattr(obj, field.name).only("pk").iterator()'
    new = 'return getattr(obj, field.name).select_related(None).only("pk").iterator()'
    edits = [Item(text=f"Edit `django/core/serializers/{f}`: replace `{old}` with `{new}`.",
                  command=f"sed -i 's/{old}/{new}/' django/core/serializers/{f}", evidence=ev(*steps))
             for f, steps in (("python.py", (22, 23)), ("xml_serializer.py", (43, 44)))]
    return Skill(
        name=SERIALIZATION, kind="procedure", confidence=0.9, outcome="resolved", repo="django/django",
        title="Serialization of m2m relation fails with custom manager using select_related",
        description="Use when in django/django you need to: Serialization of m2m relation fails with custom "
                    "manager using select_related. Procedure that resolved it, touches "
                    "django/core/serializers/python.py, django/core/serializers/xml_serializer.py, verified with "
                    "`./tests/runtests.py serializers`.",
        sources=[SourceRef(trajectory=t, agent="mini-swe-agent", outcome="resolved",
                           task="Serialization of m2m relation fails with custom manager using select_related")],
        procedure=[
            Item(text="Locate and read the code involved: `django/core/serializers/python.py`, "
                      "`django/core/serializers/xml_serializer.py`.", evidence=ev(19, 20)),
            Item(text="Reproduce the problem before changing code.", command="python3 reproduce_issue.py",
                 evidence=ev(16, 17)),
            *edits,
            Item(text="Run the check under Verification and confirm it passes."),
        ],
        pitfalls=[Pitfall(symptom="`python3 reproduce_issue.py` failed: `django.db.utils.OperationalError: no such "
                                  "table: __main___testtagmaster`", fix="edit `reproduce_issue.py`, then run it again",
                          evidence=ev(10, 11, 13, 14, 16, 17))],
        verification=[Item(text="The test command passes (exit code 0) after the change.",
                           command="./tests/runtests.py serializers", evidence=ev(58, 59))],
    )
