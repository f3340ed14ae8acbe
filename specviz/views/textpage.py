"""Page-level data and pure figure builders for /text (speculative decoding on n-gram text).

Functions whose first parameter is `_dec` or `_counts` take a model object that Streamlit
must not hash (it is large); the next parameter, `key`, identifies it instead, so the page
can wrap them with ui.cached. Nothing here imports streamlit.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analysis import theory
from ..core.round import ORIGINS, RoundTrace
from ..core.rules import get_rule
from ..figures.animation import (
    GREY,
    LAW_COLOUR,
    MARKS,
    OKABE_ITO,
    P_COLOUR,
    Q_COLOUR,
    view,
)
from ..text.corpus import Corpus
from ..text.ngram import NGramCounts, train
from ..text.textspec import (
    COMPARE_ORDERS,
    TextDecoder,
    TextDigest,
    drafter_comparison,
    order_sweep,
    play_text_rounds,
    text_exactness,
)
from .transcript import Totals

LEVEL_LABELS = {"char": "characters", "word": "words"}
DEFAULT_PROMPT = "Return the number of "
TARGET_ORDERS = {"char": (2, 8), "word": (2, 4)}  # the target-order slider's range
DEFAULT_ORDERS = {"char": (6, 2), "word": (3, 1)}  # (target, draft)
DRAFTER_LABELS = {"ngram": "n-gram draft", "lookup": "prompt lookup"}
PAGE_TOKENS = 300  # tokens per long decode behind the page's comparisons
TOP_BARS = 12  # tokens shown in the p / q bars
TRANSCRIPT_SHOWN = 12  # earlier rounds kept for the text view (totals cover them all)
PROMPT_MAX_CHARS = 2_000
EXACT_N = 5_000  # Monte Carlo decodes behind the page's exactness check
EXACT_TOP = 16  # cells: the top tokens (and pairs) of p, the rest lumped

Row = dict[str, object]


# ----------------------------------------------------------------------------- models
def counts_max_order(target_order: int) -> int:
    """The counts hold every order the page can ask for: the target's and the compared."""
    return max(int(target_order), max(COMPARE_ORDERS))


def train_counts(corpus: Corpus, level: str, max_order: int) -> NGramCounts:
    """Counts of every n-gram up to max_order over the corpus, at the level."""
    return train(corpus.text, level, max_order)


def draft_order_max(target_order: int) -> int:
    """The draft stays the smaller model: orders 1..n - 1 (1 when the target is a bigram)."""
    return max(1, int(target_order) - 1)


def model_caption(corpus: Corpus, counts: NGramCounts, target: int, draft: int, T_p: float,
                  T_q: float) -> str:
    """One line on what the models were counted from and what they hold."""
    return (f"Corpus: {corpus.name}, {corpus.n_chars:,} characters, {counts.n_tokens:,} "
            f"tokens, vocabulary V = {counts.V:,}. Target: {target}-gram at T = {T_p:g}; "
            f"draft: {draft}-gram at T = {T_q:g} (sidebar). Counts in memory: "
            f"{counts.nbytes / 1e6:.1f} MB.")


def encode_prompt(dec: TextDecoder, prompt: str) -> tuple[tuple[int, ...], int]:
    """The prompt's token ids, and how many of them fell outside the vocabulary."""
    ids = tuple(dec.encode(prompt))
    unk = dec.counts.tokenizer.unk
    return ids, sum(1 for t in ids if t == unk)


# ----------------------------------------------------------------------------- transcript
@dataclass(frozen=True)
class TextTranscript:
    """Round rnd of a seeded run from the prompt, the rounds before it, running totals."""

    rnd: int
    k: int
    drafter: str
    current: RoundTrace  # round rnd, with rows and frames
    context: tuple[int, ...]  # the context round rnd starts from: prompt + earlier output
    prompt_len: int
    earlier: tuple[TextDigest | RoundTrace, ...]  # the last few rounds before rnd (the
    # newest of them, round rnd - 1, is a RoundTrace)
    first: int  # round index of earlier[0]
    before: Totals  # rounds 0..rnd-1
    through: Totals  # rounds 0..rnd

    @property
    def previous(self) -> RoundTrace | None:
        """Round rnd - 1 with its frames (None for round 0)."""
        return self.earlier[-1] if self.earlier else None


def _totals(rounds: Sequence[TextDigest | RoundTrace]) -> Totals:
    n = len(rounds)
    tokens = sum(len(t.emitted) for t in rounds)
    drafted = sum(t.k for t in rounds)
    accepted = sum(t.accepted for t in rounds)
    by_origin = {o: sum(1 for t in rounds for e in t.emitted if e.origin == o) for o in ORIGINS}
    return Totals(n, tokens, drafted, accepted, by_origin,
                  tokens / n if n else float("nan"),
                  accepted / drafted if drafted else float("nan"))


def text_transcript(_dec: TextDecoder, key: str, prompt: Sequence[int], k: int, rnd: int,
                    seed: int = 0, rule: str = "correct", drafter: str = "ngram",
                    shown: int = TRANSCRIPT_SHOWN) -> TextTranscript:
    """Rounds 0..rnd from the prompt on one seeded stream (specviz.textspec); only round
    rnd keeps its rows, so a cached copy stays small."""
    rounds = play_text_rounds(_dec, prompt, k, int(rnd) + 1, seed, rule, drafter, traced=2)
    context = list(prompt)
    for r in rounds[:-1]:
        context += [e.token for e in r.emitted]
    first = max(0, int(rnd) - int(shown))
    return TextTranscript(
        rnd=int(rnd), k=int(k), drafter=drafter, current=rounds[-1], context=tuple(context),
        prompt_len=len(prompt), earlier=tuple(rounds[first:-1]), first=first,
        before=_totals(rounds[:-1]), through=_totals(rounds),
    )


def totals_at(tr: TextTranscript, step: int) -> Totals:
    """Totals at this step: the current round counts once its last frame is shown."""
    return tr.through if view(tr.current, step).done else tr.before


def running_metrics(t: Totals, k: int, c: float, drafter: str) -> list[tuple[str, str]]:
    """(label, value) for the running totals, with the speedup tokens/call / (1 + k c)
    (Leviathan et al. 2022, Sec. 3.4); prompt lookup drafts for free, so its c is 0."""
    def num(x: float) -> str:
        return "–" if math.isnan(x) else f"{x:.3f}"

    cost = 0.0 if drafter == "lookup" else float(c)
    s = float("nan") if not t.rounds else float(theory.speedup(t.tokens_per_call, k, cost))
    return [
        ("rounds (target calls)", f"{t.rounds}"),
        ("tokens emitted", f"{t.tokens}"),
        ("tokens per target call", num(t.tokens_per_call)),
        ("acceptance (kept / drafted)", num(t.acceptance_rate)),
        (f"speedup at c = {cost:g}", "–" if math.isnan(s) else f"{s:.3f}x"),
    ]


# ----------------------------------------------------------------------------- text HTML
def _token_span(piece: str, origin: str) -> str:
    m = MARKS[origin]
    text = html.escape(piece).replace("\n", "⏎<br>")
    return (f'<span data-origin="{origin}" title="{html.escape(m.label)}" '
            f'style="background:{m.colour}33;border-bottom:2px solid {m.colour};'
            f'white-space:pre-wrap">{text}</span>')


def text_html(dec: TextDecoder, tr: TextTranscript, step: int, prompt_chars: int = 400) -> str:
    """The prompt (grey, its tail), then the output of every round so far, each token
    coloured by origin (kept, redrawn, bonus, unchecked); the current round once done."""
    tok = dec.counts.tokenizer
    prompt = tr.context[: tr.prompt_len]
    ptext = tok.decode(prompt)
    cut = len(ptext) > prompt_chars
    ptext = ("…" if cut else "") + ptext[-prompt_chars:]
    out = [f'<span style="color:{GREY};white-space:pre-wrap">'
           f'{html.escape(ptext).replace(chr(10), "⏎<br>")}</span>']
    rounds = list(tr.earlier) + ([tr.current] if view(tr.current, step).done else [])
    start = tr.context[tr.prompt_len - 1]
    if tr.first > 0:
        skipped = tr.context[tr.prompt_len:len(tr.context) - sum(len(r.emitted)
                                                                  for r in tr.earlier)]
        if skipped:
            text = "".join(tok.pieces(skipped, after=start))
            out.append(f'<span style="color:{GREY};white-space:pre-wrap" title="earlier '
                       f'rounds">{html.escape(text).replace(chr(10), "⏎<br>")}</span>')
            start = skipped[-1]
    prev = start
    for r in rounds:
        ids = [e.token for e in r.emitted]
        for e, piece in zip(r.emitted, tok.pieces(ids, after=prev), strict=True):
            out.append(_token_span(piece, e.origin))
        prev = ids[-1]
    return ('<div class="sv-text" style="font-family:monospace;line-height:1.8;'
            'padding:8px;border:1px solid #ddd;border-radius:6px">' + "".join(out) + "</div>")


def context_caption(dec: TextDecoder, tr: TextTranscript) -> str:
    """Where the current round starts (plain text for st.caption; Streamlit escapes it)."""
    return (f"Round {tr.rnd} starts after {len(tr.context):,} tokens: "
            f"'{dec.tail(list(tr.context))}'")


# ----------------------------------------------------------------------------- figures
def top_tokens(rows: Sequence[np.ndarray], m: int = TOP_BARS,
               must: Sequence[int] = ()) -> list[int]:
    """The m most likely tokens over the rows (by the largest entry among them), plus the
    tokens in must, most likely first."""
    stacked = np.max(np.stack([np.asarray(r) for r in rows]), axis=0)  # (V,)
    order = [int(x) for x in np.argsort(-stacked, kind="stable")[:m]]
    for x in must:
        if int(x) not in order:
            order.append(int(x))
    return sorted(order, key=lambda x: -stacked[x])


def _bar(name: str, labels: list[str], y: Sequence[float], colour: str, what: str,
         marked: list[bool], opacity: float = 1.0) -> go.Bar:
    return go.Bar(
        name=name, x=labels, y=[float(v) for v in y], marker_color=colour, opacity=opacity,
        marker_line_color=OKABE_ITO["black"], marker_line_width=[3 if b else 0 for b in marked],
        hovertemplate=f"%{{x}}<br>{what} = %{{y:.4f}}<extra></extra>",
    )


def _labels(trace: RoundTrace, toks: list[int]) -> list[str]:
    """Bar labels: a token's name, made unique (two tokens may share a display name)."""
    seen: dict[str, int] = {}
    out = []
    for x in toks:
        name = trace.name(x)
        seen[name] = seen.get(name, 0) + 1
        out.append(html.escape(name) + ("\u200b" * (seen[name] - 1)))
    return out


def _empty(title: str, note: str, height: int = 320) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=title, height=height, margin=dict(l=40, r=20, t=50, b=40),
                      annotations=[dict(text=note, showarrow=False, xref="paper", yref="paper",
                                        x=0.5, y=0.5, font=dict(size=14, color=GREY))])
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


_LEGEND = dict(orientation="h", x=0.0, y=-0.35, yanchor="top")  # below slanted tick labels


def text_bars_figure(trace: RoundTrace, step: int, top: int = TOP_BARS) -> go.Figure:
    """q at the draft position in focus, and p once the target has scored it: the top
    tokens only (a text vocabulary is too big for a bar each)."""
    v = view(trace, step)
    if v.focus is None:
        return _empty("p and q", "The bars appear with the first draft.")
    pos = trace.positions[v.focus - 1]
    checked = v.verified >= pos.i
    rows = [pos.q_row] + ([pos.p_row] if checked else [])
    toks = top_tokens(rows, top, must=(pos.token,))
    labels = _labels(trace, toks)
    mark = [x == pos.token for x in toks]
    fig = go.Figure()
    if checked:
        fig.add_trace(_bar("p target", labels, pos.p_row[toks], P_COLOUR, "p", mark))
    fig.add_trace(_bar("q draft", labels, pos.q_row[toks], Q_COLOUR, "q", mark))
    shown = float(pos.q_row[toks].sum())
    what = "p and q" if checked else "q only (the target has not been called yet)"
    fig.update_layout(
        title=(f"Position {pos.i}: {what}, top {len(toks)} of {len(trace.vocab):,} tokens "
               f"(they hold {shown:.0%} of q)"),
        barmode="group", height=380, margin=dict(l=40, r=20, t=50, b=110), legend=_LEGEND,
    )
    fig.update_yaxes(title="probability", rangemode="tozero")
    fig.update_xaxes(type="category", tickangle=-40)  # words are long: slanted, no title
    return fig


def text_residual_figure(trace: RoundTrace, step: int, top: int = TOP_BARS) -> go.Figure:
    """The law of the round's last token, once drawn: the residual beside p and q after a
    rejection, or p for the bonus token; top tokens only."""
    v = view(trace, step)
    if not v.final:
        return _empty("The last token", "Drawn from the residual at the first rejection,<br>"
                      "or from p as a bonus when every draft is kept.")
    fig = go.Figure()
    if trace.rejected_at is not None:
        last = next(e for e in trace.emitted if e.origin == "resampled")
        pos = trace.positions[trace.rejected_at - 1]
        law = get_rule(trace.rule).reject_law
        row = trace.rejection_row
        toks = top_tokens([row, pos.p_row], top, must=(last.token,))
        labels = _labels(trace, toks)
        mark = [x == last.token for x in toks]
        fig.add_trace(_bar("p", labels, pos.p_row[toks], P_COLOUR, "p", mark, 0.45))
        fig.add_trace(_bar("q", labels, pos.q_row[toks], Q_COLOUR, "q", mark, 0.45))
        fig.add_trace(_bar(law, labels, row[toks], LAW_COLOUR, law, mark))
        title = (f"Rejected at position {pos.i}: '{html.escape(trace.name(last.token))}' "
                 f"drawn from {law}")
    else:
        last = trace.emitted[-1]
        row = trace.bonus_row
        toks = top_tokens([row], top, must=(last.token,))
        labels = _labels(trace, toks)
        fig.add_trace(_bar("p", labels, row[toks], P_COLOUR, "p",
                           [x == last.token for x in toks]))
        title = f"Bonus token '{html.escape(trace.name(last.token))}' drawn from p"
    fig.update_layout(title=title, barmode="group", height=380,
                      margin=dict(l=40, r=20, t=50, b=110), legend=_LEGEND, showlegend=True)
    fig.update_yaxes(title="probability", rangemode="tozero")
    fig.update_xaxes(type="category", tickangle=-40)  # words are long: slanted, no title
    return fig


# ----------------------------------------------------------------------------- comparisons
def page_order_sweep(_counts: NGramCounts, key: str, target_order: int,
                     prompt: Sequence[int], k: int, seed: int = 0, T_p: float = 1.0,
                     T_q: float = 1.0, n_tokens: int = PAGE_TOKENS) -> list[Row]:
    """textspec.order_sweep over draft orders 1..5 (speedup priced later by reprice)."""
    return order_sweep(_counts, target_order, prompt, k, n_tokens, seed, T_p, T_q, 0.0)


def page_drafters(_dec: TextDecoder, key: str, prompt: Sequence[int], k: int, seed: int = 0,
                  rule: str = "correct", n_tokens: int = PAGE_TOKENS) -> list[Row]:
    """textspec.drafter_comparison: the n-gram draft and prompt lookup, same prompt."""
    return drafter_comparison(_dec, prompt, k, n_tokens, seed, 0.0, rule)


def reprice(rows: list[Row], k: int, c: float) -> list[Row]:
    """Each row's speedup at draft cost c: tokens per call / (1 + k c) (Leviathan et al.
    2022, Sec. 3.4); rows with a 'c' column of 0 (prompt lookup) keep c = 0."""
    out = []
    for r in rows:
        cost = 0.0 if r.get("drafter") == "lookup" else float(c)
        out.append({**r, "c": cost,
                    "speedup": float(theory.speedup(r["tokens per call"], k, cost))})
    return out


def order_figure(rows: list[Row], target_order: int) -> go.Figure:
    """Left: measured acceptance (kept / drafted) and mean beta by draft order. Right:
    tokens per target call, labelled with the speedup at the rows' c."""
    orders = [f"order {r['draft order']}" for r in rows]
    colours = [OKABE_ITO["green"] if r["smaller than target"] else GREY for r in rows]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12, subplot_titles=(
        "acceptance (kept / drafted) and beta", "tokens per target call (speedup)"))
    fig.add_trace(go.Bar(
        name="acceptance (kept / drafted)", x=orders, y=[r["acceptance"] for r in rows],
        marker_color=colours, text=[f"{r['acceptance']:.2f}" for r in rows],
        textposition="outside", hovertemplate="%{x}<br>acceptance %{y:.3f}<extra></extra>",
    ), row=1, col=1)
    fig.add_trace(go.Scatter(
        name="mean beta = sum min(p, q)", x=orders, y=[r["beta"] for r in rows],
        mode="markers", marker=dict(symbol="diamond", size=12, color=OKABE_ITO["blue"]),
        hovertemplate="%{x}<br>beta %{y:.3f}<extra></extra>",
    ), row=1, col=1)
    fig.add_trace(go.Bar(
        name="tokens per target call", x=orders, y=[r["tokens per call"] for r in rows],
        marker_color=colours, showlegend=False,
        text=[f"{r['tokens per call']:.2f} ({r['speedup']:.2f}x)" for r in rows],
        textposition="outside",
        hovertemplate="%{x}<br>tokens per call %{y:.3f}<extra></extra>",
    ), row=1, col=2)
    k1 = max([r["tokens per call"] for r in rows] + [1.0])
    fig.update_yaxes(range=[0, 1.15], row=1, col=1)
    fig.update_yaxes(range=[0, 1.2 * k1], row=1, col=2)
    fig.update_layout(
        title=f"Draft order against a {target_order}-gram target (grey: not a smaller model)",
        height=400, margin=dict(l=40, r=20, t=80, b=90), legend=_LEGEND,
    )
    return fig


def drafter_figure(rows: list[Row]) -> go.Figure:
    """Tokens per target call and speedup, n-gram draft against prompt lookup."""
    names = [DRAFTER_LABELS[r["drafter"]] for r in rows]
    fig = go.Figure()
    fig.add_trace(go.Bar(name="tokens per target call", x=names,
                         y=[r["tokens per call"] for r in rows], marker_color=OKABE_ITO["blue"],
                         text=[f"{r['tokens per call']:.2f}" for r in rows],
                         textposition="outside"))
    fig.add_trace(go.Bar(name="speedup", x=names, y=[r["speedup"] for r in rows],
                         marker_color=OKABE_ITO["green"],
                         text=[f"{r['speedup']:.2f}x (c = {r['c']:g})" for r in rows],
                         textposition="outside"))
    top = max([r["tokens per call"] for r in rows] + [r["speedup"] for r in rows] + [1.0])
    fig.update_layout(title="Same prompt, same target: two drafters", barmode="group",
                      height=380, margin=dict(l=40, r=20, t=50, b=90), legend=_LEGEND)
    fig.update_yaxes(range=[0, 1.2 * top])
    return fig


def drafter_rows(rows: list[Row]) -> list[Row]:
    """The comparison as a table (the generated text left out)."""
    return [{"drafter": DRAFTER_LABELS[r["drafter"]], "acceptance": round(r["acceptance"], 4)
             if not math.isnan(r["acceptance"]) else None,
             "drafted per round": round(r["drafted per round"], 3),
             "tokens per call": round(r["tokens per call"], 3), "c": r["c"],
             "speedup": round(r["speedup"], 3), "rounds": r["rounds"], "tokens": r["tokens"]}
            for r in rows]


# ----------------------------------------------------------------------------- exactness
def page_exactness(_dec: TextDecoder, key: str, prompt: Sequence[int], k: int, seed: int,
                   rules: Sequence[str], drafter: str = "ngram", n: int = EXACT_N,
                   top: int = EXACT_TOP) -> list[Row]:
    """The first-two-token law of each rule against the target's, at the prompt."""
    rows = []
    for rule in rules:
        ex = text_exactness(_dec, prompt, k, n, seed, rule, drafter, 2, top)
        rows.append({"rule": rule, "family": get_rule(rule).family, "n": n,
                     "TV to the target": round(ex.tv, 4), "floor": round(ex.floor, 4),
                     "pass line": round(ex.threshold, 4),
                     "verdict": "at the floor" if ex.at_floor else "biased"})
    return rows
