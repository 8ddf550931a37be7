"""The review page shows a skill as a reviewer reads it: Markdown rendered, evidence folded, no HTML from a skill.

Pages come from the app in process (FastAPI's TestClient, Host and port as the server checks them),
over manuals a run distils from the real sessions in samples/, and over a skill whose every field
tries to put HTML on the page.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from pipeline.library import Library, markdown
from pipeline.library.model import Evidence, Item, Pitfall, Skill, SourceRef
from pipeline.review.web.app import create_app
from pipeline.review.web.markup import blocks, inline
from tests.conftest import SAMPLES
from tests.review_support import build

TOKEN = "t0ken-for-the-test"
PORT = 8765
AIDER = "working-in-monochromatic2025may24-pnpmtest"  # notes only: instruction files, where things are
HOSTILE = "hostile-markdown"
#: Tags the page itself writes around a skill; anything else came from the skill.
PAGE_TAGS = {"html", "head", "meta", "title", "link", "script", "body", "header", "a", "span", "nav", "button", "kbd",
             "label", "input", "p", "div", "aside", "ol", "li", "main", "h1", "h2", "h3", "h4", "h5", "h6", "section",
             "ul", "b", "code", "form", "pre", "article", "details", "summary", "footer", "br", "dl", "dt", "dd",
             "em", "strong", "hr", "blockquote"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Library, Path]:
    tmp = tmp_path_factory.mktemp("markdown")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SKILLMILL_HOME", str(tmp / "home"))
        build([SAMPLES], tmp / "skills")
    library = Library(tmp / "skills")
    library.save(hostile())
    return library, tmp / "home"


@pytest.fixture
def client(built: tuple[Library, Path], monkeypatch: pytest.MonkeyPatch) -> TestClient:
    library, home = built
    monkeypatch.setenv("SKILLMILL_HOME", str(home))  # the run's state database: the evidence excerpts
    app = create_app(library, token=TOKEN, who="alice", port=PORT)
    return TestClient(app, base_url=f"http://127.0.0.1:{PORT}", headers={"x-skillmill-token": TOKEN},
                      follow_redirects=False)


def hostile() -> Skill:
    script = "<script>alert(1)</script>"
    image = "<img src=x onerror=alert(1)>"
    js = "[click me](javascript:alert(1))"
    source = "0123456789abcdef"
    return Skill(
        name=HOSTILE, kind="repo", repo="evil/repo", confidence=0.5, outcome="resolved",
        description=f"Use when {script} runs; `code` and {image} and {js}",
        title=f"Working in {script}",
        sources=[SourceRef(trajectory=source, agent="aider", outcome="resolved", task=f"task {script}")],
        procedure=[Item(text=f"Tests: `pytest` {script} {image} <!-- a comment --> {js}",
                        command=f"echo '{script}' </pre><script>alert(2)</script>",
                        evidence=[Evidence(trajectory=source, steps=[1, 2])])],
        pitfalls=[Pitfall(symptom=f"{image} **bold**", cause=f"<a href='javascript:alert(1)'>x</a> {js}",
                          fix="<iframe src=//evil.example></iframe> <https://evil.example/autolink>",
                          evidence=[Evidence(trajectory=source, steps=[3])])],
        notes="\n".join([
            "## Where things are",
            f"- `src/` (code): `main.py` {script} <!-- from {source}:4,5 -->",
            f"- {image} <!-- not provenance: shown as text --> <!-- from {source}:6 -->",
            f"- {js} ![alt <b>](javascript:alert(1)) <javascript:alert(1)> [ref]",
            "",
            "[ref]: javascript:alert(1)",
            "",
            "<div onmouseover=alert(1)>a raw HTML block</div>",
            "",
            "<!-- an HTML comment on its own -->",
            "",
            "&lt;script&gt;alert('entity')&lt;/script&gt; &#60;img src=x onerror=alert(3)&#62;",
            "",
            "``` bash\" onclick=\"alert(1)",
            f"{script}",
            "```",
            "",
            "    <style>body { display: none }</style>",
        ]),
    )


class Tags(HTMLParser):
    """Every start tag with its attributes; and the page's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(html: str) -> Tags:
    tags = Tags()
    tags.feed(html)
    return tags


def page(client: TestClient, name: str) -> str:
    response = client.get(f"/skill/{name}")
    assert response.status_code == 200, response.text
    return response.text


# -- reads like the skill -------------------------------------------------------------------------------
def test_a_manual_s_notes_are_rendered_and_their_provenance_is_folded_evidence(client: TestClient,
                                                                                  built: tuple[Library, Path]) -> None:
    skill = built[0].get(AIDER).skill
    cited = markdown.provenance(skill.notes)
    assert cited, "the aider manual's notes carry provenance"
    html = page(client, AIDER)
    assert "<!--" not in html and "&lt;!--" not in html, "provenance comments are not text on the page"
    notes = html[html.index('id="notes"'):html.index('id="sources"')]
    assert "<h3>Instruction files</h3>" in notes and "<h3>Where things are</h3>" in notes
    assert "<li><code>CONVENTIONS.md</code> holds the repository" in notes
    folded = re.findall(r"<details class=\"evidence\"( open)?>", notes)
    assert folded and not any(folded), "evidence is folded until asked for"
    assert len(folded) == len(re.findall(r"^- .*<!-- from ", skill.notes, re.M)), "one per cited item"
    first = cited[0]
    assert f"<code>{first.trajectory[:12]}</code>" in notes
    assert f"step {first.steps[0]} " in notes, "the cited steps' excerpts are inside, for when they are asked for"


def test_items_render_their_inline_markdown_and_sources_fold(client: TestClient) -> None:
    html = page(client, "working-in-sympy")
    assert "<h3>Commands</h3>" in html and "<h3>Procedure</h3>" not in html
    assert "<p>Tests: <code>bin/test &lt;tests&gt;</code> (2 sessions)." in html
    assert '<details class="evidence">' in html and '<details class="evidence" open>' not in html
    assert re.search(r'<details class="sources" id="sources" open>\s*<summary><h3>Sources</h3> 2 sessions:', html)


# -- and nothing but text from the skill --------------------------------------------------------------------
def test_html_in_a_skill_reaches_the_page_only_as_text(client: TestClient) -> None:
    html = page(client, HOSTILE)
    tags = parsed(html)
    assert {tag for tag, _ in tags.tags} <= PAGE_TAGS
    scripts = [attrs for tag, attrs in tags.tags if tag == "script"]
    assert scripts == [{"src": "/static/review.js", "defer": None}], "only the page's own script"
    for tag, attrs in tags.tags:
        assert not [a for a in attrs if a.startswith("on")], (tag, attrs)
        assert "style" not in attrs, (tag, attrs)
        for value in attrs.values():
            assert "javascript" not in (value or "").lower(), (tag, attrs)
            assert "evil.example" not in (value or ""), (tag, attrs)
    text = "".join(tags.text)
    for shown in ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "<!-- not provenance: shown as text -->",
                  "<!-- an HTML comment on its own -->", "<div onmouseover=alert(1)>a raw HTML block</div>",
                  "<iframe src=//evil.example></iframe>", "<a href='javascript:alert(1)'>x</a>",
                  "[click me](javascript:alert(1))", "<script>alert('entity')</script>", "<img src=x onerror=alert(3)>",
                  "<style>body { display: none }</style>", "echo '<script>alert(1)</script>' </pre><script>alert(2)"):
        assert shown in text, shown
    assert "from 0123456789abcdef" not in text, "provenance is evidence, not text"
    assert "<strong>bold</strong>" in html, "Markdown itself still renders"


def test_the_csp_is_unchanged_on_a_rendered_skill(client: TestClient) -> None:
    response = client.get(f"/skill/{HOSTILE}")
    assert response.headers["content-security-policy"] == (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "base-uri 'none'; frame-ancestors 'none'")


def test_markup_alone() -> None:
    assert str(inline("`a<b>` *em* [x](https://e.example/?a=1&b=2)")) == (
        '<code>a&lt;b&gt;</code> <em>em</em> x <span class="url">(https://e.example/?a=1&amp;b=2)</span>')
    assert str(inline("a <!-- from abc:1 --> b")) == "a b"
    pieces = blocks("## H\n- one <!-- from abc:1,2 -->\n- two\n\n```bash\nls <!-- from def:3 -->\n```\n\npara\x00x")
    assert [str(p.evidence) for p in pieces] == [
        "[Evidence(trajectory='abc', steps=[1, 2])]", "[Evidence(trajectory='def', steps=[3])]", "[]"]
    assert str(pieces[0].html).startswith("<h3>H</h3>\n<ul>\n<li>one")
    assert "\x00" not in "".join(str(p.html) for p in pieces), "a NUL in the skill is not a marker"
    assert markdown.provenance(f"x <!-- from abc:{'9' * 5000},3 -->") == [Evidence(trajectory="abc", steps=[3])]
