"""The ``skillmill`` executable, with a fast path for the commands agents run at every prompt.

``skillmill recall`` and ``skillmill hook`` run inside an agent's turn, so their start-up
time is the user's waiting time. Importing the full command group pulls in every command's
models (pydantic, ~200 ms) and click (~20 ms); the fast path imports only the one command
module, parses its flags with ``argparse`` and handles errors the way the group does. The
group registers the same commands through ``pipeline.cli.fast.click_command``, so ``skillmill
--help`` lists them and both paths share one parser.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing at every prompt
if TYPE_CHECKING:
    from pipeline.errors import SkillmillError

#: command -> module with ``parser()`` and ``main(argv)``.
FAST = {"recall": "pipeline.recall.cli", "hook": "pipeline.agents.cli"}


def main() -> None:
    args = sys.argv[1:]
    if (reason := _unsafe_state()) is not None:
        _refuse(args, reason)
    if args and args[0] in FAST:
        _fast(args[0], args[1:])
    if args and args[0] == "run":  # a warm process with Prefect imported takes it, if one is up
        from pipeline.execution import warm

        if (status := warm.hand_over(args, _prog())) is not None:
            warm.exit_as(status)
    from pipeline.cli import main as group

    group()


def _unsafe_state() -> str | None:
    """Why skillmill's home or library may not be used: another account's folder, or one others may write."""
    from pipeline import private, settings

    for folder in (settings.home(), settings.library_dir()):
        if (reason := private.why_unsafe(folder)) is not None:
            return reason
    return None


def _refuse(args: list[str], reason: str) -> None:
    """One line and exit 2; a hook prints nothing on stdout (the agent goes on) and says why on stderr only:
    its own log lives in the folder that is refused."""
    if args[:1] == ["hook"]:
        sys.stderr.write(f"skillmill hook: {reason}; answered nothing\n")
        sys.exit(0)
    from pipeline.errors import UsageError

    _fail(UsageError(f"{reason}: skillmill keeps people's sessions and serves text to their agents, so it uses only "
                     "folders that are yours alone",
                     hint="chmod go-w it if it is yours, or set SKILLMILL_HOME / SKILLMILL_LIBRARY to a folder of "
                          "your own (the default ~/.skillmill is made owner-only)"))
    sys.exit(2)


def _prog() -> str:
    """The program's name as click shows it in usage lines (``skillmill``, ``python -m pipeline``)."""
    import os

    main = sys.modules.get("__main__")
    package = getattr(main, "__package__", None)
    if not package:
        return os.path.basename(sys.argv[0])
    name = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    module = package if name == "__main__" else f"{package}.{name}"
    return f"python -m {module.lstrip('.')}"


def _fail(error: SkillmillError) -> None:
    """As ``pipeline.cli._output.fail``, without importing click: red on a terminal."""
    from pipeline.errors import plain
    from pipeline.terminal import visible

    red, reset = ("\x1b[31m", "\x1b[0m") if sys.stderr.isatty() else ("", "")
    sys.stderr.write(f"{red}Error: {visible(plain(error.message))}{reset}\n")
    if error.hint:
        sys.stderr.write(f"  hint: {visible(plain(error.hint))}\n")


def _fast(name: str, args: list[str]) -> None:
    import importlib

    from pipeline import settings
    from pipeline.errors import SkillmillError, UsageError

    settings.apply_offline_env()
    try:
        command = importlib.import_module(FAST[name])
        if name == "recall":  # a review decision killed before its publish: finished first (agents' floor)
            from pipeline.agents import repair

            command.main(args, repair=repair.repair_or_warn)
        else:
            command.main(args)
    except (SystemExit, KeyboardInterrupt):
        raise
    except Exception as exc:
        from pipeline.errors import environment_error

        if (setup := environment_error(exc)) is not None:  # a full disk or a read-only folder
            _fail(setup)
            sys.exit(setup.exit_code)
        if isinstance(exc, UsageError):
            _fail(exc)
            sys.exit(2)
        if isinstance(exc, SkillmillError):
            _fail(exc)
            sys.exit(getattr(exc, "exit_code", 1))
        from pipeline.cli._output import internal_error

        internal_error(exc)
        sys.exit(1)
    sys.exit(0)
