"""The rules gallery as data: every rule of the registry audited on one pair of tables.

For each rule: its exact TV from the target's two-token law (no sampling), a Monte Carlo
run of n decodes measured against the sampling floor and the pass threshold, its
acceptance and tokens per call (in that run, and exactly over a long decode), and a
verdict that never calls a biased rule exact: a rule whose bias is real but smaller than
what n decodes can resolve is "not resolvable at this n", with the n that would resolve it.
Also the production-metrics view of one rule (specviz.metrics) with its CSV rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

from ..analysis.audit import N_RESOLVE_MAX, Audit, n_to_resolve
from ..analysis.metrics import MetricsReport, metrics_report
from ..analysis.metrics import convert as convert_metric  # noqa: F401 (for /rules)
from ..analysis.stats import GOF_ALPHA, sampling_floor, tv, tv_threshold  # noqa: F401 (/rules)
from ..core import interrupt
from ..core.exact import round_law, target_joint
from ..core.montecarlo import long_decode
from ..core.roundstats import RoundStats
from ..core.rules import FAMILIES, RULES, Rule, reads_warp, with_tree
from ..core.scenario import Scenario
from ..core.warp import Warp
from .demos import WORKERS, Row, audit_rule, promised, promises_warp, stopped_note
from .work import ByteLRU, heavy

GALLERY_N = 200_000  # Monte Carlo decodes per rule on the page (all rules in < ~1 s)
GALLERY_NS = (20_000, 200_000, 1_000_000, 2_000_000)  # /rules: the choices of n per rule
N_TOKENS = 2  # the audited law: the first two emitted tokens, as on /exactness
METRICS_ROUNDS = 50_000  # long-decode rounds of the production-metrics section

Params = Mapping[str, Mapping[str, float]]  # rule name -> parameter name -> value


def configure(params: Params | None = None, names: Sequence[str] | None = None,
              tree: Sequence[Sequence[int]] = ()) -> list[Rule]:
    """The registry's rules (all, or `names`) with some parameters changed, and the tree
    rules drafting the paths `tree` when given.

    params: {rule: {parameter: value}}; ValueError (from Rule.with_params) on an unknown
    rule or parameter, or a value outside its range.
    """
    params = params or {}
    unknown = set(params) - set(RULES)
    if unknown:
        raise ValueError(f"unknown rules {sorted(unknown)}; valid rules: {', '.join(RULES)}")
    return [with_tree(RULES[name].with_params(**params[name]) if params.get(name) else
                      RULES[name], tree)
            for name in (names if names is not None else RULES)]


@dataclass(frozen=True)
class RuleResult:
    """One rule of the gallery, audited."""

    rule: Rule
    exact_tv: float  # TV of the exact two-token law from the target's: the rule's bias
    audit: Audit  # the Monte Carlo run (n decodes) against the rule's own target law
    rounds: RoundStats  # the run's rounds (they start at ctx)
    long_run: RoundStats  # a long decode from ctx: exact (round_law, long_run) or measured
    n_resolve: int | None  # smallest n that resolves the bias (None: no bias, or > cap)
    long_run_exact: bool = True  # False: the long-run numbers are measured (block, large k)

    biased = property(lambda self: self.audit.biased)
    verdict = property(lambda self: self.audit.verdict)


@dataclass(frozen=True)
class Gallery:
    n: int
    floor: float  # expected TV of n exact draws from the target's two-token law
    threshold: float  # floor + McDiarmid margin (stats.tv_threshold)
    results: tuple[RuleResult, ...]
    stopped: str | None = None  # what the page says when the time budget cut runs short


def _audit(sc: Scenario, n: int, target) -> RuleResult:
    rule = sc.rule
    if promises_warp(rule):  # a warped request
        target = promised(sc, N_TOKENS)
    a = audit_rule(sc, target, n=n, n_tokens=N_TOKENS)
    try:
        law, exact_long = round_law(sc, long_run=True), True
    except ValueError:  # the exact walk of block verification is over its cap at this k
        law, exact_long = long_decode(sc, n_rounds=METRICS_ROUNDS), False
    return RuleResult(rule=rule, exact_tv=a.exact_tv, audit=a.audit, rounds=a.rounds,
                      long_run=law, n_resolve=n_to_resolve(target, a.exact_tv),
                      long_run_exact=exact_long)


_MEMO = ByteLRU(512)  # audits already run (each counted as 1)


@heavy
def gallery(sc: Scenario, *, n: int = GALLERY_N, params: Params | None = None,
            names: Sequence[str] | None = None) -> Gallery:
    """Every rule (or `names`) audited on the scenario (its rule aside; tree rules draft its
    tree): exact TV, Monte Carlo TV against floor and threshold, acceptance. Rules run side
    by side in threads (NumPy releases the GIL), each on its own seeded stream, so the
    result does not depend on the scheduling."""
    rules = configure(params, names, sc.tree)
    target = target_joint(sc.tables.P, sc.ctx, n_tokens=N_TOKENS)
    floor, line = sampling_floor(target, n), tv_threshold(target, n)
    runs = [sc.replace(rule=r, tree=()) for r in rules]
    keys = [(run.key, int(n)) for run in runs]  # not the pair itself: its fingerprint
    done = {key: hit for key in keys if (hit := _MEMO.get(key)) is not None}
    todo = [(key, run) for key, run in zip(keys, runs, strict=True) if key not in done]
    # A rule's audit depends only on its key, so audits run before are reused: changing one
    # rule's parameter reruns that rule alone.
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        fresh = list(pool.map(interrupt.carry(
            lambda kr: _audit(kr[1], n, target)), todo))
    for (key, _), res in zip(todo, fresh, strict=True):
        done[key] = res
        if res.audit.n == n:  # a run the time budget cut short is not kept for reuse
            _MEMO.put(key, res, 1)
    results = [done[key] for key in keys]
    return Gallery(int(n), floor, line, tuple(results),
                   stopped_note([(r.rule.name, r.audit.n) for r in results], int(n)))


def _n_text(r: RuleResult) -> str:
    if not r.biased:
        return "none (exact)"
    if r.n_resolve is None:
        return f"more than {N_RESOLVE_MAX:.0e}"
    return f"{r.n_resolve:,}"


def gallery_rows(g: Gallery) -> list[Row]:
    """One row per rule, families in FAMILIES order (the table, the chart and the CSV)."""
    order = {f: i for i, f in enumerate(FAMILIES)}
    results = sorted(g.results, key=lambda r: order.get(r.rule.family, len(order)))
    return [{
        "family": r.rule.family, "rule": r.rule.name,
        "exact_tv": r.exact_tv if r.biased else 0.0,  # 0 up to rounding (<= BIAS_MIN)
        "mc_tv": r.audit.mc_tv, "verdict": r.verdict, "n_to_resolve": _n_text(r),
        "acceptance_long_run": r.long_run.draft_acceptance_rate,
        "tokens_per_call_long_run": r.long_run.tokens_per_call, "params": r.rule.param_text,
        "long_run": "exact" if r.long_run_exact else "measured",
        "label": r.rule.label, "acceptance": r.rounds.draft_acceptance_rate,
        "tokens_per_call": r.rounds.tokens_per_call,
        "p_value": r.audit.p_value, "exact_here": not r.biased,
        "floor": r.audit.floor, "threshold": r.audit.threshold,
        "source": r.rule.source,
    } for r in results]


def rule_notes(g: Gallery) -> list[Row]:
    """Per rule, what the page's expander shows: label, family, description, source, params."""
    return [{"rule": r.rule.name, "label": r.rule.label, "family": r.rule.family,
             "description": r.rule.description, "source": r.rule.source,
             "params": [{**asdict(q), "value": r.rule.prm[q.name]} for q in r.rule.params],
             "reject_law": r.rule.reject_law, "verdict": r.verdict}
            for r in g.results]


def param_specs() -> list[Row]:
    """Every parameter of every rule (the widgets the page draws), registry order; the
    warp rules' parameters are the request's warp, one set of controls (warp_params)."""
    return [{"rule": r.name, "label": r.label, **asdict(q)}
            for r in RULES.values() if not reads_warp(r) for q in r.params]


def warp_params(warp: Warp) -> dict[str, dict[str, float]]:
    """Each warp rule's parameters from one request's warp; with no warp at all, the
    registry's own (a warp rule under the identity warp is the standard rule)."""
    if warp.identity:
        return {}
    out = {r.name: warp.params() for r in RULES.values() if reads_warp(r)}
    out["warp_raw_q"]["warp_draft"] = 1  # its bug needs a warped draft
    return out


# ------------------------------------------------------------------ production metrics
@heavy
def production(sc: Scenario, *, params: Params | None = None,
               n_rounds: int = METRICS_ROUNDS) -> MetricsReport:
    """metrics_report for the scenario's rule with the gallery's parameter values."""
    name = sc.rule.name
    (r,) = configure({name: dict((params or {}).get(name, {}))}, (name,), sc.tree)
    return metrics_report(sc.replace(rule=r), n_rounds=n_rounds)


def production_rows(rep: MetricsReport) -> list[Row]:
    """The report in long form for a CSV: summary metrics, per position, histogram."""
    sources = ("measured", "exact", "theory")
    rows = [{"metric": r["metric"], "index": "", **{s: r[s] for s in sources}} for r in rep.rows]
    rows += [{"metric": "per-position acceptance rate", "index": i + 1,
              **{s: float(rep.per_position[s][i]) for s in sources}} for i in range(rep.k)]
    rows += [{"metric": "acceptance histogram (share of rounds)", "index": j,
              **{s: float(rep.histogram[s][j]) for s in sources}} for j in range(rep.k + 1)]
    return rows
