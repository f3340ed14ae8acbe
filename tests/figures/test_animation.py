"""The /round page's pure builders: frames, chips, figures, transcript (no Streamlit)."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import numpy as np
import plotly.graph_objects as go
import pytest
from support import narrated_round

from specviz import default_tables, residual
from specviz.core.pair import TablePair
from specviz.core.scenario import Scenario
from specviz.figures import animation as A
from specviz.figures import roundlist
from specviz.views import stepping, transcript
from specviz.views.narration import play_narrated
from specviz.views.stepping import totals_at
from specviz.web import bigtype


def _transcript(pair, prefix, k, *, rule="correct", seed=0, tree=(), **kw):
    sc = Scenario.on(pair, prefix, k=k, rule=rule, seed=seed, tree=tree)
    return transcript.round_transcript(sc, **kw)

T = default_tables()
BAR_ATOL = 0.5 * 10.0 ** -A.FIGURE_DECIMALS  # bars travel rounded to this many decimals


def _round(seed: int, rule: str = "correct", k: int = 4, vocab=None):
    return narrated_round(TablePair(T.P, T.Q, vocab), 0, k, rng=np.random.default_rng(seed),
                          rule=rule)


def _find(pred, rule: str = "correct", k: int = 4, vocab=None):
    """The first seeded round (seed 0, 1, ...) that satisfies pred."""
    for seed in range(500):
        tr = _round(seed, rule, k, vocab)
        if pred(tr):
            return tr
    raise AssertionError("no such round in 500 seeds")


def _idx(tr, kind: str, position: int | None = None) -> int:
    return next(i for i, s in enumerate(tr.steps)
                if s.kind == kind and (position is None or s.position == position))


def _key(tr):
    """What identifies a round's draws (traces hold arrays, so == does not compare them)."""
    return tr.ctx, tr.tokens, tuple(s.caption for s in tr.steps)


def _statuses(html_text: str) -> list[tuple[str, str | None]]:
    return re.findall(r'data-status="(\w+)"(?: data-pos="(\d+)")?', html_text)


REJECTED_EARLY = _find(lambda t: t.rejected_at is not None and t.rejected_at <= 2)
ALL_KEPT = _find(lambda t: t.rejected_at is None)
CONTINUED = _find(lambda t: t.rejected_at is not None and t.rejected_at < 4, rule="continue")


# ----------------------------------------------------------------------------- frames
def test_view_reveals_drafts_then_coins_in_order():
    tr = REJECTED_EARLY
    seen_drafts, seen_checks = [], []
    for step in range(len(tr.steps)):
        v = stepping.view(tr, step)
        seen_drafts.append(v.drafted)
        seen_checks.append(v.verified)
        assert v.kind == tr.steps[step].kind
    assert seen_drafts == sorted(seen_drafts) and seen_drafts[0] == 0 and seen_drafts[-1] == 4
    assert seen_checks == sorted(seen_checks) and seen_checks[-1] == tr.rejected_at
    assert stepping.view(tr, 0).focus is None and not stepping.view(tr, 0).final
    v = stepping.view(tr, _idx(tr, "residual"))
    assert v.final and v.focus == tr.rejected_at and not v.settled
    assert stepping.view(tr, _idx(tr, "flush")).settled
    assert stepping.view(tr, stepping.last_step(tr)).done
    with pytest.raises(ValueError):
        stepping.view(tr, len(tr.steps))


def test_clamp_step_moves_a_step_past_the_end_to_the_last_with_a_note():
    tr = ALL_KEPT
    last = stepping.last_step(tr)
    assert stepping.clamp_step(tr, 3) == (3, None)
    step, note = stepping.clamp_step(tr, 500)
    assert step == last and str(last) in note and "500" in note
    assert stepping.clamp_step(tr, -2)[0] == 0 and stepping.clamp_step(tr, -2)[1]


def test_advance_and_retreat_are_inverse_and_cross_rounds():
    tr = REJECTED_EARLY
    last = stepping.last_step(tr)
    for step in range(last):
        assert stepping.retreat(*stepping.advance(tr, step, 2), tr) == (step, 2)
    assert stepping.advance(tr, last, 2) == (0, 3)  # the last step leads into the next round
    assert stepping.retreat(0, 3, tr) == (last, 2)
    assert stepping.retreat(0, 0, None) == (0, 0)
    assert stepping.advance(tr, last, stepping.RND_MAX) == (last, stepping.RND_MAX)
    R = stepping.RND_MAX
    assert stepping.round_after(5) == 6 and stepping.round_after(R) == R


def test_captions_and_rule_note():
    tr = ALL_KEPT
    counter = A.step_html(tr, 2, 7).split('class="sv-caption"')[0]
    assert "step 2 ·" in counter and "<b>Round 7</b>" in counter
    assert " of " not in counter  # the counter does not give the round's end away
    assert html.escape(tr.steps[2].caption, quote=True) in A.step_html(tr, 2, 7)
    assert A.rule_note(tr) is None
    assert "greedy" in A.rule_note(_round(0, "greedy"))


# ----------------------------------------------------------------------------- chips
def test_chips_show_a_draft_only_from_its_draft_step():
    tr = REJECTED_EARLY
    start = _statuses(A.chips_html(tr, 0))
    assert start[0] == ("context", "")
    assert [s for s, _ in start[1:]] == ["pending"] * 4
    for i in range(1, 5):
        html_i = A.chips_html(tr, _idx(tr, "draft", i))
        st = [s for s, _ in _statuses(html_i)[1:]]
        assert st == ["drafted"] * i + ["pending"] * (4 - i)
        q = tr.positions[i - 1].q
        assert f"q={q:.4f}" in html_i
        if i < 4:  # the next draft's q is not on screen yet
            assert f"x{i + 1}  q=" not in html_i


def test_chips_mark_verdicts_residual_and_flush():
    tr = REJECTED_EARLY
    r = tr.rejected_at
    at_check = _statuses(A.chips_html(tr, _idx(tr, "verify", r)))
    assert at_check[r] == ("rejected", str(r))
    assert all(s == "accepted" for s, _ in at_check[1:r])
    assert "resampled" not in [s for s, _ in at_check]
    at_res = A.chips_html(tr, _idx(tr, "residual"))
    assert [s for s, _ in _statuses(at_res)].count("resampled") == 1
    assert "flushed" not in at_res
    done = A.chips_html(tr, stepping.last_step(tr))
    statuses = [s for s, _ in _statuses(done)]
    assert statuses.count("flushed") == len(tr.flushed) > 0
    assert done.count("line-through") == len(tr.flushed)
    res = next(e for e in tr.emitted if e.origin == "resampled")
    assert f">{tr.name(res.token)}</b>" in done


def test_chips_bonus_only_once_drawn_and_unverified_for_continue():
    tr = ALL_KEPT
    before = A.chips_html(tr, _idx(tr, "bonus") - 1)
    assert "bonus" not in [s for s, _ in _statuses(before)]
    after = _statuses(A.chips_html(tr, _idx(tr, "bonus")))
    assert after[-1] == ("bonus", "5")
    assert [s for s, _ in after[1:5]] == ["accepted"] * 4
    tr = CONTINUED
    done = [s for s, _ in _statuses(A.chips_html(tr, stepping.last_step(tr)))]
    assert done.count("unverified") == 4 - tr.rejected_at and "flushed" not in done


def test_token_names_are_escaped_everywhere():
    vocab = ("<b>", "a&b", "<script>x</script>", "d", "e", '"f"')
    tr = _round(1, vocab=vocab)
    rounds = play_narrated(Scenario.on(TablePair(T.P, T.Q, vocab), 2, k=4, seed=1), n_rounds=5)
    for text in [A.chips_html(tr, s) for s in range(len(tr.steps))] + [
        roundlist.transcript_html(rounds)
    ]:
        assert "<script>" not in text and "<b>" not in text and '"f"' not in text
    shown = roundlist.transcript_html(rounds)
    assert "&lt;script&gt;" in shown or "&lt;b&gt;" in shown


def test_each_status_has_its_own_symbol_label_and_colour():
    keys = ("accepted", "rejected", "resampled", "bonus", "flushed", "unverified")
    marks = [A.MARKS[k] for k in keys]
    assert len({m.symbol for m in marks}) == len(keys)
    assert len({m.label for m in marks}) == len(keys)
    assert len({m.colour for m in marks}) == len(keys)
    legend = A.legend_html()
    assert all(m.symbol in legend and m.label in legend for m in marks)


# ----------------------------------------------------------------------------- figures
def test_bars_show_q_while_drafting_then_p_and_q():
    tr = REJECTED_EARLY
    assert len(A.bars_figure(tr, 0).data) == 0
    fig = A.bars_figure(tr, _idx(tr, "draft", 2))
    assert isinstance(fig, go.Figure) and len(fig.data) == 1
    pos = tr.positions[1]
    (q,) = fig.data
    assert q.type == "bar" and list(q.x) == list(tr.vocab)
    np.testing.assert_allclose(q.y, pos.q_row, atol=BAR_ATOL)
    fig = A.bars_figure(tr, _idx(tr, "verify", 1))
    p, q = fig.data
    pos = tr.positions[0]
    np.testing.assert_allclose(p.y, pos.p_row, atol=BAR_ATOL)
    np.testing.assert_allclose(q.y, pos.q_row, atol=BAR_ATOL)
    assert fig.layout.barmode == "group"
    assert fig.layout.yaxis.range[0] == 0 and fig.layout.yaxis.range[1] >= pos.p_row.max()
    assert "%{y:.4g}" in p.hovertemplate  # four digits: a small bar is no 0.0000
    widths = list(p.marker.line.width)
    assert widths[pos.token] > 0 and sum(w > 0 for w in widths) == 1
    # on the flush and done steps the bars stay on the rejected position
    fig = A.bars_figure(tr, stepping.last_step(tr))
    np.testing.assert_allclose(fig.data[0].y, tr.positions[tr.rejected_at - 1].p_row)


def test_coin_only_once_the_position_is_checked():
    tr = REJECTED_EARLY
    assert len(A.coin_figure(tr, _idx(tr, "draft", 4)).data) == 0
    assert list(A.coin_figure(tr, 0).layout.xaxis.range) == [0.0, 1.0]
    for i in range(1, tr.rejected_at + 1):
        pos = tr.positions[i - 1]
        fig = A.coin_figure(tr, _idx(tr, "verify", i))
        keep, reject, line, u = fig.data
        assert keep.type == "bar" and keep.x[0] == pytest.approx(pos.threshold)
        assert reject.base[0] == pytest.approx(pos.threshold)
        assert keep.x[0] + reject.x[0] == pytest.approx(1.0)
        assert keep.marker.color == A.MARKS["accepted"].colour
        assert reject.marker.color == A.MARKS["rejected"].colour
        assert list(line.x) == [pos.threshold] * 2
        assert u.x[0] == pytest.approx(pos.u)
        verdict = "accepted" if pos.accepted else "rejected"
        assert u.marker.color == A.MARKS[verdict].colour
        assert A.MARKS[verdict].label in u.text[0]
        assert list(fig.layout.xaxis.range) == [0.0, 1.0]
    assert fig.data[3].marker.color == A.MARKS["rejected"].colour  # the last one is the miss


def test_residual_figure_is_the_residual_law_with_the_drawn_token():
    tr = REJECTED_EARLY
    assert len(A.residual_figure(tr, _idx(tr, "residual") - 1).data) == 0
    fig = A.residual_figure(tr, _idx(tr, "residual"))
    p, q, law = fig.data
    pos = tr.positions[tr.rejected_at - 1]
    np.testing.assert_allclose(law.y, residual(pos.p_row, pos.q_row), atol=BAR_ATOL)
    np.testing.assert_allclose(p.y, pos.p_row, atol=BAR_ATOL)
    assert sum(law.y) == pytest.approx(1.0)
    drawn = next(e for e in tr.emitted if e.origin == "resampled").token
    assert law.y[drawn] > 0 and list(law.marker.line.width)[drawn] > 0
    assert fig.layout.annotations[0].x == tr.vocab[drawn]
    # without a step it shows the finished round
    assert len(A.residual_figure(tr).data) == 3


def test_residual_figure_shows_the_bonus_law_when_all_kept():
    tr = ALL_KEPT
    (bonus,) = A.residual_figure(tr, _idx(tr, "bonus")).data
    np.testing.assert_allclose(bonus.y, tr.bonus_row)
    np.testing.assert_allclose(bonus.y, T.P[tr.positions[-1].token])


def test_no_resample_rule_redraws_from_p():
    tr = _find(lambda t: t.rejected_at is not None, rule="no_resample")
    law = A.residual_figure(tr).data[2]
    assert law.name == "p"
    np.testing.assert_allclose(law.y, tr.positions[tr.rejected_at - 1].p_row)


# ----------------------------------------------------------------------------- transcript
def test_transcript_lists_each_round_and_marks_origins():
    rounds = play_narrated(Scenario.on(TablePair(T.P, T.Q), 0, k=4, seed=3), n_rounds=8)
    text = roundlist.transcript_html(rounds, first=10)
    assert text.count('class="sv-round"') == 8
    assert re.findall(r'data-round="(\d+)"', text) == [str(r) for r in range(10, 18)]
    origins = re.findall(r'data-origin="(\w+)"', text)
    want = [o for t in rounds for o in [e.origin for e in t.emitted] + ["flushed"] * len(t.flushed)]
    assert origins == want
    assert "No round" in roundlist.transcript_html(())


def test_transcript_totals_and_what_is_counted_at_a_step():
    tr = _transcript(TablePair(T.P, T.Q), 0, 4, rnd=20, seed=3, shown=5)
    rounds = play_narrated(Scenario.on(TablePair(T.P, T.Q), 0, k=4, seed=3), n_rounds=21)
    assert _key(tr.current) == _key(rounds[20]) and tr.first == 15
    assert [_key(t) for t in tr.earlier] == [_key(t) for t in rounds[15:20]]
    assert tr.previous is tr.earlier[-1]
    tokens = sum(len(t.emitted) for t in rounds)
    assert tr.through.tokens == tokens and tr.through.rounds == 21
    assert tr.through.tokens_per_call == pytest.approx(tokens / 21)
    assert tr.through.draft_acceptance_rate == pytest.approx(sum(t.accepted for t in rounds) / 84)
    assert tr.before.rounds == 20
    last = stepping.last_step(tr.current)
    assert totals_at(tr, 0) == tr.before and totals_at(tr, last) == tr.through
    assert [id(t) for t in roundlist.listed_rounds(tr, 0)] == [id(t) for t in tr.earlier]
    assert [id(t) for t in roundlist.listed_rounds(tr, last)] == [id(t) for t in tr.earlier] + [
        id(tr.current)]
    labels = dict(transcript.totals_metrics(tr.through))
    assert labels["tokens per target call"] == f"{tokens / 21:.3f}"
    empty = transcript.transcript_totals(())
    assert dict(transcript.totals_metrics(empty))["tokens per target call"] == "–"
    rows = transcript.transcript_rows(tr, include_current=True)
    assert [r["round"] for r in rows] == list(range(15, 21))
    assert rows[-1]["tokens"] == len(tr.current.emitted)


def test_round_transcript_is_seeded():
    a = _transcript(TablePair(T.P, T.Q), 0, 4, rnd=3, seed=5)
    b = _transcript(TablePair(T.P, T.Q), 0, 4, rnd=3, seed=5)
    assert a.current.tokens == b.current.tokens and a.through == b.through
    assert a.current.ctx == a.earlier[-1].next_ctx  # rounds chain


class _ChipStyles(HTMLParser):
    """status -> the style of each chip, read with the standard HTML parser."""

    def __init__(self):
        super().__init__()
        self.styles: dict[str, list[str]] = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "sv-chip" in (a.get("class") or "").split():
            self.styles.setdefault(a["data-status"], []).append(a["style"])


def test_a_flushed_chip_does_not_look_like_a_drafted_one():
    tr = _find(lambda t: t.rejected_at is not None and t.rejected_at < t.k, k=5)
    last = stepping.last_step(tr)
    drafted_at = next(s for s in range(last + 1)
                      if 'data-status="drafted"' in A.chips_html(tr, s))
    parser = _ChipStyles()
    parser.feed(A.chips_html(tr, drafted_at) + A.chips_html(tr, last))
    flushed, drafted = parser.styles["flushed"][0], parser.styles["drafted"][0]

    def prop(style: str, name: str) -> str:
        return dict(p.split(":", 1) for p in style.split(";") if ":" in p)[name]
    assert prop(flushed, "border").split()[1] != prop(drafted, "border").split()[1]
    assert prop(flushed, "background") != prop(drafted, "background")
    assert float(prop(flushed, "opacity")) < 1 == float(prop(drafted, "opacity"))


def test_the_drawn_tokens_label_sits_over_every_bar():
    """'drawn: b' (and 'x1 = b') stand over the plot, the arrow down to the token's own bar:
    the label never covers a bar; at presenter type the title's margin grows to hold it."""
    tr = _find(lambda t: t.rejected_at is not None, k=4)
    last = stepping.last_step(tr)
    for fig in (A.residual_figure(tr, last), A.bars_figure(tr, last)):
        tallest = max(max(b.y) for b in fig.data if b.type == "bar")
        assert fig.layout.yaxis.range[1] > tallest
        marks = [a for a in fig.layout.annotations if a.showarrow]
        assert marks
        for a in marks:
            assert a.ayref == "y" and a.yanchor == "bottom", (a.text, a.ay)
            assert a.y <= tallest < a.ay == fig.layout.yaxis.range[1]  # on the plot's top edge
        big = bigtype.big_figure(fig)
        lines = big.layout.title.text.count("<br>") + 1
        title_px = bigtype.LINE_HEIGHT * bigtype.FIGURE_TITLE_PX * lines
        label_px = bigtype.LINE_HEIGHT * bigtype.FIGURE_FONT_PX
        t = big.layout.margin.t
        # pinned to the top of the margin (raised by Plotly's lift of a longer title's
        # extra lines, undone by its padding), the label under it
        assert big.layout.title.yanchor == "top" and t >= title_px + label_px, t
        lift = (lines - 1) * bigtype.LINE_HEIGHT * bigtype.FIGURE_TITLE_PX / 2
        assert big.layout.title.pad.t == round(bigtype.TITLE_PAD_PX + lift)


def test_the_coins_placeholder_fits_its_column_in_presenter_type():
    tr = _find(lambda t: True)
    fig = A.coin_figure(tr, 0)
    note = fig.layout.annotations[0].text
    assert max(len(line) for line in note.split("<br>")) <= 24  # 1280 px, 20 px type


def test_top_bars_hold_the_rest_of_the_vocabulary_as_one_bar():
    """With top = 3 of V = 6, each chart has the 3 bars (and the marked token's) and one
    bar for the other tokens, whose height is the rest of the row's mass."""
    tr = REJECTED_EARLY
    pos = tr.positions[0]
    fig = A.bars_figure(tr, _idx(tr, "verify", 1), top=3)
    for bars, row in zip(fig.data, (pos.p_row, pos.q_row), strict=True):
        labels, y = list(bars.x), np.asarray(bars.y)
        assert labels[-1] == A.REST_LABEL
        assert len(labels) - 1 <= 4  # the top 3 and, where it is not one of them, the mark
        shown = [tr.vocab.index(x) for x in labels[:-1]]
        assert y[-1] == pytest.approx(1.0 - row[shown].sum(), abs=1e-5)
        assert y.sum() == pytest.approx(1.0, abs=1e-5)
    res = A.residual_figure(tr, top=3)
    assert all(list(b.x)[-1] == A.REST_LABEL for b in res.data)
    assert np.asarray(res.data[-1].y).sum() == pytest.approx(1.0, abs=1e-5)  # the residual
    full = A.bars_figure(tr, _idx(tr, "verify", 1))  # every token shown: no such bar
    assert A.REST_LABEL not in full.data[0].x
    assert f"top {len(fig.data[0].x) - 1} of 6 tokens" in fig.layout.title.text  # the count


def test_a_one_hot_row_lists_no_tied_zeros_as_top_tokens():
    """Prompt lookup's q is one-hot: its top tokens are the copied one (and the mark), not
    the first token ids tied at 0 (<pad> <eos> <bos> <unk> on the real model)."""
    q = np.zeros(50)
    q[37] = 1.0
    assert A.top_tokens([q], 10) == [37]
    assert A.top_tokens([q], 10, must=(5,)) == [37, 5]
    p = np.full(50, 0.02)
    assert len(A.top_tokens([q, p], 10)) == 10  # p gives them mass: ties broken by id


def test_the_top_tokens_are_a_stable_sorts_first_m():
    """top_tokens picks the m largest without a full sort: the same tokens in the same order
    as np.argsort(-x, kind='stable')[:m], ties included (rows with many equal entries)."""
    rng = np.random.default_rng(7)
    for trial in range(300):
        V = int(rng.integers(1, 60))
        x = rng.integers(0, 4, V) / 4.0 if trial % 2 else rng.random(V)  # ties, or none
        for m in (1, 3, 10, V, V + 2):
            want = [int(i) for i in np.argsort(-x, kind="stable")[:m] if x[i] > 0]  # no
            # token at 0 is a top token (a one-hot q's ties would list token ids 0, 1, ...)
            assert A.top_tokens([x], m) == want, (x, m)
    big = rng.random(262_144)
    assert A.top_tokens([big], 10) == [int(i) for i in np.argsort(-big, kind="stable")[:10]]


def test_a_long_token_name_is_cut_on_its_slanted_tick_and_whole_on_its_bar():
    """A name over TICK_CHARS (Gemma's '<start_of_image>') took the bars' plot at 1280x720 in
    presenter mode to 27 px: slanted, its tick ends in an ellipsis after TICK_CHARS - 1
    characters, cut before escaping; the bar (its hover) keeps the whole name."""
    long = "<start_of_image>"
    names = (long, "a", "b", "c", "d", "e")
    P = np.tile([0.5, 0.1, 0.1, 0.1, 0.1, 0.1], (6, 1))  # the long one on top everywhere
    tr = narrated_round(TablePair(P, P, names), 1, 2, rng=np.random.default_rng(0))
    seen = 0
    for fig in (A.bars_figure(tr, 1, top=3), A.residual_figure(tr, top=3)):
        ax = fig.layout.xaxis
        assert ax.tickangle == -40 and len(ax.tickvals) == len(ax.ticktext)
        ticks = dict(zip(ax.tickvals, ax.ticktext, strict=True))
        assert all(len(html.unescape(t)) <= A.TICK_CHARS for t in ticks.values())
        whole = html.escape(long, quote=False)
        if whole in ticks:  # the long token is one of the bars shown
            assert ticks[whole] == html.escape(long[:A.TICK_CHARS - 1] + "…", quote=False)
            assert whole in fig.data[0].x
            seen += 1
    assert seen == 2
    short = A.bars_figure(tr, 1)  # every token shown: upright names, no ticks of its own
    assert short.layout.xaxis.ticktext is None
