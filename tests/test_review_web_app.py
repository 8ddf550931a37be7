"""The review page's app in process (FastAPI's TestClient): what it refuses before any page is served."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from pipeline.library import Library
from pipeline.review.web.app import create_app
from tests.review_support import build, django_inputs

TOKEN = "t0ken-for-the-test"
PORT = 8765


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    tmp = tmp_path_factory.mktemp("web")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SKILLMILL_HOME", str(tmp / "home"))
        build([django_inputs(tmp, "django__django-16255")], tmp / "skills")
    return Library(tmp / "skills")


@pytest.fixture
def client(library: Library) -> TestClient:
    app = create_app(library, token=TOKEN, who="alice", port=PORT)
    return TestClient(app, base_url=f"http://127.0.0.1:{PORT}", follow_redirects=False)


@pytest.mark.parametrize("host", ["evil.example", f"evil.example:{PORT}", "127.0.0.1:1", f"127.0.0.1.evil.example:{PORT}"])
def test_a_request_naming_another_host_is_refused_even_with_the_token(client: TestClient, host: str) -> None:
    """DNS rebinding: a page on evil.example re-resolves its name to 127.0.0.1; the browser still sends its Host."""
    for path in ("/", f"/?token={TOKEN}", "/skill/working-in-django", "/static/review.css", "/status"):
        response = client.get(path, headers={"Host": host, "x-skillmill-token": TOKEN})
        assert response.status_code == 421, (path, response.status_code)
        assert TOKEN not in response.text and "working-in-django" not in response.text
    posted = client.post("/skill/working-in-django/approve", headers={"Host": host},
                         data={"token": TOKEN, "who": "mallory"}, cookies={"skillmill_review": TOKEN})
    assert posted.status_code == 421


@pytest.mark.parametrize("host", [f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"[::1]:{PORT}", f"LOCALHOST:{PORT}"])
def test_the_loopback_names_with_the_bound_port_are_served(client: TestClient, host: str) -> None:
    response = client.get("/", headers={"Host": host, "x-skillmill-token": TOKEN})
    assert response.status_code == 200 and "working-in-django" in response.text
    assert client.get("/", headers={"Host": host}).status_code == 401, "the token is still required"
