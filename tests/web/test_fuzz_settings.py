"""Fuzzing the layer that turns a URL into settings (specviz.settings.parse_query).

For every page, at least 500 random and adversarial query strings: wrong types, huge and
negative numbers, NaN, inf, empty values, unicode, script tags, repeated keys (lists) and
unknown keys. parse_query must never raise, every field must stay in its documented range,
a value that arrived valid must be kept, one that did not must get a note, and no note may
carry markup or more of the input than settings.sanitise lets through.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, fields, replace

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from support import tiered

from specviz.views import site
from specviz.web import settings as S

EXAMPLES_PER_PAGE = 500
DEV_EXAMPLES = 50  # the development tier's (the fuzz tier runs EXAMPLES_PER_PAGE as well)

# The oracle's kinds of field, read from each field's declaration (settings.FIELDS: the one
# place a range lives); how a value of each kind is read is written out below, on its own.
INTS = {f.name: (f.parse.lo, f.parse.hi) for f in S.FIELDS
        if type(getattr(f.parse, "lo", None)) is int}
FLOATS = {f.name: (f.parse.lo, f.parse.hi) for f in S.FIELDS
          if type(getattr(f.parse, "lo", None)) is float}
GAPS = {f.name: f.parse.gap for f in S.FIELDS  # (a, b): a number between is held at b
        if hasattr(f.parse, "gap")}
CHOICES = {f.name: f.parse.options for f in S.FIELDS
           if all(type(o) is str for o in getattr(f.parse, "options", (0,)))}
NUMBER_CHOICES = {f.name: f.parse.options for f in S.FIELDS
                  if hasattr(f.parse, "options") and f.name not in CHOICES}

# every page: the sidebar's fields and its own, as the page's fields are declared
PAGES = {p.path or "home": S.SHARED_KEYS + S.page_keys(p.path) for p in site.PAGES}

# ----------------------------------------------------------------------------- strategies
NASTY = [
    "", " ", "  \t ", "nan", "NaN", "-nan", "inf", "-inf", "+inf", "Infinity", "-Infinity",
    "1e308", "-1e308", "1e309", "-1e309", "1.7976931348623157e308", "5e-324", "-0", "-0.0",
    "0", "1", "-1", "2", "4", "4.0", "4.5", "1e3", "1E3", "0x10", "0b1", "1_000", "+7",
    "9" * 400, "-" + "9" * 400, "1" * 5000, "٤", "４", "𝟜", "Ⅳ", "½", "e", "a", "A", "f",
    "correct", "CORRECT", "correct ", "mix", "table", "H100 SXM", "Llama-2-7B", "fp16",
    "None", "null", "True", "false", "[]", "{}", "4;5", "4,5", "4 5", "4\x00", "\x00",
    "\n4", "4\r\n", "\u200b4", "4\u202e", "\ufeff4",
    "<script>alert(1)</script>", "\"><img src=x onerror=alert(1)>", "<svg/onload=alert(1)>",
    "javascript:alert(1)", "' OR 1=1 --", "%3Cscript%3E", "&lt;b&gt;", "&#60;script&#62;",
    "{{7*7}}", "${7*7}", "`id`", "../../etc/passwd", "<", ">", "'", '"', "\\", "😀" * 50,
]
UNKNOWN_KEYS = ["", "K", "k ", " k", "kk", "__proto__", "constructor", "P", "Q", "<b>", "x" * 300,
                "step[]", "c%00", "😀"]

numberish = st.one_of(
    st.integers(-(10**30), 10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(-1e6, 1e6).map(lambda x: f"{x:.3f}"),
    st.from_regex(r"\A[+-]?\d{0,4}(\.\d{0,4})?([eE][+-]?\d{1,3})?\Z"),
)
text = st.one_of(st.sampled_from(NASTY), st.text(max_size=40), numberish)
wrong_types = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(),
                        st.binary(max_size=8), st.just(object.__new__(object)))
scalar = st.one_of(text, text, text, wrong_types)
value = st.one_of(scalar, scalar, st.lists(scalar, max_size=4),
                  st.lists(st.lists(scalar, max_size=2), max_size=2))


def page_params(keys: tuple[str, ...]):
    """A query: mostly the page's keys, some other known keys, some unknown ones."""
    key = st.one_of(st.sampled_from(keys), st.sampled_from(keys), st.sampled_from(S.KEYS),
                    st.sampled_from(UNKNOWN_KEYS), st.text(max_size=6))
    return st.dictionaries(key, value, max_size=8)


# ----------------------------------------------------------------------------- the oracle
def last_value(raw: object) -> object:
    """Repeated keys arrive as a list; the last one counts (an empty list is an empty value)."""
    if isinstance(raw, (list, tuple)):
        return raw[-1] if raw else ""
    return raw


def verdict(key: str, raw: object) -> tuple[str, object]:
    """('ok', value) for a valid value, ('out', clamped) for a number outside its range,
    ('bad', None) for anything else."""
    s = str(last_value(raw)).strip()
    if key in CHOICES:
        return ("ok", s) if s in CHOICES[key] else ("bad", None)
    try:
        v = float(s)
    except (ValueError, OverflowError):
        return "bad", None
    if not math.isfinite(v):
        return "bad", None
    if key in NUMBER_CHOICES:  # one of a few numbers, in the options' type
        options = NUMBER_CHOICES[key]
        return ("ok", type(options[0])(v)) if v in options else ("bad", None)
    lo, hi = INTS.get(key) or FLOATS[key]
    if key in INTS:
        if v != int(v):
            return "bad", None
        if lo <= v <= hi:
            return "ok", int(v)
        return "out", int(min(max(v, lo), hi))
    if key in GAPS and GAPS[key][0] < v < GAPS[key][1]:
        return "out", GAPS[key][1]
    if lo <= v <= hi:
        return "ok", v
    return "out", min(max(v, lo), hi)


def assert_in_range(s: S.Settings) -> None:
    for f in fields(s):
        v = getattr(s, f.name)
        if f.name in INTS:
            lo, hi = INTS[f.name]
            assert type(v) is int and lo <= v <= hi, (f.name, v)
        elif f.name in FLOATS:
            lo, hi = FLOATS[f.name]
            assert type(v) is float and math.isfinite(v) and lo <= v <= hi, (f.name, v)
        elif f.name in CHOICES or f.name in NUMBER_CHOICES:
            assert v in {**CHOICES, **NUMBER_CHOICES}[f.name], (f.name, v)
            assert type(v) is type(getattr(S.DEFAULTS, f.name)), (f.name, v)
        else:  # texts, blobs and trees: their own parser must accept them
            S.FIELD[f.name].parse(S.url_text(v))


SAFE_ECHO = re.compile(r"[A-Za-z0-9.+\-?]*(\.\.\.)?")


def assert_safe_notes(notes: list[str], params: dict) -> None:
    for note in notes:
        assert isinstance(note, str) and len(note) < 400, note
        assert not set(note) & set("<>\"`\x00\r\n"), note
        m = re.match(r"URL parameter (\w+)='([^']*)'", note)
        assert m, f"note does not name its parameter: {note!r}"
        key, echoed = m[1], m[2]
        assert key in S.KEYS
        assert SAFE_ECHO.fullmatch(echoed) and len(echoed) <= 27, echoed
        assert echoed == S.sanitise(last_value(params[key])), (echoed, params[key])


def check(params: dict) -> None:
    s, notes = S.parse_query(params)
    assert isinstance(s, S.Settings) and isinstance(notes, list)
    assert_in_range(s)
    assert_safe_notes(notes, params)
    noted = [re.match(r"URL parameter (\w+)=", n)[1] for n in notes]
    assert len(noted) == len(set(noted)), notes  # one note per parameter
    for key in S.KEYS:
        if key not in params:
            assert key not in noted
            assert getattr(s, key) == getattr(S.DEFAULTS, key), key
            continue
        if key not in INTS and key not in FLOATS and key not in CHOICES | NUMBER_CHOICES:
            continue  # a text: range checked above
        kind, expected = verdict(key, params[key])
        got = getattr(s, key)
        if kind == "ok":
            assert key not in noted, (key, params[key], notes)
            assert got == expected, (key, params[key], got)
        elif kind == "bad":
            assert key in noted, (key, params[key])
            assert got == getattr(S.DEFAULTS, key), (key, params[key], got)
        else:  # out of range: a note, and the default or the nearest end of the range
            assert key in noted, (key, params[key])
            assert got in (expected, getattr(S.DEFAULTS, key)), (key, params[key], got)
    assert set(noted) <= set(params)


# ----------------------------------------------------------------------------- the fuzz
@pytest.mark.parametrize("page, examples", tiered(  # 50 a page in the development tier
    [(page, n) for page in PAGES for n in (DEV_EXAMPLES, EXAMPLES_PER_PAGE)],
    keep=lambda _, case: case[1] == DEV_EXAMPLES))
def test_parse_query_never_fails_and_stays_in_range(page, examples):
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(params=page_params(PAGES[page]))
    @example(params={key: "<script>alert(1)</script>" for key in PAGES[page]})
    @example(params={key: ["1", "nan", "1e308"] for key in PAGES[page]})
    @example(params={key: [] for key in PAGES[page]})
    @example(params={key: "" for key in PAGES[page]})
    @example(params={key: "-1" for key in PAGES[page]})
    @example(params={key: "9" * 400 for key in PAGES[page]})
    @example(params={"unknown": "x", "K": "7", "k ": "7"})
    def run(params):
        check(params)

    run()


def test_every_field_is_fuzzed_on_a_page_and_read_by_the_oracle():
    """Every field is fuzzed on the pages that draw it, and every number or choice by the
    oracle: a field that goes away, or a page without its fields, fails here instead of its
    fuzzing quietly shrinking."""
    fuzzed = {k for keys in PAGES.values() for k in keys}
    assert fuzzed == set(S.KEYS), set(S.KEYS) ^ fuzzed
    judged = {*INTS, *FLOATS, *CHOICES, *NUMBER_CHOICES}
    texts = {"tree", "prompt", "llm_prompt", "llm_arg", "plan_metrics", "plan_before",
             "plan_model", "plan_target_cfg", "plan_draft_cfg", "plan_here", "plan_link",
             "m_prompt", "a_code"}
    assert judged == set(S.KEYS) - texts, set(S.KEYS) - texts - judged
    assert len(INTS) >= 30 and len(FLOATS) >= 25 and len(CHOICES) >= 20


NUMBER_KEYS = [*INTS, *FLOATS, *NUMBER_CHOICES]
NON_NUMBERS = ["nan", "inf", "-inf", "1e308", "-1e308", "", "abc", "<b>1</b>", "1e400",
               ["2", "x"], []]


@pytest.mark.parametrize("key, raw", tiered(  # the development tier: every key once, and
    [(key, raw) for key in NUMBER_KEYS for raw in NON_NUMBERS],  # every raw value on 5-6
    keep=lambda i, case: i // len(NON_NUMBERS) % len(NON_NUMBERS) == i % len(NON_NUMBERS)))
def test_every_number_rejects_non_numbers(key, raw):
    s, notes = S.parse_query({key: raw})
    assert len(notes) == 1 and f"URL parameter {key}=" in notes[0]
    assert_in_range(s)
    if verdict(key, raw)[0] == "bad":
        assert getattr(s, key) == getattr(S.DEFAULTS, key)


@pytest.mark.parametrize("key", list(CHOICES))
def test_every_choice_takes_exact_names_only(key):
    for option in CHOICES[key]:
        assert getattr(S.parse_query({key: option})[0], key) == option
        assert getattr(S.parse_query({key: [option.upper() + "x", option]})[0], key) == option
    s, notes = S.parse_query({key: "<script>" + CHOICES[key][0]})
    assert getattr(s, key) == getattr(S.DEFAULTS, key) and len(notes) == 1
    assert "<" not in notes[0] and "script" in notes[0]  # echoed, but sanitised


def test_unknown_keys_are_ignored_silently():
    s, notes = S.parse_query({"K": "7", "kk": "1", "<script>": "x", "": "", "P ": "1"})
    assert s == S.DEFAULTS and notes == []


def test_long_values_are_cut_in_notes():
    _, notes = S.parse_query({"k": "A" * 10_000})
    assert len(notes) == 1 and "A" * 25 not in notes[0] and "..." in notes[0]


# ----------------------------------------------------------------------------- round trip
def _float_in(lo: float, hi: float, places: int | None = None):
    f = st.floats(lo, hi, allow_nan=False, allow_infinity=False)
    return f.map(lambda x: min(max(round(x, places), lo), hi)) if places is not None else f


def valid_settings(float_places: int | None):
    """Settings drawn from the documented ranges; floats rounded to `places` decimals."""
    parts = {k: st.integers(lo, hi) for k, (lo, hi) in INTS.items()}
    parts |= {k: _float_in(lo, hi, float_places) for k, (lo, hi) in FLOATS.items()}
    parts |= {k: parts[k].filter(lambda v, g=g: not g[0] < v < g[1]) for k, g in GAPS.items()}
    parts |= {k: st.sampled_from(v) for k, v in {**CHOICES, **NUMBER_CHOICES}.items()}
    known = {f.name for f in fields(S.Settings)}
    parts = {k: v for k, v in parts.items() if k in known}
    return st.builds(lambda **kw: replace(S.DEFAULTS, **kw), **parts)


EXAMPLES = tiered([(DEV_EXAMPLES,), (500,)], keep=lambda i, _: i == 0)


@pytest.mark.parametrize("examples", EXAMPLES)
def test_round_trip_of_what_the_widgets_can_set(examples):
    """Sliders and number inputs step by 0.01 or 0.05: those settings survive the URL."""
    @settings(max_examples=examples, deadline=None, database=None)
    @given(s=valid_settings(float_places=2))
    def run(s):
        q = S.to_query(s)
        assert all(isinstance(v, str) for v in q.values())
        back, notes = S.parse_query(q)
        assert notes == []
        assert back == s

    run()


@pytest.mark.parametrize("examples", EXAMPLES)
def test_round_trip_at_full_precision(examples):
    """Any valid setting, at full float precision, survives the URL: a copied link reopens
    exactly the same state (a typed T = 1.2345678 or a URL's c = 0.123456789 included)."""
    @settings(max_examples=examples, deadline=None, database=None,
              phases=(Phase.explicit, Phase.generate))  # no shrinking: reported as it is
    @given(s=valid_settings(float_places=None))
    @example(s=replace(S.DEFAULTS, c=0.123456789, alpha=1 / 3, T=1.2345678))
    def run(s):
        back, notes = S.parse_query(S.to_query(s))
        assert notes == []
        assert back == s, {k: (v, asdict(back)[k]) for k, v in asdict(s).items()
                           if asdict(back)[k] != v}

    run()


def test_to_query_leaves_defaults_out():
    assert S.to_query(S.DEFAULTS) == {}
    assert S.parse_query({}) == (S.DEFAULTS, [])
