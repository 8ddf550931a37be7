"""Built-in trajectory formats. They register through the same hook as third-party plugins."""

from collections.abc import Callable

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats.aider import Aider
from pipeline.ingest.formats.atif import Atif
from pipeline.ingest.formats.claude_code import ClaudeCode
from pipeline.ingest.formats.codex import CodexRollout
from pipeline.ingest.formats.crush import Crush, OpenCodeGo
from pipeline.ingest.formats.cursor import CursorAgent, CursorIde
from pipeline.ingest.formats.gemini_cli import GeminiCli
from pipeline.ingest.formats.goose import Goose, GooseJsonl
from pipeline.ingest.formats.mini_swe_agent import MiniSweAgent
from pipeline.ingest.formats.opencode import OpenCodeStorage
from pipeline.ingest.formats.opencode_db import OpenCodeDb, OpenCodeExport
from pipeline.ingest.formats.openhands import OpenHands
from pipeline.ingest.formats.specstory import SpecStory
from pipeline.ingest.formats.swe_agent import SweAgent
from pipeline.plugins import hookimpl


@hookimpl
def register_formats(register: Callable[[TrajectoryFormat], None]) -> None:
    register(ClaudeCode())
    register(MiniSweAgent())
    register(CodexRollout())
    register(GeminiCli())
    register(OpenCodeStorage())
    register(SweAgent())
    register(OpenHands())
    register(Atif())
    register(Aider())
    register(Crush())
    register(OpenCodeGo())
    register(Goose())
    register(GooseJsonl())
    register(OpenCodeDb())
    register(OpenCodeExport())
    register(CursorIde())
    register(CursorAgent())
    register(SpecStory())
