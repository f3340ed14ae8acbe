"""Hostile tables from the editor or an upload: a clear message, the last valid pair kept.

Through AppTest on the home page (its metrics move with the tables): a valid draft is
uploaded first, then each hostile table arrives in the same session; the page must name
the problem, raise nothing, and keep computing with the last valid pair (metrics and the
URL's tables unchanged). The upload reader (tableedit._read_csv_table) is also tested directly.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest
from support import app_test

from specviz.core.tables import default_tables
from specviz.web import tableedit, urlcodec

ROOT = Path(__file__).resolve().parents[2]
D = default_tables()
V = len(D.vocab)


def csv_bytes(M) -> bytes:
    return "\n".join(",".join(str(x) for x in row) for row in np.asarray(M)).encode()


def exported(M) -> bytes:
    """A table as the app exports it: a header row and an index column."""
    head = "," + ",".join(D.vocab)
    body = [v + "," + ",".join(str(x) for x in row) for v, row in zip(D.vocab, M, strict=True)]
    return "\n".join([head, *body]).encode()


def valid_draft() -> np.ndarray:
    Q = D.Q.copy()
    Q[0] = D.P[0]  # row 'a' copies the target: a valid pair, different from the default
    return Q


def nan_table():
    M = D.Q.copy()
    M[1, 2] = np.nan
    return M


def inf_table():
    M = D.Q.copy()
    M[3, 3] = np.inf
    return M


def negative_table():
    M = D.Q.copy()
    M[0, 0], M[0, 1] = -0.25, M[0, 1] + M[0, 0] + 0.25  # the row still sums to 1
    return M


def zero_row_table():
    M = D.Q.copy()
    M[2] = 0.0
    return M


UPLOADS = {  # name: (bytes, words the message must contain)
    "nan": (csv_bytes(nan_table()), "NaN"),
    "inf": (csv_bytes(inf_table()), "inf"),
    "negative": (csv_bytes(negative_table()), "negative"),
    "zero row": (csv_bytes(zero_row_table()), "sums to 0"),
    "1e308": (csv_bytes(np.full((V, V), 1e308)), "sums to"),
    "text": (b"a,b,c,d,e,f\n" + b"x,y,z,u,v,w\n" * 6, "not numbers"),
    "header only": (b"a,b,c,d,e,f\n", "not numbers"),
    "empty file": (b"", "refused"),
    "wrong shape 2x2": (b"0.5,0.5\n0.5,0.5\n", "shape"),
    "wrong shape 6x5": (csv_bytes(D.Q[:, :5]), "shape"),
    "ragged rows": (b"1,0\n1\n0,1,0\n", "refused"),
    "binary": (bytes(range(256)) * 8, "refused"),
    "huge file": (b"0.1," * 40_000, "cap"),
    "rows not summing to 1": (csv_bytes(D.Q * 1.5), "sums to"),
}
EDITS = {  # name: (edited_rows for the P editor, words the message must contain)
    "nan": ({0: {"a": float("nan")}}, "NaN"),
    "inf": ({1: {"b": float("inf")}}, "inf"),
    "negative": ({0: {"a": -0.1}}, "negative"),
    "text": ({0: {"a": "abc"}}, "row 'a'"),
    "empty cell": ({2: {"c": None}}, "row 'c'"),
    "1e308": ({0: {"a": 1e308}}, "sums to"),
    "zero row": ({4: {v: 0.0 for v in D.vocab}}, "sums to 0"),
}


def fresh() -> AppTest:
    at = app_test(ROOT / "app.py", 30)
    at.session_state["tables_open"] = True  # the editors are drawn only when it is open
    at.run()
    assert not at.exception
    return at


def metrics(at: AppTest) -> list[str]:
    return [m.value for m in at.metric]


def errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


@pytest.fixture(scope="module")
def with_valid_upload():
    """A session whose draft table was replaced by a valid upload: the 'last valid pair'."""
    def make():
        at = fresh()
        before = metrics(at)
        at.file_uploader(key="up_Q").set_value(("q.csv", exported(valid_draft()), "text/csv"))
        at.run()
        assert not at.exception and not errors(at), errors(at)
        after = metrics(at)
        assert after != before, "a valid upload must change what the page shows"
        assert at.query_params.get("Q") == urlcodec.encode_table(valid_draft())
        return at, after
    return make


def test_a_valid_upload_is_used(with_valid_upload):
    at, _ = with_valid_upload()
    assert "P" not in at.query_params  # only what changed goes into the URL


@pytest.mark.parametrize("name", list(UPLOADS))
def test_hostile_upload_keeps_the_last_valid_tables(with_valid_upload, name):
    data, words = UPLOADS[name]
    at, shown = with_valid_upload()
    at.file_uploader(key="up_Q").set_value(("hostile.csv", data, "text/csv"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    errs = errors(at)
    assert errs, f"{name}: no message"
    assert any(words.lower() in e.lower() for e in errs), (name, errs)
    assert all(len(e) < 400 for e in errs), errs
    assert metrics(at) == shown, f"{name}: the tables in use changed"
    assert at.query_params.get("Q") == urlcodec.encode_table(valid_draft())
    # and a later valid upload is taken again
    at.file_uploader(key="up_Q").set_value(("q.csv", csv_bytes(D.Q), "text/csv"))
    at.run()
    assert not at.exception and not errors(at), errors(at)
    assert "Q" not in at.query_params  # back to the default draft


@pytest.mark.parametrize("name", list(EDITS))
def test_hostile_edit_keeps_the_last_valid_tables(with_valid_upload, name):
    rows, words = EDITS[name]
    at, shown = with_valid_upload()
    at.session_state["edit_P"] = {"edited_rows": rows, "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    errs = errors(at)
    assert any("Tables not used" in e and words.lower() in e.lower() for e in errs), (name, errs)
    assert metrics(at) == shown
    assert "P" not in at.query_params
    assert at.query_params.get("Q") == urlcodec.encode_table(valid_draft())


def test_editor_cannot_change_the_shape():
    at = fresh()
    shown = metrics(at)
    at.session_state["edit_Q"] = {"edited_rows": {}, "added_rows": [], "deleted_rows": [0]}
    at.run()
    assert not at.exception
    errs = errors(at)
    assert any("shape" in e for e in errs), errs
    assert metrics(at) == shown


@pytest.mark.parametrize("page", ["pages/1_round.py", "pages/5_cost.py"])
def test_other_pages_survive_a_hostile_upload(page):
    at = app_test(ROOT / page, 30)
    at.session_state["tables_open"] = True
    at.run()
    at.file_uploader(key="up_P").set_value(("p.csv", csv_bytes(nan_table()), "text/csv"))
    at.run()
    assert not at.exception
    assert any("NaN" in e for e in errors(at))


# ----------------------------------------------------------------------------- the reader
class Upload:
    def __init__(self, data: bytes):
        self.data = data

    def getvalue(self) -> bytes:
        return self.data


def test_reader_takes_plain_and_exported_tables():
    np.testing.assert_array_equal(tableedit._read_csv_table(Upload(csv_bytes(D.Q)), V), D.Q)
    np.testing.assert_allclose(tableedit._read_csv_table(Upload(exported(D.Q)), V), D.Q)


@pytest.mark.parametrize("corner", [9.0, 1 / 7])
def test_reader_does_not_crop_a_numeric_table_of_the_wrong_size(corner):
    M = np.full((V + 1, V + 1), corner)
    M[1:, 1:] = D.Q  # the inner V x V block is a valid table
    try:
        got = tableedit._read_csv_table(Upload(csv_bytes(M)), V)
    except ValueError:
        return  # refused outright: fine
    assert got.shape == (V + 1, V + 1)  # read whole, so the shape check refuses it later


def test_reader_refuses_files_over_the_cap_before_parsing():
    with pytest.raises(ValueError, match="cap"):
        tableedit._read_csv_table(Upload(b"0" * (tableedit.UPLOAD_MAX_BYTES + 1)), V)


@pytest.mark.parametrize("data", [b"a,b\nc,d\n", b"1,x\n2,3\n"])
def test_reader_refuses_text(data):
    with pytest.raises(ValueError, match="not numbers"):
        tableedit._read_csv_table(Upload(data), V)


def test_reader_is_fast_and_small_at_the_cap():
    import time
    import tracemalloc

    data = (",".join(["0.123456789"] * 64) + "\n").encode() * 64  # ~ the cap
    assert len(data) <= tableedit.UPLOAD_MAX_BYTES
    tracemalloc.start()
    t0 = time.perf_counter()
    M = tableedit._read_csv_table(Upload(data), 64)
    dt = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert M.shape == (64, 64) and dt < 1.0 and peak < 50 * 2**20


def test_try_tables_rejects_and_keeps_state():
    """tableedit._try_tables inside a script run: a bad pair is refused, the state unchanged."""
    at = AppTest.from_string(
        """
import numpy as np
import streamlit as st
from specviz.web import tableedit
from specviz.core.tables import default_tables
d = default_tables()
state = tableedit.tables_state()
bad = d.Q.copy(); bad[0, 0] = np.nan
st.write("reason:", tableedit._try_tables(d.P, bad) or "none")
st.write("kept:", str(np.array_equal(state["Q"], d.Q)))
good = d.Q.copy(); good[0] = d.P[0]
st.write("reason2:", tableedit._try_tables(d.P, good) or "none")
st.write("taken:", str(np.array_equal(state["Q"], good)))
""", default_timeout=30)
    at.run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "NaN" in text and "kept: True" in text
    assert "reason2: none" in text and "taken: True" in text


def test_dataframe_round_trip_of_the_export_format():
    """What download_csv writes for a table, the uploader reads back to the same numbers."""
    import pandas as pd

    df = pd.DataFrame(valid_draft(), index=list(D.vocab), columns=list(D.vocab))
    buf = io.StringIO()
    df.to_csv(buf)
    M = tableedit._read_csv_table(Upload(buf.getvalue().encode()), V)
    np.testing.assert_allclose(M, valid_draft(), rtol=0, atol=1e-15)


COMMAS = b"," * 65_535  # 64 KB: one line of 65,536 empty columns


def test_reader_refuses_a_line_of_commas_before_pandas():
    import time

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="65,536 columns"):
        tableedit.parse_csv_table(COMMAS, V)
    assert time.perf_counter() - t0 < 0.1
    with pytest.raises(ValueError, match="lines"):
        tableedit.parse_csv_table(b"1\n" * 1_000, V)


def test_a_refused_upload_is_parsed_once_per_content(monkeypatch):
    """It stays in the uploader, so every rerun sees it again: the parse is kept by hash."""
    calls = []
    real = tableedit.parse_csv_table
    monkeypatch.setattr(tableedit, "parse_csv_table",
                        lambda raw, V: calls.append(1) or real(raw, V))
    at = fresh()
    at.file_uploader(key="up_P").set_value(("p.csv", COMMAS, "text/csv"))
    at.file_uploader(key="up_Q").set_value(("q.csv", COMMAS, "text/csv"))
    at.run()
    assert not at.exception and any("65,536 columns" in e for e in errors(at)), errors(at)
    first = len(calls)
    for _ in range(3):
        at.run()
    assert not at.exception and len(calls) == first == 1, calls


def test_rows_within_the_tolerance_are_renormalised_not_refused():
    """Rows off 1 by less than 1e-6 are float noise from a spreadsheet: used, renormalised."""
    Q = D.Q.copy()
    Q[:, 0] += 0.9e-6
    at = fresh()
    at.file_uploader(key="up_Q").set_value(("q.csv", csv_bytes(Q), "text/csv"))
    at.run()
    assert not at.exception and not errors(at), errors(at)
    for page in ("exactness", "rules"):
        at.switch_page(f"pages/{'2_exactness' if page == 'exactness' else '8_rules'}.py")
        at.run(timeout=120)
        assert not at.exception and not errors(at), (page, errors(at))


def test_the_table_editors_are_drawn_only_when_their_expander_is_open():
    closed = app_test(ROOT / "app.py", 30)
    closed.run()
    assert not closed.exception and len(closed.get("arrow_data_frame")) == 0
    assert not [u for u in closed.get("file_uploader")]
    assert len(fresh().get("file_uploader")) == 2
