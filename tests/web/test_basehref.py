"""web.basehref: a page's document names the server's base before Streamlit's module runs,
and nothing else in it or in any other answer changes."""

from __future__ import annotations

import asyncio
import gzip
import threading

import pytest

from specviz.views import site
from specviz.web import basehref

HTML = b"<html><head><title>x</title></head><body>app</body></html>"


def _serve(app, path: str, method: str = "GET") -> list[dict]:
    """The ASGI messages app sends for one request (run in a thread of its own: a browser
    test in this worker may hold the main thread's loop)."""
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request"}

    scope = {"type": "http", "method": method, "path": path, "headers": []}
    runner = threading.Thread(target=asyncio.run, args=(app(scope, receive, send),))
    runner.start()
    runner.join(10)
    return sent


def _inner(body: bytes, content_type: bytes, *, status: int = 200, chunks: int = 1,
           encoding: bytes | None = None):
    """An ASGI app answering every request with body, in `chunks` pieces."""
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()),
               (b"etag", b'"abc"'), (b"cache-control", b"no-cache")]
    if encoding:
        headers.append((b"content-encoding", encoding))

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": status, "headers": headers})
        cut = [len(body) * i // chunks for i in range(chunks + 1)]
        for i in range(chunks):
            await send({"type": "http.response.body", "body": body[cut[i]: cut[i + 1]],
                        "more_body": i < chunks - 1})
    return app


def _page(sent: list[dict]) -> tuple[dict, bytes]:
    head = dict(sent[0]["headers"])
    return head, b"".join(m.get("body", b"") for m in sent[1:])


@pytest.mark.parametrize("page", site.PAGES, ids=lambda p: p.path or "home")
def test_a_pages_document_gains_the_base_in_its_head_and_nothing_else(page):
    head, body = _page(_serve(basehref.BaseHref(_inner(HTML, b"text/html; charset=utf-8")),
                              f"/{page.path}"))
    base = basehref.base_script(f"/{page.path}")
    assert base and body.index(base) < body.index(b"</head>")
    assert body.replace(base, b"") == HTML  # nothing else changed: no element code imported
    assert int(head[b"content-length"]) == len(body)
    assert b"etag" not in head and head[b"cache-control"] == b"no-cache"


@pytest.mark.parametrize("path, base, href", [
    ("/", "", "./"), ("/cost", "", "./"), ("/sub/", "sub", "./"), ("/sub/cost", "sub", "./"),
    ("/sub/cost", "/sub/", "./"),
    ("/sub", "sub", None),  # the base without its slash: the document's "./" is above it
    ("/cost/", "", None),  # Streamlit redirects it to /cost
    ("/no-such-page", "", None), ("/cost/more", "", None), ("//cost", "", None),
    ("/cost", "sub", None), ("/sub/cost", "", None)])
def test_the_base_lies_where_the_path_says(path, base, href):
    """A page's path names the page one level below the app's base, so the base is "./"
    from it and from the base itself; any other path is left to the frontend."""
    assert basehref.base_href(path, base) == href


def test_the_base_is_set_by_a_classic_script_before_streamlit_runs():
    """A classic inline script runs as the head is parsed, before any module script (the
    frontend reads window.__streamlit once, as its module starts); the href is a JSON string
    resolved against the document's own URL."""
    tag = basehref.base_script("/cost").decode()
    assert tag.startswith("<script>") and "type=" not in tag
    assert 'BACKEND_BASE_URL: new URL("./", location.href).href' in tag
    assert "...window.__streamlit" in tag  # keeps what a host set before
    assert basehref.base_script("/no-such-page") == b""


def test_a_compressed_page_is_sent_plain_with_the_script():
    sent = _serve(basehref.BaseHref(_inner(gzip.compress(HTML), b"text/html", chunks=3,
                                           encoding=b"gzip")), "/round")
    head, body = _page(sent)
    assert b"content-encoding" not in head
    assert body == basehref.in_head(HTML, basehref.base_script("/round"))
    assert len(sent) == 2  # the start and one body


@pytest.mark.parametrize("content_type, status, method, path", [
    (b"application/javascript", 200, "GET", "/round"),  # Streamlit's scripts
    (b"text/html", 304, "GET", "/round"),  # a revalidated page: no body to change
    (b"text/html", 404, "GET", "/round"),
    (b"text/html", 200, "HEAD", "/round"),
    (b"text/html", 200, "GET", "/no-such-page"),  # no base to name: Streamlit's own answer
])
def test_every_other_answer_passes_untouched(content_type, status, method, path):
    inner = _inner(HTML, content_type, status=status, chunks=2)
    assert _serve(basehref.BaseHref(inner), path, method) == _serve(inner, path, method)


def test_websockets_pass_untouched():
    seen = []

    async def inner(scope, receive, send):
        seen.append(scope)

    runner = threading.Thread(target=asyncio.run, args=(basehref.BaseHref(inner)(
        {"type": "websocket", "path": "/_stcore/stream"}, None, None),))
    runner.start()
    runner.join(10)
    assert seen and seen[0]["type"] == "websocket"


def test_a_page_without_a_head_is_left_as_it_is():
    assert basehref.in_head(b"<p>x</p>", b"<script></script>") == b"<p>x</p>"
