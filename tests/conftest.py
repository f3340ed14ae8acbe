from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _full_error_details():
    """The server config shows uncaught errors by type only; in tests a failure should name
    its message, so AppTest runs get the full details (restored afterwards)."""
    from streamlit import config

    before = config.get_option("client.showErrorDetails")
    config.set_option("client.showErrorDetails", "full")
    yield
    config.set_option("client.showErrorDetails", before)
