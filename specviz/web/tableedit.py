"""The pair of tables in use, per session: seeded from the URL, edited in the sidebar's grids
or uploaded as CSV (parsed with caps before pandas reads it), and written back to the URL
when they differ from the defaults. A refused edit keeps the last valid pair."""

from __future__ import annotations

import csv
import hashlib
import io

import numpy as np
import pandas as pd
import streamlit as st

from ..core.tables import default_tables, renormalisation_note, validate_pair
from .notation import tables
from .urlcodec import decode_table, encode_table

UPLOAD_MAX_BYTES = 64 * 1024  # a 64 x 64 table of long floats fits; anything bigger is refused
CSV_MEMO_ENTRIES = 4  # parsed uploads kept per session (by content hash)


def tables_state() -> dict:
    """The last valid pair of tables, per session; seeded from the URL or the defaults."""
    if "_tables" not in st.session_state:
        d = default_tables()
        state = {"P": d.P, "Q": d.Q, "vocab": d.vocab, "note": None}
        params = st.query_params.to_dict()
        if "P" in params or "Q" in params:
            try:
                P = np.array(decode_table(params.get("P", encode_table(d.P)), d.V))
                Q = np.array(decode_table(params.get("Q", encode_table(d.Q)), d.V))
                state["P"], state["Q"] = validate_pair(P, Q, d.vocab)
                state["note"] = renormalisation_note({"P": P, "Q": Q}, d.vocab)
            except ValueError as exc:
                state["note"] = f"The tables in the URL were not used ({exc}); defaults kept."
        st.session_state["_tables"] = state
    return st.session_state["_tables"]


def _try_tables(P, Q) -> str | None:
    """Adopt a new pair if it is valid; otherwise return the reason and keep the old one."""
    state = tables_state()
    try:
        P, Q = validate_pair(P, Q, state["vocab"])
    except ValueError as exc:
        return str(exc)
    state["P"], state["Q"] = P, Q
    return None


def _read_csv_table(upload, V: int) -> np.ndarray:
    """The upload's table, parsed once per content (keyed by its hash, in the session): a
    refused file stays in the uploader, and every rerun would otherwise parse it again."""
    raw = upload.getvalue()
    memo = st.session_state.setdefault("_csv_tables", {})
    key = (hashlib.sha256(raw).hexdigest(), V)
    if key not in memo:
        try:
            memo[key] = (parse_csv_table(raw, V), None)
        except ValueError as exc:
            memo[key] = (None, str(exc))
        while len(memo) > CSV_MEMO_ENTRIES:
            memo.pop(next(iter(memo)))
    table, problem = memo[key]
    if problem:
        raise ValueError(problem)
    return table


def _shape_precheck(raw: bytes, V: int) -> None:
    """Refuse a file whose first line or line count cannot be a V x V table (with or without
    a header row and an index column) before pandas reads it."""
    lines = raw.count(b"\n") + (0 if raw.endswith(b"\n") else 1)
    if lines > V + 2:
        raise ValueError(f"the file has {lines:,} lines; a table here has {V} rows "
                         f"(or {V + 1} with a header)")
    first = raw.split(b"\n", 1)[0].decode("utf-8", errors="replace")
    cols = len(next(csv.reader([first]), []))
    if cols > V + 1:
        raise ValueError(f"the first line has {cols:,} columns; a table here has {V} "
                         f"(or {V + 1} with an index column)")


def parse_csv_table(raw: bytes, V: int) -> np.ndarray:
    """A V x V table from CSV bytes; ValueError with a short reason."""
    if len(raw) > UPLOAD_MAX_BYTES:
        raise ValueError(f"the file is {len(raw):,} bytes; the cap is {UPLOAD_MAX_BYTES:,}")
    _shape_precheck(raw, V)
    try:
        df = pd.read_csv(io.BytesIO(raw), header=None, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise ValueError("the file is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError):
        raise ValueError(f"the file is not a CSV table of numbers ({V} rows of {V})") from None
    header = pd.to_numeric(pd.Series(df.iloc[0, 1:].tolist()), errors="coerce")
    if df.shape == (V + 1, V + 1) and header.isna().all():  # a header row and an index
        df = df.iloc[1:, 1:]  # column, as we export; a numeric first row is data
    try:
        return df.to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("the file holds entries that are not numbers") from None


def table_editor() -> None:
    """Sidebar expander: edit P and Q in place, or upload either as CSV."""
    state = tables_state()
    vocab = list(state["vocab"])
    box = st.sidebar.expander(tables("Tables (target P, draft Q)"), key="tables_open",
                              on_change="rerun")
    with box:
        if not box.open:  # drawn only when open: two grids cost every page's first render
            return
        st.caption("Row = current token, columns = next token; each row must sum to 1.")
        edited = {}
        for name in ("P", "Q"):
            df = pd.DataFrame(state[name], index=vocab, columns=vocab)
            edited[name] = st.data_editor(df, key=f"edit_{name}", num_rows="fixed")
            up = st.file_uploader(tables(f"Upload {name} as CSV"), type=["csv"],
                                  key=f"up_{name}")
            if up is not None:
                try:
                    edited[name] = _read_csv_table(up, len(vocab))
                except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
                    st.error(f"{name} upload refused: {exc}")
        P = np.asarray(edited["P"], dtype=object)
        Q = np.asarray(edited["Q"], dtype=object)
        try:
            reason = _try_tables(P.astype(np.float64), Q.astype(np.float64))
        except (TypeError, ValueError):
            reason = "the tables hold entries that are not numbers"
        if reason:
            st.error(f"Tables not used: {reason}. The last valid pair stays in use.")
        elif note := renormalisation_note({"P": P, "Q": Q}, state["vocab"]):
            st.info(note)
        if st.button("Reset tables to the defaults", key="reset_tables"):
            d = default_tables()
            state["P"], state["Q"] = d.P, d.Q
            for k in ("edit_P", "edit_Q"):
                st.session_state.pop(k, None)
            st.rerun()


def table_query() -> dict[str, str]:
    """The edited tables as URL parameters (only those that differ from the defaults)."""
    state, d = tables_state(), default_tables()
    return {name: encode_table(state[name]) for name, default in (("P", d.P), ("Q", d.Q))
            if not np.array_equal(state[name], default)}
