"""Downloads and uploads: a table as CSV or JSON, a round as one standalone HTML file, and a
text that is pasted (travelling in the URL as a blob) or uploaded."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial

import pandas as pd
import streamlit as st

from ..figures import export
from . import urlcodec
from .ui import bind


def download_csv(rows, name: str, label: str = "Download CSV", *,
                 columns: Sequence[str] | None = None) -> None:
    """A download button for a table (rows of dicts or a DataFrame); with columns, the
    header is written even before there is a row."""
    df = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows, columns=columns)
    st.download_button(label, df.to_csv(index=False).encode(), file_name=f"{name}.csv",
                       mime="text/csv", key=f"dl_{name}")


def download_json(obj, name: str, label: str = "Download JSON") -> None:
    """A download button for JSON-able data (rows of dicts, a dict)."""
    st.download_button(label, json.dumps(obj, indent=2, default=float).encode(),
                       file_name=f"{name}.json", mime="application/json", key=f"dlj_{name}")


def download_table(rows, name: str) -> None:
    """CSV and JSON download buttons side by side for one table."""
    a, b = st.columns(2)
    with a:
        download_csv(rows, name)
    with b:
        download_json(rows, name)


def download_round_html(trace, rnd: int, step: int = 0, key: str = "dl_round_html",
                        label: str = "Export this round as HTML") -> None:
    """A download button for the round's animation as one standalone HTML file (plays
    offline, opening at `step`). The file is built when the button is pressed, not on
    every run."""
    st.download_button(
        label, data=partial(export.round_html_bytes, trace, int(rnd), start=int(step)),
        file_name=f"specviz-round{int(rnd)}-k{trace.k}-{trace.rule}.html", mime="text/html",
        key=key, on_click="ignore",
        help="One file with the round's animation: play, pause and a step slider. It opens "
             "in any browser with no server and no network.")


def paste_or_upload(key: str, label: str, *, types: Sequence[str], max_bytes: int,
                    height: int = 160) -> tuple[str, str | None]:
    """A text area bound to URL blob `key` (decoded on the way in) and an upload that, when
    given, replaces it; returns (text, problem with the upload or None)."""
    text = bind(key, st.text_area, label, cast=urlcodec.decode_blob, height=height)
    up = st.file_uploader(f"or upload ({', '.join(types)})", type=list(types),
                          key=f"up_{key}")
    if up is None:
        return text, None
    raw = up.getvalue()
    if len(raw) > max_bytes:
        return text, f"the file is {len(raw):,} bytes; the cap is {max_bytes:,}"
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError:
        return text, "the file is not UTF-8 text"
