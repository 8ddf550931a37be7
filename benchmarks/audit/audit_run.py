"""Audit a library against the sessions as the ``pipeline`` on PYTHONPATH ingests them; print the findings as JSON.

    PYTHONPATH=<checkout>:<this repository> python -P benchmarks/audit/audit_run.py LIBRARY CORPUS [LESSONS]

A library cites trajectories by id, and an id is whatever that version's ingest made of a session
(its outcome, how it split a file, the repo's name). So ``benchmarks/skill_quality.py`` audits
each library in a process whose ``pipeline`` is the one that wrote it -- first on PYTHONPATH --
while ``benchmarks.audit`` comes from this repository behind it (the baseline's tree holds no
``benchmarks``). The auditor uses only ingest APIs both versions have. A manual's served size is
measured with that version's ``pipeline.library.markdown.served`` where it exists, else with the
auditor's own stripping (``benchmarks.audit.served_text``). The last line of stdout is the JSON:
``benchmarks.audit.summary`` plus which ``pipeline`` and ``benchmarks.audit`` were imported, the
sessions loaded, how the served text was made, and the seconds it took.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path


def server() -> tuple[Callable, Callable[[], str]]:
    """The text an agent is given of a skill (this version's ``served``, else the auditor's stripping), and
    a function saying which made the texts served so far."""
    from benchmarks.audit import served_text

    try:
        from pipeline.library.markdown import parse, served
    except ImportError:
        return served_text, lambda: "the auditor's stripping"
    unread: list[str] = []

    def serve(skill) -> str:
        try:
            return served(parse(skill.path.read_text(encoding="utf-8"), str(skill.path)))
        except Exception:  # a file this version cannot read back is measured like the baseline's
            unread.append(skill.name)
            return served_text(skill)

    def made_by() -> str:
        return "pipeline.library.markdown.served" + (f" ({len(unread)} unreadable by it: the auditor's stripping)"
                                                     if unread else "")

    return serve, made_by


def main() -> None:
    library, corpus = Path(sys.argv[1]), Path(sys.argv[2])
    lessons = Path(sys.argv[3]) if len(sys.argv) > 3 else None
    started = time.perf_counter()
    import benchmarks.audit
    import pipeline
    from benchmarks.audit import audit, load_sessions, summary

    sessions = load_sessions([corpus])
    report = audit(library, sessions, lessons)
    serve, served_by = server()
    result = summary(report, serve)
    result.update({
        "pipeline": str(Path(pipeline.__file__).parent),
        "auditor": str(Path(benchmarks.audit.__file__).parent),
        "sessions": len(sessions),
        "served_by": served_by(),
        "seconds": round(time.perf_counter() - started, 1),
    })
    print(json.dumps(result))


if __name__ == "__main__":
    main()
