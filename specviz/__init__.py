"""specviz: see, check and price speculative decoding (Leviathan et al. 2022; Chen et al. 2023).

A small pure-NumPy library: toy target/draft tables, the acceptance rule, a traced
round, vectorised Monte Carlo, exact laws by dynamic programming, statistics, the
closed forms of the paper, and a roofline. The Streamlit app and the command line
are built on these names.
"""

from .analysis.modelcfg import PRESETS
from .analysis.roofline import (
    ACCELERATORS,
    Accelerator,
    PassCost,
    free_tokens,
    pass_cost,
    pass_time,
    verify_cost_ratio,
)
from .analysis.shape import DTYPE_BYTES, ModelShape
from .analysis.stats import (
    chi2_sf,
    empirical,
    gof_pvalue,
    sampling_floor,
    tv,
    tv_threshold,
)
from .analysis.theory import (
    acceptance_histogram,
    alpha_from_draft_acceptance_rate,
    best_k,
    break_even_cost,
    draft_acceptance_rate,
    expected_tokens,
    per_position_acceptance,
    speedup,
    walltime_speedup,
)
from .core.dynamic import POLICIES, PolicyRun, run_policies, run_policy
from .core.exact import RoundLaw, exact_joint, round_law, target_joint
from .core.montecarlo import DecodeStats, SimResult, long_decode, simulate
from .core.round import play_round, play_rounds
from .core.roundstats import RoundStats
from .core.rule import accept_prob, accepts, overlap, ratio, residual
from .core.rules import RULES, Rule, get_rule
from .core.scenario import Scenario
from .core.tables import (
    K_MAX,
    N_MAX,
    V_MAX,
    VOCAB,
    Tables,
    default_tables,
    junk_table,
    mix_draft,
    normalise_rows,
    temper,
    validate_pair,
    validate_table,
)
from .core.trace import Emitted, Position, RoundTrace

__all__ = [
    "ACCELERATORS", "DTYPE_BYTES", "POLICIES", "PolicyRun", "run_policies", "run_policy",
    "K_MAX", "N_MAX", "PRESETS", "RULES", "VOCAB", "V_MAX",
    "Accelerator", "DecodeStats", "Emitted", "ModelShape", "PassCost", "Position", "RoundLaw",
    "RoundStats", "RoundTrace", "Rule", "Scenario", "SimResult", "Tables",
    "accept_prob", "acceptance_histogram", "accepts", "alpha_from_draft_acceptance_rate", "best_k",
    "break_even_cost", "chi2_sf", "default_tables", "draft_acceptance_rate", "empirical",
    "exact_joint", "expected_tokens", "free_tokens", "get_rule", "gof_pvalue", "junk_table",
    "long_decode", "mix_draft", "normalise_rows", "overlap", "pass_cost", "pass_time",
    "per_position_acceptance", "play_round", "play_rounds", "ratio", "residual", "round_law",
    "sampling_floor", "simulate", "speedup", "target_joint", "temper", "tv", "tv_threshold",
    "validate_pair", "validate_table", "verify_cost_ratio", "walltime_speedup",
]
