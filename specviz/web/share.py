"""The share box: a button that copies the page's address and the address as text that
follows the browser's (pure strings), and the sidebar's box that shows them."""

from __future__ import annotations

import html
from collections.abc import Sequence
from urllib.parse import urlencode

import streamlit as st

from . import assets

COPY_LABEL = "Copy link to this state"  # text only: no emoji font is needed


def share_url_html(url: str) -> str:
    """The address as selectable text (one click selects all of it): plain HTML, so a page
    does not load the code highlighter's 1.5 MB of JavaScript for one line."""
    return (f'<code class="sv-share-url" style="display:block;user-select:all;'
            f'word-break:break-all;white-space:pre-wrap;font-size:0.8rem;padding:0.5rem;'
            f'border-radius:0.5rem;background:rgba(49,51,63,0.06)">{html.escape(url)}</code>')


SHARE_SYNC_MS = 100  # how often the share box checks the address


def share_sync_js() -> str:
    """Keeps every share box's text equal to the browser's address: a step, a key or
    autoplay rewrites the address from inside a fragment, which never reruns the sidebar
    that drew the box. It updates on each history change and, as a backstop, every
    SHARE_SYNC_MS. Installed once per page load."""
    return assets.js("share_sync.js", sync_ms=SHARE_SYNC_MS)


def copy_link_html(label: str = COPY_LABEL) -> str:
    """A button that copies the page's address (every setting is in it) to the clipboard,
    read at the moment of the click, so it is always the current state. Where the
    clipboard API is refused (a page served over plain http from another host), it falls
    back to a hidden text selection; a polite live region says whether it worked."""
    return assets.html_text("copy_link.html", label=label)


def share_url(q: dict[str, str]) -> str:
    """The address of this page at query q (just '?query' where the browser's URL is not
    known, as under AppTest)."""
    base = st.context.url or ""
    return base + (f"?{urlencode(q)}" if q else "")


def copy_link(container=None) -> None:
    """A "copy link to this state" button (in `container`, default the main column): it
    copies the browser's address at the moment of the click, which holds every setting."""
    (container or st).html(copy_link_html(), unsafe_allow_javascript=True)


def share_box(q: dict[str, str], notes: Sequence[str] = ()) -> None:
    """Sidebar: a button that copies the live address, and the address itself as text (its
    text is one click to select where scripts or the clipboard are blocked)."""
    sb = st.sidebar
    sb.markdown("**Share this state**")
    for note in notes:
        sb.caption(note)
    copy_link(sb)
    sb.html(share_url_html(share_url(q) or "(this page, all defaults)")
            + f"<script>{share_sync_js()}</script>", unsafe_allow_javascript=True)
