"""The rule set over commands: each command line read as a shell reads it, then every rule applied.

``scan_command`` checks one command line; ``scan_commands`` checks the command lines of one
skill together, so a download in one step and ``bash`` of that file in the next are seen as
one ``curl ... && bash f``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from pipeline.safety import files, network, tools
from pipeline.safety.findings import Finding, unique
from pipeline.safety.shell import MAX_DEPTH, Command, Script, parse, pipeline_display

#: Rules on the raw text: what the shell reader does not model (a fork bomb defines a function, SQL is not shell).
_TEXT_RULES: list[tuple[re.Pattern[str], str, str]] = [
    (re.compile(r":\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:|\b(\w+)\(\)\s*\{\s*\1\s*\|\s*\1\s*&\s*\}\s*;\s*\1\b"),
     "fork-bomb", "a fork bomb"),
    (re.compile(r"\bdrop\s+(?:table|database|schema)\b", re.I), "drop-database", "drops database objects"),
    (re.compile(r"\b(?:iex|Invoke-Expression)\b[^\n]*(?:DownloadString|Invoke-WebRequest|iwr|irm)\b|"
                r"(?:DownloadString|iwr|irm|Invoke-WebRequest|Invoke-RestMethod)\b[^\n|]*\|\s*(?:iex|Invoke-Expression)\b",
                re.I), "curl-pipe-shell", "runs a downloaded PowerShell script"),
]


def text_rules(text: str) -> Iterator[Finding]:
    for pattern, rule, message in _TEXT_RULES:
        if match := pattern.search(text):
            yield Finding(rule, message, _excerpt(text, match.start(), match.end()))


def _excerpt(text: str, start: int, end: int, width: int = 50) -> str:
    begin, stop = max(0, start - width), min(len(text), end + width)
    snippet = " ".join(text[begin:stop].split())
    return ("..." if begin else "") + snippet + ("..." if stop < len(text) else "")


def scan_script(script: Script, depth: int = 0, fed_budget: list[int] | None = None) -> Iterator[Finding]:
    """Every finding in a parsed command line, nested scripts included."""
    fed_budget = fed_budget if fed_budget is not None else [16]
    for part in script.scripts():
        for pipeline in part.pipelines:
            yield from network.piped_code(pipeline)
            yield from network.exfiltration(pipeline)
            for command in pipeline:
                yield from _command_rules(command)
                fed = network.stdin_program(command) if depth < MAX_DEPTH and fed_budget[0] > 0 else None
                if fed:  # echo '...' | bash, bash <<EOF ... EOF: the text a shell runs
                    fed_budget[0] -= 1
                    for finding in scan_script(parse(fed, depth + 1), depth + 1, fed_budget):
                        yield Finding(finding.rule, finding.message, pipeline_display(pipeline))
    yield from _download_then_run(list(script.commands()))


def _command_rules(command: Command) -> Iterator[Finding]:
    written = files.written_paths(command)
    yield from network.substituted_code(command)
    yield from network.inline_network_code(command)
    yield from files.deletion(command)
    yield from files.persistence(command)
    yield from files.disabled_tests(command)
    yield from tools.git(command)
    yield from tools.package_source(command)
    yield from tools.privilege(command)
    yield from tools.credentials(command, written)


def _download_then_run(commands: list[Command], downloaded: list[str] | None = None) -> Iterator[Finding]:
    """``curl -o /tmp/s.sh ... && bash /tmp/s.sh``, ``wget URL && chmod +x f && ./f``."""
    fetched = downloaded if downloaded is not None else []
    for command in commands:
        if (file := network.runs_file(command, fetched)) is not None:
            yield Finding("curl-pipe-shell", f"downloads a script ({file}) and runs it", command.display())
        fetched += network.downloaded_files(command)


def scan_command(text: str) -> list[Finding]:
    """Every risk in one command line (no repeats)."""
    if not text or not text.strip():
        return []
    found = list(scan_script(parse(text)))
    found += text_rules(text)
    return unique(found)


def scan_commands(texts: Sequence[str]) -> list[list[Finding]]:
    """The findings of each command line of one skill, in order, with downloads in one step and
    runs of that file in a later one seen together."""
    results: list[list[Finding]] = []
    fetched: list[str] = []
    for text in texts:
        findings = scan_command(text)
        if text and text.strip():
            commands = list(parse(text).commands())
            earlier = list(fetched)
            for command in commands:
                fetched += network.downloaded_files(command)
            findings = unique(findings + list(_download_then_run(commands, earlier)))
        results.append(findings)
    return results
