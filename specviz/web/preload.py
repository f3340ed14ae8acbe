"""The page's document starts the app's lazy scripts at once.

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

Preload(app) wraps the server's ASGI app: a text/html answer to a GET (the index page
Streamlit serves for every page's path) gains one module script before </head>; everything
else passes untouched. The files are looked up by name (CHUNKS) in the installed
Streamlit's static folder; a name not found there is left out.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

from specviz.views import site

# the file's own length, encoding and validators do not describe the page sent
DROPPED = (b"content-length", b"content-encoding", b"etag", b"last-modified")
# Streamlit's lazy chunks the app's pages draw on their first load (Plotly's: chart pages)
PLOTLY = "PlotlyChart"  # its module alone ran ~1.0 s here: only for pages that draw a chart
CHUNKS = (PLOTLY, "PageLink", "Html", "Slider", "NumberInput", "Selectbox", "Radio",
          "Checkbox", "TextInput", "Metric", "Button", "DownloadButton")


def chunk_files() -> list[Path]:
    """The installed Streamlit's file for each name in CHUNKS that it has."""
    import streamlit

    folder = Path(streamlit.__file__).parent / "static" / "static" / "js"
    found = [sorted(folder.glob(f"{name}.*.js")) for name in CHUNKS]
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


def in_head(html: bytes, tags: bytes) -> bytes:
    """html with tags just before its </head> (unchanged when it has none)."""
    return html.replace(b"</head>", tags + b"</head>", 1)


class Preload:
    """An ASGI app: app's text/html answers to a GET (200) carry their page's script() in
    the head, served uncompressed and without the file's validators (an ETag would keep a
    page cached with another script); every other answer passes as it comes."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        held: dict = {"script": script(page_of(scope["path"]))}

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
