"""The page's document names the server's base, so a deep link's first request goes there.

Opened on a page's path (a deep link: /cost), Streamlit's frontend does not know which part
of the path is the app's base, so it asks /cost/_stcore/health and /cost/_stcore/host-config
first, is answered 404, and asks again one level up on a timer. A deep link to /roofline
went: health 404 at 0.66 s, the second try at 1.55 s, the websocket at 1.59 s. Streamlit
reads window.__streamlit.BACKEND_BASE_URL (its setting for a page served apart from its
server) before it connects; the document sets it, relative to itself, where the path is the
base or a page at the base (base_href), and the first try is the right one.

BaseHref(app) wraps the server's ASGI app: a text/html answer to a GET (the index page
Streamlit serves for every page's path) gains, before </head>, a classic script setting the
base (it runs while the head is parsed, before Streamlit's module); everything else passes
untouched.

The document used to import Streamlit's lazy element code (Plotly's chart, the sliders, the
select boxes: 12 chunks) from its head as well. Measured on 2026-12-07 on a machine otherwise
idle (`benchmarks/bench_preload.py --rounds 8 --modes full,none,base` at commit 5f4f912: three
servers side by side, 8 pages, 64 loads each, interleaved; `full` the chunk imports and the
base, `base` the base only, `none` Streamlit's own document): fully drawn, every load,
none / full median 1.030 [0.79..1.26] and base / full 1.010 [0.83..1.18], inside the noise;
the first heading came about 1 s later with the imports on every page (medians full
2.37-2.61 s, none 1.50-1.60 s, base 1.42-1.58 s). The imports did not pay and cost the first
paint, so they went; the base alone is as fast fully drawn and the fastest to the first
heading.
"""

from __future__ import annotations

import gzip
import json

import streamlit as st

from specviz.views import site

# the file's own length, encoding and validators do not describe the page sent
DROPPED = (b"content-length", b"content-encoding", b"etag", b"last-modified")

BASE_JS = ("<script>window.__streamlit = {{...window.__streamlit, "
           "BACKEND_BASE_URL: new URL({href}, location.href).href}};</script>")


def base_href(path: str, base: str = "") -> str | None:
    """The app's base URL relative to the document at path, for a server whose base URL
    path is base (server.baseUrlPath): "./" for the base itself (/base/) and a page's path
    (/base/cost); None for any other path (the frontend then guesses, as it does by itself;
    Streamlit answers a page's path with a trailing slash by a redirect to it without)."""
    prefix = "/" + base.strip("/") if base.strip("/") else ""
    if not path.startswith(prefix + "/"):
        return None
    name = path[len(prefix) + 1:]  # "" for the base, "cost" for a page
    return "./" if name in site.BY_PATH else None  # BY_PATH: "" is the home page


def base_script(path: str) -> bytes:
    """A classic script setting window.__streamlit.BACKEND_BASE_URL for the document at
    path (base_href under this server's server.baseUrlPath); empty where base_href has none."""
    href = base_href(path, st.get_option("server.baseUrlPath") or "")
    return b"" if href is None else BASE_JS.format(href=json.dumps(href)).encode()


def in_head(html: bytes, tags: bytes) -> bytes:
    """html with tags just before its </head> (unchanged when it has none)."""
    return html.replace(b"</head>", tags + b"</head>", 1)


class BaseHref:
    """An ASGI app: app's text/html answers to a GET (200) on a path with a base_script()
    carry it in the head, served uncompressed and without the file's validators (an ETag
    would keep a page cached with another document); every other answer passes as it
    comes."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        script = base_script(scope["path"]) if scope["type"] == "http" and \
            scope["method"] == "GET" else b""
        if not script:
            await self.app(scope, receive, send)
            return
        held: dict = {"script": script}

        async def relay(message) -> None:
            if message["type"] == "http.response.start":
                head = dict(message.get("headers", []))
                if message["status"] != 200 or b"text/html" not in head.get(b"content-type", b""):
                    await send(message)
                    return
                held.update(start=message, body=[], gzip=head.get(b"content-encoding") == b"gzip")
                return
            if "start" not in held:
                await send(message)
                return
            held["body"].append(message.get("body", b""))
            if not message.get("more_body", False):
                await _send_page(send, held)

        await self.app(scope, receive, relay)

    def __getattr__(self, name: str):
        return getattr(self.app, name)


async def _send_page(send, held: dict) -> None:
    """The held page, its script in, as one body."""
    body = b"".join(held["body"])
    body = in_head(gzip.decompress(body) if held["gzip"] else body, held["script"])
    headers = [(k, v) for k, v in held["start"].get("headers", []) if k not in DROPPED]
    await send({**held["start"], "headers": [*headers,
                                             (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
