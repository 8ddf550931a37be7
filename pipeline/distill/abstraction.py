"""Replace instance-specific values so a procedure transfers to the next task.

Absolute paths under the session's working directory become relative, home directories
become ``~``, and ids (UUIDs, long hex digests, agent session ids) become placeholders
(Agent Workflow Memory's trick). The mapping is deterministic: same input, same text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_HEX = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{12,64}\b")
_HOME = re.compile(r"(?:/Users|/home)/[^/\s'\"]+(?=/|\b)|C:\\Users\\[^\\\s'\"]+")
_TMP = re.compile(r"/(?:private/)?(?:var/folders/[^\s'\"]+?/T|tmp)/(?:tmp|pytest-of-)[\w.-]+")


@dataclass(frozen=True)
class Abstractor:
    """Abstracts text from one trajectory, which ran in ``cwd``."""

    cwd: str | None = None

    def __call__(self, text: str) -> str:
        if not text:
            return text
        if self.cwd and len(self.cwd) > 1:
            root = self.cwd.rstrip("/")
            text = re.sub(re.escape(root) + r"/", "", text)
            text = re.sub(re.escape(root) + r"(?=[\s'\"]|$)", ".", text)
        text = _UUID.sub("<uuid>", text)
        text = _HEX.sub("<hash>", text)
        text = _TMP.sub("<tmp>", text)
        text = _HOME.sub("~", text)
        return text

    def path(self, path: str) -> str:
        abstracted = self(path)
        return abstracted[2:] if abstracted.startswith("./") else abstracted
