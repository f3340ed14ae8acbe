"""The work budget of one request: a round is priced by the rows it really scores (a tree
its nodes, multi-draft m candidates a position), and a time budget backs every price: past
its deadline the long loops stop with what they have done, or say why."""

from __future__ import annotations

import pytest
from scenarios import sc

from specviz import default_tables
from specviz.core import interrupt
from specviz.core.kinds.treeshape import parse_paths
from specviz.core.montecarlo import CHUNK_CELLS, long_decode, simulate
from specviz.core.pair import TablePair
from specviz.core.round import play_rounds
from specviz.core.rules import drafted, get_rule, rules_cost, with_tree
from specviz.core.scenario import Scenario
from specviz.core.tables import K_MAX, N_MAX
from specviz.views.work import K_APP_MAX, N_APP_MAX, WORK_APP_MAX, WORK_REQUEST_MAX, n_cap

T = default_tables()
WIDE = parse_paths("16-15")  # 16 candidates, 15 under each: 256 nodes, the app's cap


def test_a_wide_tree_is_priced_by_its_node_count():
    assert drafted(with_tree("tree_iid", WIDE), 4) == 256 == len(WIDE)
    assert drafted("correct", 4) == 4 and drafted("block", 7) == 7
    assert drafted(get_rule("multi_draft").with_params(m=8), 32) == 8 * 32
    assert drafted("tree_wor", 4) == tree_nodes_of_the_preset(4)
    total, widest = rules_cost(["correct", "tree_iid"], 4, tree=WIDE)
    assert widest == pytest.approx(257 / 5) and total == pytest.approx(1 + 257 / 5)
    assert rules_cost(["correct"] * 3, 32) == (3.0, 1.0)
    m8 = rules_cost(["multi_draft"], 32, {"multi_draft": {"m": 8}})
    assert m8[0] == pytest.approx((8 * 32 + 1) / 33)
    cap = n_cap(4, total, widest)
    assert cap * 5 * total <= WORK_REQUEST_MAX and cap * 5 * widest <= WORK_APP_MAX
    assert cap < n_cap(4, 2.0)  # the same two rules priced as chains would run far more


def test_the_app_caps_sit_inside_the_engine_limits():
    """The app's caps (views.work) are its policy, never past what the engine accepts."""
    assert 1 <= K_APP_MAX <= K_MAX and 1 <= N_APP_MAX <= N_MAX
    assert all(1 <= n_cap(k) <= N_APP_MAX for k in (1, K_APP_MAX))
    assert n_cap(K_APP_MAX) * (K_APP_MAX + 1) <= WORK_APP_MAX <= WORK_REQUEST_MAX


def tree_nodes_of_the_preset(k: int) -> int:
    """Rule tree_wor's preset (3-2-1, a chain below) at depth k, counted by hand."""
    return 3 + 6 + 6 * (k - 2)


def test_past_the_deadline_monte_carlo_returns_the_decodes_it_ran():
    n = 10 * (CHUNK_CELLS // 5)
    with interrupt.budget(0.0):
        sim = simulate(sc(T.P, T.Q, 0, 4, rule="correct", seed=1), n=n)
        stats = long_decode(sc(T.P, T.Q, 0, 4, rule="correct"), n_rounds=20_000, chains=100)
    assert 0 < sim.n < n and sim.joint.sum() == sim.n
    assert sim.law.sum() == pytest.approx(1.0)
    assert stats.rounds == 100  # one step of its 100 chains
    full = simulate(sc(T.P, T.Q, 0, 4, rule="correct", seed=1), n=n)
    assert full.n == n  # no budget, no stop


def test_past_the_deadline_a_transcript_says_it_stopped():
    pair = TablePair(T.P, T.Q)
    with interrupt.budget(0.0), pytest.raises(interrupt.OverBudget, match="stopped after"):
        play_rounds(Scenario.on(pair, 0, k=4, rule=with_tree("tree_iid", WIDE)), n_rounds=50)
    assert len(play_rounds(Scenario.on(pair, 0, k=4), n_rounds=3)) == 3
    assert issubclass(interrupt.OverBudget, ValueError)  # the app says it as a refusal


def test_the_deadline_travels_to_worker_threads_and_nests():
    from concurrent.futures import ThreadPoolExecutor

    with interrupt.budget(0.0):
        with interrupt.budget(3600.0):  # a later deadline does not extend an earlier one
            assert interrupt.overdue()
        with ThreadPoolExecutor(1) as pool:
            assert pool.submit(interrupt.carry(interrupt.overdue)).result()
    assert not interrupt.overdue()
