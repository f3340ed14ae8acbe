"""The newer verification methods side by side, as rows of numbers: chain against block
verification (and trees where they are in the registry), and what a sampling warp does to
acceptance. Exact wherever the exact walk fits; otherwise measured, and labelled so.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.roofline import verify_cost_ratio
from ..analysis.stats import tv
from ..core.exact import exact_joint, round_law, target_joint
from ..core.montecarlo import long_decode
from ..core.rules import drafted, get_rule
from ..core.scenario import Scenario, ignores
from .demos import Row

KS = tuple(range(1, 17))  # draft lengths of the methods table
TOP_PS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
TEMPERATURES = (0.3, 0.5, 0.7, 0.85, 1.0, 1.25, 1.5, 2.0)
MEASURE_ROUNDS = 200_000  # rounds of a long decode where the exact walk does not fit
METHODS = ("correct", "block", "tree_iid", "tree_wor")  # chain, block, two trees
PRICE = ("Llama-2-7B", "H100 SXM", (1, 64))  # model, accelerator, batch sizes of the price


def _tokens(sc: Scenario, exact: bool) -> tuple[float, float | None, str]:
    """(tokens per call, its standard error or None, 'exact' | 'measured') over a long run;
    measured when exact is False or the exact walk is over its cap."""
    if exact:
        try:
            return round_law(sc, long_run=True).tokens_per_call, None, "exact"
        except ValueError:
            pass
    st = long_decode(sc, n_rounds=MEASURE_ROUNDS, chains=1_000)
    return st.tokens_per_call, st.tokens_per_call_se, "measured"


def priced(rows: Sequence[Row], rule: str, *, price=PRICE) -> list[Row]:
    """The verify pass over all of a method's nodes, priced by the roofline: its time over
    one decode step's (verify_cost_ratio), and tokens per call divided by it, per batch."""
    model, accel, batches = price
    out = []
    for row in rows:
        n = drafted(rule, row["k"])  # tokens the verify pass scores besides the context
        item: Row = {"k": row["k"], "nodes": n, "tokens_per_call": row[rule]}
        for b in batches:
            cost = verify_cost_ratio(model, accel, n, batch=b)
            item[f"cost_b{b}"], item[f"per_step_b{b}"] = cost, row[rule] / cost
        out.append(item)
    return out


def methods_table(sc: Scenario, *, ks: Sequence[int] = KS,
                  rules: Sequence[str] = METHODS) -> list[Row]:
    """Per k, the long-run tokens per target call of each method on the same drafts (the
    scenario's pair, prefix and seed; its k and rule are swept)."""
    rows = []
    exact = dict.fromkeys(rules, True)  # the walk's states grow with k: once over, stay over
    for k in sorted(ks):
        row: Row = {"k": int(k)}
        for rule in rules:
            v, se, how = _tokens(sc.replace(k=int(k), rule=rule), exact[rule])
            exact[rule] = how == "exact"
            row[rule], row[f"{rule}_se"], row[f"{rule}_how"] = v, se, how
        rows.append(row)
    return rows


def exact_tv(sc: Scenario, *, ks: Sequence[int] = KS,
             rules: Sequence[str] = METHODS) -> dict[str, float]:
    """Per method, the largest exact TV over ks of its first two emitted tokens from the
    target's two-token law: 0 up to rounding for a lossless method (no sampling)."""
    target = target_joint(sc.tables.P, sc.ctx, n_tokens=2)
    return {r: max(tv(exact_joint(sc.replace(k=int(k), rule=r), n_tokens=2), target)
                   for k in ks) for r in rules}


@ignores("seed")
def warp_sweep(sc: Scenario, *, draft: bool, top_ps: Sequence[float] = TOP_PS,
               temperatures: Sequence[float] = TEMPERATURES) -> list[Row]:
    """Exact long-run acceptance and tokens per call under the correctly verified warp
    (rule 'warped'), against top-p (at T = 1) and against temperature (top-p off), on the
    scenario's pair, prefix and k."""
    rows = []
    base = get_rule("warped").with_params(warp_draft=int(draft), top_k=0, min_p=0.0)
    knobs = [("top_p", v, base.with_params(temperature=1.0, top_p=v)) for v in top_ps]
    knobs += [("temperature", v, base.with_params(temperature=v, top_p=1.0))
              for v in temperatures]
    for knob, v, rule in knobs:
        law = round_law(sc.replace(rule=rule), long_run=True)
        rows.append({"knob": knob, "value": float(v), "acceptance": law.draft_acceptance_rate,
                     "tokens_per_call": law.tokens_per_call, "alpha": law.alpha})
    return rows
