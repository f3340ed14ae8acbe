"""Hostile URLs end to end: every page, through AppTest, at least 30 query strings each.

Each case is a fresh session (a fresh AppTest: the URL is read on a session's first run).
The pure layer (settings.parse_query) is the oracle for which notes must appear; the page
must show each of them as a warning, raise nothing, and reflect no markup.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from urllib.parse import parse_qs, urlencode

import pytest
from streamlit.testing.v1 import AppTest
from support import bound_undeclared, run_page, tiered

from specviz.views import site
from specviz.web import settings as S

ROOT = Path(__file__).resolve().parents[2]
PAGES = {p.path or "home": (p.path, p.script, S.page_keys(p.path)) for p in site.PAGES
         if p.path not in ("plan", "llm")}  # /plan and /llm have tests of their own
# (test_page_plan; tests/llm/test_llm_page, on the worker that holds the real model); a
# page's own fields are those declared for it (settings.FIELDS), the sidebar's every page's
SHARED = S.SHARED_KEYS
SMALL_N = "2000"  # keeps /exactness fast whenever n itself is not under test
# what the payloads would leave behind if reflected (the app's own markup has none of it)
MARKUP = ("alert(1)", "<img src=x", "<svg/onload", "onerror=", "javascript:alert")
TAG = re.compile(r"<[A-Za-z/!]")
LINK = re.compile(r"(?<!\\)\[[^\]]*(?<!\\)\]\((?://|https?:|javascript:)")  # to a host
NASTY = ["<script>alert(1)</script>", "\"><img src=x onerror=alert(1)>", "nan", "-inf", "inf",
         "1e308", "-1", "", " ", "abc", "😀", "٤", "4.5", "0x10", "1_000", "\x00", "9" * 400,
         "<svg/onload=alert(1)>", "javascript:alert(1)", "%3Cb%3E", "None", "-0"]
V = 6
NAN_TABLE = ";".join([",".join(["nan"] * V)] * V)
BIG_TABLE = ";".join([",".join(["1e308"] * V)] * V)
NEG_TABLE = ";".join([",".join(["-1"] + ["0.4"] * (V - 1))] * V)


def cases_for(page: str) -> list[dict]:
    """30+ hostile query strings for one page (deterministic)."""
    own = PAGES[page][2]
    cases: list[dict] = [
        {"k": "<script>alert(1)</script>"},
        {"c": "nan"},
        {"c": "inf", "alpha": "-inf"},
        {"k": "1e308"},
        {"k": "-1", "seed": "-5"},
        {"seed": "9" * 400},
        {"T": "0"},
        {"T": "1e-320", "alpha": "1.5"},
        {"rule": "<img src=x onerror=alert(1)>"},
        {"ctx": "z"},
        {"ctx": "😀", "draft": "<b>mix</b>"},
        {"draft": ""},
        {"k": ["2", "3", "x"]},  # repeated key: the last counts
        {"k": ["3", "5"], "c": ["0.2", "0.3"]},
        {"unknown": "1", "K": "9", "<b>": "x", "__proto__": "{}"},  # unknown keys only
        {"P": "garbage"},
        {"Q": "0.5,0.5;0.5,0.5"},  # the wrong shape
        {"P": NAN_TABLE},
        {"P": BIG_TABLE, "Q": NEG_TABLE},
        {"P": "1," * 5000},  # a huge value
        {"k": "٤"},  # a unicode digit: Python reads it as 4
        {"k": "4.5", "seed": "0.5"},
        {"c": "-0.0"},
        {"k": "", "c": "", "seed": "", "rule": ""},
        {key: "<script>alert(1)</script>" for key in SHARED},
        {"k": "\x00", "T": "\n"},
        {"seed": "1_000", "c": "0x10"},
        {"notation": "<x>"},
    ]
    cases += [{key: v} for key in own for v in ("-1", "abc", "1e308", "<b>1</b>")]
    if page == "text":  # the prompt's tail reaches captions: Markdown must not render
        cases += [{"prompt": p} for p in ("![](//host.example/i1)", "[Sign in](//host.example)",
                                          "$$\\int_0^1 x\\,dx$$", "www.host.example")]
    rng = random.Random(f"specviz-{page}")  # a few more, drawn from NASTY
    while len(cases) < 36:
        keys = rng.sample(SHARED + own, k=rng.randint(1, 3))
        cases.append({key: rng.choice(NASTY) for key in keys})
    return cases


CASES = [(page, i, q) for page in PAGES for i, q in enumerate(cases_for(page))]
ORDER = list(PAGES)


def _sampled(page: str, i: int) -> bool:
    """The development tier's sample: case i on one page in len(PAGES), turn about, so each
    of the common cases (the first 36) runs on some page and each page runs 3 or more (46
    of 512 in all; some of the pages' own fields' cases, last in their lists, among them)."""
    return i % len(ORDER) == ORDER.index(page)


def _all_text(at: AppTest) -> list[str]:
    out = []
    for kind in ("markdown", "caption", "warning", "error", "info", "success", "title",
                 "header", "subheader", "text", "latex", "code"):
        out += [str(getattr(e, "value", "")) for e in getattr(at, kind)]
    out += [str(m.label) + str(m.value) for m in at.metric]
    out += [str(h.proto.body) for h in at.get("html")]
    out += [str(c.value) for c in at.code]
    return out


@pytest.mark.parametrize("page, i, params", tiered(
    CASES, keep=lambda _, case: _sampled(*case[:2]), ids=[f"{p}-{i}" for p, i, _ in CASES]))
def test_hostile_url(page, i, params):
    path, script, _ = PAGES[page]
    query = dict(params)
    if page == "exactness" and "n" not in query:
        query["n"] = SMALL_N
    at = run_page(ROOT / script, 60, **query)

    # the oracle: what the URL layer says about this query, as the browser would send it
    sent = parse_qs(urlencode(query, doseq=True), keep_blank_values=True)
    _, notes = S.parse_query(sent)
    warnings = [w.value for w in at.warning]
    for note in notes:
        assert note in warnings, (note, warnings)
    if "P" in query or "Q" in query:
        assert any("tables in the URL were not used" in w for w in warnings), warnings
    if notes or "P" in query or "Q" in query:
        assert warnings, "something was invalid but no note was shown"

    # nothing reflected unescaped, no error box
    for text in _all_text(at):
        low = text.lower()
        assert not any(m in low for m in MARKUP), text[:200]
    for note in warnings:
        assert not TAG.search(note), note
    for group in (at.markdown, at.caption, at.info, at.warning, at.error):
        for e in group:
            assert not LINK.search(e.proto.body), e.proto.body[:200]
    assert not at.error, [e.value for e in at.error]

    # the rewritten URL holds only valid values, of fields declared for this page
    back, back_notes = S.parse_query(dict(at.query_params))
    assert back_notes == [], dict(at.query_params)
    assert not bound_undeclared(at, path)
    assert set(at.query_params) - {"P", "Q"} <= {*SHARED, *S.page_keys(path)}


def test_enough_cases_per_page():
    for page in PAGES:
        assert len(cases_for(page)) >= 30, page
