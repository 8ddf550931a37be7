"""``python -m pipeline`` is ``skillmill`` (with the same fast path for recall and hooks)."""

from pipeline.cli.entry import main

main()
