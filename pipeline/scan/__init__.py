"""Cold start and staleness: what a checkout says about itself, and which skills fell behind it.

``reader`` scans a checkout (offline, bounded); ``manual`` turns a scan into the repository's
``working-in-<repo>`` manual; ``stale`` checks approved skills against a checkout and keeps the
marks recall and the hook read (``marks``: no pydantic, for the hook path). Layer: below recall,
review and the agents, above distill, ingest and library.
"""
