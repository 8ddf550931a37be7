"""Fixtures for the LLM tests: the stand-in server, a loopback-only network, an LLM config file."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_llm import FakeLLM

LOOPBACK = {"127.0.0.1", "::1", "localhost"}


@pytest.fixture
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse any connection that is not to this machine: a test that tries the network fails."""
    connect = socket.socket.connect

    def guarded(self: socket.socket, address: object) -> object:
        host = address[0] if isinstance(address, tuple) else None
        if host is not None and host not in LOOPBACK:
            raise AssertionError(f"a test tried to reach {address}")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch, isolated_home: Path, loopback_only: None) -> Iterator[FakeLLM]:
    """The stand-in server, with SKILLMILL_MODEL / SKILLMILL_API_BASE pointing at it and fast retries."""
    with FakeLLM() as server:
        monkeypatch.setenv("SKILLMILL_MODEL", "openai/stand-in")
        monkeypatch.setenv("SKILLMILL_API_BASE", server.url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        write_config(isolated_home, retries=2, retry_delay=0.01)
        yield server


def write_config(home: Path, **llm: object) -> None:
    home.mkdir(parents=True, exist_ok=True)
    lines = ["[llm]"] + [f"{k} = {v!r}" if not isinstance(v, str) else f'{k} = "{v}"' for k, v in llm.items()]
    (home / "skillmill.toml").write_text("\n".join(lines) + "\n")
