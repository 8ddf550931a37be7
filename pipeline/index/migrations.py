"""The state database's migrations, each registered by the stage that owns its tables.

A stage's table module calls :func:`register` when it is imported; ``StateDB`` applies what is
registered, in name order, on every open (and again when a stage registers later, see
``StateDB.con``). Names are recorded in ``_migrations``, so a name never changes once released:
a new table or column is a new migration, with the next free number.

Standard library only: stages that keep DuckDB off their import path register from here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Migration = Callable[[Any], None]  # called with the open DuckDB connection, inside its transaction

_REGISTERED: dict[str, Migration] = {}


def register(*migrations: tuple[str, Migration]) -> None:
    """Add ``(name, function)`` migrations; a name taken by another function is a programming error."""
    for name, function in migrations:
        known = _REGISTERED.setdefault(name, function)
        if (known.__module__, known.__qualname__) != (function.__module__, function.__qualname__):
            raise ValueError(f"two migrations named {name!r}: {known.__module__} and {function.__module__}")


def registered() -> list[tuple[str, Migration]]:
    """Every migration registered so far, in name order (the order they are applied in)."""
    return sorted(_REGISTERED.items())


def count() -> int:
    """How many migrations are registered (cheap: ``StateDB.con`` asks at every query)."""
    return len(_REGISTERED)
