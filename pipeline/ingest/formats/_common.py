"""Small helpers the format readers share.

They turn the loosely typed values these formats hold (JSON in strings, part lists, edit
arguments) into the plain strings the builder takes without ever raising, so a field of the
wrong type costs that field, not the file; and they pick the task among the prompts.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from pipeline import voice
from pipeline.ingest.identity import repo_slug as repo_slug  # where the formats have always found it

if TYPE_CHECKING:
    from pipeline.ingest.report import FileReport

#: Argument names agents use for the file a tool reads or writes.
PATH_KEYS = ("file_path", "filePath", "path", "absolute_path", "dir_path", "notebook_path", "directory")

#: Prompts that open a session without asking for anything: not the task when a real request follows.
_CHATTER = re.compile(r"^\s*(hi|hello|hey|yo|hola|ping|test|testing|thanks?( you)?|ok(ay)?|show( me)? (the )?tools|"
                      r"what (tools|can you do).*|who are you|list (your )?tools)\b[\s.!?]*$", re.I)


class BadShape(ValueError):
    """A record whose fields have the wrong type; reported for its line, the rest is read."""


#: What translating a record of an unexpected shape raises: the parsers' own BadShape (a
#: ValueError) and the errors of a field that is missing or of another type than the format says.
SHAPE_ERRORS = (TypeError, AttributeError, ValueError, KeyError)


def shape_error(what: str, exc: Exception) -> str:
    """The report line for a record that could not be read: ``<what>: <why>``.

    Every parser reads record by record and catches ``SHAPE_ERRORS`` around each one, so a bad
    record costs that record; this is the one wording of what it lost.
    """
    if isinstance(exc, BadShape):
        return f"{what}: {exc}"  # says which field and what it should have been
    return f"{what}: unexpected shape ({type(exc).__name__}: {exc})"


def add_record(record: Any, line: int, report: FileReport, add: Callable[[dict[str, Any], int], None],
               noun: str) -> None:
    """Hand one JSONL record to ``add``; a value that is not an object, or an object of the wrong
    shape, is reported for its line (``a 'user' <noun>: ...``) and the read goes on."""
    if not isinstance(record, dict):
        report.error(f"expected a JSON object, found {type(record).__name__}", line)
        return
    try:
        add(record, line)
    except SHAPE_ERRORS as exc:
        report.error(shape_error(f"a {record.get('type')!r} {noun}", exc), line)


def expect(record: dict[str, Any], key: str, kinds: type | tuple[type, ...], what: str = "") -> Any:
    """``record[key]`` when it has one of ``kinds``; None when absent; BadShape otherwise.

    ``what`` names ``record`` when it is not the record the parser reports (a tool call inside
    a message); the report already names that one (``shape_error``).
    """
    value = record.get(key)
    if value is None or isinstance(value, kinds):
        return value
    names = " or ".join(k.__name__ for k in (kinds if isinstance(kinds, tuple) else (kinds,)))
    where = f"{what}: " if what else ""
    raise BadShape(f"{where}{key!r} should be {names}, found {type(value).__name__}")


def loads_object(text: Any) -> dict[str, Any] | None:
    """A JSON object held in a string (tool arguments); None when it is not one."""
    if isinstance(text, dict):
        return text
    if not isinstance(text, str) or not text.lstrip().startswith("{"):
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def as_text(value: Any) -> str:
    """Text of a string, a content part, or a list of parts (``text`` / ``output`` fields)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(t for t in (as_text(v) for v in value) if t)
    if isinstance(value, dict):
        for key in ("text", "output", "content"):
            if isinstance(value.get(key), str | list):
                return as_text(value[key])
        if value.get("type") in ("input_image", "image", "image_url"):
            return "[image]"
    return orjson.dumps(value, default=str).decode()


def paths_in(args: dict[str, Any]) -> list[str]:
    return [args[k] for k in PATH_KEYS if isinstance(args.get(k), str) and args[k]]


def unified(path: str, old: str, new: str) -> str:
    name = path.lstrip("/")
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{name}", f"b/{name}", lineterm="", n=1)
    return "\n".join(lines)


def describe(name: str, args: dict[str, Any]) -> str:
    """One line saying what a non-shell tool call asked for."""
    for key in ("pattern", "query", "url", "description", "objective", "prompt", *PATH_KEYS):
        value = args.get(key)
        if isinstance(value, str) and value:
            return f"{name} {value}"
    return f"{name} {orjson.dumps(args, default=str).decode()[:500]}"


#: Gemini CLI (and its fork Qwen Code) append the files an ``@path`` named to the prompt itself
#: (``atCommandProcessor``): the person's words are what comes before.
_REFERENCED = re.compile(r"\n*--- Content from referenced files ---")


def typed_part(prompt: str) -> str:
    """The person's words of a prompt, without the contents of the files it referenced (``@path``)."""
    match = _REFERENCED.search(prompt)
    return prompt[:match.start()].rstrip() if match else prompt


def pick_task(prompts: list[str]) -> str | None:
    """The first prompt that asks for something; a greeting or "show tools" opener is not the task."""
    prompts = [p for p in prompts if not voice.is_harness(p)]  # skillmill's or the harness's words, not the person's
    for prompt in prompts:
        if prompt.strip() and not _CHATTER.match(prompt):
            return prompt
    return next((p for p in prompts if p.strip()), None)


_CRLF = re.compile(r"\r+\n")
_INSTANCE = re.compile(r"^(?P<owner>[A-Za-z0-9][\w.-]*?)__(?P<repo>[A-Za-z0-9][\w.-]*?)-i?\d+$")
_DIRNAME = re.compile(r"^(?P<owner>[A-Za-z0-9][\w.-]*?)__(?P<repo>[A-Za-z0-9][\w.-]*)$")


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str:
    """A string field as text; numbers and booleans printed, anything else empty."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    return ""


def text_of(content: Any) -> str:
    """Message content in any of the usual shapes: a string, a list of parts, an object."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                parts.append(text if isinstance(text, str) else f"[{as_str(part.get('type')) or 'part'}]")
        return "\n".join(p for p in parts if p)
    if content is None:
        return ""
    return dumps(content)


def dumps(value: Any) -> str:
    try:
        return orjson.dumps(value, default=str).decode()
    except (TypeError, orjson.JSONEncodeError):
        return str(value)


def unix_newlines(text: str) -> str:
    """Terminal output recorded through a pty ends its lines with ``\\r\\n``."""
    return _CRLF.sub("\n", text) if "\r" in text else text




#: pytest's closing line, ``=== 1 failed, 2 passed in 0.12s ===`` (without the rules under ``-q``).
_PYTEST_SUMMARY = re.compile(r"^=*\s*(?P<counts>(?:\d+ \w+, )*\d+ \w+|no tests ran(?:, .*)?) in [\d.]+m?s\b"
                             r"(?: \([\d:.]+\))?\s*=*$")
#: unittest's verdict, after ``Ran N tests in Xs`` (Django's runner then drops its test databases).
_UNITTEST_RAN = re.compile(r"^Ran \d+ tests? in [\d.]+s$")
_UNITTEST_VERDICT = re.compile(r"^(OK|FAILED|NO TESTS RAN)(?: \(.*\))?$")
_UNITTEST_AFTER = re.compile(r"^(?:Destroying (?:old )?test database for alias|Preserving test database)")
_NOT_FOUND = re.compile(r"^(?:(?:/\S+/)?(?:ba|da|z|k)?sh: )?(?:line \d+: |\d+: )?(?:\S+: (?:command )?not found|"
                        r"command not found: \S+)$")
_TRACEBACK = "Traceback (most recent call last):"
#: The line that ends a traceback: the exception's (dotted) class name, then its message.
_EXCEPTION = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?::(?: .*)?)?$")


def exit_code_from_output(output: str) -> int | None:
    """The exit status a command's output shows beyond doubt; None when it does not say.

    For formats that record no exit codes (SWE-agent's observations). Read from the end of
    the output, so only what the command printed last decides:

    * pytest's summary line last: ``N failed`` or ``N error(s)`` -> 1, otherwise tests ran -> 0,
      ``no tests ran`` (or only deselected) -> 5;
    * unittest's verdict after ``Ran N tests``: ``OK`` -> 0, ``FAILED (...)`` -> 1, ``NO TESTS RAN`` -> 5;
    * a shell's ``command not found`` as the whole output -> 127;
    * a Python traceback ending the output with its exception line -> 1 (the interpreter died on it).

    It is the status of the program whose output this is: behind ``| tail`` the shell's own
    status would be tail's, but what a check's result is, is the runner's.
    """
    lines = [line.rstrip() for line in output.strip().splitlines() if line.strip()]
    if not lines:
        return None
    last = lines[-1].strip()
    summary = _PYTEST_SUMMARY.match(last)
    if summary:
        words = {word for part in summary["counts"].split(", ") for word in part.split()[1:2]}
        if words & {"failed", "error", "errors"}:
            return 1
        return 0 if words & {"passed", "skipped", "xfailed", "xpassed"} else 5
    tail = list(lines)
    while len(tail) > 1 and _UNITTEST_AFTER.match(tail[-1]):
        tail.pop()
    verdict = _UNITTEST_VERDICT.match(tail[-1].strip())
    if verdict and any(_UNITTEST_RAN.match(line.strip()) for line in tail[-4:-1]):
        return {"OK": 0, "FAILED": 1}.get(verdict.group(1), 5)
    if len(lines) == 1 and _NOT_FOUND.match(last):
        return 127
    return 1 if _ends_on_traceback(lines) else None


def _ends_on_traceback(lines: list[str]) -> bool:
    """True when the last thing printed is a traceback: its frames, then the exception line."""
    start = max((i for i, line in enumerate(lines) if line.strip() == _TRACEBACK), default=None)
    if start is None or start + 2 >= len(lines):
        return False
    frames, last = lines[start + 1:-1], lines[-1]
    return (frames[0].startswith("  File ") and all(line[:1].isspace() for line in frames)
            and bool(_EXCEPTION.match(last)))


def repo_from_instance(instance_id: Any) -> str | None:
    """``django__django-16255`` -> ``django/django`` (SWE-bench instance ids)."""
    match = _INSTANCE.match(as_str(instance_id))
    return f"{match['owner']}/{match['repo']}" if match else None


def repo_from_dirname(name: str) -> str | None:
    """``pydicom__pydicom`` -> ``pydicom/pydicom`` (how SWE-bench images name the checkout)."""
    match = _DIRNAME.match(name)
    return f"{match['owner']}/{match['repo']}" if match else None


_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$")
_PATCH_MOVE = re.compile(r"^\*\*\* Move to: (.+?)\s*$")


def begin_patch(patch: str) -> tuple[list[str], str | None]:
    """Files and a unified-style diff of an ``*** Begin Patch`` text (Codex's apply_patch, Copilot's edits)."""
    paths: list[str] = []
    out: list[str] = []
    mode = None
    for line in patch.splitlines():
        header = _PATCH_FILE.match(line)
        if header:
            mode, path = header.groups()
            paths.append(path)
            out += [f"--- {'/dev/null' if mode == 'Add' else 'a/' + path}",
                    f"+++ {'/dev/null' if mode == 'Delete' else 'b/' + path}"]
            continue
        moved = _PATCH_MOVE.match(line)
        if moved and out:
            paths.append(moved.group(1))
            out[-1] = f"+++ b/{moved.group(1)}"
            continue
        if line.startswith("*** ") or mode in (None, "Delete"):
            continue
        out.append(line if mode == "Update" or line.startswith("+") else f"+{line}")
    return paths, ("\n".join(out) if out else None)
