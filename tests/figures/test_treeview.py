"""The token-tree view: only what a viewer has been shown by each step."""

from __future__ import annotations

import numpy as np
from support import narrated_round

from specviz.core.pair import TablePair
from specviz.core.tables import default_tables
from specviz.figures.treeview import kept_path, tree_html

T = default_tables()


def _round(seed: int, rule: str = "tree_wor"):
    return narrated_round(TablePair(T.P, T.Q), 0, 3, rng=np.random.default_rng(seed), rule=rule)


def test_levels_appear_at_their_draft_frames_and_pruning_at_the_flush():
    for seed in range(12):
        tr = _round(seed)
        shown = [tree_html(tr, i).count("sv-node") for i in range(len(tr.steps))]
        assert shown[0] == 0 and shown == sorted(shown)  # never un-drawn
        assert shown[-1] == len(tr.tree)
        flush = [s.kind for s in tr.steps].index("flush") if any(
            s.kind == "flush" for s in tr.steps) else None
        for i in range(len(tr.steps)):
            struck = tree_html(tr, i).count('data-status="flushed"')
            assert (struck > 0) == (flush is not None and i >= flush)
        kept = kept_path(tr)
        assert len(kept) == tr.accepted
        end = tree_html(tr, len(tr.steps) - 1)
        assert end.count('data-status="accepted"') == tr.accepted


def test_chains_have_no_tree_view_and_names_are_escaped():
    tr = narrated_round(TablePair(T.P, T.Q, vocab=("<a>", "b", "c", "d", "e", "f")), 0, 3,
                        rng=np.random.default_rng(1), rule="tree_iid")
    assert "<a>" not in tree_html(tr, len(tr.steps) - 1)
    assert tree_html(_round(1, "correct"), 0) == ""
