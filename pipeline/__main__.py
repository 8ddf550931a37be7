"""``python -m pipeline`` is ``skillmill`` (with the same fast path for recall and hooks)."""

from pipeline.entry import main

main()
