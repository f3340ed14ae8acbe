"""One request's work on the pages: a wide tree is priced by its nodes (the n, the rounds
replayed), the time budget behind the prices says on the page what it stopped, and a
refused exact walk lets the rest of the home page draw."""

from __future__ import annotations

from support import run_page

from specviz.core.kinds.treeshape import parse_paths
from specviz.views import gallery, pagedata

TREE = "16-15"  # 256 nodes


def _notes(at) -> str:
    return " ".join(e.value for e in list(at.info) + list(at.warning) + list(at.error))


def test_rules_prices_a_wide_tree_by_its_nodes():
    at = run_page("pages/8_rules.py", 120, tree=TREE, rule="tree_iid", rules_n="200000")
    n, note = pagedata.capped_n(200_000, 4, tuple(gallery.RULES), None, parse_paths(TREE))
    assert note and n < 200_000  # priced as chains, 200,000 fitted
    shown = {m.label: m.value for m in at.metric}
    assert shown["decodes per rule"] == f"{n:,}" and "cap bites" in _notes(at)


def test_round_holds_a_deep_replay_of_a_wide_tree():
    at = run_page("pages/1_round.py", 120, tree=TREE, rule="tree_iid", rnd="999", k="32")
    assert "held at round 518" in _notes(at), _notes(at)
    assert not at.error


def test_a_request_past_its_time_budget_says_what_it_stopped(monkeypatch):
    from specviz.web import guard

    monkeypatch.setattr(guard, "WORK_STOP_S", 0.0)
    at = run_page("pages/8_rules.py", 120, rules_n="200000", seed="91357")
    said = _notes(at)
    assert "Stopped at the time budget" in said and "ran fewer than the 200,000" in said
    assert len(at.metric) >= 3 and not [e for e in at.error if "Not computed" in e.value]


def test_home_refuses_the_block_walk_up_front_and_draws_the_rest():
    at = run_page("app.py", 60, rule="block", k="32")
    assert not at.error, [e.value for e in at.error]
    assert len(at.metric) == 4  # the round and the three long-run figures
    caption = " ".join(c.value for c in at.caption)
    assert "Not computed exactly" in caption and "priced from its first levels" in caption
