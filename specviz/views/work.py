"""The app's work policy: its caps and budgets (within the engine's own limits, core.tables'
K_MAX, N_MAX, V_MAX), and which page computations are heavy."""

from __future__ import annotations

from collections.abc import Callable

K_APP_MAX = 32  # drafted tokens per round in the app
N_APP_MAX = 10_000_000  # Monte Carlo decodes per run in the app
WORK_APP_MAX = 50_000_000  # decodes x (k + 1) per rule in one run: ~seconds and ~200 MB
# decodes x (k + 1) x rules in one request, a rule priced by the rows its round scores
# (core.rules.rules_cost: a tree counts its nodes, multi-draft its m candidates a position):
# about 5 s on 2 busy cores (benchmarks/memory.py drives the worst case of each page)
WORK_REQUEST_MAX = 60_000_000
WORK_STOP_S = 20.0  # the time stop behind those prices (core.interrupt.budget), loaded or not


def n_cap(k: int, rules: float = 1.0, widest: float = 1.0) -> int:
    """The most decodes per rule at draft length k when rules costing `rules` plain runs in
    all run in one request, the widest of them `widest` (core.rules.rules_cost prices a
    rule by the rows its round scores): N_APP_MAX, or less, so that n (k + 1) widest <=
    WORK_APP_MAX per rule and n (k + 1) rules <= WORK_REQUEST_MAX per request."""
    per_rule = int(WORK_APP_MAX // ((int(k) + 1) * max(1.0, float(widest))))
    per_request = int(WORK_REQUEST_MAX // ((int(k) + 1) * max(1.0, float(rules))))
    return max(1, min(N_APP_MAX, per_rule, per_request))


def heavy(fn: Callable) -> Callable:
    """Mark fn as heavy: at most a few such calls run at once across all sessions."""
    fn.heavy = True
    return fn
