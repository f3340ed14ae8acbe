"""The page's document starts the app's lazy scripts at once and names the server's base.

Streamlit's frontend fetches and runs each element's code (Plotly's 4.5 MB chart, the
sliders, the select boxes) only once the script's first message for such an element has
arrived and been rendered: on /acceptance the chart's code was asked for about 1.6 s into
a fresh load, on /rules 2.9 s, and running Plotly's module alone took ~1.0 s here. Imported
from the document's head, the same modules are fetched, compiled and run while the app
boots and the script runs, in the gaps the main thread leaves; when the element comes,
its code is there (the same URL is the same module).

Measured here (A/B in one run, 4 loads each, fully drawn): /round 2.37 -> 2.27 s,
/acceptance 2.23 -> 2.18, /cost 2.34 -> 2.27, /text 2.55 -> 2.46, /draft-length 2.50 ->
2.44, /rules 2.54 -> 2.52, /exactness 2.26 -> 2.27. Fetching them early without running
them (modulepreload links alone) gained nothing measurable on the app's pages.

The document also tells the frontend where the server is. Opened on a page's path (a deep
link: /cost), Streamlit's frontend does not know which part of the path is the app's base,
so it asks /cost/_stcore/health and /cost/_stcore/host-config first, is answered 404, and
asks again one level up on a timer; when Plotly's module is running by then, the second
try waits for it (~0.9 s here), and the script's first message with it. A deep link to
/roofline went: health 404 at 0.66 s, the second try at 1.55 s, the websocket at 1.59 s.
Streamlit reads window.__streamlit.BACKEND_BASE_URL (its setting for a page served apart
from its server) before it connects; the document sets it, relative to itself, where the
path is the base or a page at the base (base_href), and the first try is the right one.
Measured here, two servers side by side (the old document and this one), 6 alternating
warm loads a page, medians: fully drawn /cost 2.46 -> 2.37 s, /plan 2.60 -> 2.55,
/roofline 2.47 -> 2.34, /exactness 2.62 -> 2.55, /round 2.41 -> 2.49 (noise: the loads
spread over +-0.3 s); the websocket's first message 0.76-0.86 -> 0.73-0.80 s. The 404
round costs ~60 ms each load, the wait behind Plotly's module ~0.9 s on the loads it hits.

Preload(app) wraps the server's ASGI app: a text/html answer to a GET (the index page
Streamlit serves for every page's path) gains, before </head>, a classic script setting
the base (it runs while the head is parsed, before Streamlit's module) and one module
script of imports; everything else passes untouched. The files are looked up by name
(stcontract.CHUNKS) in the installed Streamlit's static folder; a name not found there is left out.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import streamlit as st

from specviz.views import site
from specviz.web import stcontract

# the file's own length, encoding and validators do not describe the page sent
DROPPED = (b"content-length", b"content-encoding", b"etag", b"last-modified")
# Streamlit's lazy chunks the app's pages draw on their first load (stcontract.CHUNKS);
# Plotly's module alone ran ~1.0 s here: only for pages that draw a chart
PLOTLY = stcontract.PLOTLY_CHUNK


def chunk_files() -> list[Path]:
    """The installed Streamlit's file for each name in CHUNKS that it has."""
    folder = stcontract.static_js()
    found = [sorted(folder.glob(f"{name}.*.js")) for name in stcontract.CHUNKS]
    return [files[0] for files in found if files]


def page_of(path: str) -> site.Page:
    """The page a request's URL path opens (its last segment; any other: the home page,
    where Streamlit sends an unknown path)."""
    return site.BY_PATH.get(path.rstrip("/").rsplit("/", 1)[-1], site.BY_PATH[""])


@cache
def script(page: site.Page) -> bytes:
    """A module script importing chunk_files() for page (Plotly's only where its first load
    draws a chart), by URLs relative to the document as Streamlit's own are (so a base URL
    path keeps working); empty when none is found."""
    urls = [f"./static/js/{f.name}" for f in chunk_files()
            if page.charts or not f.name.startswith(PLOTLY)]
    return (f"<script type=\"module\">for (const u of {json.dumps(urls)}) import(u);</script>"
            .encode() if urls else b"")


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


class Preload:
    """An ASGI app: app's text/html answers to a GET (200) carry their path's base_script()
    and their page's script() in the head, served uncompressed and without the file's
    validators (an ETag would keep a page cached with another script); every other answer
    passes as it comes."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        held: dict = {"script": base_script(scope["path"]) + script(page_of(scope["path"]))}

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
