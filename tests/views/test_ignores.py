"""A function of a scenario marked `ignores` is cached without those fields, so each must
truly not read them: its result is the same whatever they hold (else a cache would serve
a stale result). The marks: views.demos, views.pagedata, views.methods."""

from __future__ import annotations

import numpy as np
import pytest

from specviz.core.pair import TablePair
from specviz.core.scenario import IGNORABLE, Scenario, ignored, ignores
from specviz.core.tables import default_tables, mix_draft
from specviz.views import demos, methods, pagedata

T = default_tables()
SC = Scenario.of(T.P, T.Q, ctx=1, k=3, seed=2)
OTHER = {"k": SC.replace(k=6), "seed": SC.replace(seed=9),
         "draft": SC.replace(pair=TablePair(T.P, mix_draft(T.P, 0.3, T.Q)))}
CALLS = {  # each marked function, called small
    demos.draft_sweep: lambda sc: demos.draft_sweep(sc, "alpha", [0.2, 0.8], n_rounds=400),
    demos.k_sweep: lambda sc: demos.k_sweep(sc, ks=[1, 3], n_rounds=400),
    demos.cost_model: lambda sc: demos.cost_model(sc, costs=[0.1, 0.5]),
    pagedata.draft_curve: lambda sc: pagedata.draft_curve(sc, "T", [0.5, 2.0], c=0.1),
    pagedata.k_curve: lambda sc: pagedata.k_curve(sc, c=0.1, ks=[1, 4]),
    pagedata.long_run_alpha: pagedata.long_run_alpha,
    methods.warp_sweep: lambda sc: methods.warp_sweep(sc, draft=False, top_ps=[0.9],
                                                      temperatures=[0.7]),
}


def _same(a, b) -> bool:
    return repr(a) == repr(b)  # rows, floats and dataclasses of them, exactly


@pytest.mark.parametrize("fn", list(CALLS), ids=lambda f: f.__name__)
def test_a_marked_function_reads_none_of_the_fields_it_ignores(fn):
    assert fn.ignores and fn.ignores <= IGNORABLE
    call = CALLS[fn]
    base = call(SC)
    for name in fn.ignores:
        assert _same(call(OTHER[name]), base), name
        assert SC.cache_key(fn.ignores) == OTHER[name].cache_key(fn.ignores)


@pytest.mark.parametrize("name", sorted(IGNORABLE))
def test_a_field_left_out_of_the_key_only_when_ignored(name):
    """Negative control: each field changes the key of a function that reads it, and the
    results of a function that reads it: the exact long run's tokens per call (the cost
    model) read k and the draft; a Monte Carlo sweep reads the seed. (alpha_eff does not
    read k: it weighs contexts by where the target's own text spends its time.)"""
    assert SC.cache_key() != OTHER[name].cache_key()
    assert SC.cache_key(frozenset(IGNORABLE - {name})) != OTHER[name].cache_key(
        frozenset(IGNORABLE - {name}))
    reads = {"k": CALLS[demos.cost_model], "draft": CALLS[demos.cost_model],
             "seed": CALLS[demos.k_sweep]}[name]
    assert not _same(reads(SC), reads(OTHER[name])), name


def test_only_known_fields_can_be_ignored():
    with pytest.raises(ValueError, match="can be ignored"):
        ignores("rule")
    assert np.all([f.ignores <= IGNORABLE for f in CALLS])


def test_the_mark_is_read_through_a_wrapper_that_does_not_copy_it():
    """ui.cached keys on ignored(fn): a wrapper keeping only __wrapped__ keeps the mark."""
    import functools

    @ignores("seed")
    def fn(sc):
        return sc

    bare = functools.wraps(fn, updated=())(lambda sc: fn(sc))
    assert "ignores" not in bare.__dict__ and ignored(bare) == frozenset({"seed"})
    assert ignored(lambda sc: sc) == frozenset()
