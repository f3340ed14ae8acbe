"""The walkthrough of chain, block and tree rounds: all three show the target's one call
before the first coin; a block's chips change at the backward coin that decides them; a
tree's residual bars follow its siblings one by one; the export carries the tree view.
Oracles are written from the methods' descriptions, not read off the code under test."""

from __future__ import annotations

import re

import numpy as np
import pytest
from support import narrated_round

from specviz import default_tables
from specviz.core.pair import TablePair
from specviz.figures import animation, export, treeview
from specviz.views import stepping

T = default_tables()
PAIR = TablePair(T.P, T.Q)
BAR_ATOL = 0.5 * 10.0 ** -animation.FIGURE_DECIMALS


def _round(seed: int, rule: str, k: int = 4):
    return narrated_round(PAIR, 0, k, rng=np.random.default_rng(seed), rule=rule)


@pytest.mark.parametrize("rule", ["correct", "block", "tree_iid", "tree_wor"])
def test_every_method_scores_all_drafts_in_one_call_before_the_first_coin(rule):
    for seed in range(20):
        tr = _round(seed, rule)
        kinds = [s.kind for s in tr.steps]
        assert kinds.count("score") == 1
        at = kinds.index("score")
        assert set(kinds[1:at]) == {"draft"} and kinds[at + 1] == "verify"
        assert not stepping.view(tr, at - 1).scored and stepping.view(tr, at).scored
        fig = animation.bars_figure(tr, at)  # p beside q from the score frame on
        assert [b.name for b in fig.data] == ["p target", "q draft"]
        if rule.startswith("tree"):
            assert f"all {len(tr.tree)} tree node(s)" in tr.steps[at].caption


def _block_oracle(tr, step: int) -> list[str]:
    """Each draft's status at `step`, from block verification's description: the coins run
    from position k backwards; a failed coin at i says the block is not kept up to i (x_i
    is out), the passing coin at tau keeps x_1..x_tau; nothing is known before its coin;
    the drafts after tau + 1 are struck through once the flush frame is shown."""
    tau = tr.accepted
    shown = [s for s in tr.steps[:step + 1]]
    coins = [s.position for s in shown if s.kind == "verify"]
    flushed = any(s.kind == "flush" for s in shown)
    out = []
    for i in range(1, tr.k + 1):
        if i > max((s.position for s in shown if s.kind == "draft"), default=0):
            out.append("pending")
        elif flushed and i >= tau + 2:
            out.append("flushed")
        elif i > tau and i in coins:
            out.append("rejected")
        elif i <= tau and tau in coins:
            out.append("accepted")
        else:
            out.append("drafted")
    return out


def test_block_chips_change_at_the_coin_that_decides_them():
    seen = set()
    for seed in range(40):
        tr = _round(seed, "block", k=5)
        seen.add(tr.accepted)
        for step in range(len(tr.steps)):
            got = [c.status for c in stepping.chips(tr, step) if not c.final][1:]
            assert got == _block_oracle(tr, step), (seed, step)
            page = re.findall(r'data-status="(\w+)" data-pos', animation.chips_html(tr, step))
            assert [p for p in page if p not in ("resampled", "bonus")] == got
    assert {0, 5} <= seen and len(seen) >= 4  # no coin passes, all kept, and between


def test_block_kept_prefix_shows_p_without_a_coin_it_never_used():
    tr = next(t for t in (_round(s, "block", k=5) for s in range(100)) if t.accepted >= 2)
    at = max(i for i, s in enumerate(tr.steps) if s.kind == "verify")
    chips = stepping.chips(tr, at)
    tau = tr.accepted
    assert chips[tau].coin and "u=" in chips[tau].lines[-1]
    assert not chips[1].coin and "kept with the block" in chips[1].lines[-1]


def _sibling_oracle(p: np.ndarray, q: np.ndarray, tries, mode: str) -> list[np.ndarray]:
    """p_1 = p; after sibling j fails, p_(j+1) = norm(max(0, p_j - q_j)), q_j = q (i.i.d.)
    or q without the earlier siblings, renormalised (without replacement)."""
    rows, p_j, taken = [], p.astype(float), []
    for t in tries:
        q_j = q.astype(float).copy()
        if mode == "wor":
            q_j[taken] = 0.0
            q_j /= q_j.sum()
        rows.append(p_j)
        if not t.accepted:
            d = np.maximum(p_j - q_j, 0.0)
            p_j = d / d.sum() if d.sum() > 1e-12 else p_j
            taken.append(t.token)
    return rows + [p_j]


@pytest.mark.parametrize("rule", ["tree_iid", "tree_wor"])
def test_tree_residual_bars_follow_the_siblings_one_by_one(rule):
    failures = 0
    for seed in range(30):
        tr = _round(seed, rule, k=3)
        frames = [i for i, s in enumerate(tr.steps) if s.kind == "verify"]
        assert len(frames) == sum(len(pos.tries) for pos in tr.positions)
        i = 0
        for pos in tr.positions:
            want = _sibling_oracle(pos.p_row, pos.q_row, pos.tries, rule[5:])
            for j, t in enumerate(pos.tries):
                fig = animation.residual_figure(tr, frames[i])
                shown = np.array(fig.data[2].y)
                # after a failure: the row the next sibling is tried against; if kept: its own
                np.testing.assert_allclose(shown, want[j] if t.accepted else want[j + 1],
                                           atol=BAR_ATOL)
                coin = animation.coin_figure(tr, frames[i])
                assert f"sibling {j + 1}" in coin.layout.title.text
                assert coin.data[-1].x[0] == pytest.approx(t.u)
                failures += not t.accepted
                i += 1
        if tr.rejected_at is not None:  # the last residual is the law the round ends with
            np.testing.assert_allclose(want[-1], tr.rejection_row, atol=1e-12)
    assert failures > 10


def test_tree_nodes_light_up_sibling_by_sibling():
    tr = next(t for t in (_round(s, "tree_wor", k=3) for s in range(60))
              if len(t.positions[0].tries) >= 2)
    frames = [i for i, s in enumerate(tr.steps) if s.kind == "verify"]
    for n, i in enumerate(frames[:len(tr.positions[0].tries)]):
        html_ = treeview.tree_html(tr, i)
        lit = len(re.findall(r'data-path="\d" data-status="(?:accepted|rejected)"', html_))
        assert lit == n + 1
        chip = stepping.chips(tr, i)[1]
        last = n + 1 == len(tr.positions[0].tries)
        assert (chip.status != "drafted") == last  # the node is decided at its last try


def test_the_export_carries_the_tree_view_step_by_step():
    tr = next(t for t in (_round(s, "tree_wor", k=3) for s in range(60)) if t.rejected_at)
    start = 5
    page = export.round_html(tr, 0, start=start)
    blocks = re.findall(r'<div class="sv-tree-step" data-step="(\d+)"( hidden)?>', page)
    assert [int(s) for s, _ in blocks] == list(range(len(tr.steps)))
    assert [s for s, h in blocks if not h] == [str(start)]
    for s in (0, start, len(tr.steps) - 1):
        assert treeview.tree_html(tr, s) in page
    assert "svTree(e.step.label)" in page and "svTree(e.name)" in page  # follows the frames
    fig = export.round_figure(tr, 0)  # the law bars follow the siblings here too
    frames = [i for i, s in enumerate(tr.steps) if s.kind == "verify"]
    page_fig = animation.residual_figure(tr, frames[0])
    np.testing.assert_allclose(fig.frames[frames[0]].data[len(export.STATUSES) + 2].y,
                               page_fig.data[2].y, atol=BAR_ATOL)
    chain = export.round_html(_round(0, "correct"), 0)
    assert "sv-tree-export" not in chain and "svTree" not in chain


def test_tree_bars_mark_the_sibling_being_tried():
    tr = next(t for t in (_round(s, "tree_wor", k=3) for s in range(60))
              if len(t.positions[0].tries) >= 2)
    frames = [i for i, s in enumerate(tr.steps) if s.kind == "verify"]
    for j, t in enumerate(tr.positions[0].tries):
        fig = animation.bars_figure(tr, frames[j])
        marked = [lab for lab, w in zip(fig.data[0].x, fig.data[0].marker.line.width,
                                        strict=True) if w]
        assert marked == [tr.name(t.token)]
        assert fig.layout.annotations[0].text == f"sibling {j + 1} = {tr.name(t.token)}"
