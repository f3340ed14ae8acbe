"""Page-level data for the chart pages (/exactness, /acceptance, /draft-length, /cost,
/roofline): grids, rows and curves, so pages do no arithmetic.

Everything here is pure and cheap unless its docstring says it samples.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..analysis import roofline, theory
from ..analysis.roofline import (  # noqa: F401 (for /roofline)
    FREE_TOLERANCE,
    FULL_LABEL,
    MAX_FREE_TOKENS,
    TUTORIAL_LABEL,
)
from ..core.dynamic import POLICY_LABELS, PolicyRun, run_policies
from ..core.exact import round_law
from ..core.rules import TUTORIAL_RULES, get_rule, rules_cost
from ..core.scenario import Scenario, ignores
from ..core.tables import token_name
from ..llm import machine
from .demos import (
    CostModel,
    Exactness,
    Row,
    RuleAudit,
    Surface,
    exact_row,
    roofline_rows,
    sweep_drafts,
)
from .work import K_APP_MAX, heavy, n_cap

CONVERGENCE_NS = (100, 300, 1_000, 3_000, 10_000, 30_000, 100_000)  # the page's n sweep
ALPHA_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0)  # measured
ALPHA_GRID = tuple(round(0.05 * i, 2) for i in range(21))  # exact and theory curves
T_POINTS = (0.25, 0.5, 0.75, 1.0, 1.3, 1.5, 2.0, 3.0, 4.0)  # measured temperatures
T_TICKS = (0.25, 0.5, 1.0, 2.0, 4.0)  # x ticks of the temperature charts (log axis)
T_GRID = tuple(float(t) for t in np.round(np.geomspace(0.2, 5.0, 41), 4))  # curves
K_POINTS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 28, 32)  # measured draft lengths
K_GRID = tuple(range(1, 33))  # exact and theory curves
COST_GRID = tuple(round(0.01 * i, 2) for i in range(201))  # c = 0..2, the sidebar's range
SLOW_COSTS = (0.6, 1.0)  # the "bigger draft is slower" draft costs (the tutorial's demonstration 5)
ROOFLINE_TOKENS_MIN_MAX = 256  # the roofline's x axis reaches at least this many tokens
ROOFLINE_POINTS = 160  # tokens grid size (log-spaced integers)
EXACTNESS_RULES = TUTORIAL_RULES  # the exactness page always runs the tutorial's four
PAGE_ROUNDS = 10_000  # long-decode rounds per measured point (keeps a k change < 300 ms)


def capped_n(n: int, k: int, rules: Sequence[str], params: dict | None = None,
             tree: Sequence[Sequence[int]] = ()) -> tuple[int, str | None]:
    """n held at the request's work cap for these rules at k (work.n_cap), and the note
    that says so: a rule is priced by the rows its round scores (rules.rules_cost: a tree
    its nodes, multi-draft m candidates a position), n (k + 1) x that <= WORK_REQUEST_MAX."""
    cost, widest = rules_cost(rules, k, params, tree)
    cap = n_cap(k, cost, widest)
    if n <= cap:
        return int(n), None
    return cap, (f"The cap bites: at k = {k}, {len(rules)} rules scoring as many rows a round "
                 f"as {cost:.3g} plain rules (a tree counts its nodes, multi-draft its "
                 f"candidates) may take at most {cap:,} decodes each in one run (about 5 s); "
                 f"running {cap:,}, not {n:,}.")


def page_rules(rule: str, base: Sequence[str] = EXACTNESS_RULES) -> tuple[str, ...]:
    """The rules the exactness page runs: the tutorial's four, plus the sidebar's rule if it is
    another (every rule at 10^6 decodes would not fit the page's time budget)."""
    get_rule(rule)  # ValueError on an unknown name
    return tuple(base) + (() if rule in base else (rule,))


def exactness_rows(ex: Exactness) -> list[Row]:
    """One row per rule: Monte Carlo TV beside the exact TV, the floor and the threshold."""
    return [{"rule": a.rule, "lossless": a.lossless, "against": a.against,
             "mc_tv": a.audit.mc_tv,
             "exact_tv": a.exact_tv, "floor": a.audit.floor, "threshold": a.audit.threshold,
             "at_floor": a.audit.at_floor, "p_value": a.audit.p_value,
             "acceptance_rate": a.rounds.draft_acceptance_rate,
             "tokens_per_call": a.rounds.tokens_per_call,
             "verdict": a.audit.verdict} for a in ex.audits]


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
    t, mc, e = a.target.sum(axis=rest), a.mc_law.sum(axis=rest), a.exact_law.sum(axis=rest)
    return [{"token": token_name(tuple(vocab), x), "target": float(t[x]),
             "speculative": float(mc[x]), "exact": float(e[x])} for x in range(len(t))]


def joint_diff(ex: Exactness, rule: str) -> np.ndarray:
    """Monte Carlo two-token joint minus the target's joint (tokens 3.. summed out). (V, V)"""
    a = audit_of(ex, rule)
    rest = tuple(range(2, ex.n_tokens))
    return a.mc_law.sum(axis=rest) - a.target.sum(axis=rest)


@ignores("draft", "seed")
def draft_curve(sc: Scenario, knob: str, values: Sequence[float], *, c: float,
                junk: np.ndarray | None = None) -> list[Row]:
    """Exact and theory curves over the drafts of demos.draft_sweep: the mix weight alpha
    (knob "alpha") or the draft temperature T (knob "T", draft = temper(P, T))."""
    return [{knob: v, **exact_row(draft, c)}
            for v, draft in sweep_drafts(sc, knob, [float(v) for v in values], junk)]


@ignores("k", "seed")
def k_curve(sc: Scenario, *, c: float, ks: Sequence[int] = K_GRID) -> list[Row]:
    """Exact and theory curves over k (the scenario's k swept), with the cost of a round
    1 + k c."""
    return [{"k": int(k), "cost": theory.round_cost(k, c), **exact_row(sc.replace(k=int(k)), c)}
            for k in ks]


def reprice(rows: list[Row], c: float, k: int | None = None) -> list[Row]:
    """Rows of a sweep with their speedups (and cost 1 + k c) recomputed at draft cost c.

    Sweeps are measured once and priced per c: speedup = tokens / (1 + k c), theory
    Thm 3.8 at alpha_eff. k comes from each row's "k", else from the argument. A text
    measurement's row ("tokens per call") gets its column c; prompt lookup drafts for free,
    so its c is 0.
    """
    out = []
    for r in rows:
        kk = int(r["k"]) if "k" in r else int(k)
        new = dict(r)
        if "tokens per call" in r:
            new["c"] = cost = 0.0 if r.get("drafter") == "lookup" else float(c)
            new["speedup"] = float(theory.speedup(r["tokens per call"], kk, cost))
        if "cost" in r:
            new["cost"] = theory.round_cost(kk, c)
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
    context_len: int = 512,
    dtype: str = "fp16",
    batch: int = 1,
) -> RooflinePage:
    """The /roofline page's numbers: demonstration 6 over 1..256+ tokens (roofline_grid),
    the accelerators. Full count with the KV-cache read for the times."""
    a = roofline.ACCELERATORS[accel]
    free = roofline.free_tokens(preset, accel, context_len, dtype, batch)
    rows = roofline_rows(preset, roofline_grid(free), context_len, dtype, batch)
    t = roofline.pass_times(preset, a, [1] + [r["tokens"] for r in rows], batch,
                            context_len=context_len, dtype=dtype)  # (1 + len(rows),) seconds
    for r, ti in zip(rows, t[1:], strict=True):
        r["time_ratio"] = float(ti / t[0])  # pass time relative to a one-token decode step
    accels = [{"accelerator": name, "peak_tflops": 2 * acc.peak_macs_per_s / 1e12,
               "fp8_tflops": 2 * acc.peak_fp8_macs_per_s / 1e12 or None,  # None: no FP8
               "bandwidth_tb_s": acc.bandwidth_bytes_per_s / 1e12,
               "memory_gib": acc.memory_bytes / 2**30, "ridge": acc.ridge,
               "free_tokens": roofline.free_tokens(preset, name, context_len, dtype, batch),
               "source": acc.source} for name, acc in roofline.ACCELERATORS.items()]
    ratio_k = roofline.verify_cost_ratio(preset, accel, k, context_len, dtype, batch)
    return RooflinePage(preset, accel, int(k), rows, accels, free, ratio_k, k + 1 <= free)


MACHINE_SECONDS = 2.0  # what measuring this machine for /roofline may take (+ one sample)
MACHINE_BIG_ROWS = 50_000  # rows of its bandwidth matrix: 128 MB at d = 640, past the caches
MACHINE_NAME = "this machine (measured, f32)"


def measured_machine(seconds: float = MACHINE_SECONDS) -> Row:
    """This machine as /roofline's accelerators are described, measured here (llm.machine,
    best wall-clock sample, in the pass's threads as the real model's pass runs): bandwidth of
    the faster of the pass's one-row product and a plain read over 128 MB of f32, peak of
    512 x 2048 x 2048 f32 products in every thread at once (FLOPs summed); ridge = peak
    MACs/s / bandwidth. Samples for `seconds` (at least one sample)."""
    m = machine.Machine(rows=(), big_rows=MACHINE_BIG_ROWS)
    t_end = time.perf_counter() + seconds
    m.sample()
    while time.perf_counter() < t_end:
        m.sample()
    bw, peak = m.bw[0], m.peak[0]  # bytes/s, FLOP/s
    return {"accelerator": MACHINE_NAME, "peak_tflops": peak / 1e12,
            "bandwidth_tb_s": bw / 1e12, "ridge": peak / 2 / bw,
            "source": f"measured here: {bw / 1e9:.1f} GB/s read, {peak / 1e9:.0f} GFLOP/s f32"}


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


# ------------------------------- beyond the paper: dynamic k on /draft-length, batch on /roofline

DYN_TOKENS = 3_000  # tokens each policy decodes on the shared stream
DYN_K_MAX = 16  # the most a dynamic policy may draft in one round (at least the sidebar's k)
DYN_THRESHOLD = 0.3  # the confidence policy's default: stop drafting when max q < this
DYN_SHOWN_ROUNDS = 100  # rounds in view on the k-over-time chart (the rest by panning)
BATCHES = tuple(range(1, 1025))  # batch sizes B of the batch-size section


@heavy
def dynamic_runs(sc: Scenario, *, length: int = DYN_TOKENS,
                 threshold: float = DYN_THRESHOLD) -> dict[str, PolicyRun]:
    """Every dynamic-k policy on one shared random stream (specviz.dynamic.run_policies),
    starting from the sidebar's k, with k_max = dynamic_k_max(k). Samples."""
    return run_policies(sc, length=int(length), k_max=dynamic_k_max(sc.k),
                        threshold=float(threshold))


def dynamic_k_max(k: int) -> int:
    """The most a dynamic policy drafts in one round: DYN_K_MAX, or k if that is more."""
    return max(DYN_K_MAX, int(k))


def policy_rows(runs: dict[str, PolicyRun], c: float) -> list[Row]:
    """One row per policy: calls, tokens per target call, mean k, and the speedup
    tokens / (target calls + c draft calls) against plain decoding (one token per call)."""
    return [{"policy": name, "label": POLICY_LABELS.get(name, name), "tokens": r.tokens,
             "target_calls": r.rounds, "draft_calls": r.drafted,
             "accepted": r.accepted, "mean_k": r.drafted_per_round,
             "tokens_per_call": r.tokens_per_call, "speedup": r.speedup(c)}
            for name, r in runs.items()]


@dataclass(frozen=True)
class BatchCurve:
    """Speculative speedup against batch size B, the verify pass priced by the roofline."""

    preset: str
    accel: str
    tokens_per_call: float  # E[tokens] used (the pair's exact long-run value, as /cost's)
    k: int
    c: float
    kv_cache: bool
    rows: list[Row]  # batch, speedup, verify_ratio (t_(k+1) / t_1 at that B)
    memory_bound_speedup: float  # E[tokens] / (1 + k c): the speedup while verifying is free
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
    tokens_per_call: float,
    k: int,
    c: float,
    context_len: int = 512,
    dtype: str = "fp16",
    kv_cache: bool = True,
    batches: Sequence[int] = BATCHES,
) -> BatchCurve:
    """Speedup at each batch size B, S(B) = E[tokens] / (t_(k+1)(B) / t_1(B) + k c), with
    t_T(B) the roofline time of a pass over B sequences of T new positions each (B (k + 1)
    tokens in the verify pass), and where verification stops being free and where
    speculation stops paying (S < 1, once the pass is compute-bound)."""
    bs = [int(b) for b in batches]
    ratios = np.array([roofline.verify_cost_ratio(preset, accel, k, context_len, dtype, b,
                                                  kv_cache) for b in bs])  # (B,)
    s = theory.speedup(tokens_per_call, k, c, verify=ratios)  # (B,)
    rows = [{"batch": b, "tokens_in_pass": b * (k + 1), "speedup": float(v),
             "verify_ratio": float(r)} for b, v, r in zip(bs, s, ratios, strict=True)]
    limit = 1.0 + roofline.FREE_TOLERANCE
    stops_free = next((r["batch"] for r in rows if r["verify_ratio"] > limit), None)
    stops_paying = next((r["batch"] for r in rows if r["speedup"] < 1.0), None)
    return BatchCurve(preset, accel, float(tokens_per_call), int(k), float(c), bool(kv_cache),
                      rows, float(theory.speedup(tokens_per_call, k, c)), stops_free,
                      stops_paying, max(bs))


@ignores("k", "seed")
def long_run_alpha(sc: Scenario) -> float:
    """alpha_eff of the pair: E[beta] over the contexts a long decode visits (exact)."""
    return round_law(sc, long_run=True).alpha


def theory_best_k(alpha: float, c: float) -> tuple[int, float]:
    """The k in 1..K_APP_MAX that maximises Thm 3.8's speedup, and that speedup."""
    return theory.best_k(alpha, c, K_APP_MAX)


KV_SWITCH_NOTE = (
    "Off (the default): a pass reads the weights only, so a large enough batch carries it "
    "past the ridge. On: it also reads every sequence's KV cache, which grows with B as "
    "fast as the MACs do, so the pass may never turn compute-bound.")


def bytes_label(b: float) -> tuple[str, str]:
    """Bytes in both units the CLI writes: ('13.48 GB', '12.55 GiB'), 10^9 and 2^30 B."""
    return f"{b / 1e9:.2f} GB", f"{b / 2**30:.2f} GiB"


DRAFT_NAMES = {"table": "the draft table Q", "mix": "the mix of P and junk"}
SURFACE_TABS = {"heatmap": "heatmap (k by c)", "3d": "3D surface"}
ACCEPTANCE_TABS = {"alpha": "draft quality alpha", "T": "temperature mismatch T"}
