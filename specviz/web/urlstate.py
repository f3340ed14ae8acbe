"""The URL as this session first read it: parsed once per session, with its notes on
fallbacks; later runs read the widgets, which the URL only seeds."""

from __future__ import annotations

import streamlit as st

from . import settings as S


def url_settings() -> tuple[S.Settings, list[str]]:
    """Parse the URL once per session; later runs read the widgets."""
    if "_url_settings" not in st.session_state:
        st.session_state["_url_settings"] = S.parse_query(st.query_params.to_dict())
    return st.session_state["_url_settings"]


def presenter_active() -> bool:
    """Whether this session was opened with present=1 in the URL."""
    return bool(url_settings()[0].present)
