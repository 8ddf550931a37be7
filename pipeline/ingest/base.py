"""What a trajectory format plugin provides."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path

from pipeline.ingest.reader import Checkpoint, Probe
from pipeline.ingest.report import FileReport
from pipeline.trajectory import StepKind, Trajectory

#: Harness refusals say so at the start of the result; the rest may quote the project's code.
_PROTOCOL_HEAD = 600


class TrajectoryFormat(ABC):
    """One on-disk format. Detection is by content (``sniff``), never by file name alone."""

    #: Stable identifier, printed in reports (``claude-code``).
    name: str
    #: The agent that writes it.
    agent: str
    #: One line for ``skillmill formats``.
    description: str
    #: Where the agent keeps these files, for discovery and for ``skillmill formats``.
    locations: tuple[str, ...] = ()
    #: File name suffixes worth probing when walking a directory.
    suffixes: tuple[str, ...] = (".jsonl", ".json")
    #: Higher runs first when several formats could claim a file.
    priority: int = 0
    #: True when ``resume`` can continue a file that only grows (append-only JSONL sessions).
    incremental: bool = False
    #: The agent harness's own refusals of a tool call, matched against the start of a tool
    #: result (``File has not been read yet``, a SEARCH block that did not match ...): the agent
    #: misused its tools, the project did not fail. Results that match get ``protocol_error``.
    protocol_errors: re.Pattern[str] | None = None

    def mark_protocol_errors(self, trajectory: Trajectory) -> None:
        """Set ``protocol_error`` on the tool results this format's harness refused."""
        if self.protocol_errors is None:
            return
        for step in trajectory.steps:
            if step.kind is StepKind.TOOL_RESULT and self.protocol_errors.search(step.text[:_PROTOCOL_HEAD]):
                step.protocol_error = True

    def declared(self, probe: Probe) -> bool:
        """True when the file names this format itself (``"schema_version": "ATIF-v1.2"``).

        Asked of every format before any ``sniff``: a file that says what it is wins over cues
        of other formats (an ATIF file converted from OpenHands carries OpenHands' metadata).
        """
        return False

    @abstractmethod
    def sniff(self, probe: Probe) -> bool:
        """True when the file's first bytes are this format."""

    @abstractmethod
    def parse(self, path: Path, report: FileReport) -> Iterator[Trajectory]:
        """Yield the trajectories in the file; record bad lines in ``report`` and go on."""

    def resume(self, path: Path, report: FileReport, checkpoint: Checkpoint) -> Iterator[Trajectory]:
        """Continue reading at ``checkpoint`` and leave it where this read stopped (``incremental`` only).

        ``checkpoint.state`` is what this format stored after the bytes up to ``checkpoint.offset``
        (None: start from the beginning). Trajectories come out whole -- the steps read before
        plus the appended ones -- exactly as ``parse`` would give them for the whole file.
        Formats that do not implement it are re-read whole when their file changes
        (``pipeline.ingest.watermark``).
        """
        raise NotImplementedError(f"{self.name} cannot resume a partly read file")
