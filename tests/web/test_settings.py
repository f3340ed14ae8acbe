"""The URL layer's contract with the rest of the app (fuzzing lives in test_fuzz_settings)."""

from __future__ import annotations

from dataclasses import fields
from urllib.parse import urlencode

import pytest

from specviz.core.rules import RULES, reads_warp
from specviz.views.gallery import warp_params
from specviz.web import settings as S
from specviz.web import urlcodec


def test_every_rule_parameter_is_a_url_field_with_the_registry_default():
    for r in RULES.values():
        if reads_warp(r):  # a request's warp: one shared set of fields
            continue
        for q in r.params:
            field = f"{r.name}_{q.name}"
            assert field in S.KEYS, field
            assert getattr(S.DEFAULTS, field) == q.default


def test_the_warp_fields_feed_every_warp_rule():
    from specviz.core.warp import Warp

    s, notes = S.parse_query({"wT": "0.7", "wtopp": "0.8", "wtopk": "3", "wdraft": "1"})
    assert not notes
    w = Warp(s.wT, s.wtopk, s.wtopp, s.wminp, bool(s.wdraft))
    params = warp_params(w)
    assert set(params) == {n for n, r in RULES.items() if reads_warp(r)}
    assert params["warped"]["top_p"] == 0.8 and params["warp_raw_q"]["warp_draft"] == 1
    assert warp_params(Warp()) == {}  # no warp: the registry's own
    assert S.parse_query({"wtopp": "0"})[0].wtopp == 0.01  # held at the cap, with a note


def test_prompt_keeps_its_spaces_and_round_trips():
    s, notes = S.parse_query({"prompt": "  def f(x): ", "level": "word", "order": "3"})
    assert not notes and s.prompt == "  def f(x): " and s.level == "word"
    assert S.parse_query(S.to_query(s))[0] == s


@pytest.mark.parametrize("raw, held", [("9", 8), ("-4", 2), ("1e9", 8)])
def test_numbers_past_a_cap_are_held_with_a_note(raw, held):
    s, notes = S.parse_query({"order": raw})
    assert s.order == held and "held at" in notes[0]


def test_garbage_takes_the_default_with_a_note():
    s, notes = S.parse_query({"rules_n": "5", "kv": "yes", "prompt": "x" * 5000})
    assert (s.rules_n, s.kv, s.prompt) == (S.DEFAULTS.rules_n, 0, S.DEFAULTS.prompt)
    assert len(notes) == 3 and all("using the default" in n for n in notes)


def test_work_cap_shrinks_n_for_long_drafts():
    assert S.n_cap(4) == S.N_APP_MAX
    assert S.n_cap(32) == S.WORK_APP_MAX // 33 < S.N_APP_MAX
    assert all(S.n_cap(k) * (k + 1) <= S.WORK_APP_MAX for k in range(1, S.K_APP_MAX + 1))


def test_a_link_never_carries_a_table_past_its_cap():
    """A 600 x 600 table is ~7 MB of query: the HTTP server answers a bare 400. The share
    box leaves such a table out, with a note, and keeps the link under URL_QUERY_MAX_CHARS."""
    import numpy as np

    big = urlcodec.encode_table(np.full((600, 600), 1 / 600))
    q, notes = S.fit_query({"k": "8", "P": big, "Q": urlcodec.encode_table(np.eye(6))})
    assert "P" not in q and q["k"] == "8" and "Q" in q
    assert any("Table P is too large for a link" in n for n in notes)
    blob = "A" * urlcodec.BLOB_URL_MAX_CHARS
    full = {key: blob for key in ("plan_metrics", "plan_target_cfg", "plan_draft_cfg")}
    q, notes = S.fit_query({**full, "prompt": "x" * S.PROMPT_MAX_CHARS})
    assert len(urlencode(q)) <= S.URL_QUERY_MAX_CHARS and not notes  # the largest fit
    q, notes = S.fit_query({**full, "P": "0," * 1_999})
    assert len(urlencode(q)) <= S.URL_QUERY_MAX_CHARS


def test_a_table_in_a_url_past_its_cap_falls_back_with_a_note():
    with pytest.raises(ValueError, match="longer than"):
        urlcodec.decode_table("0.5," * 2_000, 6)


def test_a_token_tree_travels_in_the_url_and_a_bad_one_says_why():
    s, notes = S.parse_query({"tree": " [[0], [1], [0, 0]] "})
    assert not notes and s.tree == "[[0], [1], [0, 0]]"
    assert S.parse_query(S.to_query(s))[0] == s
    assert S.parse_query({"tree": "3-2-1"})[0].tree == "3-2-1"
    s, notes = S.parse_query({"tree": "[[0], [2]]"})
    assert s.tree == "" and len(notes) == 1
    assert "without its earlier sibling [1]" in notes[0] and "tree unset" in notes[0]
    s, notes = S.parse_query({"tree": "30-30"})
    assert s.tree == "" and "the cap is 256" in notes[0]


@pytest.mark.parametrize("raw", ["34", "1e9", "33.5"])
def test_a_float_field_past_its_cap_is_held_as_a_float(raw):
    """conv_value's cap is K_APP_MAX + 1, an int: the held value was the int 33, and a float
    number input refuses an int value (the page stopped)."""
    s, notes = S.parse_query({"conv_value": raw})
    assert s.conv_value == 33.0 and type(s.conv_value) is float and "held at" in notes[0]
    assert all(type(getattr(S.parse_query({f.name: "1e300"})[0], f.name)) is float
               for f in fields(S.Settings) if f.type in ("float", float))
