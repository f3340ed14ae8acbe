"""The URL as this session first read it: parsed once per session, with its notes on
fallbacks; later runs read the widgets, which the URL only seeds."""

from __future__ import annotations

import streamlit as st

from . import server
from . import settings as S


def url_settings() -> tuple[S.Settings, list[str]]:
    """Parse the URL once per session; later runs read the widgets. A query the server
    left out (too long) gets a note saying so."""
    if "_url_settings" not in st.session_state:
        params = st.query_params.to_dict()
        settings, notes = S.parse_query(params)
        dropped = server.dropped_note(params)
        st.session_state["_url_settings"] = (settings, [dropped, *notes] if dropped else notes)
    return st.session_state["_url_settings"]


def presenter_active() -> bool:
    """Whether this session was opened with present=1 in the URL."""
    return bool(url_settings()[0].present)
