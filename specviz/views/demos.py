"""The from-scratch tutorial's six demonstrations as data: rows of numbers, computed from specviz.

The command line prints these rows; the app's pages plot them. Measured numbers come
from the Monte Carlo engines, each beside its exact counterpart.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ..analysis import roofline, theory
from ..analysis.audit import Audit, audit, is_biased
from ..analysis.stats import GOF_ALPHA, sampling_floor, tv  # noqa: F401 (/exactness)
from ..core import interrupt
from ..core.exact import exact_joint, round_law, target_joint
from ..core.montecarlo import long_decode, simulate
from ..core.pair import TablePair
from ..core.round import play_round
from ..core.roundstats import RoundStats
from ..core.rule import overlap, ratio, residual
from ..core.rules import RULES, TUTORIAL_RULES, Rule, target_of
from ..core.scenario import Scenario, ignores
from ..core.tables import junk_table, mix_draft, temper, token_name
from .work import heavy

ALPHAS = (1.0, 0.95, 0.85, 0.6, 0.3, 0.0)  # demonstration 3's draft qualities
TEMPERATURES = (1.3, 2.0, 0.5)  # demonstration 3's draft temperatures
KS = (1, 2, 3, 4, 5, 6, 8, 12, 16)  # demonstration 4's draft lengths
COSTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.8, 1.0)  # demonstration 5's draft costs
ROOFLINE_TOKENS = (1, 2, 4, 8, 16)  # demonstration 6's tokens per pass
NS = (1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000)  # convergence's n
SUMMARY_ROUNDS = 20_000  # the home page's measured long run, where the exact one is refused

Row = dict[str, object]
WORKERS = max(1, min(4, os.cpu_count() or 1))  # threads for independent Monte Carlo runs


# 1 ------------------------------------------------------------------------ one token
@dataclass(frozen=True)
class OneToken:
    ctx: int
    rows: list[Row]  # one per token: p, q, keep probability min(1, p/q), residual
    beta: float  # sum_x min(p, q): the chance the draft's token is kept
    reject_mass: float  # 1 - beta


def one_token(sc: Scenario) -> OneToken:
    """Demonstration 1: p and q at one context, the keep probabilities, the residual."""
    p, q, vocab = sc.pair.p(sc.prefix), sc.pair.q(sc.prefix), sc.pair.names
    keep = np.minimum(1.0, ratio(p, q))
    res = residual(p, q)
    rows = [
        {"token": token_name(tuple(vocab), x), "p": p[x], "q": q[x], "keep": keep[x],
         "residual": res[x]}
        for x in range(len(p))
    ]
    beta = float(overlap(p, q))
    return OneToken(sc.ctx, rows, beta, 1.0 - beta)


# 2 ------------------------------------------------------------------------ exactness
@dataclass(frozen=True)
class RuleAudit:
    rule: str
    lossless: bool
    exact_tv: float  # TV of the exact joint from the law it promises (the rule's bias)
    audit: Audit  # the Monte Carlo joint (n decodes) against the law it promises
    rounds: RoundStats  # the rounds of the n decodes
    mc_law: np.ndarray  # (V,)*n_tokens
    exact_law: np.ndarray  # (V,)*n_tokens
    target: np.ndarray  # (V,)*n_tokens: the law it promises (promised)
    against: str = "p"  # that law's name: "p", or "warp(p)" (promises_warp)


@dataclass(frozen=True)
class Exactness:
    n: int
    k: int
    n_tokens: int
    target: np.ndarray  # (V,)*n_tokens, the target's (a warp rule's own: RuleAudit.target)
    direct_tv: float  # the target sampled directly, n times: the floor made visible
    audits: list[RuleAudit]
    stopped: str | None = None  # what the page says when the time budget cut runs short


@heavy
def exactness(sc: Scenario, *, n: int = 60_000, rules: Sequence[str] = TUTORIAL_RULES,
              n_tokens: int = 2) -> Exactness:
    """Demonstration 2: each rule's Monte Carlo and exact TV from the joint law it promises
    (promised: the target's, or the warped target's for a warp rule; tree rules drafting
    the scenario's tree, when given)."""
    target = target_joint(sc.tables.P, sc.ctx, n_tokens=n_tokens)
    direct = np.random.default_rng(sc.seed).multinomial(n, target.ravel()).reshape(target.shape)
    # NumPy releases the GIL inside its array loops, so rules run side by side on the cores;
    # each rule has its own seeded stream, so the result does not depend on the scheduling.
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        audits = list(pool.map(interrupt.carry(lambda name: audit_rule(
            sc.replace(rule=name), promised(sc.replace(rule=name), n_tokens), n=n,
            n_tokens=n_tokens)), rules))
    return Exactness(n, sc.k, n_tokens, target, tv(direct / n, target), audits,
                     stopped_note([(a.rule, a.audit.n) for a in audits], n))


def promises_warp(rule: Rule) -> bool:
    """Whether the rule's output must follow the warped target warp(p), not p: a warped
    request's rules (core.rules.target_of)."""
    return rule.target_table is not RULES["correct"].target_table


def promised(sc: Scenario, n_tokens: int) -> np.ndarray:
    """The joint law of the first n_tokens tokens the scenario's rule promises: the
    target's, or for a warp rule the warped target's. (V,)*n_tokens"""
    P = target_of(sc.rule, sc.tables.P, sc.tables.Q) if promises_warp(sc.rule) else sc.tables.P
    return target_joint(P, sc.ctx, n_tokens=n_tokens)


def audit_rule(sc: Scenario, target: np.ndarray, *, n: int, n_tokens: int) -> RuleAudit:
    """The scenario's rule audited against the law of the first n_tokens tokens it promises
    (target: promised): the joint of n Monte Carlo decodes, and the exact joint's TV (the
    rule's bias)."""
    sim = simulate(sc, n=n, n_tokens=n_tokens)
    ex = exact_joint(sc, n_tokens=n_tokens)
    bias = tv(ex, target)
    return RuleAudit(rule=sc.rule.name, lossless=sc.rule.lossless, exact_tv=bias,
                     audit=audit(sim.joint, target, biased=is_biased(bias)),
                     rounds=RoundStats.of(sim), mc_law=sim.law, exact_law=ex, target=target,
                     against="warp(p)" if promises_warp(sc.rule) else "p")


def stopped_note(runs: Sequence[tuple[str, int]], n: int) -> str | None:
    """The page's note when the time budget (core.interrupt.budget) stopped some rules'
    decodes short of n: which, and how many each ran; None when every run finished."""
    short = [(rule, m) for rule, m in runs if m < n]
    if not short:
        return None
    done = ", ".join(f"{rule}: {m:,}" for rule, m in short)
    return (f"Stopped at the time budget of one request: {len(short)} of {len(runs)} rules "
            f"ran fewer than the {n:,} decodes asked ({done}); their TV, floor and pass "
            "line are those of the decodes they ran.")


@dataclass(frozen=True)
class Convergence:
    ns: list[int]
    floor: list[float]  # expected TV of n exact samples, per n
    mc_tv: dict[str, list[float]]  # rule -> Monte Carlo TV per n
    exact_tv: dict[str, float]  # rule -> its bias, where a broken rule levels off


@heavy
def convergence(sc: Scenario, *, ns: Sequence[int] = NS, rules: Sequence[str] = TUTORIAL_RULES,
                n_tokens: int = 2) -> Convergence:
    """TV against n for each rule: the correct rule tracks the floor, a broken rule its bias."""
    target = target_joint(sc.tables.P, sc.ctx, n_tokens=n_tokens)
    mc = {r: [tv(simulate(sc.replace(rule=r, seed=sc.seed + i), n=int(n),
                          n_tokens=n_tokens).law, target)
              for i, n in enumerate(ns)] for r in rules}
    ex = {r: tv(exact_joint(sc.replace(rule=r), n_tokens=n_tokens), target) for r in rules}
    return Convergence(list(ns), [sampling_floor(target, int(n)) for n in ns], mc, ex)


# 3 ------------------------------------------------------------------------ acceptance
def exact_row(sc: Scenario, c: float) -> Row:
    """Exact long-run metrics and the i.i.d. theory at alpha_eff (Leviathan et al. 2022,
    eq. 1 and Thm 3.8) for one draft; no sampling."""
    ex, k = round_law(sc, long_run=True), sc.k
    return {
        "alpha_eff": ex.alpha,  # E[sum_x min(p, q)] over the target's own text
        "acceptance_exact": ex.draft_acceptance_rate,
        "acceptance_theory": float(theory.draft_acceptance_rate(ex.alpha, k)),
        "tokens_per_call_exact": ex.tokens_per_call,
        "tokens_theory": float(theory.expected_tokens(ex.alpha, k)),
        "speedup_exact": float(theory.speedup(ex.tokens_per_call, k, c)),
        "speedup_theory": float(theory.walltime_speedup(ex.alpha, k, c)),
    }


def _measure(sc: Scenario, c: float, n_rounds: int) -> Row:
    """Measured (long decode) and exact (long run) acceptance metrics for one draft."""
    meas = long_decode(sc, n_rounds=n_rounds)
    return {**exact_row(sc, c), "acceptance": meas.draft_acceptance_rate,
            "tokens_per_call": meas.tokens_per_call,
            "tokens_per_call_se": meas.tokens_per_call_se,
            "speedup": float(theory.speedup(meas.tokens_per_call, sc.k, c))}


def sweep_drafts(sc: Scenario, knob: str, values: Sequence[float],
                 junk: np.ndarray | None = None) -> list[tuple[float, Scenario]]:
    """The scenario with each draft a sweep compares in place of its own, by value: knob
    "alpha", the mix alpha P + (1 - alpha) junk; knob "T", the target itself at
    temperature T."""
    P = sc.tables.P
    J = junk_table(P) if junk is None and knob != "T" else junk
    return [(v, sc.replace(pair=TablePair(P, temper(P, v) if knob == "T" else
                                          mix_draft(P, v, J)))) for v in values]


@ignores("draft")
@heavy
def draft_sweep(sc: Scenario, knob: str, values: Sequence[float], *, c: float = 0.1,
                junk: np.ndarray | None = None, n_rounds: int = 20_000) -> list[Row]:
    """Demonstration 3: each draft of sweep_drafts (3a, knob "alpha": mixed from the target
    and a junk table, by quality alpha; 3b, knob "T": the target at another temperature T)
    in the scenario's place, measured over a long decode, beside its exact long run."""
    return [{knob: v, **_measure(draft, c, n_rounds)}
            for v, draft in sweep_drafts(sc, knob, values, junk)]


# 4 ------------------------------------------------------------------------ draft length
@ignores("k")
@heavy
def k_sweep(sc: Scenario, *, c: float = 0.1, ks: Sequence[int] = KS,
            n_rounds: int = 20_000) -> list[Row]:
    """Demonstration 4: tokens per call saturate while the cost 1 + k c grows linearly
    (the scenario's pair, prefix, rule and seed; its k is swept)."""
    return [{"k": k, "cost": theory.round_cost(k, c), **_measure(sc.replace(k=k), c, n_rounds)}
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


@ignores("seed")
def cost_model(sc: Scenario, *, costs: Sequence[float] = COSTS) -> CostModel:
    """Demonstration 5: speedup = tokens / (1 + k c) and the break-even c*."""
    tokens, k = round_law(sc, long_run=True).tokens_per_call, sc.k
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
    context_len: int = 512,
    dtype: str = "fp16",
    batch: int = 1,
) -> list[Row]:
    """Demonstration 6: MACs per byte by tokens in the pass, the tutorial's count and ours,
    both over the tutorial's bytes (every weight, params x dtype bytes; +KV adds the cache);
    `read` is what the pass really reads (an untied input embedding only its rows)."""
    rows = []
    for t in tokens:
        tut = roofline.pass_cost(preset, t, context_len, dtype, batch, "tutorial", kv_cache=False)
        full = roofline.pass_cost(preset, t, context_len, dtype, batch, "full", kv_cache=True)
        rows.append({"tokens": t, "macs_tutorial": tut.macs, "mpb_tutorial": tut.macs_per_byte,
                     "macs_full": full.macs, "mpb_full": full.macs / tut.bytes,
                     "mpb_full_kv": full.macs / (tut.bytes + full.kv_bytes), "bytes": tut.bytes,
                     "read": full.weight_bytes})
    return rows


# home ---------------------------------------------------------------------- summary
@heavy
def summary(sc: Scenario, *, c: float) -> Row:
    """The home page's live numbers: one seeded round, and the exact long-run metrics, or,
    where the exact walk is refused (block verification at a large k) or passes the time
    budget, measured ones over SUMMARY_ROUNDS rounds, with the reason. Heavy: the exact
    walk of block verification at k = 16 takes seconds."""
    k, seed = sc.k, sc.seed
    tr = play_round(sc)
    try:
        law = round_law(sc, long_run=True)
        alpha, how = law.alpha, (f"Exact long-run values of the sidebar's pair at k = {k} "
                                 "(computed, not sampled: no seed moves them):")
    except ValueError as exc:
        law, alpha = long_decode(sc, n_rounds=SUMMARY_ROUNDS), float("nan")
        how = (f"Not computed exactly ({exc}); measured over a long decode of "
               f"{law.rounds:,} rounds at k = {k}, seed {seed}:")
    tokens = law.tokens_per_call
    c_star = float(theory.break_even_cost(tokens, k))
    figures = f"alpha = {alpha:.3f}, " if alpha == alpha else ""
    return {
        "round_text": " ".join(tr.name(e.token) for e in tr.emitted),
        "round_tokens": len(tr.emitted),
        "acceptance_rate": law.draft_acceptance_rate,
        "alpha": alpha,
        "tokens_per_call": tokens,
        "speedup": float(theory.speedup(tokens, k, c)),
        "break_even": c_star,
        "values_caption": how,
        "caption": f"Long-run figures for rule '{sc.rule.name}' at k = {k}: {figures}break-even "
                   f"draft cost c* = {c_star:.3f}.",
    }
