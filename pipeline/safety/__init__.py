"""Safety rules: what in a skill's commands and text can do harm if an agent follows it.

One rule set, below both the distillers (``metadata.flags``) and review (risk flags, batch
approval), taking texts and importing nothing else from the project:

* ``shell``: a small shell reader -- a command line split into simple commands, with the
  scripts nested in it (``$(...)``, ``<(...)``, ``bash -c``, ``eval``, here-documents);
* ``rules`` (with ``network``, ``files``, ``tools``): the rules over parsed commands --
  ``scan_command(text)``, ``scan_commands(texts)`` for the command lines of one skill;
* ``prose``: text addressed to AI agents, secrets, and the commands prose holds --
  ``scan_text(text)``, ``scan_command_text(text)``;
* ``ordinary``: what batch approval lets through, a closed description -- ``why_not_ordinary(text)``;
  its per-program tables are data, ``ordinary.toml`` (read and checked by ``tables``, value kinds
  in ``kinds``);
* ``credentials``: credential file names, folders and token prefixes, as data (``credentials.toml``),
  and the glob and search reading that sees them through ``.gi?``, ``*.pem`` or ``A[K]IA``;
* ``findings``: ``Finding``, the rule ids (``RULES``) and the review codes they count under.
"""

from pipeline.safety.findings import CODES, RULES, Finding
from pipeline.safety.ordinary import looks_like_command, why_not_ordinary
from pipeline.safety.prose import scan_command_text, scan_text
from pipeline.safety.rules import scan_command, scan_commands

__all__ = ["CODES", "RULES", "Finding", "looks_like_command", "scan_command", "scan_command_text", "scan_commands",
           "scan_text", "why_not_ordinary"]
