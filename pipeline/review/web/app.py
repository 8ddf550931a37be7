"""The review page: the same queue, filters, evidence, diffs and decisions as the terminal.

Plain server-rendered HTML (Jinja2, autoescaped: skill text comes from transcripts nobody
vetted; its Markdown rendered with HTML off, ``markup.py``), one small script for keyboard shortcuts, no CDN, no inline script (the CSP forbids
it). Every request needs the token printed at start: ``?token=`` once, then an HttpOnly,
SameSite=Strict cookie; every form also carries the token, so another site cannot post one.
Requests must name the server by its loopback address in ``Host`` (DNS rebinding: a page on
``evil.example`` that re-resolves its name to 127.0.0.1 reaches the port, but says ``Host:
evil.example``), so no other site can even read the denied page.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape

from pipeline.errors import SkillmillError
from pipeline.library import Library, sync
from pipeline.review import evidence
from pipeline.review.batch import command_refusals, held, prose_refusals
from pipeline.review.decisions import Review, reviewer, validate_edit
from pipeline.review.publish import BackgroundPublisher
from pipeline.review.queue import (
    KINDS,
    PENDING,
    STATUSES,
    Filters,
    ReviewItem,
    diff_for,
    find,
    items,
    neighbours,
)
from pipeline.review.web import markup

HERE = Path(__file__).parent
#: The names the page answers to (``Host``), with the port it is bound to.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; "
       "base-uri 'none'; frame-ancestors 'none'")


def _filters(params: Any) -> Filters:
    """Filters from query or form parameters (bad numbers are ignored, not errors)."""
    try:
        minimum = float(params.get("min_confidence") or "")
        minimum = min(1.0, max(0.0, minimum))
    except ValueError:
        minimum = None  # type: ignore[assignment]
    status = params.get("status") or "pending"
    statuses = {"pending": PENDING, "all": STATUSES}.get(status, (status,) if status in STATUSES else PENDING)
    kind = params.get("kind") or ""
    return Filters(repo=(params.get("repo") or "").strip() or None, kinds=(kind,) if kind in KINDS else (),
                   min_confidence=minimum, flagged=params.get("flagged") in ("1", "on", "true"),
                   statuses=tuple(statuses))


def _query(params: Any) -> str:
    """The filter part of a query string, kept on every link so next/previous follow the same queue."""
    keep = {k: params.get(k) for k in ("repo", "kind", "min_confidence", "flagged", "status") if params.get(k)}
    return urlencode(keep)


def host_allowed(host: str, port: int | None, names: tuple[str, ...] = LOOPBACK_NAMES) -> bool:
    """Whether a ``Host`` header names this server: a loopback name, and the bound ``port`` (any when None)."""
    host = host.strip().lower()
    if host.startswith("["):  # [::1]:8765
        name, _, rest = host.partition("]")
        name, given = name + "]", rest.removeprefix(":")
    else:
        name, _, given = host.partition(":")
    if name not in names:
        return False
    return port is None or (given or "80") == str(port)  # no port in the header: the default one


def create_app(library: Library, *, token: str, who: str, cookie: str = "skillmill_review",
               publisher: BackgroundPublisher | None = None, port: int | None = None) -> FastAPI:
    """The review app. Decisions republish the recall index through ``publisher`` (in the background).

    ``port``: the port it is served on; requests whose ``Host`` is not a loopback name with this
    port get 421 (any port when None).
    """
    app = FastAPI(title="skillmill review", docs_url=None, redoc_url=None, openapi_url=None)
    publisher = publisher or BackgroundPublisher(library)
    app.state.publisher = publisher

    def review(by: str) -> Review:
        return Review(library, by, publish=publisher.request)

    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["md_inline"] = markup.inline  # the skill's Markdown, HTML off (pipeline/review/web/markup.py)
    env.globals["md_blocks"] = markup.blocks
    excerpt_cache: dict[tuple[str, int], evidence.Excerpts] = {}

    def authorized(request: Request) -> bool:
        given = request.cookies.get(cookie) or request.headers.get("x-skillmill-token") or ""
        return secrets.compare_digest(given.encode(), token.encode())

    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Response:
        if not host_allowed(request.headers.get("host", ""), port):
            where = f"127.0.0.1:{port}" if port else "127.0.0.1"
            return Response(f"Misdirected request: this review page answers only at http://{where}/\n",
                            status_code=421, media_type="text/plain")
        if request.url.path == "/favicon.ico":
            return Response(status_code=204)
        if request.url.path.startswith("/static/"):
            response = await call_next(request)
        elif (given := request.query_params.get("token")) is not None:
            if not secrets.compare_digest(given.encode(), token.encode()):
                response = _page(env, "denied.html", status=401)
            else:  # trade the token in the URL for a cookie, and drop it from the address bar
                rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
                response = RedirectResponse(request.url.path + (f"?{rest}" if rest else ""), status_code=303)
                response.set_cookie(cookie, token, httponly=True, samesite="strict", path="/")
        elif not authorized(request):
            response = _page(env, "denied.html", status=401)
        else:
            response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        return response

    def render(name: str, request: Request, status: int = 200, **context: Any) -> HTMLResponse:
        base = {"library": library.root, "who": who, "token": token, "msg": request.query_params.get("msg"),
                "error": None, "qs": _query(request.query_params)}
        merged = {**base, **context}
        merged["keep"] = merged["params_keep"] = dict(parse_qsl(merged["qs"]))  # filters carried by forms
        return _page(env, name, status=status, **merged)

    def excerpts_for(item: ReviewItem) -> evidence.Excerpts:
        key = (item.name, item.skill.version)
        if key not in excerpt_cache:
            loaded = evidence.load([item.skill])
            if loaded.note is not None:
                return loaded  # retry next time: the database may be back
            excerpt_cache[key] = loaded
        return excerpt_cache[key]

    def checked(form: Any) -> str:
        if not secrets.compare_digest(str(form.get("token") or "").encode(), token.encode()):
            raise PermissionError("the form's token does not match")
        return reviewer(str(form.get("who") or who))

    # -- pages ------------------------------------------------------------------------
    @app.get("/", response_class=HTMLResponse)
    def queue(request: Request) -> HTMLResponse:
        filters = _filters(request.query_params)
        everything = items(library, Filters(statuses=filters.statuses))
        found = [i for i in everything if filters.match(i)]
        repos = sorted({i.skill.repo for i in everything if i.skill.repo})
        return render("list.html", request, items=found, repos=repos, kinds=KINDS, filters=filters,
                      params=request.query_params, flagged=sum(1 for i in found if i.flags),
                      approvable=sum(1 for i in found if i.batchable and i.status in PENDING))

    @app.get("/skill/{name}", response_class=HTMLResponse)
    def skill_page(name: str, request: Request) -> HTMLResponse:
        return _skill(name, request)

    def _skill(name: str, request: Request, status: int = 200, error: str | None = None,
               params: Any = None) -> HTMLResponse:
        params = params if params is not None else request.query_params
        try:
            item = find(library, name)
        except SkillmillError as exc:
            return render("denied.html", request, status=404, error=exc.message, title="Not found")
        filters = _filters(params)
        queued = items(library, filters)
        order = [i.name for i in queued]
        previous, following = neighbours(order, name)
        position = order.index(name) + 1 if name in order else None
        return render("skill.html", request, status=status, error=error, item=item, skill=item.skill,
                      held=held(item.skill),
                      excerpts=excerpts_for(item), diff=diff_for(library, item), previous=previous,
                      following=following, position=position, total=len(order),
                      order=[(i.name, bool(i.flags)) for i in queued],
                      qs=_query(params), history=library.history.versions(name),
                      log=library.audit.entries(name)[-5:])

    @app.get("/skill/{name}/edit", response_class=HTMLResponse)
    def edit_page(name: str, request: Request) -> HTMLResponse:
        try:
            item = find(library, name)
        except SkillmillError as exc:
            return render("denied.html", request, status=404, error=exc.message, title="Not found")
        return render("edit.html", request, item=item, text=item.stored.file.read_text(encoding="utf-8"))

    @app.get("/status")
    def status() -> dict[str, object]:
        """Whether agents already see every decision (the recall index is republished)."""
        return {"republishing": publisher.pending, "errors": publisher.errors[-5:]}

    @app.get("/log", response_class=HTMLResponse)
    def log_page(request: Request) -> HTMLResponse:
        entries = list(reversed(library.audit.entries(request.query_params.get("skill") or None)))
        return render("log.html", request, entries=entries, problems=library.audit.verify(merged=sync.is_shared(library)))

    # -- decisions --------------------------------------------------------------------
    def after_decision(name: str, order: list[str], params: Any, message: str) -> RedirectResponse:
        """Go to the next skill of the same queue (the one after NAME, else before), else the queue."""
        remaining = {i.name for i in items(library, _filters(params))}
        start = order.index(name) if name in order else 0
        ahead = [n for n in order[start + 1:] if n in remaining] + [n for n in reversed(order[:start]) if n in remaining]
        query = _query(params)
        suffix = f"?{query}&" if query else "?"
        target = f"/skill/{ahead[0]}" if ahead else "/"
        return RedirectResponse(f"{target}{suffix}{urlencode({'msg': message})}", status_code=303)

    @app.post("/skill/{name}/approve")
    async def approve(name: str, request: Request) -> Response:
        form = await request.form()
        try:
            by = checked(form)
            item = find(library, name)
            if item.flags and form.get("confirm_flags") != "1":
                return _skill(name, request, 400, "This skill is flagged: tick “I read the flagged lines” to approve it.",
                              params=form)
            order = [i.name for i in items(library, _filters(form))]
            decision = review(by).approve(name)[0]
        except PermissionError as exc:
            return render("denied.html", request, status=403, error=str(exc))
        except SkillmillError as exc:
            return _skill(name, request, 400, exc.message, params=form)
        return after_decision(name, order, form, f"Approved {name} v{decision.version}: agents get it as soon as "
                                                 "the recall index is republished (in the background, a second).")

    @app.post("/skill/{name}/reject")
    async def reject(name: str, request: Request) -> Response:
        form = await request.form()
        try:
            by = checked(form)
            reason = str(form.get("reason") or "").strip()
            if not reason:
                return _skill(name, request, 400, "Say why you reject it: the reason goes into the audit log.",
                              params=form)
            order = [i.name for i in items(library, _filters(form))]
            review(by).reject(name, reason)
        except PermissionError as exc:
            return render("denied.html", request, status=403, error=str(exc))
        except SkillmillError as exc:
            return _skill(name, request, 400, exc.message, params=form)
        return after_decision(name, order, form, f"Rejected {name}: later runs will not propose it again.")

    @app.post("/skill/{name}/edit")
    async def edit(name: str, request: Request) -> Response:
        form = await request.form()
        text = str(form.get("text") or "").replace("\r\n", "\n")
        try:
            by = checked(form)
            item = find(library, name)
            validate_edit(item, text)
            decision = review(by).edit(name, text)
        except PermissionError as exc:
            return render("denied.html", request, status=403, error=str(exc))
        except SkillmillError as exc:
            hint = f" ({exc.hint})" if exc.hint else ""
            try:
                item = find(library, name)
            except SkillmillError:
                return render("denied.html", request, status=404, error=exc.message, title="Not found")
            return render("edit.html", request, status=400, item=item, text=text, error=exc.message + hint,
                          qs=_query(form))
        query = _query(form)
        message = f"Saved {name} v{decision.version}." if decision else f"{name}: no change."
        return RedirectResponse(f"/skill/{name}?{query + '&' if query else ''}{urlencode({'msg': message})}",
                                status_code=303)

    @app.post("/approve-batch")
    async def approve_batch(request: Request) -> Response:
        form = await request.form()
        try:
            by = checked(form)
            filters = _filters(form)
            batch = review(by).approve_matching(filters)
        except PermissionError as exc:
            return render("denied.html", request, status=403, error=str(exc))
        except SkillmillError as exc:
            return render("denied.html", request, status=400, error=exc.message)
        message = f"Approved {len(batch.approved)}."
        if batch.refused:
            flagged = sum(1 for i in batch.refused if i.flags)
            commands = sum(1 for i in batch.refused if not i.flags and command_refusals(i.skill))
            prose = sum(1 for i in batch.refused if not i.flags and not command_refusals(i.skill)
                        and prose_refusals(i.skill))
            unverified = len(batch.refused) - flagged - commands - prose  # held only for their sources
            message += (f" Refused {len(batch.refused)} ({flagged} flagged, {commands} with commands that are not "
                        "ordinary project commands" + (f", {prose} with prose naming a web address, a path outside "
                                                       "the checkout or a command" if prose else "")
                        + (f", {unverified} learned only from sessions nobody verified" if unverified else "")
                        + "): read and approve them one by one.")
        query = _query(form)
        return RedirectResponse(f"/?{query + '&' if query else ''}{urlencode({'msg': message})}", status_code=303)

    return app


def _page(env: Environment, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("title", None)
    context.setdefault("error", None)
    return HTMLResponse(env.get_template(name).render(**context), status_code=status)
