"""Settings the sidebar's own controls reach must draw the page: no internal error, no
'Not computed' stop. Each case stopped a page before its fix (issue 23, items 4-6)."""

from __future__ import annotations

import pytest
from support import run_page

CASES = [
    ("app.py", {"rule": "tree_wor", "tree": "8"}),  # more siblings than V = 6: KeyError
    ("pages/1_round.py", {"rule": "tree_wor", "tree": "7-1"}),
    ("pages/1_round.py", {"rule": "tree_wor", "tree": "3", "wtopk": "1", "wdraft": "1"}),
    ("pages/7_text.py", {"rule": "tree_wor", "tree": "3", "wtopk": "1", "wdraft": "1"}),
    ("pages/8_rules.py", {"rule": "tree_wor", "tree": "3", "wtopk": "1", "wdraft": "1"}),
    ("pages/8_rules.py", {"conv_value": "34"}),  # held at the int 33: a float input refused it
    ("pages/8_rules.py", {"wtopk": "1"}),  # warp_unnormalised's exact law summed to 0.618
    ("pages/8_rules.py", {"wtopp": "0.01"}),
    ("pages/8_rules.py", {"wminp": "1"}),
    ("pages/8_rules.py", {"rule": "warped", "wtopk": "1"}),
    ("pages/3_acceptance.py", {"wtopk": "6", "ctx": "e"}),  # alpha = 1 + 2^-52 refused
    ("pages/3_acceptance.py", {"wtopk": "6", "ctx": "e", "tab": "T"}),
]


@pytest.mark.parametrize("path, params", CASES, ids=[f"{p}?{q}" for p, q in CASES])
def test_a_reachable_setting_draws_the_page(path, params):
    at = run_page(path, 120, **params)
    stops = [e.value for e in at.error if "Not computed" in e.value]
    assert not stops, stops
