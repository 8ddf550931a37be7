"""Redaction at the ingest boundary: nothing secret is stored, indexed, written, printed or prompted.

    from pipeline.redact import sanitize, current
    clean = sanitize("curl -H 'Authorization: Bearer eyJ...'")   # a Sanitized str
    text, counts = current().redact(raw)                          # counts: {kind: n}

Every trajectory format feeds ``TrajectoryBuilder``, which sanitizes each text it is given;
the trajectory model's text fields are typed :class:`Sanitized` and sanitize any plain
string put into them, so later code (storage, distillers, prompts) only ever sees redacted
text. The detector modules (``rules``, ``assignments``, ``commands``, ``prose``, ``encoded``)
load on first use.

``prose_password(text)`` reports a password stated in prose even when it is too plain a word
to redact ("the staging password is tulip"): review flags such a skill ``possible-secret``.
"""

import re

from pipeline.redact.engine import PLACEHOLDER_RE, Finding, Redactor, current, placeholder, redact, sanitize
from pipeline.redact.sanitized import EMPTY, Sanitized, collecting, fallback_count


def prose_password(text: str) -> re.Match[str] | None:
    """See :func:`pipeline.redact.prose.prose_password` (imported on first use, like the detectors)."""
    from pipeline.redact.prose import prose_password as find

    return find(text)


__all__ = ["EMPTY", "PLACEHOLDER_RE", "Finding", "Redactor", "Sanitized", "collecting", "current",
           "fallback_count", "placeholder", "prose_password", "redact", "sanitize"]
