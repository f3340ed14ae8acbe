"""The scalar round (specviz.core.round) past its bonus, for every rule of the registry.

At k = 1 and k = 2 three emitted tokens always reach a bonus on some path (k = 2: a round
that keeps both drafts emits its bonus third), so the law of the first three tokens reads
the bonus row. Each law is an oracle written from the rule's description: tests/oracle.py
for the chain and warp rules, the literal enumerations of tests/brute.py for block
verification and token trees. The pass line is stats.tv_threshold, derived from n, and
the sample may not land where the oracle puts no mass at all; the negative control refuses
the same sample against the same oracle's law from another start.

Row by row, deterministically: every round's last drawn token is the inverse CDF of the
row it names at its uniform, and that row is the rule's own definition: the bonus from p
(warp(p) for a warp rule) at the last prefix, the correction from the oracle's rejection
law, and for block verification norm(max(0, w_tau p - q)) with w from its definition.
The coin is strict: u < min(1, p/q) rejects at u = p/q.
"""

from __future__ import annotations

import numpy as np
import pytest
from brute import brute_array
from oracle import KEEP, oracle_joint, oracle_rules, warp_mask, warp_rules
from scenarios import rule_sweep

from specviz.analysis.stats import tv, tv_threshold
from specviz.core.draws import RngDraws
from specviz.core.pair import TablePair
from specviz.core.round import play, play_round
from specviz.core.rules import RULES, get_rule
from specviz.core.scenario import Scenario
from specviz.core.tables import default_tables

D = default_tables()
PAIR = TablePair(D.P, D.Q)
N = 6_000  # scalar decodes per (rule, k); the threshold is derived from it
N_TOKENS = 3
CTX, OTHER_CTX = 0, 1
ORACLES = {**oracle_rules(), **warp_rules()}  # the rest: brute.py's literal enumerations
WARP = {"temperature": 0.8, "top_k": 0, "top_p": 0.9, "min_p": 0.0}  # warp_rules' defaults


def oracle_law(rule: str, ctx: int, k: int) -> np.ndarray:
    """The first N_TOKENS tokens' law from ctx, by the rule's oracle. (V,)*N_TOKENS"""
    if rule in ORACLES:
        return oracle_joint(D.P, D.Q, ctx, k, N_TOKENS, ORACLES[rule])
    return brute_array(D.P, D.Q, ctx, k, N_TOKENS, rule)


def scalar_law(rule: str, k: int, n: int, seed: int) -> np.ndarray:
    """The empirical law of the first N_TOKENS tokens, rounds chained by the scalar round."""
    draws, r = RngDraws(np.random.default_rng(seed)), get_rule(rule)
    counts = np.zeros((D.V,) * N_TOKENS)
    for _ in range(n):
        got: list[int] = []
        while len(got) < N_TOKENS:
            got += play(PAIR, [CTX, *got], k, r, draws, light=True).tokens
        counts[tuple(got[:N_TOKENS])] += 1
    return counts / n


def test_the_oracles_cover_every_rule_and_agree_with_the_registry_defaults():
    """Every rule has an oracle here; the warp oracle is built at the registry's defaults."""
    enumerated = {n for n, r in RULES.items() if r.kind in ("block", "tree")
                  and n != "multi_draft"}  # multi_draft: a tree with an oracle of its own
    assert set(ORACLES) | enumerated == set(RULES) and not set(ORACLES) & enumerated
    for name in warp_rules():
        assert {key: RULES[name].prm[key] for key in WARP} == WARP


@pytest.mark.parametrize("rule, k", rule_sweep(RULES, [1, 2]))
def test_scalar_round_law_through_the_bonus_is_the_oracle(rule, k):
    law = oracle_law(rule, CTX, k)
    sample = scalar_law(rule, k, N, seed=100 + k)
    assert sample[law == 0].sum() == 0, "tokens the rule can never emit"
    assert tv(sample, law) <= tv_threshold(law, N)
    # negative control: the same measurement refuses the oracle's law from another start
    other = oracle_law(rule, OTHER_CTX, k)
    assert tv(sample, other) > tv_threshold(other, N)


# ------------------------------------------------------------------ row by row
def inverse_cdf(row: np.ndarray, u: float) -> int:
    """The smallest x with cdf(x) > u, cdf of the normalised row (written here)."""
    acc, total = 0.0, float(sum(row))
    for x, w in enumerate(row):
        acc += w
        if w > 0 and u * total < acc:
            return x
    return max(x for x, w in enumerate(row) if w > 0)


def bonus_law(rule: str, c: int) -> np.ndarray:
    """p at the last prefix, warp(p) for a warp rule, normalised here."""
    p = D.P[c].tolist()
    if rule in warp_rules():
        m = warp_mask(p, **WARP)
        return np.array(m) / sum(m)
    return np.array(p)


def rejection_law(rule: str, c: int, x: int) -> np.ndarray:
    """The oracle's law of the token after draft x fails at context c."""
    out = np.zeros(D.V)
    for w, y in ORACLES[rule].verify(D.P[c].tolist(), D.Q[c].tolist(), x):
        if y != KEEP:
            out[y] += w
    return out / out.sum()


def block_correction(tr) -> tuple[int, np.ndarray]:
    """Block verification's last row from its definition: w_0 = 1, w_i = min(1, w_(i-1)
    p(x_i)/q(x_i)) along the kept drafts; norm(max(0, w_tau p - q)) at the context after
    tau kept, or p there when all k were kept. (context, row)"""
    c, w = tr.ctx, 1.0
    for pos in tr.positions[:tr.accepted]:
        w = min(1.0, w * D.P[c, pos.token] / D.Q[c, pos.token])
        c = pos.token
    if tr.accepted == tr.k:
        return c, D.P[c]
    d = np.maximum(w * D.P[c] - D.Q[c], 0.0)
    return c, d / d.sum()


def traces(rule: str, k: int, n: int = 150):
    for seed in range(n):
        yield play_round(Scenario.on(PAIR, seed % D.V, k=k, rule=rule),
                         rng=np.random.default_rng(seed))


def last_drawn(tr) -> int:
    return next(e.token for e in tr.emitted if e.origin in ("bonus", "resampled"))


@pytest.mark.parametrize("rule", [n for n, r in RULES.items() if r.kind in ("chain", "block")])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_every_last_token_is_drawn_from_its_defined_row(rule, k):
    seen = set()
    for tr in traces(rule, k):
        kept = [tr.ctx] + [pos.token for pos in tr.positions[:tr.accepted]]
        if tr.rejected_at is None:  # the bonus, at the prefix the last draft ends
            assert tr.bonus_context == kept[-1] == tr.positions[-1].token
            want = bonus_law(rule, tr.bonus_context)
            np.testing.assert_allclose(tr.bonus_row, want, rtol=0, atol=1e-12)
            row = want
        elif RULES[rule].kind == "block":
            c, row = block_correction(tr)
            assert tr.rejection_context == c
            np.testing.assert_allclose(tr.rejection_row, row, rtol=0, atol=1e-12)
        else:
            x = tr.positions[tr.rejected_at - 1].token
            assert tr.rejection_context == kept[-1]
            row = rejection_law(rule, tr.rejection_context, x)
            np.testing.assert_allclose(tr.rejection_row, row, rtol=0, atol=1e-12)
        assert last_drawn(tr) == inverse_cdf(row, tr.final_u)
        seen.add(tr.rejected_at is None)
    assert k > 1 or seen == {True, False}, "both endings are checked"


# ------------------------------------------------------------------ the strict coin
class FixedDraws:
    """Draws chosen by the test: the draft's uniform, the coin, the last token's."""

    def __init__(self, draft: float, coin: float, final: float = 0.5) -> None:
        self._draft, self._coin, self._final = draft, coin, final

    def draft(self, i: int, j: int = 0) -> float:
        return self._draft

    def coin(self, i: int, j: int = 0) -> float:
        return self._coin

    def final(self, i: int) -> float:
        return self._final


EXACT_HALF = TablePair(np.array([[0.25, 0.75], [0.5, 0.5]]), np.array([[0.5, 0.5], [0.5,
                                                                                      0.5]]))


@pytest.mark.parametrize("rule", ["correct", "block", "multi_draft"])
def test_the_coin_is_strict(rule):
    """Draft 'token 0' at context 0 has p/q = 0.25/0.5 = 0.5 exactly: the coin u = 0.5
    rejects it (u < 0.5 fails), u just below keeps it; at p(x) = 0, u = 0 rejects."""
    r = get_rule(rule).with_params(m=1) if rule == "multi_draft" else get_rule(rule)
    at = play(EXACT_HALF, [0], 1, r, FixedDraws(draft=0.1, coin=0.5))
    assert at.positions[0].token == 0 and at.rejected_at == 1
    below = play(EXACT_HALF, [0], 1, r, FixedDraws(draft=0.1, coin=np.nextafter(0.5, 0)))
    assert below.rejected_at is None
    zero = TablePair(np.array([[0.0, 1.0], [0.5, 0.5]]), EXACT_HALF.Q)
    assert play(zero, [0], 1, r, FixedDraws(draft=0.1, coin=0.0)).rejected_at == 1
