"""The tools of Cline, Roo Code and Kilo Code: XML tool uses in assistant text, and their results.

Before native tool calling, these agents ask for a tool by ending the assistant's text with XML,
one tag per parameter (the tags are read the way Cline's ``parseAssistantMessage`` reads them)::

    <replace_in_file>
    <path>src/app.js</path>
    <diff>
    <<<<<<< SEARCH
    ...
    =======
    ...
    >>>>>>> REPLACE
    </diff>
    </replace_in_file>

and the harness answers in the next user message with a block ``[<tool> for '<path|command>']
Result:`` followed by the payload blocks. Native tool calls (Anthropic ``tool_use`` /
``tool_result`` blocks, Roo's AI-SDK ``tool-call`` / ``tool-result`` parts) carry the same
parameter names. This module turns either into the builder's fields (command, paths, diff) and
reads a result's status: Cline records no exit code ("Command executed." and the output), Roo
writes ``Exit code: N``; a denial, a tool error or an edit that did not apply is an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pipeline.ingest.formats._common import describe, exit_code_from_output, unified

#: Tool names of Cline (src/core/prompts), Roo Code and Kilo Code (packages/types tool names).
KNOWN_TOOLS = frozenset({
    "execute_command", "read_file", "write_to_file", "replace_in_file", "apply_diff", "insert_content",
    "search_and_replace", "edit_file", "apply_patch", "search_files", "list_files", "list_code_definition_names",
    "codebase_search", "browser_action", "use_mcp_tool", "access_mcp_resource", "load_mcp_documentation",
    "ask_followup_question", "attempt_completion", "plan_mode_respond", "act_mode_respond", "new_task",
    "switch_mode", "fetch_instructions", "update_todo_list", "run_slash_command", "new_rule", "report_bug",
    "condense", "summarize_task", "web_fetch", "web_search", "focus_chain", "generate_image", "use_skill",
    "skill", "list_skills", "read_command_output",
})
#: Parameters holding free text (a file's content, SEARCH/REPLACE blocks) that may contain tags of
#: their own: the value runs to the *last* closing tag (Cline reads ``content`` the same way).
_FREE_TEXT = ("content", "diff")
#: The harness's answer to a tool use: a text block of its own, the payload in the blocks after it
#: (Cline 3.1x), or the payload in the same block after a line break (newer builds, native calls too).
RESULT_HEADER = re.compile(
    r"\A\[(?P<tool>[A-Za-z_][\w-]*)(?: for (?P<target>.*?))?\] Result:(?:[ \t]*\n(?P<rest>.*))?\s*\Z", re.S)
_OPEN = re.compile(r"<([a-z][a-z0-9_]*)>")
_SEARCH = re.compile(r"^(?:<{3,}|-{3,}) SEARCH>?\s*$")
_DIVIDER = re.compile(r"^={3,}\s*$")
_REPLACE = re.compile(r"^(?:>{3,}|\+{3,}) REPLACE>?\s*$")
_LINE_HINT = re.compile(r"^:(?:start|end)_line:\s*\d+\s*$|^-{3,}\s*$")  # Roo's apply_diff block header
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$", re.M)
_XML_PATH = re.compile(r"<path>\s*(.*?)\s*</path>", re.S)
#: Free text the model wrote for the person (the question, the final result): the call's text.
_MESSAGE_PARAMS = ("result", "response", "question", "message", "follow_up")

#: The person's own words inside a user message (task, feedback, answers); the rest is the harness.
#: Mentions (``@/src/a.js``) append the file after the closing tag, so only the opening is anchored.
_TASK = re.compile(r"\A\s*<task>\n?(?P<text>.*?)\n?</task>", re.S)
_USER_MESSAGE = re.compile(r"<user_message>\n?(?P<text>.*?)\n?</user_message>", re.S)
_FEEDBACK = re.compile(r"<feedback>\n?(?P<text>.*?)\n?</feedback>", re.S)
#: In a tool's result the person's feedback is the block the harness appended at its end; a ``<feedback>`` inside the
#: output it quotes (a running command's, a file's) is the tool's.
_LAST_FEEDBACK = re.compile(r"(?:The user (?:has )?provided (?:the following )?feedback[^\n<]*\s*)?<feedback>\n?"
                            r"(?P<text>(?:(?!<feedback>).)*?)\n?</feedback>", re.S)
_ANSWER = re.compile(r"\A\s*<answer>\n?(?P<text>.*?)\n?</answer>", re.S)
#: How the harness introduces the person's words inside a tool's result (feedback on a completion,
#: on a denied call or a running command, the answer to a question, the message of a mode switch).
#: Anything else in a result is the tool's output, whatever tags it holds (a file read may quote them).
_IN_RESULT = re.compile(r"\A\s*(?:The user (?:has )?provided (?:the following )?feedback|<answer>|<user_message>|"
                        r"\[The user has switched to|New (?:message|instructions)|You seem to be having trouble|"
                        r"Command is still running in (?:the user's )?terminal)")

_ROO_EXIT = re.compile(r"\ACommand executed in terminal[^\n]*?\. Exit code: (?P<code>-?\d+)")
_ROO_SIGNAL = re.compile(r"\ACommand executed in terminal[^\n]*?\. Process terminated by signal")
_OUTPUT = re.compile(r"\ACommand executed\.\nOutput:\n(?P<output>.*)\Z", re.S)
_FAILED = re.compile(r"\A\s*(?:The user denied this operation|The tool execution failed with the following error|"
                     r"<error(?:_details)?>|\[ERROR\]|Error[: ]|Missing value for required parameter|"
                     r"Tool \[[\w-]+\] was not executed|Access to .{1,300}? is blocked by the \.\w+ignore file|"
                     r"This tool cannot be used in PLAN MODE|Invalid JSON argument used with)")


@dataclass
class ToolUse:
    """One tool call as the model wrote it."""

    name: str
    params: dict[str, Any]
    call_id: str | None = None
    #: The text ended before the closing tag (an interrupted response).
    partial: bool = False


@dataclass
class Scan:
    """An assistant text cut into what the model said and the tools it asked for."""

    prose: str
    uses: list[ToolUse] = field(default_factory=list)


def scan(text: str, known: frozenset[str] = KNOWN_TOOLS) -> Scan:
    """The XML tool uses of one assistant text block, and the prose around them."""
    prose: list[str] = []
    uses: list[ToolUse] = []
    position = 0
    for found in _OPEN.finditer(text):
        if found.start() < position or found.group(1) not in known:
            continue
        name = found.group(1)
        prose.append(text[position:found.start()])
        body, end, partial = _body(text, found.end(), name)
        uses.append(ToolUse(name=name, params=_params(body), partial=partial))
        position = end
    prose.append(text[position:])
    return Scan(prose="".join(prose).strip(), uses=uses)


def _body(text: str, start: int, name: str) -> tuple[str, int, bool]:
    """The text inside ``<name>...</name>`` from ``start``, where it ends, and whether it was cut off."""
    close = f"</{name}>"
    search = start
    while True:
        end = text.find(close, search)
        if end < 0:
            return text[start:], len(text), True
        body = text[start:end]
        # a closing tag inside a file's content or a diff is text: the tool ends after that parameter
        if not any(f"<{p}>" in body and f"</{p}>" not in body for p in _FREE_TEXT):
            return body, end + len(close), False
        search = end + len(close)


def _params(body: str) -> dict[str, str]:
    params: dict[str, str] = {}
    position = 0
    while (found := _OPEN.search(body, position)) is not None:
        name = found.group(1)
        close = f"</{name}>"
        end = body.rfind(close) if name in _FREE_TEXT else body.find(close, found.end())
        if end < found.end():
            params.setdefault(name, body[found.end():].strip("\n"))  # cut off mid-parameter
            break
        value = body[found.end():end]
        params.setdefault(name, value.strip("\n") if name in _FREE_TEXT else value.strip())
        position = end + len(close)
    return params


# -- what a call did ---------------------------------------------------------------------------------
@dataclass
class CallFields:
    text: str
    command: str | None = None
    paths: list[str] = field(default_factory=list)
    diff: str | None = None


def call_fields(name: str, params: dict[str, Any]) -> CallFields:
    """The builder's view of one tool call: its command, the files it touches, the edit as a diff."""
    text_params = {k: v for k, v in params.items() if isinstance(v, str)}
    paths = _paths(params)
    path = paths[0] if paths else "file"
    if name == "execute_command" and text_params.get("command"):
        return CallFields(text=text_params["command"], command=text_params["command"], paths=paths)
    diff = _diff(name, text_params, path)
    message = next((text_params[k] for k in _MESSAGE_PARAMS if text_params.get(k)), None)
    if name == "use_mcp_tool":
        text = " ".join(filter(None, [name, text_params.get("server_name"), text_params.get("tool_name"),
                                      text_params.get("arguments")]))
    elif name == "browser_action":
        text = " ".join(filter(None, [name, text_params.get("action"), text_params.get("url"),
                                      text_params.get("coordinate"), text_params.get("text")]))
    elif message and not paths:
        text = message
    else:
        text = describe(name, params)
    return CallFields(text=text, paths=paths, diff=diff)


def _paths(params: dict[str, Any]) -> list[str]:
    found = [params[k] for k in ("path", "absolutePath", "absolute_path", "file_path", "filePath", "target_file",
                                 "filepath") if
             isinstance(params.get(k), str) and params[k].strip()]
    for key in ("args", "files"):  # Roo's read_file / apply_diff on several files: <args><file><path>
        if isinstance(params.get(key), str):
            found += _XML_PATH.findall(params[key])
    for key in ("input", "patch"):  # apply_patch
        if isinstance(params.get(key), str):
            found += _PATCH_FILE.findall(params[key])
    return [p.strip() for p in dict.fromkeys(found) if p.strip()]


def _diff(name: str, params: dict[str, str], path: str) -> str | None:
    if name in ("write_to_file", "create_file") and "content" in params:
        return unified(path, "", params["content"])
    if name in ("replace_in_file", "apply_diff"):
        return search_replace_diff(path, params.get("diff") or params.get("args") or "")
    if name == "search_and_replace" and "search" in params:
        return unified(path, params["search"], params.get("replace", ""))
    if name == "insert_content" and "content" in params:
        return unified(path, "", params["content"])
    if name == "edit_file" and params.get("code_edit"):
        return unified(path, "", params["code_edit"])
    if name == "apply_patch":
        return params.get("input") or params.get("patch")
    return None


def search_replace_diff(path: str, blocks: str) -> str | None:
    """SEARCH/REPLACE blocks (Cline's ``<<<<<<<``/``-------`` markers, Roo's ``:start_line:`` hints)
    as one unified diff; None when the text holds no complete block."""
    hunks: list[str] = []
    search: list[str] | None = None
    replace: list[str] | None = None
    for line in blocks.splitlines():
        if _SEARCH.match(line):
            search, replace = [], None
        elif search is not None and replace is None and _DIVIDER.match(line):
            replace = []
        elif replace is not None and _REPLACE.match(line):
            if search is not None:
                hunk = unified(path, "\n".join(search), "\n".join(replace))
                hunks.append(hunk if not hunks else hunk.split("\n", 2)[-1])
            search = replace = None
        elif replace is not None:
            replace.append(line)
        elif search is not None and not (not search and _LINE_HINT.match(line)):
            search.append(line)
    return "\n".join(h for h in hunks if h) or None


# -- results -------------------------------------------------------------------------------------------
def result_status(tool: str | None, text: str) -> tuple[int | None, bool | None]:
    """(exit code, is_error) of a tool result's text; None where the text does not say."""
    head = text.lstrip()
    if found := _ROO_EXIT.match(head):
        return int(found.group("code")), None
    if _ROO_SIGNAL.match(head):
        return None, True
    if _FAILED.match(head):
        return None, True
    if tool == "execute_command" and (found := _OUTPUT.match(head)):
        return exit_code_from_output(found.group("output")), None
    return None, None


def human_words(text: str, *, in_result: bool = False) -> str | None:
    """What the person typed, when ``text`` carries it: the task, feedback, an answer, a new message.

    ``in_result``: ``text`` is part of a tool's result, where only the harness's own introductions
    of the person's words count (``_IN_RESULT``), never tags inside the tool's output.
    """
    if in_result and not _IN_RESULT.match(text):
        return None
    for pattern in (_TASK, _USER_MESSAGE, _FEEDBACK, _ANSWER):
        if pattern is _FEEDBACK:  # the harness puts the person's feedback last, after any output it quotes
            found = (list(_LAST_FEEDBACK.finditer(text)) or [None])[-1] if in_result else pattern.search(text)
        else:
            found = pattern.search(text)
        if found:
            words = found.group("text").strip()
            return words or None
    return None
