"""The real model measured on this machine: the page's data, the CLI's words, /plan's source.

For one prompt and k, each draft decodes with and without speculation, greedy and sampled
at T, each decode several times interleaved (views.measureruns). From them: the target's
pass time at 1 and at k + 1 positions, the draft's time per drafted token (so
c = t_draft / t_target(1)), tokens per target call, acceptance by position with Wilson
intervals, and tokens/s with and without speculation, each a median with its spread. A
round costs n c + t(k+1) / t(1) one-position passes (n the tokens it drafts) and yields E
tokens, so the passes allow a speedup of E / (n c + t(k+1) / t(1)) (Leviathan et al. 2022,
Thm 3.8, with the verification's cost measured instead of taken as one pass); beside the
wall clock it is the formula's prediction, and the time each decode spent outside its
passes explains the gap. What cannot be true is flagged as noise, not shown as a result:
c >= 1 for a draft that runs part of the target's pass, and a wall-clock speedup above
what the round's own figures allow beyond both spreads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..analysis import theory
from ..analysis.acceptance import wilson
from ..analysis.planner import Measured, MeasuredHere
from ..analysis.record import MetricsError, make_acceptance
from ..analysis.spread import Spread, scaled
from ..llm.decode import Summary
from ..llm.drafts import examples, kind_named
from ..llm.pair import show
from ..llm.store import Model
from .llmpage import (
    PRESETS,
    PROMPT_CHARS_MAX,  # noqa: F401 (for /measured)
)
from .measureruns import (  # noqa: F401 (for /measured and the CLI)
    K_MAX,
    MEASURE_STOP_S,
    MODES,
    NEW_MAX,
    REPS,
    DraftMeasure,
    Measurement,
    measure,
)

DRAFTS = examples()  # every kind's examples: offered, and measured together under "all"


def button_label(n_drafts: int, new: int, T: float) -> str:
    """What Measure will run: the decodes, each REPS times."""
    per = 1 if T == 0 else 2  # greedy, and sampled unless T = 0
    return (f"Measure ({n_drafts} draft{'s' * (n_drafts > 1)}: {per} + {per * n_drafts} "
            f"decodes of {new} tokens, each {REPS} times)")


def rows_draft(draft: str) -> str:
    """The draft the real-rows check reads: the one picked, or the first offered where the
    pick is every draft or one with no q of its own (prompt lookup)."""
    if draft == "all" or kind_named(draft).proposes:
        return DRAFTS[0]
    return draft


def _ms(v: float | None) -> float | None:
    return None if v is None else 1e3 * v


def verify_ratio(s: Summary) -> float:
    """t(k + 1) / t(1): what verifying k + 1 positions (a token tree: its nodes + 1) costs
    in one-position passes (1 where no round drafted k: a round that drafts nothing is one
    position)."""
    return 1.0 if s.target_k1_s is None else s.target_k1_s / s.target_1_s


def formula(s: Summary) -> float:
    """The speedup the round's own passes allow: E / (n c + t(k+1)/t(1)) (Thm 3.8, the
    verification measured), E tokens a target call, n tokens drafted a round."""
    return float(theory.round_speedup(s.tokens_per_call, t1=1.0,
                                      drafts=s.drafted_per_round * (s.c or 0.0),
                                      verify=verify_ratio(s)))


def with_outside(s: Summary) -> float:
    """The same with the time each decode spent outside its passes: E (t(1) + o_plain) /
    (n t_draft + t(k+1) + o_round), o the round engine's rows and draws (a round's with
    speculation, a token's without)."""
    k1 = s.target_1_s if s.target_k1_s is None else s.target_k1_s
    return float(theory.round_speedup(
        s.tokens_per_call, t1=s.target_1_s + s.outside_token_s,
        drafts=s.drafted_per_round * (s.draft_s or 0.0), verify=k1 + s.outside_round_s))


@dataclass(frozen=True)
class Figures:
    """One draft and mode over the repetitions: each figure's median and spread, the
    formula's prediction beside the wall clock, and what cannot be true."""

    label: str
    mode: str
    s: Summary  # the medians, and the counts
    spreads: dict[str, Spread | None]  # figure -> its spread over the repetitions
    c_macs: float | None  # the kind's cost model
    c_noise: bool  # c >= 1 for a draft that runs part of the target's pass
    speedup_noise: bool  # the wall clock above what the round's figures allow

    def __getitem__(self, figure: str) -> Spread | None:
        return self.spreads[figure]


PER_RUN = {  # figure -> its value in one repetition
    "t1": lambda s: s.target_1_s, "tk1": lambda s: s.target_k1_s, "ratio": verify_ratio,
    "draft": lambda s: s.draft_s, "c": lambda s: s.c, "spec_tps": lambda s: s.spec_tps,
    "plain_tps": lambda s: s.plain_tps, "speedup": lambda s: s.speedup,
    "formula": formula, "outside": with_outside,
    "o_round": lambda s: s.outside_round_s, "o_token": lambda s: s.outside_token_s,
}


def figures(d: DraftMeasure, mode: str) -> Figures:
    runs = d.runs[mode]
    spreads = {name: Spread.of(f(s) for s in runs) for name, f in PER_RUN.items()}
    if runs[0].target_k1_s is None:
        spreads["tk1"] = spreads["ratio"] = None
    c, up, bound = spreads["c"], spreads["speedup"], spreads["formula"]
    return Figures(d.label, mode, d.summary(mode), spreads, d.c_macs,
                   c_noise=d.subset and c is not None and c.median >= 1.0,
                   speedup_noise=up is not None and bound is not None and up.above(bound))


def _text(sp: Spread | None, fmt: str, noise: bool = False, unit: str = "") -> str:
    return "noise" if noise else "-" if sp is None else sp.text(fmt, unit)


def summary_rows(m: Measurement) -> list[dict]:
    """One row per draft and mode: the measured passes, c, tokens per call, tokens/s, the
    speedup beside the formula's; numbers are medians (None where flagged as noise), the
    text columns medians with their spreads."""
    rows = []
    for d in m.drafts:
        for mode in d.modes:
            f = figures(d, mode)
            s, sp = f.s, f.spreads
            rows.append({
                "draft": d.label, "mode": mode, "k": s.k, "reps": len(d.runs[mode]),
                "t1_ms": _ms(s.target_1_s), "tk1_ms": _ms(s.target_k1_s),
                "verify_ratio": None if sp["ratio"] is None else sp["ratio"].median,
                "draft_ms": _ms(s.draft_s), "c": None if f.c_noise else s.c,
                "c_model": f.c_macs, "tokens_per_call": s.tokens_per_call,
                "spec_tps": s.spec_tps, "plain_tps": s.plain_tps,
                "speedup": None if f.speedup_noise else sp["speedup"].median,
                "formula": None if f.c_noise else sp["formula"].median,
                "with_outside": None if f.c_noise else sp["outside"].median,
                "t1": _text(scaled(sp["t1"], 1e3), ".1f"),
                "tk1": _text(scaled(sp["tk1"], 1e3), ".1f"),
                "ratio": _text(sp["ratio"], ".2f"),
                "draft_t": _text(scaled(sp["draft"], 1e3), ".1f"),
                "c_t": _text(sp["c"], ".3f", f.c_noise),
                "tps": _text(sp["spec_tps"], ".2f"),
                "speedup_t": _text(sp["speedup"], ".2f", f.speedup_noise, "x"),
                "formula_t": _text(sp["formula"], ".2f", f.c_noise, "x"), "why": blame(f)})
    return rows


def alone_text(m: Measurement) -> str:
    """The plain decodes every speedup is measured against, how they were run, and the
    machine's load while they ran."""
    d = m.drafts[0] if m.drafts else None
    if d is None:
        return ""
    alone = "; ".join(f"{_text(figures(d, mode)['plain_tps'], '.2f')} tokens/s {mode}"
                      for mode in d.modes)
    load = f" {m.load.text()}" if m.load is not None else ""
    return (f"The target alone: {alone} ({m.max_new} tokens from a {m.prompt_tokens}-token "
            f"prompt, the prefill off the clock, end-of-text not stopping a decode, so every "
            f"decode runs the same length). Each decode ran {m.reps} times interleaved: a "
            "figure is the median (smallest-largest) of those runs, and speedup = tokens/s "
            f"with speculation over the same repetition's without. The whole measurement "
            f"took {m.seconds:.0f} s.{load}")


def acceptance_rows(s: Summary) -> list[dict]:
    """Per position i: rounds that kept draft i of those that drafted it, with the 95 %
    Wilson interval."""
    rows = []
    for i, (a, n) in enumerate(zip(s.accepted_at, s.drafted_at, strict=True)):
        lo, hi = wilson(a, n) if n else (None, None)
        rows.append({"i": i + 1, "kept": a, "drafted": n, "rate": a / n if n else None,
                     "lo": lo, "hi": hi})
    return rows


def blame(f: Figures) -> str:
    """In a few words: noise, it pays, or what makes it lose (the larger part of the
    round's cost beyond the one pass plain decoding pays)."""
    if f.c_noise or f.speedup_noise:
        return "noise: cannot be true"
    s, up = f.s, f["speedup"]
    if up.lo >= 1:
        return "pays here"
    if up.hi >= 1:
        return "1x within the spread"
    return "draft too dear" if s.drafted_per_round * (s.c or 0.0) > verify_ratio(s) - 1 else \
        "verifying k + 1 not free"


def noise_text(f: Figures) -> str:
    """What cannot be true in these figures, and why (empty when nothing)."""
    out = []
    if f.c_noise:
        out.append(f"c = {f['c'].text('.3f')} cannot be true: this draft runs part of the "
                   "target's own pass (some of its layers, its head or part of it) and "
                   "nothing else, so its pass cannot take as long as the target's"
                   + (f" (by multiply-adds, c = {f.c_macs:.2f})" if f.c_macs else "")
                   + ": the times are the machine's noise, not a result.")
    if f.speedup_noise:
        out.append(f"The wall clock's {f['speedup'].text('.2f', 'x')} lies above what the "
                   f"round's own figures allow, E / (n c + t(k+1)/t(1)) = "
                   f"{f['formula'].text('.2f', 'x')}, beyond both spreads: noise, not a "
                   "result.")
    return " ".join(out)


def gap_text(f: Figures) -> str:
    """The formula's prediction beside the wall clock, and what explains the gap."""
    s = f.s
    r, c = verify_ratio(s), s.c or 0.0
    cost = s.drafted_per_round * c + r  # n c + t(k+1)/t(1), one-position passes
    x = lambda name: _text(f[name], ".2f", unit="x")  # noqa: E731
    return (f"A round yielded {s.tokens_per_call:.2f} tokens per target call and cost "
            f"n c + t(k+1)/t(1) = {s.drafted_per_round:g} x {c:.3f} + {r:.2f} = {cost:.2f} "
            f"one-position passes (n the tokens a round drafted), so the passes allow "
            f"{x('formula')}; the wall clock says {x('speedup')}. The gap is the time each "
            f"decode spent outside its passes ({1e3 * s.outside_round_s:.1f} ms a round with "
            f"speculation, {1e3 * s.outside_token_s:.1f} ms a token without: the round "
            f"engine's rows and draws): counting it, {x('outside')}; the rest is the spread "
            "between runs.")


def why(f: Figures) -> str:
    """Whether the draft wins on wall clock here, and why: the formula's prediction beside
    the wall clock with the gap explained, from the measured figures; only what cannot be
    true, where a figure cannot be."""
    s, head = f.s, f"{f.label}, {f.mode}: "
    if f.c_noise or f.speedup_noise:
        return head + noise_text(f) + " Measure again on a quiet machine."
    head += gap_text(f)
    if blame(f) == "pays here":
        return head + " It pays on this machine, in every run."
    if blame(f) == "1x within the spread":
        return head + (" Whether it pays here lies within the spread between runs (they "
                       "range across 1x): measure again on a quiet machine, or with more runs.")
    r = verify_ratio(s)
    cost = s.drafted_per_round * (s.c or 0.0) + r
    because = ("the draft is too dear for how often it is right (n c exceeds what "
               "verifying costs)" if blame(f) == "draft too dear" else "verification is not "
               f"free on this CPU: {_rows(s)} positions cost {r:.2f} one-position passes, "
               "not 1")
    ceiling = (s.k + 1) / cost
    tail = (f" Even if every draft were kept ({s.k + 1} tokens a round) it would reach "
            f"only {ceiling:.2f}x." if ceiling < 1 else
            f" It needs {cost:.2f} tokens a round to break even.")
    return head + f" It loses: {because}." + tail


def _rows(s: Summary) -> str:
    """The rows a verification pass scored, in words: k + 1, or a tree's median."""
    rows = s.verify_rows
    return "k + 1" if rows in (None, s.k + 1) else f"{rows:g}"


def source_label(m: Measurement, d: DraftMeasure, mode: str, text: str) -> str:
    """How /plan names one measured draft and mode."""
    preset = next((name for name, (_, t) in PRESETS.items() if t and t == text), None)
    what = f"the {preset} prompt" if preset else f"your prompt '{show(text[:24])}'"
    return f"{d.label}, {mode}, k = {m.k}, T = {m.T:g}, {m.max_new} new tokens, {what}"


def plan_source(d: DraftMeasure, mode: str, *, prompt: str = "") -> MeasuredHere:
    """The measurements as /plan's acceptance and cost source: per-position acceptance
    counts, and the target's pass at 1 and k + 1 positions and the draft's step (medians;
    the draft's left out where its c cannot be true)."""
    f = figures(d, mode)
    s = f.s
    return here(d.label, mode, s.k, s.rounds, s.accepted_at, s.target_1_s, s.target_k1_s,
                None if f.c_noise else s.draft_s, None if f.c_noise else s.c, prompt)


def here(label: str, mode: str, k: int, rounds: int, accepted_at: Sequence[int],
         t1: float, tk1: float | None, draft_s: float | None, c: float | None,
         prompt: str = "") -> MeasuredHere:
    what = f"measured here on this machine: Gemma 3 270M with draft {label}, {mode}, k = {k}"
    try:
        rec = make_acceptance(source=what, rounds=rounds, drafted=rounds * k,
                              accepted=int(sum(accepted_at)), k=k,
                              accepted_at=np.asarray(accepted_at))
    except MetricsError as exc:
        raise ValueError(str(exc)) from None
    return MeasuredHere(what + (f", prompt '{show(prompt[:40])}'" if prompt else ""), rec,
                        Measured(t1, tk1 or 0.0, draft_s or 0.0, c or 0.0, k=k))


def here_from_json(doc: dict) -> MeasuredHere:
    """/plan's source from `python -m specviz llm --json` output; ValueError if it is not."""
    try:
        s, label = doc["summary"], doc["draft"]
        return here(str(label), "as run", int(s["k"]), int(s["rounds"]),
                    [int(a) for a in s["accepted_at"]], float(s["target_1_s"]),
                    s["target_k1_s"], s["draft_s"], s["c"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not the output of python -m specviz llm --json ({exc})") from None


def _piece(model: Model, x: int) -> str:
    return show(model.tokenizer.pieces[int(x)])


def _top2_text(model: Model, t, what: str) -> str:
    (a, b), (za, zb) = t.ids, t.logits
    return (f"in {what} ({t.positions} position{'s' * (t.positions != 1)}) the top two "
            f"logits were '{_piece(model, a)}' {za:.5f} and '{_piece(model, b)}' {zb:.5f}, "
            f"margin {t.margin:.2e}")


def agreement_text(model: Model, d: DraftMeasure, k: int) -> str:
    """Plain greedy against speculative greedy, in words, with the margins that explain it."""
    ag = d.agreement
    if ag.first is None:
        n = len(ag.agree)
        low = "" if ag.smallest is None else (
            f" The closest call: token {ag.smallest[0] + 1} "
            f"('{_piece(model, ag.plain[ag.smallest[0]])}'), top two logits "
            f"{ag.smallest[1]:.2e} apart.")
        return (f"Greedy with speculation ({d.label}, k = {k}) and without agree on all {n} "
                f"tokens.{low} The two passes' top logits differed by up to "
                f"{ag.largest_shift:.2e} where both read a row: the sums are not the same "
                "floats, but no margin was that small, so no argmax flipped.")
    i = ag.first
    head = (f"They first differ at token {i + 1}: plain greedy wrote "
            f"'{_piece(model, ag.plain[i])}', speculation '{_piece(model, ag.spec[i])}'.")
    parts = [_top2_text(model, t, what) for t, what in
             ((ag.one_pass, "the one-position pass"), (ag.verify_pass, "the verification pass"))
             if t is not None]
    return (head + (" At that prefix, " + "; ".join(parts) + "." if parts else "")
            + " Both passes compute the same logits in a different summation order; where "
            "the top two are closer than that rounding, the argmax flips. Each output is "
            "the target's greedy choice on the logits it was given: the method is lossless, "
            "the floats are not associative.")


def agreement_rows(model: Model, d: DraftMeasure) -> list[dict]:
    """Token by token: what each decode wrote and whether they agree."""
    ag = d.agreement
    n = max(len(ag.plain), len(ag.spec))
    at = lambda s, i: _piece(model, s[i]) if i < len(s) else ""  # noqa: E731
    return [{"i": i + 1, "plain": at(ag.plain, i), "spec": at(ag.spec, i),
             "agree": ag.agree[i] if i < len(ag.agree) else False} for i in range(n)]


SUMMARY_COLUMNS = {  # medians (smallest-largest) of the repetitions; "noise": cannot be true
    "draft": ("draft", None, 130), "mode": ("decoding", None),
    "t1": ("target 1 (ms)", None), "tk1": ("target k+1 (ms)", None),
    "ratio": ("k+1 / 1", None), "draft_t": ("draft (ms/token)", None),
    "c_t": ("c", None), "c_model": ("c by multiply-adds", "%.2f"),
    "tokens_per_call": ("tokens/call", "%.2f"), "tps": ("tokens/s", None),
    "speedup_t": ("speedup", None), "formula_t": ("formula (passes)", None),
    "why": ("why", None, 170),
}
ACCEPT_COLUMNS = {"i": ("position", "%d"), "kept": ("kept", "%d"), "drafted": ("drafted", "%d"),
                  "rate": ("rate", "%.3f"), "lo": ("95% low", "%.3f"), "hi": ("95% high", "%.3f")}
AGREE_COLUMNS = {"i": ("token", "%d"), "plain": ("plain greedy", None),
                 "spec": ("speculative greedy", None), "agree": ("same", "check")}
