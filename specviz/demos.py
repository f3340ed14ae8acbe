"""The six demonstrations of SPEC.md as data: rows of numbers, computed from specviz.

The command line prints these rows; the app's pages plot them. Measured numbers come
from the Monte Carlo engines, each beside its exact counterpart.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from . import roofline, theory
from .exact import exact_joint, round_law, target_joint
from .montecarlo import long_decode, simulate
from .rule import overlap, ratio, residual
from .rules import SPEC_RULES, get_rule
from .stats import gof_pvalue, sampling_floor, tv, tv_threshold
from .tables import check_ctx, junk_table, mix_draft, temper, token_name, validate_pair

ALPHAS = (1.0, 0.95, 0.85, 0.6, 0.3, 0.0)  # demonstration 3's draft qualities
TEMPERATURES = (1.3, 2.0, 0.5)  # demonstration 3's draft temperatures
KS = (1, 2, 3, 4, 5, 6, 8, 12, 16)  # demonstration 4's draft lengths
COSTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.8, 1.0)  # demonstration 5's draft costs
ROOFLINE_TOKENS = (1, 2, 4, 8, 16)  # demonstration 6's tokens per pass

Row = dict[str, object]
WORKERS = max(1, min(4, os.cpu_count() or 1))  # threads for independent Monte Carlo runs


# 1 ------------------------------------------------------------------------ one token
@dataclass(frozen=True)
class OneToken:
    ctx: int
    rows: list[Row]  # one per token: p, q, keep probability min(1, p/q), residual
    beta: float  # sum_x min(p, q): the chance the draft's token is kept
    reject_mass: float  # 1 - beta


def one_token(P: np.ndarray, Q: np.ndarray, ctx: int, vocab: Sequence[str]) -> OneToken:
    """Demonstration 1: p and q at one context, the keep probabilities, the residual."""
    P, Q = validate_pair(P, Q)
    ctx = check_ctx(ctx, P.shape[0])
    p, q = P[ctx], Q[ctx]
    keep = np.minimum(1.0, ratio(p, q))
    res = residual(p, q)
    rows = [
        {"token": token_name(tuple(vocab), x), "p": p[x], "q": q[x], "keep": keep[x],
         "residual": res[x]}
        for x in range(len(p))
    ]
    beta = float(overlap(p, q))
    return OneToken(ctx, rows, beta, 1.0 - beta)


# 2 ------------------------------------------------------------------------ exactness
@dataclass(frozen=True)
class RuleAudit:
    rule: str
    lossless: bool
    mc_tv: float  # TV of the Monte Carlo joint from the target law
    exact_tv: float  # TV of the exact joint from the target law (the rule's bias)
    floor: float  # expected TV of n exact samples: what a perfect sampler shows
    threshold: float  # pass/fail line derived from n (stats.tv_threshold)
    p_value: float  # chi-square goodness of fit of the Monte Carlo counts to the target
    acceptance_rate: float
    tokens_per_call: float
    mc_law: np.ndarray  # (V,)*n_tokens
    exact_law: np.ndarray  # (V,)*n_tokens

    @property
    def at_floor(self) -> bool:
        return self.mc_tv <= self.threshold


@dataclass(frozen=True)
class Exactness:
    n: int
    k: int
    ctx: int
    n_tokens: int
    target: np.ndarray  # (V,)*n_tokens
    direct_tv: float  # the target sampled directly, n times: the floor made visible
    audits: list[RuleAudit]


def exactness(
    P: np.ndarray,
    Q: np.ndarray,
    ctx: int,
    k: int = 4,
    n: int = 60_000,
    seed: int = 0,
    rules: Sequence[str] = SPEC_RULES,
    n_tokens: int = 2,
) -> Exactness:
    """Demonstration 2: each rule's Monte Carlo and exact TV from the target's joint law."""
    target = target_joint(P, ctx, n_tokens)
    direct = np.random.default_rng(seed).multinomial(n, target.ravel()).reshape(target.shape)
    floor, line = sampling_floor(target, n), tv_threshold(target, n)

    def audit(name: str) -> RuleAudit:
        sim = simulate(P, Q, ctx, k, n, name, n_tokens, seed)
        ex = exact_joint(P, Q, ctx, k, n_tokens, name)
        return RuleAudit(
            rule=name, lossless=get_rule(name).lossless, mc_tv=tv(sim.law, target),
            exact_tv=tv(ex, target), floor=floor, threshold=line,
            p_value=gof_pvalue(sim.joint, target), acceptance_rate=sim.acceptance_rate,
            tokens_per_call=sim.tokens_per_call, mc_law=sim.law, exact_law=ex,
        )

    # NumPy releases the GIL inside its array loops, so rules run side by side on the cores;
    # each rule has its own seeded stream, so the result does not depend on the scheduling.
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        audits = list(pool.map(audit, rules))
    return Exactness(n, k, ctx, n_tokens, target, tv(direct / n, target), audits)


@dataclass(frozen=True)
class Convergence:
    ns: list[int]
    floor: list[float]  # expected TV of n exact samples, per n
    mc_tv: dict[str, list[float]]  # rule -> Monte Carlo TV per n
    exact_tv: dict[str, float]  # rule -> its bias, where a broken rule levels off


def convergence(
    P: np.ndarray,
    Q: np.ndarray,
    ctx: int,
    k: int = 4,
    ns: Sequence[int] = (1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000),
    seed: int = 0,
    rules: Sequence[str] = SPEC_RULES,
    n_tokens: int = 2,
) -> Convergence:
    """TV against n for each rule: the correct rule tracks the floor, a broken rule its bias."""
    target = target_joint(P, ctx, n_tokens)
    mc = {r: [tv(simulate(P, Q, ctx, k, int(n), r, n_tokens, seed + i).law, target)
              for i, n in enumerate(ns)] for r in rules}
    ex = {r: tv(exact_joint(P, Q, ctx, k, n_tokens, r), target) for r in rules}
    return Convergence(list(ns), [sampling_floor(target, int(n)) for n in ns], mc, ex)


# 3 ------------------------------------------------------------------------ acceptance
def _measure(P, Q, ctx, k, c, n_rounds, seed, rule="correct") -> Row:
    """Measured (long decode) and exact (long run) acceptance metrics for one draft."""
    meas = long_decode(P, Q, ctx, k, n_rounds, rule, seed)
    ex = round_law(P, Q, ctx, k, rule, long_run=True)
    return {
        "alpha_eff": ex.alpha,  # E[sum_x min(p, q)] over the target's own text
        "acceptance": meas.acceptance_rate,
        "acceptance_exact": ex.acceptance_rate,
        "tokens_per_call": meas.tokens_per_call,
        "tokens_per_call_se": meas.tokens_per_call_se,
        "tokens_per_call_exact": ex.tokens_per_call,
        "tokens_theory": float(theory.expected_tokens(ex.alpha, k)),
        "speedup": float(theory.speedup(meas.tokens_per_call, k, c)),
        "speedup_exact": float(theory.speedup(ex.tokens_per_call, k, c)),
        "speedup_theory": float(theory.walltime_speedup(ex.alpha, k, c)),
    }


def alpha_sweep(
    P: np.ndarray,
    ctx: int = 0,
    k: int = 4,
    c: float = 0.1,
    alphas: Sequence[float] = ALPHAS,
    junk: np.ndarray | None = None,
    n_rounds: int = 20_000,
    seed: int = 0,
) -> list[Row]:
    """Demonstration 3a: a draft mixed from the target and a junk table, by quality alpha."""
    J = junk_table(P) if junk is None else junk
    return [{"alpha": a, **_measure(P, mix_draft(P, a, J), ctx, k, c, n_rounds, seed)}
            for a in alphas]


def temperature_sweep(
    P: np.ndarray,
    ctx: int = 0,
    k: int = 4,
    c: float = 0.1,
    temperatures: Sequence[float] = TEMPERATURES,
    n_rounds: int = 20_000,
    seed: int = 0,
) -> list[Row]:
    """Demonstration 3b: the draft is the target itself at another temperature T."""
    return [{"T": T, **_measure(P, temper(P, T), ctx, k, c, n_rounds, seed)}
            for T in temperatures]


# 4 ------------------------------------------------------------------------ draft length
def k_sweep(
    P: np.ndarray,
    Q: np.ndarray,
    ctx: int = 0,
    c: float = 0.1,
    ks: Sequence[int] = KS,
    n_rounds: int = 20_000,
    seed: int = 0,
) -> list[Row]:
    """Demonstration 4: tokens per call saturate while the cost 1 + k c grows linearly."""
    return [{"k": k, "cost": 1.0 + k * c, **_measure(P, Q, ctx, k, c, n_rounds, seed)}
            for k in ks]


def best_row(rows: list[Row], key: str = "speedup") -> Row:
    """The row with the largest value of key (first on ties)."""
    return max(rows, key=lambda r: r[key])


# 5 ------------------------------------------------------------------------ cost
@dataclass(frozen=True)
class CostModel:
    k: int
    tokens_per_call: float  # exact long run
    break_even: float  # c* = (tokens - 1) / k: above it speculation is slower
    rows: list[Row]  # c, speedup


def cost_model(
    P: np.ndarray, Q: np.ndarray, ctx: int = 0, k: int = 4, costs: Sequence[float] = COSTS
) -> CostModel:
    """Demonstration 5: speedup = tokens / (1 + k c) and the break-even c*."""
    tokens = round_law(P, Q, ctx, k, long_run=True).tokens_per_call
    rows = [{"c": c, "speedup": float(theory.speedup(tokens, k, c))} for c in costs]
    return CostModel(k, tokens, float(theory.break_even_cost(tokens, k)), rows)


@dataclass(frozen=True)
class Surface:
    ks: np.ndarray  # (K,)
    cs: np.ndarray  # (C,)
    speedup: np.ndarray  # (K, C) walltime speedup, Thm 3.8
    best_k: np.ndarray  # (C,) the k that maximises speedup at each c
    alpha: float


def speedup_surface(
    alpha: float, k_max: int = 32, cs: np.ndarray | None = None
) -> Surface:
    """Speedup over k = 1..k_max and c on a log grid, with the best-k ridge."""
    ks = np.arange(1, k_max + 1)
    cs = np.logspace(-3, 0, 61) if cs is None else np.asarray(cs, dtype=np.float64)
    S = np.asarray(theory.walltime_speedup(alpha, ks[:, None], cs[None, :]))  # (K, C)
    return Surface(ks, cs, S, ks[np.argmax(S, axis=0)], float(alpha))


# 6 ------------------------------------------------------------------------ roofline
def roofline_rows(
    preset: str = "Llama-2-7B",
    tokens: Sequence[int] = ROOFLINE_TOKENS,
    ctx: int = 512,
    dtype: str = "fp16",
    batch: int = 1,
) -> list[Row]:
    """Demonstration 6: MACs per byte by tokens in the pass, the tutorial's count and ours."""
    rows = []
    for t in tokens:
        tut = roofline.pass_cost(preset, t, ctx, dtype, batch, "tutorial", kv_cache=False)
        full = roofline.pass_cost(preset, t, ctx, dtype, batch, "full", kv_cache=False)
        kv = roofline.pass_cost(preset, t, ctx, dtype, batch, "full", kv_cache=True)
        rows.append({"tokens": t, "macs_tutorial": tut.macs, "mpb_tutorial": tut.macs_per_byte,
                     "macs_full": full.macs, "mpb_full": full.macs_per_byte,
                     "mpb_full_kv": kv.macs_per_byte, "bytes": tut.bytes})
    return rows


# home ---------------------------------------------------------------------- summary
def summary(
    P: np.ndarray,
    Q: np.ndarray,
    ctx: int,
    k: int,
    c: float,
    seed: int = 0,
    rule: str = "correct",
    vocab: Sequence[str] | None = None,
) -> Row:
    """The home page's live numbers: one seeded round, and the exact long-run metrics."""
    from .round import play_round

    names = tuple(vocab) if vocab else None
    tr = play_round(P, Q, ctx, k, np.random.default_rng(seed), rule, names)
    law = round_law(P, Q, ctx, k, rule, long_run=True)
    tokens = law.tokens_per_call
    return {
        "round_text": " ".join(tr.name(e.token) for e in tr.emitted),
        "round_tokens": len(tr.emitted),
        "acceptance_rate": law.acceptance_rate,
        "alpha": law.alpha,
        "tokens_per_call": tokens,
        "speedup": float(theory.speedup(tokens, k, c)),
        "break_even": float(theory.break_even_cost(tokens, k)),
        "caption": f"Exact long-run figures for rule '{rule}' at k = {k}: alpha = "
                   f"{law.alpha:.3f}, break-even draft cost c* = "
                   f"{float(theory.break_even_cost(tokens, k)):.3f}.",
    }


# /round page ---------------------------------------------------------------- transcript
# Added for pages/1_round.py: the running transcript of rounds 0..rnd and its totals.
from .round import ORIGINS, RoundTrace, play_rounds  # noqa: E402

TRANSCRIPT_SHOWN = 12  # earlier rounds listed under the animation (totals cover them all)


@dataclass(frozen=True)
class Totals:
    """Running totals over a run of rounds (one target call per round)."""

    rounds: int
    tokens: int  # emitted tokens, every origin
    drafted: int  # k per round
    accepted: int  # drafts kept by a coin
    by_origin: dict[str, int]  # origin -> emitted tokens of that origin
    tokens_per_call: float  # tokens / rounds (nan before the first round)
    acceptance_rate: float  # accepted / drafted (nan before the first round)


def transcript_totals(traces: Sequence[RoundTrace]) -> Totals:
    """Tokens per target call = emitted / rounds; acceptance = accepted / drafted."""
    rounds = len(traces)
    tokens = sum(len(t.emitted) for t in traces)
    drafted = sum(t.k for t in traces)
    accepted = sum(t.accepted for t in traces)
    by_origin = {o: sum(1 for t in traces for e in t.emitted if e.origin == o) for o in ORIGINS}
    return Totals(
        rounds, tokens, drafted, accepted, by_origin,
        tokens / rounds if rounds else float("nan"),
        accepted / drafted if drafted else float("nan"),
    )


@dataclass(frozen=True)
class RoundTranscript:
    """Round rnd of a seeded transcript, the few rounds before it, and running totals."""

    rnd: int  # index of the current round (0 = the first)
    current: RoundTrace  # round rnd
    earlier: tuple[RoundTrace, ...]  # rounds first..rnd-1 (at most `shown`), oldest first
    first: int  # round index of earlier[0]
    before: Totals  # rounds 0..rnd-1
    through: Totals  # rounds 0..rnd

    @property
    def previous(self) -> RoundTrace | None:
        """The round before the current one (None for round 0)."""
        return self.earlier[-1] if self.earlier else None


def round_transcript(
    P: np.ndarray,
    Q: np.ndarray,
    ctx: int,
    k: int,
    rnd: int,
    seed: int = 0,
    rule: str = "correct",
    vocab: Sequence[str] | None = None,
    shown: int = TRANSCRIPT_SHOWN,
) -> RoundTranscript:
    """Rounds 0..rnd of play_rounds on one seeded stream; keeps only what the page shows,
    so a cached copy stays small whatever rnd is."""
    traces = play_rounds(P, Q, ctx, k, int(rnd) + 1, seed, rule,
                         tuple(vocab) if vocab else None, traced=int(shown) + 1)
    first = max(0, int(rnd) - int(shown))
    return RoundTranscript(
        rnd=int(rnd), current=traces[-1], earlier=traces[first:-1], first=first,
        before=transcript_totals(traces[:-1]), through=transcript_totals(traces),
    )


def transcript_rows(tr: RoundTranscript, include_current: bool) -> list[Row]:
    """One row per listed round (for a CSV): its context, tokens, origins, kept drafts."""
    traces = tr.earlier + ((tr.current,) if include_current else ())
    return [
        {"round": tr.first + i, "context": t.name(t.ctx),
         "emitted": " ".join(t.name(e.token) for e in t.emitted),
         "origins": " ".join(e.origin for e in t.emitted),
         "flushed": " ".join(t.name(t.positions[j - 1].token) for j in t.flushed),
         "accepted": t.accepted, "drafted": t.k, "tokens": len(t.emitted)}
        for i, t in enumerate(traces)
    ]


# =============================================================================================
# Chart pages (/exactness, /acceptance, /draft-length, /cost, /roofline): page-level data.
# Added for the pages so that they do no arithmetic; every function here is pure and cheap
# unless it says it samples.
# =============================================================================================
CONVERGENCE_NS = (100, 300, 1_000, 3_000, 10_000, 30_000, 100_000)  # the page's n sweep
ALPHA_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0)  # measured
ALPHA_GRID = tuple(round(0.05 * i, 2) for i in range(21))  # exact and theory curves
T_POINTS = (0.25, 0.5, 0.75, 1.0, 1.3, 1.5, 2.0, 3.0, 4.0)  # measured temperatures
T_TICKS = (0.25, 0.5, 1.0, 2.0, 4.0)  # x ticks of the temperature charts (log axis)
T_GRID = tuple(float(t) for t in np.round(np.geomspace(0.2, 5.0, 41), 4))  # curves
K_POINTS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 28, 32)  # measured draft lengths
K_GRID = tuple(range(1, 33))  # exact and theory curves
COST_GRID = tuple(round(0.01 * i, 2) for i in range(201))  # c = 0..2, the sidebar's range
SLOW_COSTS = (0.6, 1.0)  # the "bigger draft is slower" draft costs (SPEC.md demonstration 5)
ROOFLINE_TOKENS_MIN_MAX = 256  # the roofline's x axis reaches at least this many tokens
ROOFLINE_POINTS = 160  # tokens grid size (log-spaced integers)
EXACTNESS_RULES = SPEC_RULES  # the exactness page always runs SPEC.md's four
PAGE_ROUNDS = 10_000  # long-decode rounds per measured point (keeps a k change < 300 ms)


def page_rules(rule: str, base: Sequence[str] = EXACTNESS_RULES) -> tuple[str, ...]:
    """The rules the exactness page runs: SPEC.md's four, plus the sidebar's rule if it is
    another (every rule at 10^6 decodes would not fit the page's time budget)."""
    get_rule(rule)  # ValueError on an unknown name
    return tuple(base) + (() if rule in base else (rule,))


def exactness_rows(ex: Exactness) -> list[Row]:
    """One row per rule: Monte Carlo TV beside the exact TV, the floor and the threshold."""
    return [{"rule": a.rule, "lossless": a.lossless, "mc_tv": a.mc_tv, "exact_tv": a.exact_tv,
             "floor": a.floor, "threshold": a.threshold, "at_floor": a.at_floor,
             "p_value": a.p_value, "acceptance_rate": a.acceptance_rate,
             "tokens_per_call": a.tokens_per_call} for a in ex.audits]


def audit_of(ex: Exactness, rule: str) -> RuleAudit:
    """The audit of one rule (ValueError if the run did not include it)."""
    for a in ex.audits:
        if a.rule == rule:
            return a
    raise ValueError(f"rule {rule!r} was not audited; audited: {[a.rule for a in ex.audits]}")


def marginal_rows(ex: Exactness, rule: str, vocab: Sequence[str]) -> list[Row]:
    """First emitted token's law: target p(x1|ctx), the rule's Monte Carlo and exact laws."""
    a = audit_of(ex, rule)
    rest = tuple(range(1, ex.n_tokens))  # sum out tokens 2..n
    t, mc, e = ex.target.sum(axis=rest), a.mc_law.sum(axis=rest), a.exact_law.sum(axis=rest)
    return [{"token": token_name(tuple(vocab), x), "target": float(t[x]),
             "speculative": float(mc[x]), "exact": float(e[x])} for x in range(len(t))]


def joint_diff(ex: Exactness, rule: str) -> np.ndarray:
    """Monte Carlo two-token joint minus the target's joint (tokens 3.. summed out). (V, V)"""
    a = audit_of(ex, rule)
    rest = tuple(range(2, ex.n_tokens))
    return a.mc_law.sum(axis=rest) - ex.target.sum(axis=rest)


def exact_row(P: np.ndarray, Q: np.ndarray, ctx: int, k: int, c: float,
              rule: str = "correct") -> Row:
    """Exact long-run metrics and the i.i.d. theory at alpha_eff (Leviathan et al. 2022,
    eq. 1 and Thm 3.8) for one draft; no sampling."""
    ex = round_law(P, Q, ctx, k, rule, long_run=True)
    return {
        "alpha_eff": ex.alpha,
        "acceptance_exact": ex.acceptance_rate,
        "acceptance_theory": float(theory.draft_acceptance_rate(ex.alpha, k)),
        "tokens_per_call_exact": ex.tokens_per_call,
        "tokens_theory": float(theory.expected_tokens(ex.alpha, k)),
        "speedup_exact": float(theory.speedup(ex.tokens_per_call, k, c)),
        "speedup_theory": float(theory.walltime_speedup(ex.alpha, k, c)),
    }


def alpha_curve(P: np.ndarray, ctx: int, k: int, c: float,
                alphas: Sequence[float] = ALPHA_GRID, junk: np.ndarray | None = None) -> list[Row]:
    """Exact and theory curves over the mix weight alpha (the draft of alpha_sweep)."""
    J = junk_table(P) if junk is None else junk
    return [{"alpha": float(a), **exact_row(P, mix_draft(P, float(a), J), ctx, k, c)}
            for a in alphas]


def temperature_curve(P: np.ndarray, ctx: int, k: int, c: float,
                      temperatures: Sequence[float] = T_GRID) -> list[Row]:
    """Exact and theory curves over the draft temperature T (draft = temper(P, T))."""
    return [{"T": float(T), **exact_row(P, temper(P, float(T)), ctx, k, c)}
            for T in temperatures]


def k_curve(P: np.ndarray, Q: np.ndarray, ctx: int, c: float,
            ks: Sequence[int] = K_GRID) -> list[Row]:
    """Exact and theory curves over k, with the cost of a round 1 + k c."""
    return [{"k": int(k), "cost": 1.0 + k * c, **exact_row(P, Q, ctx, int(k), c)} for k in ks]


def reprice(rows: list[Row], c: float, k: int | None = None) -> list[Row]:
    """Rows of a sweep with their speedups (and cost 1 + k c) recomputed at draft cost c.

    Sweeps are measured once and priced per c: speedup = tokens / (1 + k c), theory
    Thm 3.8 at alpha_eff. k comes from each row's "k", else from the argument.
    """
    out = []
    for r in rows:
        kk = int(r["k"]) if "k" in r else int(k)
        new = dict(r)
        if "cost" in r:
            new["cost"] = 1.0 + kk * c
        if "tokens_per_call" in r:
            new["speedup"] = float(theory.speedup(r["tokens_per_call"], kk, c))
        if "tokens_per_call_exact" in r:
            new["speedup_exact"] = float(theory.speedup(r["tokens_per_call_exact"], kk, c))
        if "alpha_eff" in r:
            new["speedup_theory"] = float(theory.walltime_speedup(r["alpha_eff"], kk, c))
        out.append(new)
    return out


def slow_cases(cm: CostModel, costs: Sequence[float] = SLOW_COSTS) -> list[Row]:
    """The same acceptance priced at dearer drafts: speedup and whether it is below 1x."""
    rows = []
    for c in costs:
        s = float(theory.speedup(cm.tokens_per_call, cm.k, c))
        rows.append({"c": float(c), "speedup": s, "slower": s < 1.0})
    return rows


@dataclass(frozen=True)
class RooflinePage:
    preset: str
    accel: str
    k: int
    rows: list[Row]  # per tokens: MACs per byte (tutorial, full, full + KV) and time ratio
    accelerators: list[Row]  # name, ridge MACs/byte, source, free tokens for this model
    free_tokens: int  # on the selected accelerator (full count, KV read included)
    verify_ratio: float  # pass time of k + 1 tokens / pass time of 1 token
    free_for_k: bool  # k + 1 <= free_tokens


def roofline_grid(free: int, lo_max: int = ROOFLINE_TOKENS_MIN_MAX) -> tuple[int, ...]:
    """Log-spaced integer token counts from 1 to 256, or further (doubling, up to
    roofline.MAX_FREE_TOKENS) until twice the free-token count fits."""
    hi = lo_max
    while hi < 2 * free and hi < roofline.MAX_FREE_TOKENS:
        hi *= 2
    return tuple(int(t) for t in np.unique(np.round(np.geomspace(1, hi, ROOFLINE_POINTS))))


def roofline_page(
    preset: str = "Llama-2-7B",
    accel: str = "H100 SXM",
    k: int = 4,
    ctx: int = 512,
    dtype: str = "fp16",
    batch: int = 1,
    tokens: Sequence[int] | None = None,
) -> RooflinePage:
    """The /roofline page's numbers: demonstration 6 over 1..256+ tokens, the accelerators.

    Full count with the KV-cache read for the times; tokens defaults to roofline_grid(free).
    """
    a = roofline.ACCELERATORS[accel]
    free = roofline.free_tokens(preset, accel, ctx, dtype, batch)
    rows = roofline_rows(preset, roofline_grid(free) if tokens is None else tokens, ctx, dtype,
                         batch)
    one = roofline.pass_time(roofline.pass_cost(preset, 1, ctx, dtype, batch), a)
    for r in rows:
        t = roofline.pass_time(roofline.pass_cost(preset, int(r["tokens"]), ctx, dtype, batch), a)
        r["time_ratio"] = t / one  # pass time relative to a one-token decode step
    accels = [{"accelerator": name, "ridge": acc.ridge,
               "free_tokens": roofline.free_tokens(preset, name, ctx, dtype, batch),
               "source": acc.source} for name, acc in roofline.ACCELERATORS.items()]
    ratio_k = roofline.verify_cost_ratio(preset, accel, k, ctx, dtype, batch)
    return RooflinePage(preset, accel, int(k), rows, accels, free, ratio_k, k + 1 <= free)


def surface_point(surface: Surface, k: int, c: float) -> Row | None:
    """The surface's law at (k, c), Thm 3.8 at the surface's alpha; None when c lies outside
    the surface's c range (the log axis cannot show c = 0)."""
    if not surface.cs[0] <= c <= surface.cs[-1]:
        return None
    return {"k": int(k), "c": float(c),
            "speedup": float(theory.walltime_speedup(surface.alpha, k, c))}


def surface_rows(surface: Surface) -> list[Row]:
    """The speedup surface as long-format rows (k, c, speedup, best k at that c), for CSV."""
    return [{"k": int(k), "c": float(c), "speedup": float(surface.speedup[i, j]),
             "best_k_at_c": int(surface.best_k[j])}
            for i, k in enumerate(surface.ks) for j, c in enumerate(surface.cs)]


def break_even_curve(surface: Surface) -> list[Row]:
    """Where the surface crosses speedup = 1: c*(k) = (E[tokens](alpha, k) - 1) / k at each k
    (Leviathan et al. 2022, Thm 3.8), kept where c* lies inside the surface's c range."""
    rows = []
    for k in surface.ks:
        tokens = theory.expected_tokens(surface.alpha, int(k))
        c = float(theory.break_even_cost(tokens, int(k)))
        if surface.cs[0] <= c <= surface.cs[-1]:
            rows.append({"k": int(k), "c": c, "speedup": 1.0})
    return rows


# =============================================================================================
# Beyond the paper (issue 5): dynamic draft length on /draft-length, batch size on /roofline.
# Added for those pages' new sections; pure, and cheap except dynamic_runs (a decode).
# =============================================================================================
from .dynamic import POLICY_LABELS, PolicyRun, run_policies  # noqa: E402

DYN_TOKENS = 3_000  # tokens each policy decodes on the shared stream
DYN_K_MAX = 16  # the most a dynamic policy may draft in one round (at least the sidebar's k)
DYN_THRESHOLD = 0.3  # the confidence policy's default: stop drafting when max q < this
DYN_SHOWN_ROUNDS = 100  # rounds in view on the k-over-time chart (the rest by panning)
BATCHES = tuple(range(1, 1025))  # batch sizes B of the batch-size section


def dynamic_runs(
    P: np.ndarray,
    Q: np.ndarray,
    ctx: int,
    k: int,
    n_tokens: int = DYN_TOKENS,
    seed: int = 0,
    threshold: float = DYN_THRESHOLD,
) -> dict[str, PolicyRun]:
    """Every dynamic-k policy on one shared random stream (specviz.dynamic.run_policies),
    starting from the sidebar's k, with k_max = dynamic_k_max(k). Samples."""
    return run_policies(P, Q, ctx, int(k), int(n_tokens), int(seed), dynamic_k_max(k),
                        float(threshold))


def dynamic_k_max(k: int) -> int:
    """The most a dynamic policy drafts in one round: DYN_K_MAX, or k if that is more."""
    return max(DYN_K_MAX, int(k))


def policy_rows(runs: dict[str, PolicyRun], c: float) -> list[Row]:
    """One row per policy: calls, tokens per target call, mean k, and the speedup
    tokens / (target calls + c draft calls) against plain decoding (one token per call)."""
    return [{"policy": name, "label": POLICY_LABELS.get(name, name), "tokens": r.tokens,
             "target_calls": r.target_calls, "draft_calls": r.draft_calls,
             "accepted": r.accepted, "mean_k": r.draft_calls / r.target_calls,
             "tokens_per_call": r.tokens_per_call, "speedup": r.speedup(c)}
            for name, r in runs.items()]


@dataclass(frozen=True)
class BatchCurve:
    """Speculative speedup against batch size B, the verify pass priced by the roofline."""

    preset: str
    accel: str
    alpha: float  # acceptance rate used (the pair's exact long-run alpha_eff)
    k: int
    c: float
    ctx: int
    dtype: str
    kv_cache: bool
    rows: list[Row]  # batch, speedup, verify_ratio (t_(k+1) / t_1 at that B)
    memory_bound_speedup: float  # Thm 3.8 at alpha, k, c: the speedup while verifying is free
    stops_free: int | None  # first B whose verify pass costs more than 1 + FREE_TOLERANCE steps
    stops_paying: int | None  # first B with speedup < 1
    max_batch: int

    @property
    def free_throughout(self) -> bool:
        """Verifying k + 1 tokens stays about as cheap as one decode step at every B shown."""
        return self.stops_free is None


def batch_curve(
    preset: str,
    accel: str,
    alpha: float,
    k: int,
    c: float,
    ctx: int = 512,
    dtype: str = "fp16",
    kv_cache: bool = True,
    batches: Sequence[int] = BATCHES,
) -> BatchCurve:
    """roofline.batch_speedup over B, with where verification stops being free and where
    speculation stops paying. With batch B the verify pass holds B (k + 1) tokens."""
    bs = [int(b) for b in batches]
    s = roofline.batch_speedup(preset, accel, alpha, k, c, bs, ctx, dtype, "full", kv_cache)
    ratios = [roofline.verify_cost_ratio(preset, accel, k, ctx, dtype, b, "full", kv_cache)
              for b in bs]
    rows = [{"batch": b, "tokens_in_pass": b * (k + 1), "speedup": float(v),
             "verify_ratio": float(r)} for b, v, r in zip(bs, s, ratios, strict=True)]
    limit = 1.0 + roofline.FREE_TOLERANCE
    stops_free = next((r["batch"] for r in rows if r["verify_ratio"] > limit), None)
    stops_paying = next((r["batch"] for r in rows if r["speedup"] < 1.0), None)
    return BatchCurve(preset, accel, float(alpha), int(k), float(c), int(ctx), dtype,
                      bool(kv_cache), rows, float(theory.walltime_speedup(alpha, k, c)),
                      stops_free, stops_paying, max(bs))
