"""Review: nothing reaches an agent until a person approves it.

``queue`` (what waits, filtered, with ``flags``), ``batch`` (which skills a batch may approve:
default-deny), ``evidence`` (the trajectory steps behind each item), ``decisions`` (approve /
reject / deprecate / edit / restore, logged and republished) and ``web`` (the same in a browser).
The library layout, version history, audit log and rejection memory these build on live in
``pipeline.library``; the risk rules in ``pipeline.safety``.
"""

from pipeline.review.batch import batch_refusals
from pipeline.review.decisions import Batch, Decision, Review, ReviewError, reviewer
from pipeline.review.flags import Flag, risk_flags
from pipeline.review.queue import Filters, NotFound, ReviewItem, diff_for, find, items

__all__ = ["Batch", "Decision", "Filters", "Flag", "NotFound", "Review", "ReviewError", "ReviewItem", "batch_refusals",
           "diff_for", "find", "items", "reviewer", "risk_flags"]
