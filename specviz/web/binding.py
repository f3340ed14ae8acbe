"""Widgets bound to URL parameters: each widget takes its bounds from its field's one
declaration (settings.FIELDS), the URL seeds it on a session's first run (an index for
radios and selects), the session keeps the reader's value after that; tabs bound the same
way; a value held or set before its widget is drawn; the fields a run bound, for the URL;
and the URL rewritten for a few keys only (a fragment's)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import streamlit as st

from . import settings as S
from .notation import text
from .urlstate import url_settings

INDEXED = ("radio", "selectbox")  # widgets whose start is an index into their options


BOUND = "_bound"  # session key: the fields this run drew (or kept), for the URL


def begin() -> None:
    """A page's run starts: no field bound yet."""
    st.session_state[BOUND] = set()


def bind(key: str, widget: Callable, label: str, *, cast: Callable | None = None, **kwargs):
    """Draw a widget bound to URL parameter `key`; returns its value. Its bounds (range,
    step, options, length) are the field's (settings.widget_bounds) unless given here; the
    URL gives its starting value (cast turns it into the widget's type: bool for a toggle
    bound to a 0/1 parameter); Streamlit's persist_state="session" keeps the reader's value
    for the session, across page switches."""
    kwargs = S.widget_bounds(key, getattr(widget, "__name__", "")) | kwargs
    wkey = f"w_{key}"
    assigned = st.session_state.get("_assigned", set())
    if wkey in assigned:  # its value was set by assign() for this run: no default on top
        assigned.discard(wkey)
    else:
        url, _ = url_settings()
        start = cast(getattr(url, key)) if cast else getattr(url, key)
        if getattr(widget, "__name__", "") in INDEXED:
            options = list(kwargs["options"])
            kwargs["index"] = options.index(start) if start in options else 0
        else:
            kwargs["value"] = start
    return hold(key, widget(label, key=wkey, persist_state="session", **kwargs))


def hold(key: str, value):
    """Field `key` takes value in this run without a widget (its widget has one choice
    left); returns it."""
    st.session_state[f"v_{key}"] = value
    st.session_state.setdefault(BOUND, set()).add(key)
    return value


def last(key: str):
    """Field `key`'s value where this run does not draw its widget: the widget's last, else
    the URL's (a sidebar control another page reads stays in the link)."""
    return st.session_state.get(f"v_{key}", getattr(url_settings()[0], key))


def keep(key: str):
    """Field `key` keeps its value (binding.last) in a run that does not draw its widget: a
    hidden box's text stays in the link. Returns it."""
    return hold(key, last(key))


def drawn() -> dict:
    """The page's own fields this run bound, beyond the sidebar's, read by their field's
    parser from their URL text (a blob field holds the pasted text: its URL text the blob)."""
    ss = st.session_state
    return {k: _read(k, ss[f"v_{k}"])
            for k in S.KEYS if k in ss.get(BOUND, ()) and k not in S.SHARED_KEYS}


def _read(key: str, value):
    parse = S.FIELD[key].parse
    try:
        return parse(getattr(parse, "encode", S.url_text)(value))
    except S.Capped as cap:
        return cap.value


def tabs(key: str, labels: dict[str, str]) -> tuple[str, list]:
    """Tabs bound to URL parameter `key` (labels: value -> tab label); only the open tab
    runs. Returns the open tab's value and the tab containers."""
    url, _ = url_settings()
    wkey = f"w_{key}"
    start = labels.get(st.session_state.get(f"v_{key}", getattr(url, key)))
    containers = st.tabs([text(v) for v in labels.values()], key=wkey, on_change="rerun",
                         default=text(start))
    shown = {text(v): k for k, v in labels.items()}
    return hold(key, shown.get(st.session_state.get(wkey), getattr(url, key))), containers


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

