"""What a trajectory format plugin provides."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path

from pipeline.ingest.reader import Checkpoint, Probe
from pipeline.ingest.report import FileReport
from pipeline.trajectory import Trajectory


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
