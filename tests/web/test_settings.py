"""The URL layer's contract with the rest of the app (fuzzing lives in test_fuzz_settings)."""

from __future__ import annotations

import importlib
from dataclasses import fields
from dataclasses import replace as dc_replace
from urllib.parse import urlencode

import pytest
from support import run_page

from specviz.analysis import deploy, drafting, modelcfg, overheads, parallel, roofline, shape
from specviz.core import tables
from specviz.core.kinds import treeshape as tree
from specviz.core.rules import RULES, reads_warp
from specviz.llm import drafts as llmdrafts
from specviz.text import ngram
from specviz.text import pair as textpair
from specviz.views import (
    gallery,
    llmpage,
    measured,
    plan,
    site,
    textpage,
    tour,
    transcript,
    work,
)
from specviz.views.gallery import warp_params
from specviz.web import settings as S
from specviz.web import urlcodec


@pytest.fixture
def redeclared(monkeypatch):
    """Change an owner (a cap, the rule registry), then read the URL fields again; the
    module is put back as it was afterwards (its Settings class too, which other tests'
    examples were made with)."""
    saved = dict(vars(S))

    def redeclare(target, name, value):
        if isinstance(target, dict):
            monkeypatch.setitem(target, name, value)
        else:
            monkeypatch.setattr(target, name, value)
        importlib.reload(S)
    yield redeclare
    monkeypatch.undo()
    vars(S).clear()
    vars(S).update(saved)


def test_every_rule_parameter_is_the_registrys_param(redeclared):
    """The rule-parameter fields are the registry's Param (name, default, range, integer):
    a field declared beside the registry is a second declaration (refused on import), and a
    changed Param moves its field, so no copy can hide."""
    for r in RULES.values():
        if reads_warp(r):  # a request's warp: one shared set of fields
            continue
        for q in r.params:
            f = S.FIELD[f"{r.name}_{q.name}"]
            assert f.default == q.default and type(f.default) is (int if q.integer else float)
            assert (f.parse.lo, f.parse.hi) == (q.lo, q.hi)
    rule = RULES["lenient"]
    (q,) = rule.params
    redeclared(RULES, "lenient", dc_replace(rule, params=(
        dc_replace(q, default=0.25, lo=0.125, hi=0.75),)))
    f = S.FIELD["lenient_l"]
    assert S.DEFAULTS.lenient_l == 0.25 and (f.parse.lo, f.parse.hi) == (0.125, 0.75)
    assert S.parse_query({"lenient_l": "0.9"})[0].lenient_l == 0.75
    assert S.widget_bounds("lenient_l", "slider") == {"min_value": 0.125, "max_value": 0.75,
                                                       "step": 0.01}


def test_a_field_declared_twice_is_refused():
    """A rule parameter's field written out beside the registry's is refused on import."""
    copy = S.Field("lenient_l", 0.5, S.F.float_in(0.01, 1.0), 0.01)
    with pytest.raises(ValueError, match="declared twice"):
        S.by_name(S.FIELDS + (copy,))
    assert S.FIELD == S.by_name(S.FIELDS)


OWNED = {  # field -> the owner of its bounds (lo, hi), read here from the owner
    "k": lambda: (1, work.K_APP_MAX),
    "n": lambda: (1, work.N_APP_MAX),
    "conv_value": lambda: (0, work.K_APP_MAX + 1),
    "rnd": lambda: (0, transcript.RND_MAX),
    "chapter": lambda: (0, len(tour.CHAPTERS) - 1),
    "m_k": lambda: (1, measured.K_MAX),
    "m_new": lambda: (1, measured.NEW_MAX),
    "llm_T": lambda: (0.0, tables.T_MAX),  # 0: greedy; (0, T_MIN) held at T_MIN
    "m_T": lambda: (0.0, tables.T_MAX),
    "plan_hlayers": lambda: (1, drafting.HEAD_LAYERS_MAX),
    "plan_dtokens": lambda: (0, drafting.TREE_MAX),
    "plan_tp": lambda: (1, parallel.TP_MAX),
    "plan_dtp": lambda: (0, parallel.TP_MAX),
    "plan_devices": lambda: (0, deploy.DEVICES_MAX),
}
OPTIONS = {  # field -> the owner of its options
    "rule": lambda: tuple(RULES), "ctx": lambda: tables.VOCAB, "preset": lambda: modelcfg.PRESETS,
    "dtype": lambda: shape.DTYPE_BYTES, "accel": lambda: roofline.ACCELERATORS,
    "plan_gpu": lambda: roofline.ACCELERATORS, "plan_tdtype": lambda: shape.SERVED_DTYPES,
    "plan_kvdtype": lambda: shape.SERVED_DTYPES, "level": lambda: ngram.LEVELS,
    "drafter": lambda: textpair.DRAFTERS, "llm_kind": lambda: tuple(llmdrafts.KINDS),
    "llm_preset": lambda: llmpage.PRESETS, "m_preset": lambda: llmpage.PRESETS,
    "m_draft": lambda: (*measured.DRAFTS, "all"), "plan_dkind": lambda: drafting.DRAFT_KINDS,
    "rules_n": lambda: gallery.GALLERY_NS, "plan_example": lambda: plan.EXAMPLES,
    "plan_target": modelcfg.preset_names, "plan_draft": modelcfg.preset_names,
    "plan_exec": lambda: overheads.MODES,
}
MAX_CHARS = {
    "prompt": lambda: textpage.PROMPT_MAX_CHARS, "llm_prompt": lambda: llmpage.PROMPT_CHARS_MAX,
    "m_prompt": lambda: llmpage.PROMPT_CHARS_MAX, "llm_arg": lambda: llmpage.ARG_MAX_CHARS,
    "plan_model": lambda: plan.MODEL_NAME_MAX_CHARS, "tree": lambda: tree.PATHS_TEXT_MAX,
}


@pytest.mark.parametrize("key", list(OWNED))
def test_a_fields_range_comes_from_its_owner(key):
    f = S.FIELD[key]
    assert (f.parse.lo, f.parse.hi) == OWNED[key]()
    bounds = S.widget_bounds(key, "number_input")
    assert (bounds["min_value"], bounds["max_value"]) == OWNED[key]()


@pytest.mark.parametrize("key", list(OPTIONS))
def test_a_fields_options_come_from_their_owner(key):
    assert S.FIELD[key].parse.options == tuple(OPTIONS[key]())
    assert S.widget_bounds(key, "selectbox")["options"] == tuple(OPTIONS[key]())


def test_a_number_read_from_a_link_has_its_fields_type():
    """An integer field reads "4" and "4.0" as the int 4, a float field "1" as 1.0: for the
    default and for every option of a number field."""
    numbers = [f for f in S.FIELDS if type(f.default) in (int, float)]
    assert {"k", "c", "rules_n", "speed"} <= {f.name for f in numbers}
    for f in numbers:
        for v in (f.default, *getattr(f.parse, "options", ())):
            for text in (str(v), str(float(v)), str(int(v)) if v == int(v) else str(v)):
                assert type(f.parse(text)) is type(f.default), (f.name, text)


@pytest.mark.parametrize("key", list(MAX_CHARS))
def test_a_texts_cap_comes_from_its_owner(key):
    assert S.widget_bounds(key, "text_area")["max_chars"] == MAX_CHARS[key]()
    assert S.parse_query({key: "x" * (MAX_CHARS[key]() + 1)})[0] == S.DEFAULTS


def test_a_cap_changed_at_its_owner_moves_the_parser_and_the_widget(redeclared):
    """One declaration: the app's k cap changed where it lives moves the URL's cap and the
    sidebar's slider together (a copy of 32 anywhere would stay behind)."""
    redeclared(work, "K_APP_MAX", 17)
    s, notes = S.parse_query({"k": "20", "conv_value": "30"})
    assert s.k == 17 and "an integer 1..17" in notes[0] and s.conv_value == 18.0
    assert S.widget_bounds("k", "slider") == {"min_value": 1, "max_value": 17}
    at = run_page("app.py", 60, k="20")
    assert at.slider(key="w_k").max == 17 and at.slider(key="w_k").value == 17


def test_every_page_key_is_a_field_of_a_page_of_the_site():
    paths = {p.path for p in site.PAGES}
    for f in S.FIELDS:
        assert f.pages == S.ALL or set(f.pages) <= paths, (f.name, f.pages)
    assert set(S.SHARED_KEYS) == {"k", "c", "draft", "alpha", "T", "seed", "rule", "ctx",
                                  "notation", "present", "wT", "wtopk", "wtopp", "wminp",
                                  "wdraft", "tree"}


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


def test_an_old_name_reads_as_the_one_it_has_now_with_a_note():
    """One vocabulary: /plan's drafter without a model is prompt lookup, "lookup" as on /llm,
    /measured, /text and the CLI ("ngram" is an n-gram model there); old links still open."""
    s, notes = S.parse_query({"plan_dkind": "ngram"})
    assert s.plan_dkind == "lookup" and notes == [
        "URL parameter plan_dkind='ngram' is now called plan_dkind=lookup; read as that."]
    assert S.parse_query({"plan_dkind": "lookup"}) == (
        dc_replace(S.DEFAULTS, plan_dkind="lookup"), [])


def test_temperature_0_is_greedy_on_the_real_model_pages():
    """/llm and /measured take T = 0 (greedy decoding), as servers do; a T between 0 and
    the lowest temperature is held there, with a note; below 0 falls back."""
    for key in ("llm_T", "m_T"):
        s, notes = S.parse_query({key: "0"})
        assert getattr(s, key) == 0.0 and not notes
        s, notes = S.parse_query({key: "0.01"})
        assert getattr(s, key) == tables.T_MIN and "held at 0.05" in notes[0]
        s, notes = S.parse_query({key: "-1"})
        assert getattr(s, key) == 0.0 and "0 (greedy) or a number in [0.05, 10]" in notes[0]
    assert S.widget_bounds("llm_T", "number_input")["min_value"] == 0.0


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


def test_a_hidden_fields_value_stays_in_the_link():
    """/measured's own prompt, hidden while a preset prompt is chosen, stays in the
    rewritten URL (binding.keep): a copied link reopens it when 'own' is chosen."""
    at = run_page("pages/12_measured.py", 60, m_prompt="Once upon a time", m_k="3")
    q = {k: v[-1] if isinstance(v, list) else v for k, v in at.query_params.items()}
    assert q == {"m_prompt": "Once upon a time", "m_k": "3"}
