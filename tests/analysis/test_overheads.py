"""Fixed costs by execution mode: each default is its measurement over the ops it counts,
eager takes the larger of launches and roofline, a graph adds its kernels; overrides."""

from __future__ import annotations

import numpy as np
import pytest

from specviz.analysis import overheads as oh

EAGER_OP = 39.2157e-3 / 2588  # gpt-fast eager: 25.5 tok/s, 2,588 ops a token
KERNEL = 2e-6  # CUDA.jl: 16 us for 8 kernels as one graph


def test_each_default_is_its_measurement_over_its_count():
    eager, graphs = oh.defaults("eager"), oh.defaults("graphs")
    assert eager["layer"] == pytest.approx(80 * EAGER_OP, rel=1e-4)  # 1.21 ms
    assert eager["pass"] == pytest.approx(28 * EAGER_OP, rel=1e-4)
    assert eager["round"] == pytest.approx(25 * EAGER_OP, rel=1e-4)
    assert eager["tree"] == pytest.approx(40 * EAGER_OP, rel=1e-4)
    assert eager["level"] == pytest.approx(15 * EAGER_OP, rel=1e-4)
    assert graphs == pytest.approx({"layer": 10 * KERNEL, "pass": 6 * KERNEL,
                                    "round": 25 * KERNEL, "tree": 40 * KERNEL,
                                    "level": 15 * KERNEL})
    assert oh.defaults("none") == {"layer": 0, "pass": 0, "round": 0, "tree": 0, "level": 0}
    # the eager defaults rebuild gpt-fast's own step: 32 layers and a pass = 1 / 25.5 s
    assert 32 * eager["layer"] + eager["pass"] == pytest.approx(1 / 25.5, rel=1e-4)
    for mode in oh.MODES:
        assert oh.SOURCES[mode]


def test_eager_takes_the_larger_a_graph_adds():
    roof = np.array([1e-4, 1e-1])  # a tiny pass and a big one, 2 layers
    e, g = oh.overheads("eager"), oh.overheads("graphs")
    floor_e, floor_g = 2 * e.layer_s + e.pass_s, 2 * g.layer_s + g.pass_s
    assert e.pass_time(roof, 2) == pytest.approx([floor_e, 1e-1])
    assert g.pass_time(roof, 2) == pytest.approx(roof + floor_g)
    assert oh.overheads("none").pass_time(roof, 2) == pytest.approx(roof)


def test_given_costs_replace_the_defaults_and_say_so():
    o = oh.overheads("graphs", layer_us=5.0, round_us=0.0, pass_us=-1.0)
    assert (o.layer_s, o.round_s, o.pass_s) == pytest.approx((5e-6, 0.0, 6 * KERNEL))
    assert o.assumed == ("pass", "tree", "level")
    assert [r["assumed"] for r in o.rows()] == [False, True, False, True, True]
    assert oh.overheads("none").assumed == ()


@pytest.mark.parametrize(("mode", "given", "message"), [
    ("warp", {}, "unknown execution mode 'warp'"),
    ("eager", {"layer_us": float("nan")}, "the layer cost must be"),
    ("eager", {"tree_us": 1e9}, "the tree cost must be"),
])
def test_bad_costs_get_a_message(mode, given, message):
    with pytest.raises(oh.OverheadError, match=message):
        oh.overheads(mode, **given)
