"""The methods table and the warp sweep: exact where exact, measured values labelled, and
the exact long run of block verification checked against a measured long decode."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from scenarios import sc

from specviz import default_tables, long_decode, round_law
from specviz.cli import main
from specviz.core.rules import drafted
from specviz.views import methods

T = default_tables()


def test_methods_table_block_never_below_chain_and_labels_measured_rows():
    rows = methods.methods_table(sc(T.P, T.Q, 0), ks=(1, 4, 6))
    assert [r["k"] for r in rows] == [1, 4, 6]
    assert abs(rows[0]["block"] - rows[0]["correct"]) < 1e-12  # k = 1: the same rule
    for r in rows:
        assert r["block_how"] == r["correct_how"] == r["tree_wor_how"] == "exact"
        assert r["block"] >= r["correct"] - 1e-12


def test_tree_nodes_and_price():
    assert drafted("tree_iid", 4) == 3 + 6 + 6 + 6 and drafted("block", 4) == 4
    rows = methods.priced([{"k": 4, "tree_iid": 3.0}], "tree_iid",
                          price=("Llama-2-7B", "H100 SXM", (1, 256)))
    assert rows[0]["cost_b1"] < 1.01  # memory-bound: 22 positions cost one step
    assert rows[0]["cost_b256"] > 2  # a large batch is compute-bound: nodes are paid for
    assert rows[0]["per_step_b1"] == rows[0]["tokens_per_call"] / rows[0]["cost_b1"]


def test_exact_long_run_of_block_matches_a_measured_decode():
    k, n = 5, 400_000
    exact = round_law(sc(T.P, T.Q, 0, k, rule="block"), long_run=True).tokens_per_call
    st = long_decode(sc(T.P, T.Q, 0, k, rule="block", seed=3), n_rounds=n, chains=500)
    assert abs(st.tokens_per_call - exact) < 6 * st.tokens_per_call_se
    # negative control: token by token's exact value is far outside the same band
    chain = round_law(sc(T.P, T.Q, 0, k, rule="correct"), long_run=True).tokens_per_call
    assert abs(st.tokens_per_call - chain) > 6 * st.tokens_per_call_se


def test_warp_sweep_top_p_one_and_temperature_one_are_the_plain_rule():
    rows = methods.warp_sweep(sc(T.P, T.Q, 0, 4),
                              draft=False, top_ps=(0.8, 1.0), temperatures=(1.0, 2.0))
    plain = round_law(sc(T.P, T.Q, 0, 4, rule="correct"), long_run=True)
    ones = [r for r in rows if r["value"] == 1.0]
    assert len(ones) == 2
    for r in ones:
        assert np.isclose(r["acceptance"], plain.draft_acceptance_rate, atol=1e-12)
    assert {r["knob"] for r in rows} == {"top_p", "temperature"}


@pytest.mark.slow  # over 2 s on a quiet core (tests/conftest.py)
def test_cli_methods_prints_the_table():
    out = io.StringIO()
    assert main(["methods"], out) == 0
    text = out.getvalue()
    assert "block" in text and "chain" in text and "tree nodes" in text
    lines = [m[1] for ln in text.splitlines() if (m := re.match(r"\s*(\d+)\s+[\d.]+\s", ln))]
    assert [int(k) for k in lines] == list(range(1, 17)) * 2  # methods, then prices
    assert " (MC)" not in text  # every k of every method is exact on the default pair


@pytest.mark.slow  # over 2 s on a quiet core (tests/conftest.py)
def test_block_is_exact_at_k16_and_measured_past_its_caps():
    rows = methods.methods_table(sc(T.P, T.Q, 0), ks=(16,), rules=("block",))
    assert rows[0]["block_how"] == "exact" and rows[0]["block_se"] is None
    want = round_law(sc(T.P, T.Q, 0, 16, rule="block"), long_run=True).tokens_per_call
    assert rows[0]["block"] == want
    past = methods.methods_table(sc(T.P, T.Q, 0), ks=(24,), rules=("block",))[0]
    assert past["block_how"] == "measured" and past["block_se"] > 0


def test_exact_tv_is_zero_for_every_method():
    tvs = methods.exact_tv(sc(T.P, T.Q, 0), ks=(1, 5, 16))
    assert set(tvs) == set(methods.METHODS) and max(tvs.values()) < 1e-12
    # negative control: a broken rule through the same function is far from zero
    assert methods.exact_tv(sc(T.P, T.Q, 0), ks=(4,), rules=("tree_first_residual",))[
        "tree_first_residual"] > 1e-3
