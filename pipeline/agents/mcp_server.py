"""``skillmill mcp``: the recall index as an MCP server over stdio (official ``mcp`` SDK).

Tools:

* ``recall_skills(task, budget)`` — the brief for a task: the approved skills that fit, within
  a token budget, each with its fit score in [0, 1] (the same ranking and threshold as
  ``skillmill recall``);
* ``get_skill(name)`` — one skill's full SKILL.md (by name, or by the path recall gave);
* ``skill_feedback(name, verdict, note)`` — helpful / not_helpful / wrong / stale; journaled at
  once (never blocked by a running nightly), then fed into ranking and review. The note is
  redacted and cut to 4,000 characters (``pipeline.recall.feedback.MAX_NOTE``).

The index is reopened when a run publishes a new one, so a long-lived server never serves
yesterday's skills.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pipeline import settings

INSTRUCTIONS = (
    "skillmill serves the procedures, pitfalls and checks this team's agents learned on earlier tasks, "
    "as Agent Skills approved by a person. Call recall_skills with the task at the start of a task; read a "
    "skill with get_skill before following it; afterwards tell skill_feedback whether it helped."
)


class _Index:
    """The published index, reopened when the file is replaced."""

    def __init__(self) -> None:
        self._index: Any = None
        self._stamp: tuple[int, int] | None = None

    def get(self) -> Any:
        from pipeline.agents import repair
        from pipeline.recall import RecallIndex

        repair.repair_or_warn()  # a review decision killed before it republished: one stat when there is none
        path = settings.recall_index_path()
        st = path.stat()  # a missing index raises below with a hint
        stamp = (st.st_ino, st.st_mtime_ns)
        if self._index is None or stamp != self._stamp:
            if self._index is not None:
                self._index.close()
            self._index, self._stamp = RecallIndex(path), stamp
        return self._index


def build_server() -> Any:
    from mcp.server.mcpserver import MCPServer

    from pipeline import __version__
    from pipeline.errors import SkillmillError
    from pipeline.recall import feedback, pack, usage
    from pipeline.recall.brief import skill_body
    from pipeline.recall.search import clip_task
    from pipeline.recall.text import lean

    server = MCPServer(name="skillmill", instructions=INSTRUCTIONS, version=__version__)
    index = _Index()

    def _open() -> Any:
        try:
            return index.get()
        except FileNotFoundError:
            raise SkillmillError("no recall index yet", hint="run `skillmill index` or `skillmill run`") from None

    @server.tool()
    def recall_skills(task: str, budget: int = 2000) -> str:
        """The approved skills that fit a task, as a Markdown brief within `budget` tokens
        (name, when to use it and path of each; full text of the best ones that fit)."""
        task = clip_task(task)  # as the hook does: a pasted 20 MB log took half a minute
        hits = _open().search(task, limit=5)
        packed = pack(task, hits, max(1, int(budget)))
        usage.record([(h.name, h.path) for h in packed.hits], "mcp")
        return packed.markdown()

    @server.tool()
    def handoff(path: str = ".") -> str:
        """Where the last unfinished sessions in the checkout at `path` stopped (any agent): the task, the last
        check runs, changed files, open plan items, what did not work. Read-only: nothing is claimed."""
        from pipeline import checkout
        from pipeline.handoff import store

        root = checkout.root_of(path)
        here = checkout.root_of(os.getcwd())
        if root is not None and root != here:  # an agent steered by what it read must not fetch another's
            return ("No handoff: this tool tells of the checkout the agent works in "
                    f"({here or 'none: the server did not start in one'}) only.")
        briefs = store.for_checkout(str(root)) if root else []
        if not briefs:
            return "No handoff: no unfinished session in this checkout."
        return "\n\n".join(store.render(b) for b in briefs[:2])

    @server.tool()
    def get_skill(name: str) -> str:
        """The full SKILL.md of an approved skill, by name (or by the path recall_skills gave)."""
        found = _open().get(name)
        if not found:
            return f"No approved skill called {name!r}. Use recall_skills to find skills by task."
        best = found[0]
        try:
            text = lean((Path(best["path"]) / "SKILL.md").read_text(encoding="utf-8"))
        except OSError:
            text = skill_body(best["path"]) or best["description"]
        usage.record([(best["name"], best["path"])], "mcp")
        others = "".join(f"\n(another skill of this name: {f['path']})" for f in found[1:])
        return f"<!-- {best['path']}/SKILL.md -->\n{text}{others}"

    @server.tool()
    def skill_feedback(name: str, verdict: Literal["helpful", "not_helpful", "wrong", "stale"],
                       note: str = "") -> str:
        """Say whether a skill helped: helpful, not_helpful, wrong (it misled) or stale (outdated).
        Recorded for ranking and for the people who review skills. Keep the note to a few
        sentences (at most 4,000 characters; a longer one is cut) and leave secrets out of it."""
        feedback.check(name, note, cut=True)
        found = _open().get(name)
        path = found[0]["path"] if found else None
        event = feedback.record(name, verdict, note, path=path, source="mcp", cut=True)
        known = "" if found else " (no approved skill has this name; kept anyway)"
        cut = f" Your note was cut to {feedback.MAX_NOTE:,} characters." if len(note) > feedback.MAX_NOTE else ""
        return f"Recorded {event['verdict']} for {event['skill']}{known}.{cut} Thank you."

    return server


def serve() -> None:
    """Run the server on stdio until the client disconnects, and meanwhile answer the hooks' questions
    on the recall socket (``pipeline.recall.daemon``), so prompts get the semantic channel too."""
    os.environ.setdefault("DO_NOT_TRACK", "1")
    from pipeline.recall import daemon

    warm = daemon.serve_in_thread()
    try:
        build_server().run("stdio")
    finally:
        if warm is not None:
            warm.close()
