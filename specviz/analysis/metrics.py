"""Production metrics under the names serving systems log, measured beside exact and theory.

vLLM's names: mean acceptance length = 1 + accepted / drafts (rounds); draft acceptance
rate = accepted / drafted; per-position acceptance rate; the acceptance histogram. The
theory columns assume i.i.d. acceptance with alpha = E[beta] (Leviathan et al. 2022,
Sec. 3.3): P(position i kept) = alpha^i, and a capped geometric histogram.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.exact import round_law
from ..core.montecarlo import long_decode
from ..core.scenario import Scenario
from . import theory


@dataclass(frozen=True)
class MetricsReport:
    k: int
    alpha: float  # E[beta] over the target's own text
    rows: list[dict]  # one per metric: name, measured, exact, theory
    per_position: dict[str, np.ndarray]  # measured / exact / theory, each (k,)
    histogram: dict[str, np.ndarray]  # measured / exact / theory, each (k+1,) shares
    rounds: int = 0  # rounds measured: n_rounds, or fewer when the time budget stopped them


def metrics_report(sc: Scenario, *, n_rounds: int = 50_000) -> MetricsReport:
    """A server's view of one long decode, with the exact long run and the i.i.d. theory."""
    meas, ex, k = long_decode(sc, n_rounds=n_rounds), round_law(sc, long_run=True), sc.k
    a = ex.alpha
    rows = [
        {"metric": "mean acceptance length (1 + accepted / drafts)",
         "measured": meas.mean_acceptance_length, "exact": ex.mean_acceptance_length,
         "theory": float(theory.expected_tokens(a, k))},
        {"metric": "draft acceptance rate (accepted / drafted)",
         "measured": meas.draft_acceptance_rate, "exact": ex.draft_acceptance_rate,
         "theory": float(theory.draft_acceptance_rate(a, k))},
        {"metric": "tokens per target call", "measured": meas.tokens_per_call,
         "exact": ex.tokens_per_call, "theory": float(theory.expected_tokens(a, k))},
        {"metric": "alpha = E[sum min(p, q)]", "measured": float("nan"), "exact": a,
         "theory": a},
    ]
    return MetricsReport(
        k=k, alpha=a, rows=rows,
        per_position={"measured": meas.per_position, "exact": ex.per_position,
                      "theory": np.asarray(theory.per_position_acceptance(a, k))},
        histogram={"measured": meas.shares, "exact": ex.histogram,
                   "theory": np.asarray(theory.acceptance_histogram(a, k))},
        rounds=meas.rounds,
    )


def convert(value: float, k: int, given: str = "alpha") -> dict[str, float]:
    """alpha <-> draft acceptance rate (accepted / drafted) <-> mean acceptance length.

    rate = alpha (1 - alpha^k) / (k (1 - alpha)); length = (1 - alpha^(k+1)) / (1 - alpha).
    Why a server's acceptance rate is not alpha: later positions are only reached when every
    earlier draft was kept, so they are tried less often and kept less often.
    """
    if given == "alpha":
        a = float(value)
    elif given == "rate":
        a = float(theory.alpha_from_draft_acceptance_rate(value, k))
    elif given == "length":
        if not 1.0 <= value <= k + 1:
            raise ValueError(f"mean acceptance length must be in [1, {k + 1}]; got {value}")
        a = float(theory.alpha_from_draft_acceptance_rate((value - 1.0) / k, k))  # 1 + k rate
    else:
        raise ValueError(f"given must be 'alpha', 'rate' or 'length'; got {given!r}")
    return {
        "alpha": a,
        "draft_acceptance_rate": float(theory.draft_acceptance_rate(a, k)),
        "mean_acceptance_length": float(theory.expected_tokens(a, k)),
    }
