"""The from-scratch tutorial's six demonstrations, and the methods table, as text.

Every number comes from specviz.views (demos, methods); this module only formats.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from .analysis.roofline import FULL_LABEL, TUTORIAL_LABEL
from .analysis.stats import GOF_ALPHA
from .clitable import Column, format_table
from .core.rules import drafted
from .core.scenario import Scenario
from .core.tables import default_tables
from .views import demos, methods, pagedata

WIDTH = 100  # prose is wrapped to this many characters; tables are not

TITLES = {
    1: "one token",
    2: "exactness",
    3: "acceptance against draft quality",
    4: "draft length k",
    5: "cost model",
    6: "roofline",
}

# The from-scratch tutorial's walkthrough of row 'a', computed from its unrounded probabilities.
TUTORIAL_KEEP_E = 0.8532
TUTORIAL_RESIDUAL = "[0.1673 0.6457 0.1838 0.0032 0 0]"


# --------------------------------------------------------------------------- formatting
def _x(v: object) -> str:
    return "-" if v is None else f"{v:.3f}x"


def _vec(v: Sequence[float]) -> str:
    """[0.1678 0.6462 0 ...]: four decimals, exact zeros as 0 (the tutorial's style)."""
    return "[" + " ".join("0" if x == 0 else f"{x:.4f}" for x in v) + "]"


def _e9(v: object) -> str:
    """5.167e9: a count in units of 10^9, as the from-scratch tutorial writes them."""
    return f"{v / 1e9:.4g}e9"


def _wrap(text: str, indent: str = "") -> str:
    return textwrap.fill(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ")


def _heading(n: int, notice: str) -> str:
    title = f"Demonstration {n} of 6: {TITLES[n]}"
    return f"{title}\n{'=' * len(title)}\n{_wrap('What to notice: ' + notice)}\n"


# --------------------------------------------------------------------------- demonstrations
def demo_one_token(sc: Scenario) -> str:
    d, vocab = demos.one_token(sc), sc.pair.names
    name = vocab[d.ctx]
    out = [_heading(1, "a draft token the draft under-proposes (q <= p) is always kept; an "
                       "over-proposed one is kept with chance p/q, and the residual hands "
                       "the lost mass back to the tokens where p > q."),
           f"Row '{name}': p = target p(.|{name}), q = draft q(.|{name})."]
    out.append(format_table(d.rows, [
        ("token", "token", "s"), ("p", "p", ".4f"), ("q", "q", ".4f"),
        ("keep", "keep = min(1, p/q)", ".4f"), ("residual", "residual", ".4f"),
    ]))
    res = _vec([r["residual"] for r in d.rows])
    out.append(f"  residual norm(max(0, p - q)) = {res}")
    drafted = [r for r in d.rows if r["q"] > 0]
    sure = [r for r in drafted if r["keep"] >= 1.0]
    risky = [r for r in drafted if r["keep"] < 1.0]
    if sure:
        r = max(sure, key=lambda r: r["q"])
        out.append(f"  draft proposes {r['token']}: min(1, {r['p']:.4f}/{r['q']:.4f}) = 1 "
                   "-> always kept")
    if risky:
        e = min(risky, key=lambda r: r["keep"])
        out.append(f"  draft proposes {e['token']}: min(1, {e['p']:.4f}/{e['q']:.4f}) = "
                   f"{e['keep']:.4f} -> rejected {1 - e['keep']:.1%} of the time")
    out.append(f"  chance a drafted token is kept: beta = sum min(p, q) = {d.beta:.4f} "
               f"(rejected {d.reject_mass:.4f})")
    if d.ctx == 0 and tuple(vocab) == default_tables().vocab and risky:
        same = f"{e['keep']:.4f}" == f"{TUTORIAL_KEEP_E:.4f}" and res == TUTORIAL_RESIDUAL
        if same:
            note = (f"These are the from-scratch tutorial's published walkthrough figures: keep(e) "
                    f"= {TUTORIAL_KEEP_E:.4f}, residual = {TUTORIAL_RESIDUAL}.")
        else:
            note = (f"The from-scratch tutorial reports keep(e) = {TUTORIAL_KEEP_E:.4f} and "
                    f"residual = {TUTORIAL_RESIDUAL}, computed from its unrounded "
                    "probabilities; the 4-decimal row above gives the figures printed here.")
        out.append(_wrap(note, "  "))
    return "\n".join(out)


def demo_exactness(sc: Scenario, n: int, rules: Sequence[str]) -> str:
    d, vocab, ctx, seed = demos.exactness(sc, n=n, rules=rules), sc.pair.names, sc.ctx, sc.seed
    rows: list[dict] = [
        {"rule": "target sampled directly", "lossless": "-", "mc_tv": d.direct_tv,
         "exact_tv": 0.0, "floor": d.audits[0].audit.floor,
         "threshold": d.audits[0].audit.threshold,
         "verdict": "the floor itself"},
    ]
    rows[0]["against"] = "p"
    rows += [{**r, "lossless": "yes" if r["lossless"] else "no", "verdict": a.audit.test.text}
             for r, a in zip(pagedata.exactness_rows(d), d.audits, strict=True)]
    out = [_heading(2, "the lossless rules (the correct one and its exact variants) stay at "
                       "the sampling floor, which is all that n perfect samples would show; "
                       "every broken rule sits near its own exact bias, and more runs would "
                       "only make the gap clearer."),
           _wrap(f"{d.n:,} decodes from context '{vocab[ctx]}', k = {d.k}, seed {seed}, first "
                 f"{d.n_tokens} tokens kept; TV distance of each joint from the law the rule "
                 "promises ('against', as /rules compares them): the target's true joint p, "
                 "or for the warp rules (a request with temperature, top-k, top-p or min-p) "
                 "the warped target's, warp(p).")]
    out.append(format_table(rows, [
        ("rule", "rule", "s"), ("lossless", "lossless", "s"), ("mc_tv", "MC TV", ".4f"),
        ("exact_tv", "exact TV", ".4f"), ("floor", "floor", ".4f"),
        ("threshold", "threshold", ".4f"), ("p_value", "GoF p", ".3g"),
        ("against", "against", "s"), ("verdict", "verdict", "s"),
    ]))
    out.append(_wrap("floor = expected TV of n exact samples; threshold = the pass line "
                     "derived from n; exact TV = the rule's own bias (0 for a lossless rule); "
                     "GoF p = chi-square goodness of fit of the counts to that law. A rule "
                     "differs from the target when either test says so: TV above the "
                     f"threshold, or p < {GOF_ALPHA:g}.", "  "))
    return "\n".join(out)


_SWEEP_COLUMNS: list[Column] = [
    ("acceptance", "accept", ".4f"), ("acceptance_exact", "accept exact", ".4f"),
    ("tokens_per_call", "tokens/call", ".3f"),
    ("tokens_per_call_exact", "tokens/call exact", ".3f"),
    ("speedup", "speedup", _x), ("speedup_exact", "speedup exact", _x),
]


def demo_sweeps(sc: Scenario, c: float, n_rounds: int) -> str:
    a = demos.draft_sweep(sc, "alpha", demos.ALPHAS, c=c, n_rounds=n_rounds)
    t = demos.draft_sweep(sc, "T", demos.TEMPERATURES, c=c, n_rounds=n_rounds)
    vocab, ctx, k = sc.pair.names, sc.ctx, sc.k
    out = [_heading(3, "the better the draft agrees with the target, the more of its guesses "
                       "survive and the more tokens each target call yields; a draft that is "
                       "the target at another temperature loses acceptance either way."),
           _wrap(f"Long decodes from context '{vocab[ctx]}' ({n_rounds:,} rounds each), k = {k}, "
                 f"c = {c:g}; accept = accepted / drafted, speedup = tokens per call / "
                 "(1 + k c). 'exact' columns are the long-run values by dynamic programming."),
           "",
           "Draft Q = alpha P + (1 - alpha) junk (alpha = 1: a perfect copy of the target):"]
    out.append(format_table(a, [("alpha", "alpha", ".2f"), *_SWEEP_COLUMNS]))
    out += ["", "Draft = the target at temperature T (temper(P, T)):"]
    out.append(format_table(t, [("T", "T", ".1f"), *_SWEEP_COLUMNS]))
    return "\n".join(out)


def demo_k_sweep(sc: Scenario, c: float, ks: Sequence[int], n_rounds: int) -> str:
    rows, vocab, ctx = demos.k_sweep(sc, c=c, ks=ks, n_rounds=n_rounds), sc.pair.names, sc.ctx
    best = demos.best_row(rows)
    best_exact = demos.best_row(rows, "speedup_exact")
    out = [_heading(4, "tokens per call level off as k grows while the cost 1 + k c keeps "
                       "rising, so the speedup peaks at an interior k and then falls."),
           f"Default draft, long decodes from context '{vocab[ctx]}' ({n_rounds:,} rounds "
           f"each), c = {c:g}."]
    out.append(format_table(rows, [("k", "k", "d"), ("cost", "cost 1+kc", ".2f"),
                                   *_SWEEP_COLUMNS[2:]]))  # tokens/call and speedup
    out.append(f"  best k = {best['k']} (measured speedup {best['speedup']:.3f}x); "
               f"exact: best k = {best_exact['k']} ({best_exact['speedup_exact']:.3f}x)")
    return "\n".join(out)


def demo_cost(sc: Scenario, costs: Sequence[float]) -> str:
    d, vocab, ctx = demos.cost_model(sc, costs=costs), sc.pair.names, sc.ctx
    rows = [{**r, "verdict": "faster" if r["c"] < d.break_even else "SLOWER"} for r in d.rows]
    out = [_heading(5, "speculation pays only while the draft is cheap: past the break-even "
                       "cost c* every round loses time, and nothing in the output warns you."),
           f"Default pair, context '{vocab[ctx]}', k = {d.k}: exact long-run tokens per call = "
           f"{d.tokens_per_call:.4f}.",
           f"  break-even c* = (tokens per call - 1) / k = {d.break_even:.4f}"]
    out.append(format_table(rows, [
        ("c", "c (draft cost / target call)", ".2f"),
        ("speedup", "speedup = tokens / (1 + k c)", _x), ("verdict", "verdict", "s"),
    ]))
    return "\n".join(out)


def demo_roofline(preset: str, context_len: int, dtype: str) -> str:
    rows = demos.roofline_rows(preset, context_len=context_len, dtype=dtype)
    b = rows[0]["bytes"]
    out = [_heading(6, "a pass reads every weight once whatever the number of tokens in it, "
                       "so scoring k + 1 positions costs about as much as one: even 16 tokens "
                       "are far below the 100-300 MACs per byte an accelerator needs to be "
                       "compute-bound."),
           f"{preset}, {dtype}, context {context_len} tokens: {_e9(b)} bytes of weights per pass "
           f"({b / 2**30:.2f} GiB), read once per pass.",
           _wrap(f"(A one-token pass really reads {_e9(rows[0]['read'])} of them: the input "
                 "embedding gathers only its token's row. MACs per byte below use the "
                 "tutorial's bytes.)", "  "),
           f"  tutorial = {TUTORIAL_LABEL}",
           _wrap(f"full = {FULL_LABEL}: the q, k, v, o projections, all three SwiGLU matrices "
                 "and 2 ctx d of attention per layer, plus vocab d for the LM head; "
                 "'+KV' also counts reading the KV cache in the bytes", "  ")]
    out.append(format_table(rows, [
        ("tokens", "tokens in pass", "d"),
        ("macs_tutorial", "MACs (tutorial)", _e9), ("mpb_tutorial", "MACs/byte (tutorial)", ".2f"),
        ("macs_full", "MACs (full)", _e9), ("mpb_full", "MACs/byte (full)", ".2f"),
        ("mpb_full_kv", "MACs/byte (full +KV)", ".2f"),
    ]))
    return "\n".join(out)


METHOD_NAMES = dict(zip(methods.METHODS, ("chain", "block", "tree i.i.d.", "tree w/o repl."),
                        strict=True))  # as the table heads them


def demo_methods(sc: Scenario) -> str:
    """Long-run tokens per target call by method and k, exact where the walk fits."""
    rows, vocab, ctx = methods.methods_table(sc), sc.pair.names, sc.ctx
    for r in rows:
        for rule in methods.METHODS:
            se = r[f"{rule}_se"]
            r[f"{rule}_cell"] = f"{r[rule]:.4f}" + ("" if se is None else f" +- {se:.4f} (MC)")
        r["tree_nodes"] = drafted("tree_iid", r["k"])
    cols: list[Column] = [("k", "k", "d"), *((f"{rule}_cell", name, str)
                                             for rule, name in METHOD_NAMES.items()),
                          ("tree_nodes", "tree nodes", "d")]
    head = _wrap(f"Tokens per target call over a long decode from '{vocab[ctx]}', exact "
                 "('(MC)': measured, where an exact law would exceed its caps). "
                 "Chain: token by token (Leviathan et al. 2022); block: Sun et al. 2024 "
                 "(arXiv 2403.10444); trees: the 3-2-1 preset with k levels, siblings i.i.d. "
                 "(SpecInfer, Miao et al. 2023) or without replacement (Jeon et al. 2024).")
    tvs = methods.exact_tv(sc)
    proof = _wrap("Exact TV of the first two emitted tokens from the target's law, largest "
                  "over k = 1..16 (exact laws, no sampling): " + ", ".join(
                      f"{name} {tvs[rule]:.1e}" for rule, name in METHOD_NAMES.items()) + ".")
    model, accel, batches = methods.PRICE
    price = methods.priced(rows, "tree_iid")
    pcols: list[Column] = [("k", "k", "d"), ("nodes", "tree nodes", "d"),
                           ("tokens_per_call", "tokens/call", ".4f")]
    for b in batches:
        pcols += [(f"cost_b{b}", f"pass cost, batch {b}", ".3f"),
                  (f"per_step_b{b}", f"tokens/step-time, batch {b}", ".4f")]
    tail = _wrap(f"The tree's verify pass over all its nodes, priced by the roofline "
                 f"({model} on {accel}, fp16, context 512): its time as a multiple of one "
                 "decode step, and tokens per call divided by it.")
    return (head + "\n\n" + format_table(rows, cols) + "\n\n" + proof + "\n\n" + tail
            + "\n\n" + format_table(price, pcols))
