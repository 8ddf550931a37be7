"""Run reports: what each nightly run did, published to Prefect, kept in DuckDB, listed by ``skillmill runs``.

The ``runs`` table of the state database is the record (``pipeline.runs.tables.record_run``). From it,
:mod:`pipeline.runs.report` renders the report the Prefect UI shows as a markdown artifact and
writes a small snapshot file of recent runs; :mod:`pipeline.runs.history` reads the table, or
that snapshot while a run holds the database.
"""

from pipeline.runs.history import RunHistory, recent
from pipeline.runs.report import ARTIFACT_KEY, RunReport, publish

__all__ = ["ARTIFACT_KEY", "RunHistory", "RunReport", "publish", "recent"]
