"""Widgets bound to URL parameters: the URL seeds each widget on a session's first run
(an index for radios and selects), the session keeps the reader's value after that;
tabs bound the same way; a value held or set before its widget is drawn; and the URL
rewritten for a few keys only (a fragment's)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import streamlit as st

from . import settings as S
from .notation import text
from .urlstate import url_settings

INDEXED = ("radio", "selectbox")  # widgets whose start is an index into their options


def bind(key: str, widget: Callable, *args, cast: Callable | None = None, **kwargs):
    """Draw a widget bound to URL parameter `key`; returns its value. The URL gives its
    starting value (cast turns it into the widget's type: bool for a toggle bound to a 0/1
    parameter); Streamlit's persist_state="session" keeps the reader's value for the
    session, across page switches."""
    wkey = f"w_{key}"
    assigned = st.session_state.get("_assigned", set())
    if wkey in assigned:  # its value was set by assign() for this run: no default on top
        assigned.discard(wkey)
    else:
        url, _ = url_settings()
        start = cast(getattr(url, key)) if cast else getattr(url, key)
        if getattr(widget, "__name__", "") in INDEXED:
            options = list(args[1] if len(args) > 1 else kwargs["options"])
            kwargs["index"] = options.index(start) if start in options else 0
        else:
            kwargs["value"] = start
    value = widget(*args, key=wkey, persist_state="session", **kwargs)
    st.session_state[f"v_{key}"] = value
    return value


def tabs(key: str, labels: dict[str, str]) -> tuple[str, list]:
    """Tabs bound to URL parameter `key` (labels: value -> tab label); only the open tab
    runs. Returns the open tab's value and the tab containers."""
    url, _ = url_settings()
    wkey = f"w_{key}"
    start = labels.get(st.session_state.get(f"v_{key}", getattr(url, key)))
    containers = st.tabs([text(v) for v in labels.values()], key=wkey, on_change="rerun",
                         default=text(start))
    shown = {text(v): k for k, v in labels.items()}
    value = shown.get(st.session_state.get(wkey), getattr(url, key))
    st.session_state[f"v_{key}"] = value
    return value, containers


def clamp(key: str, lo, hi) -> None:
    """Hold widget `key`'s value inside [lo, hi] before it is drawn (its range just moved)."""
    url, _ = url_settings()
    wkey = f"w_{key}"
    now = st.session_state.get(wkey, getattr(url, key))
    held = min(max(now, lo), hi)
    if wkey not in st.session_state or held != now:
        assign(key, held)


def assign(key: str, value) -> None:
    """Set the widget bound to `key` to value (before it is drawn, or in a callback)."""
    st.session_state[f"w_{key}"] = value
    st.session_state.setdefault("_assigned", set()).add(f"w_{key}")


def set_params(**values) -> None:
    """Rewrite these query parameters only (dropped at their defaults): for a fragment,
    which reruns without the rest of the page."""
    q = S.to_query(replace(S.DEFAULTS, **values), tuple(values))
    for key in values:
        if key in q:
            if st.query_params.get(key) != q[key]:
                st.query_params[key] = q[key]
        elif key in st.query_params:
            del st.query_params[key]

