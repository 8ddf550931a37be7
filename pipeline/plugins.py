"""The plugin surface: trajectory formats and LLM backends register here.

Built-ins register through the same hooks as third-party ones. A third-party package
exposes a module with ``@hookimpl def register_formats(register)`` (or
``register_llm_backends``) under the entry point group ``skillmill``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from pipeline.ingest.base import TrajectoryFormat
    from pipeline.llm.backend import LLMBackend

hookspec = pluggy.HookspecMarker("skillmill")
hookimpl = pluggy.HookimplMarker("skillmill")

BUILTIN_PLUGINS = ("pipeline.ingest.formats", "pipeline.llm.backends")


class Hooks:
    @hookspec
    def register_formats(self, register: Callable[[TrajectoryFormat], None]) -> None:
        """Call ``register(fmt)`` for each TrajectoryFormat the plugin provides."""

    @hookspec
    def register_llm_backends(self, register: Callable[[LLMBackend], None]) -> None:
        """Call ``register(backend)`` for each LLMBackend the plugin provides (imports stay lazy)."""

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


@cache
def registered_llm_backends() -> tuple[LLMBackend, ...]:
    """Every registered LLM backend, highest priority first."""
    found: list[Any] = []
    plugin_manager().hook.register_llm_backends(register=found.append)
    return tuple(sorted(found, key=lambda b: (-b.priority, b.name)))
