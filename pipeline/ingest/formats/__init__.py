"""Built-in trajectory formats. They register through the same hook as third-party plugins."""

from collections.abc import Callable

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats.aider import Aider
from pipeline.ingest.formats.claude_code import ClaudeCode
from pipeline.ingest.formats.mini_swe_agent import MiniSweAgent
from pipeline.plugins import hookimpl


@hookimpl
def register_formats(register: Callable[[TrajectoryFormat], None]) -> None:
    register(ClaudeCode())
    register(MiniSweAgent())
    register(Aider())
