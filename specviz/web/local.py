"""Whether this server may run code a visitor pastes (/audit): only when it runs locally.

Read from what the operator set, never from a request: SPECVIZ_LOCAL=1 in the server's
environment, or Streamlit's server.address bound to a loopback address
(views.auditpage.is_local). A hosted server (any other address, or none: every interface)
never executes visitors' code.
"""

from __future__ import annotations

import os

import streamlit as st

from ..views.auditpage import is_local


def may_run_code() -> bool:
    """True on a local server (see the module's docstring)."""
    return is_local(os.environ, st.get_option("server.address"))
