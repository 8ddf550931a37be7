"""One root exception; every error carries what to do next."""

from __future__ import annotations


class SkillmillError(Exception):
    """Root of every error skillmill raises on purpose.

    ``hint`` tells the user what to do next; the CLI prints it under the message.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class UsageError(SkillmillError):
    """Bad arguments or configuration (CLI exit code 2)."""


class ParseError(SkillmillError):
    """A trajectory file (or one line of it) could not be read."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.path = path
        self.line = line


class SkillFileError(SkillmillError):
    """A SKILL.md file is malformed or does not validate."""

    def __init__(self, message: str, *, path: str | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.path = path


class IndexError_(SkillmillError):
    """The DuckDB index is missing, locked or unreadable."""
