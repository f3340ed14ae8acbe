"""The real model measured on this machine: the page's data, the CLI's drafts, /plan's source.

For one prompt and k, each draft decodes four ways: speculative and plain, greedy and
sampled at T. From them: the target's pass time at 1 and at k + 1 positions, the draft's
time per drafted token (so c = t_draft / t_target(1)), tokens per target call, acceptance
by position with Wilson intervals, and tokens/s with and without speculation. A round
costs k c + t(k+1) / t(1) one-position passes and yields E tokens, so the speedup is
E / (k c + t(k+1) / t(1)) (Leviathan et al. 2022, Thm 3.8, with the verification's cost
measured instead of taken as one pass). The greedy pair of runs is also the lossless check
(llm.lossless).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..analysis import theory
from ..analysis.acceptance import wilson
from ..analysis.planner import Measured, MeasuredHere
from ..analysis.record import MetricsError, make_acceptance
from ..core import interrupt
from ..llm.decode import Summary, plain, speculate, summarise
from ..llm.drafts import Kit, draft_pair, examples, kind_named, parse_draft
from ..llm.lossless import Agreement, compare, greedy_plain, rows_along
from ..llm.pair import show
from ..llm.runner import Runner
from ..llm.store import Model
from .llmpage import (
    PLAIN_KIT,
    PRESETS,
    PROMPT_CHARS_MAX,  # noqa: F401 (for /measured)
    encode_prompt,
)
from .work import heavy

DRAFTS = examples()  # every kind's examples: offered, and measured together under "all"
NEW_MAX = 64  # tokens the page generates per run
K_MAX = 8  # drafted tokens per round the page measures
MEASURE_STOP_S = 240.0  # time one measurement may take; runs stop between decodes after it
MODES = ("greedy", "sampled")


@dataclass(frozen=True)
class DraftMeasure:
    """One draft's runs: greedy and sampled summaries, and greedy's agreement."""

    label: str
    greedy: Summary
    sampled: Summary
    agreement: Agreement

    def summary(self, mode: str) -> Summary:
        return self.greedy if mode == "greedy" else self.sampled


@dataclass(frozen=True)
class Measurement:
    prompt_tokens: int
    k: int
    T: float
    max_new: int
    drafts: tuple[DraftMeasure, ...]
    seconds: float  # wall clock of the whole measurement
    stopped: str | None = None  # the drafts not measured when the time budget ran out


def _one(model, ids, spec, k, T, seed, max_new, kit, alone) -> DraftMeasure:
    g_pair = draft_pair(model, spec, greedy=True, kit=kit)
    g = speculate(g_pair, ids, k=k, seed=seed, max_new=max_new)
    s = speculate(draft_pair(model, spec, T=T, kit=kit), ids, k=k, seed=seed,
                  max_new=max_new)
    (g_alone, seen), s_alone = alone
    agreement = compare(g_alone.tokens, g.tokens, rows_along(seen, ids, g_alone.tokens),
                        rows_along(g_pair.seen, ids, g.tokens))
    return DraftMeasure(spec.label, summarise(g, g_alone, k=k), summarise(s, s_alone, k=k),
                        agreement)


@heavy
def measure(model: Model, text: str, drafts: Sequence[str], *, k: int = 4, T: float = 1.0,
            seed: int = 0, max_new: int = 16, kit: Kit = PLAIN_KIT,
            stop_s: float = MEASURE_STOP_S) -> Measurement:
    """Plain greedy and sampled decodes once, then each draft's two speculative decodes;
    past stop_s the drafts not yet run are named in `stopped`."""
    if not 1 <= int(k) <= K_MAX or not 1 <= int(max_new) <= NEW_MAX:
        raise ValueError(f"k must lie in 1..{K_MAX} and max_new in 1..{NEW_MAX}")
    ids = encode_prompt(model, text)
    specs = [parse_draft(d, cfg=model.cfg) for d in drafts]
    t0 = time.perf_counter()
    seen: dict = {}
    g_alone = greedy_plain(Runner(model.weights), ids, max_new=max_new, seen=seen)
    s_alone = plain(Runner(model.weights), ids, T=T, seed=seed, max_new=max_new)
    done, left = [], []
    for spec in specs:
        interrupt.check(deadline=False)
        if time.perf_counter() - t0 > stop_s or interrupt.overdue():
            left.append(spec.label)
            continue
        done.append(_one(model, ids, spec, k, T, seed, max_new, kit,
                         ((g_alone, seen), s_alone)))
    stopped = (f"Stopped after {stop_s:g} s: {', '.join(left)} not measured (lower max_new "
               "or measure one draft at a time)") if left else None
    return Measurement(len(ids), int(k), float(T), int(max_new), tuple(done),
                       time.perf_counter() - t0, stopped)


def rows_draft(draft: str) -> str:
    """The draft the real-rows check reads: the one picked, or the first offered where the
    pick is every draft or one with no q of its own (prompt lookup)."""
    if draft == "all" or kind_named(draft).proposes:
        return DRAFTS[0]
    return draft


def _ms(v: float | None) -> float | None:
    return None if v is None else 1e3 * v


def summary_rows(m: Measurement) -> list[dict]:
    """One row per draft and mode: the measured passes, c, tokens per call, tokens/s."""
    rows = []
    for d in m.drafts:
        for mode in MODES:
            s = d.summary(mode)
            rows.append({"draft": d.label, "mode": mode, "k": s.k, "t1_ms": _ms(s.target_1_s),
                         "tk1_ms": _ms(s.target_k1_s),
                         "verify_ratio": None if s.target_k1_s is None else verify_ratio(s),
                         "draft_ms": _ms(s.draft_s), "c": s.c,
                         "tokens_per_call": s.tokens_per_call, "spec_tps": s.spec_tps,
                         "plain_tps": s.plain_tps, "speedup": s.speedup,
                         "why": blame(s)})
    return rows


def alone_text(m: Measurement) -> str:
    """The plain decodes every speedup is measured against."""
    d = m.drafts[0] if m.drafts else None
    if d is None:
        return ""
    return (f"The target alone: {d.greedy.plain_tps:.2f} tokens/s greedy, "
            f"{d.sampled.plain_tps:.2f} sampled ({m.max_new} tokens from a {m.prompt_tokens}-"
            f"token prompt; the whole measurement took {m.seconds:.0f} s). Speedup = tokens/s "
            "with speculation over that.")


def acceptance_rows(s: Summary) -> list[dict]:
    """Per position i: rounds that kept draft i of those that drafted it, with the 95 %
    Wilson interval."""
    rows = []
    for i, (a, n) in enumerate(zip(s.accepted_at, s.drafted_at, strict=True)):
        lo, hi = wilson(a, n) if n else (None, None)
        rows.append({"i": i + 1, "kept": a, "drafted": n, "rate": a / n if n else None,
                     "lo": lo, "hi": hi})
    return rows


def verify_ratio(s: Summary) -> float:
    """t(k + 1) / t(1): what verifying k + 1 positions (a token tree: its nodes + 1) costs
    in one-position passes (1 where no round drafted k: a round that drafts nothing is one
    position)."""
    return 1.0 if s.target_k1_s is None else s.target_k1_s / s.target_1_s


def blame(s: Summary) -> str:
    """In a few words: it pays, or what makes it lose (the larger part of the round's cost
    beyond the one pass plain decoding pays)."""
    if s.speedup >= 1:
        return "pays here"
    return "draft too dear" if s.drafted_per_round * (s.c or 0.0) > verify_ratio(s) - 1 else \
        "verifying k + 1 not free"


def why(label: str, mode: str, s: Summary) -> str:
    """Whether the draft wins on wall clock here, and why, from the measured figures."""
    r, c = verify_ratio(s), s.c or 0.0
    level = c * s.drafted_per_round / s.k  # a level's drafts: n / k tokens (a chain: one)
    cost = theory.round_cost(s.k, level, verify=r)  # n c + t(k+1)/t(1), one-position passes
    head = (f"{label}, {mode}: {s.speedup:.2f}x. A round yielded {s.tokens_per_call:.2f} "
            f"tokens per target call and cost n c + t(k+1)/t(1) = "
            f"{s.drafted_per_round:g} x {c:.3f} + {r:.2f} = {cost:.2f} one-position passes, "
            "n the tokens a round drafted.")
    if s.speedup >= 1:
        return head + " It pays on this machine."
    because = ("the draft is too dear for how often it is right (n c exceeds what "
               "verifying costs)" if blame(s) == "draft too dear" else "verification is not "
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
    counts, and the target's pass at 1 and k + 1 positions and the draft's step."""
    s = d.summary(mode)
    return here(d.label, mode, s.k, s.rounds, s.accepted_at, s.target_1_s, s.target_k1_s,
                s.draft_s, s.c, prompt)


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


SUMMARY_COLUMNS = {
    "draft": ("draft", None, 130), "mode": ("decoding", None),
    "t1_ms": ("target 1 (ms)", "%.1f"), "tk1_ms": ("target k+1 (ms)", "%.1f"),
    "verify_ratio": ("k+1 / 1", "%.2f"), "draft_ms": ("draft (ms/token)", "%.1f"),
    "c": ("c", "%.3f"), "tokens_per_call": ("tokens/call", "%.2f"),
    "spec_tps": ("tokens/s", "%.2f"),
    "speedup": ("speedup", "%.2fx"), "why": ("why", None, 170),
}
ACCEPT_COLUMNS = {"i": ("position", "%d"), "kept": ("kept", "%d"), "drafted": ("drafted", "%d"),
                  "rate": ("rate", "%.3f"), "lo": ("95% low", "%.3f"), "hi": ("95% high", "%.3f")}
AGREE_COLUMNS = {"i": ("token", "%d"), "plain": ("plain greedy", None),
                 "spec": ("speculative greedy", None), "agree": ("same", "check")}
