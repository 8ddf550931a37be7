"""``skillmill review --web``: the review page on 127.0.0.1, behind a token printed at start."""

from __future__ import annotations

import secrets
import socket
import sys

import click

from pipeline.errors import UsageError
from pipeline.library import Library

HOST = "127.0.0.1"  # never another interface: the page can approve what agents will run


def serve(library: Library, *, port: int = 8765, who: str, token: str | None = None) -> None:
    """Serve until interrupted. Prints the URL (with the token) first, flushed, so scripts can read it."""
    import uvicorn

    from pipeline.review.publish import BackgroundPublisher
    from pipeline.review.web.app import create_app

    token = token or secrets.token_urlsafe(24)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {HOST}:{port}: {exc.strerror}",
                         hint="pass another --port, or --port 0 for any free one") from exc
    sock.listen(128)
    bound = sock.getsockname()[1]
    publisher = BackgroundPublisher(library)
    app = create_app(library, token=token, who=who, cookie=f"skillmill_review_{bound}", publisher=publisher,
                     port=bound)
    click.echo(f"Reviewing {library.root} as {who}")
    click.echo(f"Open http://{HOST}:{bound}/?token={token}")
    click.echo(f"token: {token}  (required on every request; Ctrl-C stops the server)")
    sys.stdout.flush()
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        if publisher.pending:
            click.echo("finishing the last recall index republish...", err=True)
        publisher.close()  # every decision reaches the index before the server exits
