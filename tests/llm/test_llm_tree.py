"""Token trees on the real pair: one target pass over every node with tree attention (each
node at RoPE position len(prefix) - 1 + depth, reading the prefix and its own ancestors),
whose rows equal separate chain passes along each root-to-node path; a draft pass a level;
the accepted path kept in the KV cache; a tree round through the one engine keeping its
invariants; and a Monte Carlo check on real rows that the first emitted token of a
4-sibling tree follows p, with the broken first-residual tree as the negative control.

Float tolerance as tests/llm/test_llm_forward.py: two f32 summation orders of the same
logits (a tree pass sums its attention over other slots than a chain pass)."""

from __future__ import annotations

import numpy as np
import pytest
from test_llm_pair import RealRow, first_tokens, spec
from test_llm_tiny import write_tiny

from specviz.analysis.stats import tv, tv_threshold
from specviz.core.kinds import kind_of
from specviz.core.round import play_round
from specviz.core.rules import get_rule
from specviz.core.scenario import Scenario
from specviz.llm import store
from specviz.llm.forward import KVCache, forward
from specviz.llm.pair import LLMPair, softmax
from specviz.llm.runner import Runner

TOL = 5e-4  # abs. logit difference between two summation orders (test_llm_forward.TOL)
TINY_TOL = 1e-5  # the same on the tiny model (logits of size ~1)


def fresh(w, tokens):
    """The logits at the last token from an empty cache, one chain pass."""
    return Runner(w).logits(tokens, [len(tokens)])[0]


def tree_tails(ids_of, words):
    """A tree over these tokens: () and 6 nodes, two levels of branching, depth 3."""
    a, b, c, d, e, f = (ids_of(x) for x in words)
    return [(), (a,), (b,), (a, c), (a, d), (b, e), (a, c, f)]


def check_tree(w, prefix, tails, tol):
    """One pass scores every node; each row equals a chain pass along its path; a second
    call adds a level in one more pass; reading on along one path keeps it in the cache."""
    r = Runner(w)
    rows = r.score(prefix, tails)
    nodes = {t[:d] for t in tails for d in range(1, len(t) + 1)}
    assert len(r.passes) == 1 and r.passes[0][:2] == (len(prefix) + len(nodes), len(tails))
    for t, z in zip(tails, rows, strict=True):
        assert np.max(np.abs(z - fresh(w, prefix + list(t)))) < tol, t
    deeper = [tails[-1] + (tails[1][0],), tails[5] + (tails[2][0],)]  # a fourth level
    more = r.score(prefix, deeper)
    assert len(r.passes) == 2 and r.passes[1][:2] == (2, 2)  # only the two new nodes
    for t, z in zip(deeper, more, strict=True):
        assert np.max(np.abs(z - fresh(w, prefix + list(t)))) < tol, t
    on = prefix + list(deeper[0]) + [tails[2][0]]  # the path of deeper[0], one token on
    z = r.logits(on, [len(on)])[0]
    assert r.passes[-1][:2] == (1, 1) and r.tokens == on and r.cache.n == len(on)
    assert np.max(np.abs(z - fresh(w, on))) < tol


def test_a_tree_pass_on_a_tiny_model_with_a_window_of_4(tmp_path):
    """The tiny Gemma (2 layers, sliding window 4): a prefix longer than the window, so a
    node reads only the prefix positions within 4 of its own depth's position."""
    m = store.read_model(write_tiny(tmp_path / "t.gguf"))
    prefix = m.tokenizer.encode("ab a ba ab")
    assert len(prefix) > m.cfg.window
    check_tree(m.weights, prefix, tree_tails(lambda x: x, range(100, 106)), TINY_TOL)


def full_forward(w, tokens):
    """The logits at the last token of tokens by the description: one pass of every layer
    over all of them from an empty KV cache, no Runner and nothing kept."""
    return forward(w, tokens, KVCache(w, range(w.cfg.n_layers)))[0]


def test_a_tree_played_on_a_cache_that_already_holds_the_prefix(tmp_path):
    """The tiny Gemma, its cache warm: each tree row asked for equals a full forward of
    prefix + path. (1) The cache holds the prefix but its row was let go (the pair's
    settle): the root's row needs the prefix's last token run again. (2) A tree at a
    prefix that reads on along the held tree: new nodes go onto it at depth positions.
    (3) A tree at a shorter prefix: the cache rolls back past the held tree, and the
    root's row is run again. (4) A chain read past the tree keeps the path it follows."""
    m = store.read_model(write_tiny(tmp_path / "t.gguf"))
    w = m.weights
    prefix = m.tokenizer.encode("ab a ba ab")
    a, b, c, d, e, f = range(100, 106)
    r = Runner(w)

    def check(base, tails):
        rows = r.score(base, tails)
        for t, z in zip(tails, rows, strict=True):
            assert np.max(np.abs(z - full_forward(w, base + list(t)))) < TINY_TOL, (base, t)

    r.logits(prefix, [len(prefix) - 2, len(prefix)])
    r.forget()  # the cache keeps the prefix; its rows go
    check(prefix, [(), (a,), (b,), (a, c), (b, d)])
    check(prefix + [a], [(c,), (c, e), (d,), (d, f)])  # on the held tree, a level deeper
    check(prefix[:-2], [(), (e,), (f,), (e, a)])  # before the held tree's base
    check(prefix[:-2] + [e, a], [(), (b,), (c, d)])  # settles the path e, a; the root kept
    on = prefix[:-2] + [e, a, c, d]
    z = r.logits(on, [len(on) - 1, len(on)])
    assert np.max(np.abs(z[1] - full_forward(w, on))) < TINY_TOL
    assert np.max(np.abs(z[0] - full_forward(w, on[:-1]))) < TINY_TOL


def test_a_tree_pass_gives_each_node_the_row_of_a_chain_pass(model):
    ids = model.tokenizer.encode("The capital of France is Paris. The capital of Italy is")
    words = (" Rome", " the", " a", " Milan", " city", " not")
    check_tree(model.weights, ids,
               tree_tails(lambda x: model.tokenizer.encode(x, bos=False)[0], words), TOL)


@pytest.mark.parametrize("rule", ["tree_iid", "tree_wor", "tree_first_residual",
                                  "tree_wor_as_iid"])
def test_a_tree_round_on_the_real_pair_keeps_the_engines_invariants(model, rule):
    """k = 2: the draft runs one pass a level, the target one pass over the prefix's last
    token and every node (siblings drawn alike are one node); the kept tokens are a path
    of the drafted tree; the rows along it are the chain passes' softmax; the next round
    reads on from the kept path without running it again."""
    ids = model.tokenizer.encode("Once upon a time, in a small village by the sea, there lived")
    pair, r, k = LLMPair(model, spec(model, "early-exit:9"), T=1.0), get_rule(rule), 2
    prefix = list(ids)
    for seed in range(2):
        t0, d0 = len(pair.target.passes), len(pair.draft.passes)
        tr = play_round(Scenario.on(pair, prefix, k=k, rule=rule), rng=np.random.default_rng(seed))
        tree = dict(tr.tree)
        assert 0 < len(tree) <= kind_of(r).drafted(r, k) and 1 <= tr.k <= k
        paths = {tuple(tree[path[:d + 1]] for d in range(len(path))) for path in tree}
        target, draft = list(pair.target.passes)[t0:], list(pair.draft.passes)[d0:]
        assert len(target) == 1 and target[0][1] == len(paths) + 1 <= kind_of(r).scored(r, k)
        assert target[0][0] == len(paths) + (len(ids) if seed == 0 else 1)
        assert len(draft) == k and draft[0][1] == 1
        kept = [e.token for e in tr.emitted if e.origin == "accepted"]
        assert tuple(kept) in paths | {()} and tr.emitted[-1].origin in ("bonus", "resampled")
        assert (tr.emitted[-1].origin == "bonus") == (tr.rejected_at is None)
        for i, pos in enumerate(tr.positions):
            want = softmax(fresh(model.weights, prefix + kept[:i]), 1.0)
            assert np.max(np.abs(pos.p_row - want)) < 1e-5
            assert [t.accepted for t in pos.tries][:-1] == [False] * (len(pos.tries) - 1)
        if tr.rejected_at is not None:
            assert tr.rejection_row[tr.emitted[-1].token] > 0
        prefix += list(tr.tokens)
        pair.settle()


def test_the_first_token_of_a_real_tree_follows_p(model):
    """n rounds (k = 1, four i.i.d. siblings: preset 4-1) on the real rows p, q of the story
    prompt (early exit at 12 of 18 layers, T = 1, beta = sum min(p, q) about 0.75): the
    first token's empirical law against p, within tv_threshold (the sampling floor plus
    McDiarmid's term, delta 1e-6) for tree_iid. The negative control, tree_first_residual,
    tries siblings 2..4 against r = norm(max(0, p - q)) each and ends on r, so its law,
    written here from that description, is
      min(p, q) + (1 - beta) (min(r, q) (1 + f + f^2) + f^3 r),  f = 1 - sum min(r, q),
    whose TV to p exceeds the threshold by more than McDiarmid's term: it fails but for
    odds of 1e-6."""
    ids = model.tokenizer.encode("Once upon a time, in a small village by the sea, there lived")
    pair = LLMPair(model, spec(model, "early-exit:12"), T=1.0)
    p, q = pair.p(ids), pair.q(ids)
    n = 20_000
    thr = tv_threshold(p, n)
    d = np.maximum(p - q, 0.0)
    r = d / d.sum()
    f = 1.0 - np.minimum(r, q).sum()
    broken = np.minimum(p, q) + (1 - np.minimum(p, q).sum()) * (
        np.minimum(r, q) * (1 + f + f * f) + f ** 3 * r)
    assert abs(broken.sum() - 1) < 1e-9
    assert tv(broken, p) > thr + np.sqrt(np.log(1e6) / (2 * n))  # the control can fail
    row = RealRow(p, q)
    for rule, ok in (("tree_iid", True), ("tree_first_residual", False)):
        x = first_tokens(row, ids, get_rule(rule).with_params(shape=4), n, seed=1)
        got = tv(np.bincount(x, minlength=len(p)) / n, p)
        assert (got < thr) == ok, (rule, got, thr)
