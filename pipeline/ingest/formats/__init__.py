"""Built-in trajectory formats. They register through the same hook as third-party plugins."""

from collections.abc import Callable

from pipeline.ingest.base import TrajectoryFormat
from pipeline.ingest.formats.aider import Aider
from pipeline.ingest.formats.atif import Atif
from pipeline.ingest.formats.claude_code import ClaudeCode
from pipeline.ingest.formats.claude_stream import ClaudeStreamJson
from pipeline.ingest.formats.cline import ClineTasks
from pipeline.ingest.formats.codex import CodexRollout
from pipeline.ingest.formats.codex_exec import CodexExecJson
from pipeline.ingest.formats.continue_dev import ContinueSessions
from pipeline.ingest.formats.copilot_cli import CopilotCli
from pipeline.ingest.formats.copilot_vscode import CopilotVscode
from pipeline.ingest.formats.crush import Crush, OpenCodeGo
from pipeline.ingest.formats.cursor import CursorAgent, CursorIde
from pipeline.ingest.formats.gemini_cli import GeminiCli
from pipeline.ingest.formats.goose import Goose, GooseJsonl
from pipeline.ingest.formats.kimi_cli import KimiCli
from pipeline.ingest.formats.kiro import KiroCli
from pipeline.ingest.formats.mini_swe_agent import MiniSweAgent
from pipeline.ingest.formats.opencode import OpenCodeStorage
from pipeline.ingest.formats.opencode_db import OpenCodeDb, OpenCodeExport
from pipeline.ingest.formats.openhands import OpenHands
from pipeline.ingest.formats.openhands_v1 import OpenHandsV1
from pipeline.ingest.formats.pi import Pi
from pipeline.ingest.formats.qwen_code import QwenCode
from pipeline.ingest.formats.specstory import SpecStory
from pipeline.ingest.formats.swe_agent import SweAgent
from pipeline.plugins import hookimpl


@hookimpl
def register_formats(register: Callable[[TrajectoryFormat], None]) -> None:
    register(ClaudeCode())
    register(ClaudeStreamJson())
    register(MiniSweAgent())
    register(CodexRollout())
    register(CodexExecJson())
    register(GeminiCli())
    register(QwenCode())
    register(KimiCli())
    register(Pi())
    register(KiroCli())
    register(CopilotCli())
    register(CopilotVscode())
    register(OpenCodeStorage())
    register(SweAgent())
    register(OpenHands())
    register(OpenHandsV1())
    register(Atif())
    register(Aider())
    register(ClineTasks())
    register(ContinueSessions())
    register(Crush())
    register(OpenCodeGo())
    register(Goose())
    register(GooseJsonl())
    register(OpenCodeDb())
    register(OpenCodeExport())
    register(CursorIde())
    register(CursorAgent())
    register(SpecStory())
