"""One CLI: ``-h`` everywhere, the fast-path commands' usage errors in click's form, help by workflow."""

from __future__ import annotations

import re
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from pipeline import entry
from pipeline.cli import main
from pipeline.cli._help import summary
from tests.conftest import ROOT


def commands(group: click.Group = main, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    found = []
    for name, command in group.commands.items():
        found.append(((*path, name), command))
        if isinstance(command, click.Group):
            found.extend(commands(command, (*path, name)))
    return found


@pytest.mark.parametrize("path", [p for p, _ in commands()], ids=" ".join)
def test_every_command_answers_dash_h_and_help(path: tuple[str, ...]) -> None:
    for flag in ("-h", "--help"):
        result = CliRunner().invoke(main, [*path, flag], prog_name="skillmill", catch_exceptions=False)
        assert result.exit_code == 0, (flag, result.output)
        assert result.output.startswith(f"Usage: skillmill {' '.join(path)} "), (flag, result.output)


@pytest.mark.parametrize("name", list(entry.FAST))
def test_the_fast_path_commands_answer_dash_h_as_click_does(name: str) -> None:
    for flag in ("-h", "--help"):
        proc = subprocess.run([sys.executable, "-m", "pipeline", name, flag], capture_output=True, text=True,
                              cwd=ROOT, timeout=60, check=False)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        assert proc.stdout.startswith(f"Usage: skillmill {name} [OPTIONS] "), proc.stdout
        assert "\nOptions:\n" in proc.stdout and "  -h, --help  " in proc.stdout
        through_group = CliRunner().invoke(main, [name, flag]).output  # CliRunner wraps at 80 columns, not 78
        assert proc.stdout.split() == through_group.split(), "the group's path prints the same"


def fast(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The executable's fast path, as `skillmill NAME ARGS...` runs it."""
    with pytest.raises(SystemExit) as done:
        entry._fast(argv[0], list(argv[1:]))
    out, err = capsys.readouterr()
    return done.value.code, out, err


def form(text: str) -> str:
    """An error's form: the command, its usage, parameter names, ranges, choices and values left out."""
    text = re.sub(r"is not one of '[^']*'(, '[^']*')*\.", "is not one of CHOICES.", text)  # hook wires fewer agents
    text = re.sub(r"^Usage: skillmill \S+ .*$", "Usage: skillmill CMD [OPTIONS] ...", text, flags=re.M)
    text = re.sub(r"'skillmill \S+ --help'", "'skillmill CMD --help'", text)
    text = re.sub(r"'[-A-Z][-a-zA-Z]*'( / '-\w')?", "'PARAM'", text)
    return re.sub(r"\S*x\S*=\S*\.", "RANGE.", text)


#: (fast-path command line, a click command's line making the same mistake)
SAME_MISTAKE = [
    (["recall", "--limt", "3", "what to do"], ["runs", "--limt", "3"]),
    (["hook", "codex", "--timout", "3"], ["runs", "--limt", "3"]),
    (["recall", "--limit"], ["runs", "--limit"]),
    (["recall", "--limit", "x", "what to do"], ["runs", "--limit", "x"]),
    (["hook", "codex", "--budget", "0"], ["runs", "--limit", "0"]),
    (["hook", "claude"], ["install", "--agent", "claude"]),
    (["recall", "what", "extra"], ["runs", "extra"]),
    (["hook", "codex", "--bogus"], ["runs", "--bogus"]),
]


@pytest.mark.parametrize(("fast_argv", "click_argv"), SAME_MISTAKE, ids=lambda a: " ".join(a))
def test_fast_path_usage_errors_are_the_click_commands(capsys: pytest.CaptureFixture[str], fast_argv: list[str],
                                                       click_argv: list[str]) -> None:
    code, out, err = fast(capsys, *fast_argv)
    clicked = CliRunner().invoke(main, click_argv, prog_name="skillmill")
    assert (code, out) == (2, "") and clicked.exit_code == 2
    assert form(err) == form(clicked.stderr), (err, clicked.stderr)
    assert CliRunner().invoke(main, fast_argv).stderr == err, "through the group: the same answer"


def test_a_mistyped_flag_is_an_error_never_its_value_taken_for_the_task(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = fast(capsys, "recall", "--limt", "3", "sympy tests fail")
    assert code == 2 and out == ""
    assert err == ("Usage: skillmill recall [OPTIONS] [TASK]\n"
                   "Try 'skillmill recall --help' for help.\n\n"
                   "Error: No such option '--limt'. Did you mean '--limit'?\n")
    code, _, err = fast(capsys, "hook")
    assert code == 2 and err.startswith("Usage: skillmill hook [OPTIONS] AGENT\n")
    assert "Error: Missing argument 'AGENT'. Choose from:" in err


def test_what_only_argparse_refuses_is_still_a_usage_error_in_clicks_form(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = fast(capsys, "recall", "--repo", "--limt")  # click would take --limt for the repository
    assert (code, out) == (2, "")
    assert err == ("Usage: skillmill recall [OPTIONS] [TASK]\n"
                   "Try 'skillmill recall --help' for help.\n\n"
                   "Error: argument --repo: expected one argument\n")


WORKFLOW = ["Run", "Review", "Recall", "Agents", "Operate"]


def test_top_level_help_lists_every_command_by_workflow_with_whole_summaries() -> None:
    text = CliRunner().invoke(main, ["-h"], prog_name="skillmill").output
    headings = re.findall(r"^(\w+):$", text, flags=re.M)
    assert headings == ["Options", *WORKFLOW], text
    listing = text.split("\nRun:\n", 1)[1]
    listed = re.findall(r"^  ([a-z][a-z-]*) ", listing, flags=re.M)
    shown = sorted(n for n, c in main.commands.items() if not c.hidden)  # `capture` is the hooks', not a person's
    assert sorted(listed) == shown, "every command once, in a section (none under Other)"
    assert [heading for heading, _ in main.sectioned(click.Context(main))] == WORKFLOW
    assert "..." not in listing


@pytest.mark.parametrize("path", [p for p, _ in commands()], ids=" ".join)
def test_no_summary_is_cut(path: tuple[str, ...]) -> None:
    command = dict(commands())[path]
    said = summary(command)
    assert not said.endswith("..."), said
    first_paragraph = " ".join((command.help or "").split("\n\n")[0].split())
    assert said and first_paragraph.startswith(said), (said, first_paragraph)
    assert said[-1] in ".)", f"{said!r} is not a whole sentence"
