"""``python -m pipeline`` is ``skillmill``."""

from pipeline.cli import main

main()
