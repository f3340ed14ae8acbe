"""/text through Streamlit's AppTest: the round animation on n-gram models, URL state,
user text (errors and escaping), the comparisons and the exactness check."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from support import chips, frame, run_page, statuses, unfold

from specviz.analysis.audit import CAUGHT, CONSISTENT
from specviz.web import guard

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "7_text.py")
PLAIN = ("The quick brown fox jumps over the lazy dog. The lazy dog sleeps in the sun. "
         "A brown fox and a lazy dog share the sun and the shade. ") * 6


@pytest.fixture(autouse=True, scope="module")
def _default_corpus(small_default_corpus):
    """The page reads the small stdlib corpus (tests/conftest.py) as its default."""


def _run(timeout: float = 90, **params: str) -> AppTest:
    return run_page(PAGE, timeout, **params)


def _captions(at: AppTest) -> str:
    return " | ".join(c.value for c in at.caption)


def test_page_runs_with_defaults():
    at = _run()
    assert statuses(at) == ["context"] + ["pending"] * 4  # k = 4 by default
    assert len(at.get("plotly_chart")) == 3  # the stage: bars, coin, last token
    assert "Python standard library docstrings" in _captions(at)
    assert "6-gram" in _captions(at) and "2-gram" in _captions(at)
    assert [m.label for m in at.metric][2] == "tokens per target call"
    assert any('class="sv-text"' in h.proto.body for h in at.html)
    assert not at.warning and not at.error
    assert not [d for d in at.dataframe if d.key is None]  # the tables wait, closed
    at = unfold(at)
    assert len(at.get("plotly_chart")) == 5  # and the orders' and drafters' charts, opened
    tables = [d.value for d in at.dataframe if d.key is None]  # editors have keys
    assert len(tables) == 1 and list(tables[0]["drafter"]) == ["n-gram draft", "prompt lookup"]


def test_query_params_reach_the_round():
    at = _run(k="3", step="3", seed="2")
    assert "k = 3" in frame(at)
    assert statuses(at).count("drafted") == 3 and "pending" not in statuses(at)


def test_next_prev_and_new_round_follow_the_url():
    at = _run(seed="2", step="3")
    before = chips(at)
    at.button(key="text_next").click().run()
    assert at.slider(key="text_scrub").value == 4 and at.query_params["step"] == "4"
    at.button(key="text_prev").click().run()
    assert chips(at) == before
    at.button(key="text_new").click().run()
    assert "Round 1" in frame(at) and at.query_params["rnd"] == "1"
    at.slider(key="text_scrub").set_value(2).run()
    again = _run(seed="2", rnd="1", step="2")  # the link replays the same round
    assert chips(again) == chips(at)


def test_past_the_last_step_is_clamped_and_next_starts_a_round():
    at = _run(seed="1", step="999")
    assert any("past the end" in w.value for w in at.warning)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["rounds (target calls)"] == "1"  # the round is done, so it counts
    at.button(key="text_next").click().run()
    assert "Round 1" in frame(at) and at.slider(key="text_scrub").value == 0


def test_word_level_and_orders():
    at = _run()
    at.radio(key="w_level").set_value("word").run()
    assert not at.exception
    caps = _captions(at)
    assert "3-gram" in caps and "1-gram" in caps
    V = int(re.search(r"V = ([\d,]+)", caps).group(1).replace(",", ""))
    assert V > 2_000
    at.slider(key="w_order").set_value(2).run()
    assert not at.exception and "2-gram at" in _captions(at)


def test_draft_order_stays_below_the_target():
    at = _run()
    at.slider(key="w_dorder").set_value(5).run()
    at.slider(key="w_order").set_value(3).run()
    assert not at.exception
    assert at.slider(key="w_dorder").value == 2


def test_bad_pasted_text_falls_back_with_an_error():
    at = _run()
    at.radio(key="text_source").set_value("paste").run()
    at.text_area(key="text_paste").input("too short").run()
    assert not at.exception
    assert any("too short" in e.value for e in at.error)
    assert "Python standard library docstrings" in _captions(at)


def test_pasted_text_is_used_and_escaped():
    at = _run()
    at.radio(key="text_source").set_value("paste").run()
    at.text_area(key="text_paste").input(PLAIN + " <script>alert(1)</script> " * 3).run()
    at.text_area(key="w_prompt").input("<script>alert(").run()
    assert not at.exception and not at.error
    assert "pasted text" in _captions(at)
    at.button(key="text_new").click().run()
    ours = " ".join(h.proto.body for h in at.html
                    if 'class="sv-chips"' in h.proto.body or 'class="sv-text"' in h.proto.body)
    assert "<script>" not in ours and "&lt;script&gt;" in ours


def test_unknown_prompt_tokens_are_noted_and_an_empty_prompt_stops():
    at = _run()
    at.text_area(key="w_prompt").input("Return 漢字 the").run()
    assert "not in the corpus" in _captions(at)
    at.text_area(key="w_prompt").input("").run()
    assert not at.exception and any("Type a prompt" in i.value for i in at.info)


def test_rules_from_the_url():
    at = _run(rule="greedy", step="999")
    assert any("greedy" in w.value for w in at.warning)
    at = _run(rule="multi_draft", step="0")  # SpecInfer's candidates play on text too
    assert not at.exception and not any("uses 'correct'" in w.value for w in at.warning)
    assert "3 candidates after every node" in frame(at)  # its tree: m candidates at each depth


def test_prompt_lookup_in_the_animation():
    at = _run(seed="3")
    at.radio(key="w_drafter").set_value("lookup").run()
    assert not at.exception
    assert "sv-caption" in frame(at) and "Context" in frame(at)


@pytest.mark.slow  # over 2 s on a quiet core (tests/conftest.py)
def test_exactness_check_runs_on_demand():
    at = unfold(_run(k="3"))
    at.button(key="text_exact").click().run(timeout=120)
    assert not at.exception
    table = next(d.value for d in at.dataframe if d.key is None and "rule" in d.value)
    verdict = dict(zip(table["rule"], table["verdict"], strict=True))
    assert verdict["correct"] == CONSISTENT
    assert verdict["greedy"] == CAUGHT == verdict["no_resample"]
    p_value = dict(zip(table["rule"], table["chi-square p"], strict=True))
    assert p_value["correct"] > 1e-3 > p_value["greedy"]


# ----------------------------------------------------------------------------- hostile input
INJECTIONS = ("![](//host.example/i1)", "[Sign in](//host.example/login)",
              "$$\\begin{matrix}x\\end{matrix}$$", "https://host.example/x www.host.example",
              "<img src=//host.example/i2>", ":red[big] **bold** `code`")
UNESCAPED = re.compile(r"(?<!\\)!?(?<!\\)\[[^\]]*(?<!\\)\]\(|(?<!\\)\$|://"
                       r"|(?<!\\)www\.|(?<!\\)<img|(?<!\\)\*\*bold")


def _markdown_bodies(at: AppTest) -> list[str]:
    """Every element Streamlit renders as Markdown."""
    out = []
    for group in (at.markdown, at.caption, at.info, at.warning, at.error, at.success):
        out += [e.proto.body for e in group]
    return out


@pytest.mark.parametrize("payload", INJECTIONS)
def test_user_text_reaches_markdown_escaped(payload):
    """A prompt's tail, pasted text and its tokens go into captions and notes: none of
    their Markdown (images, links, LaTeX, autolinks, HTML, directives) may render."""
    at = _run(prompt=f"Return {payload}")
    assert not at.exception
    bad = [b for b in _markdown_bodies(at) if UNESCAPED.search(b)]
    assert not bad, bad
    at.radio(key="text_source").set_value("paste").run()
    at.text_area(key="text_paste").input((PLAIN + f" {payload} ") * 2).run()
    at.button(key="text_next").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    bad = [b for b in _markdown_bodies(at) if UNESCAPED.search(b)]
    assert not bad, bad


def _word_text(words: int, length: int = 100_000 // 1) -> str:
    return " ".join(chr(ord("a") + i) * (length // max(1, words)) for i in range(words))


@pytest.mark.parametrize("words", [1, 2, 3, 4])
def test_word_level_with_too_few_words_is_a_message(words):
    """A 100 KB single word, or 2-4 words: once a ValueError / IndexError traceback."""
    at = _run(level="word")
    at.radio(key="text_source").set_value("paste").run()
    at.text_area(key="text_paste").input(_word_text(words)).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("cannot make a model" in e.value and "tokens" in e.value for e in at.error), \
        [e.value for e in at.error]
    assert "Python standard library docstrings" in _captions(at)


def test_a_users_models_live_in_the_session():
    at = unfold(_run())  # every section open: the orders' and drafters' results are kept too
    # the default corpus's models are the server's, never kept in a session
    assert "_guard_models" not in at.session_state or not len(at.session_state["_guard_models"])
    at.radio(key="text_source").set_value("paste").run()
    at.text_area(key="text_paste").input(PLAIN).run()
    assert not at.exception and "pasted text" in _captions(at)
    store = at.session_state["_guard_models"]
    assert len(store) == 2 and 0 < store.nbytes <= guard.SESSION_MODEL_BYTES
    results = at.session_state["_guard_results"]
    assert len(results) >= 3  # the round, the draft orders, the drafters


@pytest.mark.slow  # over 2 s on a quiet core (tests/conftest.py)
def test_a_long_check_says_how_far_it_was_cut():
    at = unfold(_run(level="word", order="4", k="32", rule="typical", T="10"), timeout=120)
    assert not at.exception
    notes = [i.value for i in at.info if "decodes per rule, not" in i.value]
    assert notes and "about 5 s" in notes[0], [i.value for i in at.info]


def test_presenter_bar_holds_the_draft_temperature():
    """Presenter mode hides the sidebar: /text's story (heat the draft up, the tour's
    chapter) needs T, and k, in the bar at the top; changing T there reruns the page with
    it (the URL follows)."""
    at = _run(present="1")
    main = {w.key for w in at.main.slider}  # named on their thumbs, as k and c
    assert {"w_T", "w_k"} <= main, main
    assert "w_T" not in {w.key for w in at.sidebar.number_input}
    at.slider(key="w_T").set_value(2.0).run(timeout=90)
    assert not at.exception, [e.value for e in at.exception]
    assert at.query_params["T"] == ["2"] or at.query_params["T"] == "2", at.query_params
