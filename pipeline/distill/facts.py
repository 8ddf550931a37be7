"""What one session proved about its repository: the raw material of the ``working-in-<repo>`` manual.

Facts are stored per trajectory (so later runs add to them without re-reading old sessions) and
consolidated across every session and agent of a repository by ``repo.py``. Kinds:

* ``test`` / ``build`` / ``lint`` / ``install``: a project command and whether it worked (not the
  agent's scratch scripts, not commands on temporary files);
* ``replaced``: a check that could not run here (``pytest: command not found``) and the command
  that then ran the same kind of check (``bin/test <file>``);
* ``fix``: an error met running a project command and the environment change that got the same
  command past it (an install, a build step, a variable, a flag);
* ``preexisting``: a failure that was there before the change and still after it, or that a
  session a person or a label called resolved ended with: not the next agent's to chase;
* ``correction``: the person redirecting the agent, in their words (``corrections.py``);
* ``location``: a file the session searched for or read, then edited, with what it touched;
* ``pair``: an error and the code change that made the same check pass, for ``lessons.py``.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from pipeline.distill.analysis import Analysis, Event, Fix, check_key, template
from pipeline.distill.changes import change_lines, symbols
from pipeline.distill.corrections import corrections
from pipeline.distill.naming import task_title
from pipeline.trajectory import Trajectory
from pipeline.trajectory.commands import CHECKS, Purpose, segment_purpose, segments

#: Errors that say the command itself could not run here (not that the project failed).
_UNAVAILABLE = re.compile(r"command not found|: not found|No module named '?(pytest|nose|tox|unittest|py\.test)\b|"
                          r"is not recognized as|Unknown command|unrecognized arguments|no such option|"
                          r"No such file or directory.*(runtests|bin/test|manage\.py)|can't open file", re.I)
#: What an error line looks like (build tools print progress lines that are not the error).
_ERRORISH = re.compile(r"error|exception|not found|no module|cannot|can't|could not|couldn't|failed|failure|"
                       r"fatal|denied|missing|undefined|unknown|invalid|refused|no such", re.I)
#: Commands that only make sense in the session that ran them.
_ONE_OFF = re.compile(r"(^|\s)(python3?|node)\s+-c\s|<tmp>|/tmp/|\$\(|<<")
_FAILED_TEST = re.compile(r"^(?:FAILED|ERROR)\s+(\S+::\S+)|^(?:FAIL|ERROR):\s+(\w+)\s+\(([\w.]+)\)", re.M)


class RepoFact(BaseModel):
    trajectory: str
    repo: str
    kind: str  # test | build | lint | install | replaced | fix | preexisting | correction | location
    template: str  # what facts of one kind are grouped by
    command: str = ""
    ok: bool = True
    steps: list[int] = Field(default_factory=list)
    symptom: str | None = None
    agent: str = ""
    outcome: str = "unknown"
    task: str = ""
    when: str | None = Field(None, description="When the session ended (ISO date): recency ranks items.")
    ran: bool = Field(True, description="A command that ran in the project, passing or failing its checks "
                                        "(False: it could not run here at all).")
    text: str | None = Field(None, description="A quote (correction), what was touched (location), the "
                                               "command that did not work (replaced).")
    paths: list[str] = Field(default_factory=list)


def clean(command: str) -> str:
    """The command without ``cd`` / ``export`` preludes, one line."""
    first = command.strip().split("\n", 1)[0]
    if "<<" in first:
        return command.strip()
    return " && ".join(segments(command))


def fact_base(trajectory: Trajectory) -> dict:
    """The fields every fact of one session shares: where it comes from, and when."""
    t = trajectory
    stamp = t.ended_at or t.started_at
    return {"trajectory": t.id, "repo": t.repo, "agent": t.agent, "outcome": t.outcome.status,
            "task": task_title(t), "when": stamp.date().isoformat() if stamp else None}


def repo_facts(analysis: Analysis) -> list[RepoFact]:
    t = analysis.trajectory
    if not t.repo:
        return []
    base = fact_base(t)
    facts: list[RepoFact] = []
    for event in analysis.events:
        if project_command(analysis, event) and event.purpose in CHECKS | {Purpose.INSTALL}:
            own = own_segment(event)
            facts.append(RepoFact(**base, kind=event.purpose.value, template=template(own), command=own,
                                  ok=bool(event.ok), ran=_ran(event), steps=event.steps))
    facts += _replaced(analysis, base)
    for fix in analysis.fixes():
        if not fix.after.ok or not _ERRORISH.search(fix.failed.error or ""):
            continue  # advice needs the same command to pass afterwards, and an error to name
        if fix.kind == "environment":
            remedy = fix.remedy[-1]
            if remedy.command and not _ONE_OFF.search(remedy.command):
                facts.append(RepoFact(**base, kind="fix", template=template(remedy.command),
                                      command=clean(remedy.command), steps=fix.steps, symptom=fix.failed.error))
        elif fix.kind == "command" and project_command(analysis, fix.after):
            facts.append(RepoFact(**base, kind="fix", template=template(fix.after.command or ""),
                                  command=clean(fix.after.command or ""), steps=fix.steps, symptom=fix.failed.error,
                                  text=clean(fix.failed.command or "")))
        elif fix.kind == "code" and (pair := _pair(analysis, fix, base)) is not None:
            facts.append(pair)
    facts += _preexisting(analysis, base)
    facts += [RepoFact(**base, kind="correction", template=c.quote.lower(), text=c.quote, steps=c.steps,
                       paths=c.paths, symptom=c.context) for c in corrections(t, analysis)]
    facts += _locations(analysis, base)
    return facts


def _pair(analysis: Analysis, fix: Fix, base: dict) -> RepoFact | None:
    """An error and the code change that made the same check pass: a lesson if other sessions repeat it.

    Kept only when the change is to project code (not the agent's scratch script) and can be said
    (a before -> after line); ``lessons.py`` writes a skill when two or more tasks show the same pair.
    """
    changed = [(path, e) for e in fix.between if e.purpose is Purpose.EDIT and e.ok is not False and not e.protocol
               for path in e.paths if not analysis.is_scratch(path)]
    if not changed or not fix.after.command or not project_command(analysis, fix.after):
        return None
    path, edit = changed[-1]
    lines = change_lines(edit.call.diff or "")
    if lines is None:
        return None
    before, after = lines
    names = symbols(edit.call.diff or "", path)
    where = f"`{path}`" + (f" (`{names[0]}`)" if names else "")
    what = f"replace `{before}` with `{after}`" if before else f"add `{after}`"
    return RepoFact(**base, kind="pair", template=f"{error_key(fix.failed.error or '')} => {path.rsplit('/', 1)[-1]}",
                    command=clean(fix.after.command), steps=fix.steps, symptom=fix.failed.error,
                    text=f"in {where}, {what}", paths=[path])


def error_key(error: str) -> str:
    """An error with its instance values (numbers, quoted names, paths) blanked: what repeats across sessions."""
    return re.sub(r"\d+|'[^']*'|\"[^\"]*\"|\S*/\S*", "_", error.lower()).strip()[:160]


def own_segment(event: Event) -> str:
    """The part of a command line that is the check itself: ``python3 tests/runtests.py x`` out of
    ``python -c "import django" && python3 tests/runtests.py x; git commit -m "fix"``."""
    command = event.command or ""
    if "<<" in command.split("\n", 1)[0]:
        return command.strip()
    parts = segments(command)
    own = [p for p in parts if segment_purpose(p) is event.purpose]
    return own[0] if own else " && ".join(parts)


def project_command(analysis: Analysis, event: Event) -> bool:
    """A command of the project's own (not a scratch script, a one-off or a temporary path) that ran."""
    if not event.command or event.ok is None or event.protocol:
        return False
    own = own_segment(event)
    if _ONE_OFF.search(own):
        return False
    words = check_key(own).split()
    return not any(analysis.is_scratch(w.split("::")[0]) for w in words[1:]) and not (
        words and analysis.is_scratch(words[0]))


def _ran(event: Event) -> bool:
    """The command ran in the project: it passed, or the project's checks failed (exit 1), not the
    command itself (not found, no such module, bad usage)."""
    if event.ok:
        return True
    code = event.result.exit_code if event.result is not None else None
    return code in (1, None) and not _UNAVAILABLE.search(event.error or "")


def _replaced(analysis: Analysis, base: dict) -> list[RepoFact]:
    """A check that could not run here, and the other command that then ran the same kind of check."""
    out: list[RepoFact] = []
    checks = [e for e in analysis.events if e.purpose in CHECKS and e.command and not e.protocol]
    for position, failed in enumerate(checks):
        if failed.ok is not False or not failed.error or not _UNAVAILABLE.search(failed.error):
            continue
        runner = _runner(failed.command or "")
        instead = next((e for e in checks[position + 1:] if e.ok and e.purpose is failed.purpose
                        and _runner(e.command or "") != runner and project_command(analysis, e)), None)
        if instead is not None:
            out.append(RepoFact(**base, kind="replaced", template=template(instead.command or ""),
                                command=clean(instead.command or ""), steps=[*failed.steps, *instead.steps],
                                symptom=failed.error, text=template(failed.command or "")))
    return out


def _runner(command: str) -> str:
    words = check_key(command).split()
    if words[:2] == ["python", "-m"]:
        return " ".join(words[:3])
    return words[0] if words else ""


def _preexisting(analysis: Analysis, base: dict) -> list[RepoFact]:
    """Tests that fail whatever the session changed: not the next agent's to chase.

    Either a test failed before the first edit and still after the last one, or -- in a session a
    label or the person judged resolved -- it failed the same way in two runs with the project's
    code changed in between (an agent reverting its change to compare shows exactly this).
    """
    first, last = analysis.first_edit_index, analysis.last_edit_index
    if last < 0:
        return []
    t = analysis.trajectory
    judged = t.outcome.status == "resolved" and (
        t.outcome.source == "label" or "person" in (t.outcome.evidence or "").lower())
    edits = [e.call.index for e in analysis.edits]
    runs: dict[str, list[Event]] = {}
    for event in analysis.events:
        if event.purpose is Purpose.TEST and event.ok is False and project_command(analysis, event):
            for test in _failed_tests(event):
                runs.setdefault(test, []).append(event)
    out = []
    for test, failing in sorted(runs.items()):
        indexes = [e.call.index for e in failing]
        if indexes[0] < first and indexes[-1] > last:
            why = "failed before the change and after it"
        elif judged and any(a < i < b for a, b in zip(indexes, indexes[1:], strict=False) for i in edits):
            why = "failed the same way across the session's edits"
        else:
            continue
        steps = sorted({s for e in (failing[0], failing[-1]) for s in e.steps})
        out.append(RepoFact(**base, kind="preexisting", template=test, command=clean(failing[-1].command or ""),
                            ok=False, steps=steps, symptom=test, text=why))
    return out


def _failed_tests(event: Event) -> list[str]:
    text = event.result.text if event.result else ""
    found = []
    for match in _FAILED_TEST.finditer(text):
        node = match.group(1) or f"{match.group(3)}.{match.group(2)}"
        found.append(node.split(" - ")[0])
    return list(dict.fromkeys(found))


def _locations(analysis: Analysis, base: dict) -> list[RepoFact]:
    """Files the session looked for or read, then edited: where work in this repository happens."""
    looked: set[str] = set()
    out: dict[str, RepoFact] = {}
    # A harness that hands the agent its files (aider's /add) has no search: what it edited is where it worked.
    handed = not any(e.purpose is Purpose.EXPLORE for e in analysis.events)
    for event in analysis.events:
        if event.purpose is Purpose.EXPLORE:
            looked.update(event.paths)
            if event.command:
                looked.update(w for w in re.findall(r"[\w./-]+\.\w+", event.command))
        elif event in analysis.edits:
            for path in event.paths:
                if analysis.is_scratch(path) or path.startswith(("/", "~", "<")) or not (
                        handed or _looked_for(path, looked)):
                    continue
                fact = out.setdefault(path, RepoFact(**base, kind="location", template=path, paths=[path],
                                                     text=""))
                touched = symbols(event.call.diff or "", path)
                names = [n for n in (fact.text or "").split(", ") if n]
                fact.text = ", ".join(dict.fromkeys([*names, *touched]))[:200]
                fact.steps = sorted({*fact.steps, *event.steps})
    return list(out.values())


def _looked_for(path: str, looked: set[str]) -> bool:
    name = path.rsplit("/", 1)[-1]
    return any(p == path or p.endswith("/" + name) or path.endswith(p.lstrip("./")) for p in looked if p)
