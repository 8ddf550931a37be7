"""The plugin surface: trajectory formats (and, later, LLM backends) register here.

Built-in formats register through the same hook as third-party ones. A third-party package
exposes a module with ``@hookimpl def register_formats(register)`` under the entry point
group ``skillmill``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from pipeline.ingest.base import TrajectoryFormat

hookspec = pluggy.HookspecMarker("skillmill")
hookimpl = pluggy.HookimplMarker("skillmill")

BUILTIN_PLUGINS = ("pipeline.ingest.formats",)


class Hooks:
    @hookspec
    def register_formats(self, register: Callable[[TrajectoryFormat], None]) -> None:
        """Call ``register(fmt)`` for each TrajectoryFormat the plugin provides."""

    @hookspec
    def register_embedders(self, register: Callable[[str, Callable[[str, str], Any]], None]) -> None:
        """Call ``register(kind, factory)`` for each embedder kind; ``factory(spec, path)`` loads one
        (see ``pipeline.recall.semantic``)."""


@cache
def plugin_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("skillmill")
    pm.add_hookspecs(Hooks)
    for name in BUILTIN_PLUGINS:
        pm.register(importlib.import_module(name), name=name)
    pm.load_setuptools_entrypoints("skillmill")
    return pm


@cache
def registered_formats() -> tuple[TrajectoryFormat, ...]:
    """Every registered format, most specific first (by ``priority``)."""
    found: list[Any] = []
    plugin_manager().hook.register_formats(register=found.append)
    return tuple(sorted(found, key=lambda f: (-f.priority, f.name)))
