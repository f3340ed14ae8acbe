"""Medusa heads (llm.medusa) on the tiny Gemma 3 of test_llm_tiny, with random heads: each
head's q against its equation computed here from an uncached pass, the heads reading the
state the target's pass kept (no pass of their own), greedy speculation equal to plain
greedy, the first token's law exactly p under the correct rule and not under a broken one,
the heads' file and its checksum, and refusals that say what to do. Fast: no real model."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_llm_tiny import write_tiny

from specviz.analysis.audit import CAUGHT, CONSISTENT
from specviz.core.round import play_round
from specviz.core.scenario import Scenario
from specviz.llm import drafts, medusa, store
from specviz.llm.decode import speculate
from specviz.llm.draftkind import DraftError
from specviz.llm.forward import KVCache, hidden
from specviz.llm.lossless import compare, greedy_plain, rows_along
from specviz.llm.runner import Runner
from specviz.views import realrows as rr

K = 3


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return store.read_model(write_tiny(tmp_path_factory.mktemp("tiny") / "t.gguf"))


@pytest.fixture(scope="module")
def heads(tiny, tmp_path_factory):
    rng = np.random.default_rng(1)
    W1 = rng.standard_normal((K, tiny.cfg.d, tiny.cfg.d)).astype(np.float32) * 0.5
    path = tmp_path_factory.mktemp("heads") / "h.npz"
    medusa.save_heads(path, W1, np.arange(4, 200), {"script_version": 0})
    return medusa.load_heads(path)


def kit_with(heads):
    return drafts.Kit(lambda m: [4, 5], lambda m, ids, n: None,
                      keep=lambda name, make: heads if name == "medusa heads" else make())


def pair_of(tiny, heads, *, greedy=False, T=1.0, spec="medusa:3:0"):
    return drafts.draft_pair(tiny, drafts.parse_draft(spec, cfg=tiny.cfg), T=T, greedy=greedy,
                             kit=kit_with(heads))


def oracle_q(tiny, heads, prefix, i, T=1.0):
    """softmax(E (SiLU(W1_i h) + h) / T) over the heads' rows, 0 elsewhere; h the final-normed
    state at the prefix's second newest token, from a fresh pass over the prefix alone."""
    w = tiny.weights
    h = hidden(w, prefix[:-1], KVCache(w, range(tiny.cfg.n_layers)))[-1].astype(np.float64)
    a = h @ heads.W1[i - 1]
    u = a / (1 + np.exp(-a)) + h
    z = w.embed.rows(heads.rows).astype(np.float64) @ u / T
    q = np.zeros(tiny.cfg.V)
    q[heads.rows] = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    return q


def test_head_i_drafts_token_i_from_the_state_before_the_round(tiny, heads):
    ids = tiny.tokenizer.encode("ab a")
    pair = pair_of(tiny, heads, T=0.7)
    tr = play_round(Scenario.on(pair, ids, k=K, seed=3))
    drafted = [p.token for p in tr.positions]
    for i in range(1, K + 1):
        q = pair.q(ids + drafted[: i - 1])
        assert pair.head_of(ids + drafted[: i - 1]) == i
        np.testing.assert_allclose(q, oracle_q(tiny, heads, ids, i, T=0.7), atol=1e-5)
        np.testing.assert_allclose(tr.positions[i - 1].q_row, q)
    assert q[:4].sum() == 0 and q[200:].sum() == 0  # q = 0 off the heads' rows


def test_the_heads_read_the_state_the_target_kept_with_no_pass_of_their_own(tiny, heads):
    ids = tiny.tokenizer.encode("ab a")
    pair = pair_of(tiny, heads, greedy=True)
    run = speculate(pair, ids, k=K, max_new=16, stop_at_eos=False)
    assert len(run.target_passes) == len(run.tallies)  # one verification pass a round
    assert len(run.draft_passes) == sum(t.k for t in run.tallies)  # one product a head
    assert all(n == 1 for n, _, _ in run.draft_passes)


def test_greedy_medusa_is_the_targets_greedy_text(tiny, heads):
    ids = tiny.tokenizer.encode("ab a")
    seen = {}
    alone = greedy_plain(Runner(tiny.weights), ids, max_new=16, seen=seen, stop_at_eos=False)
    pair = pair_of(tiny, heads, greedy=True)
    run = speculate(pair, ids, k=K, max_new=16, stop_at_eos=False)
    ag = compare(alone.tokens, run.tokens, rows_along(seen, ids, alone.tokens),
                 rows_along(pair.seen, ids, run.tokens))
    assert ag.spec == ag.plain or ag.one_pass.margin < 1e-4, ag


def test_a_round_drafts_while_each_heads_top_probability_is_sure_enough(tiny, heads):
    """Head i drafts while max_x q_i(x) at T = 1 (the oracle's, from a fresh pass) is at
    least s, greedy too (its q is one-hot, its stop reads the soft row); the round says
    which head stopped it."""
    ids = tiny.tokenizer.encode("ab a")
    top = [float(oracle_q(tiny, heads, ids, i).max()) for i in range(1, K + 1)]
    levels = sorted(top)
    cuts = [levels[0] / 2] + [(a + b) / 2 for a, b in zip(levels[:-1], levels[1:], strict=True)]
    cuts += [1.0]
    for s in cuts:  # between the heads' values: clear of the last digits of two passes
        lead = next((i for i, t in enumerate(top) if t < s), K)  # heads before the first unsure
        for greedy in (False, True):
            tr = play_round(Scenario.on(pair_of(tiny, heads, greedy=greedy,
                                                spec=f"medusa:3:{s!r}"), ids, k=K, seed=1))
            assert tr.k == lead == len(tr.positions)
            want = "" if lead == K else f"head {lead + 1} unsure (max q "
            assert tr.stopped.startswith(want) and (lead < K) == bool(tr.stopped)
            assert tr.emitted[-1].position <= lead + 1


def test_greedy_medusa_with_the_stop_is_the_targets_greedy_text(tiny, heads):
    ids = tiny.tokenizer.encode("ab a")
    seen = {}
    alone = greedy_plain(Runner(tiny.weights), ids, max_new=16, seen=seen, stop_at_eos=False)
    top = sorted(float(oracle_q(tiny, heads, ids, i).max()) for i in range(1, K + 1))
    pair = pair_of(tiny, heads, greedy=True, spec=f"medusa:3:{(top[0] + top[1]) / 2!r}")
    run = speculate(pair, ids, k=K, max_new=16, stop_at_eos=False)
    assert min(t.k for t in run.tallies) < K  # the stop did stop some rounds short
    ag = compare(alone.tokens, run.tokens, rows_along(seen, ids, alone.tokens),
                 rows_along(pair.seen, ids, run.tokens))
    assert ag.spec == ag.plain or ag.one_pass.margin < 1e-4, ag


def test_the_first_token_is_p_under_the_correct_rule_and_not_a_broken_one(tiny, heads):
    r = rr.real_rows(tiny, "ab a", "medusa:2", k=2, n=20_000, kit=kit_with(heads))
    checks = {row["rule"]: row for row in rr.check_rows(r)}
    assert checks["correct"]["verdict"] == CONSISTENT and checks["correct"]["exact_tv"] < 1e-12
    assert checks[rr.BROKEN]["verdict"] == CAUGHT  # the negative control


def test_the_heads_file_is_checked_and_a_missing_one_says_how_to_train(tmp_path, heads):
    path = tmp_path / "h.npz"
    medusa.save_heads(path, heads.W1, heads.rows, {"seed": 0})
    meta = json.loads(path.with_suffix(".json").read_text())
    assert meta["K"] == K and meta["rows"] == len(heads.rows) and len(meta["sha256"]) == 64
    assert medusa.load_heads(path).W1.dtype == np.float32
    bad = tmp_path / "bad.npz"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    bad.write_bytes(bytes(data))
    bad.with_suffix(".json").write_text(json.dumps(meta))
    with pytest.raises(DraftError, match="checksum.*python -m specviz.medusatrain"):
        medusa.load_heads(bad)
    with pytest.raises(DraftError, match="no Medusa heads.*python -m specviz.medusatrain"):
        medusa.load_heads(tmp_path / "none.npz")


def test_a_round_asks_no_more_heads_than_there_are(tiny, heads):
    ids = tiny.tokenizer.encode("ab a")
    with pytest.raises(ValueError, match="at most 2 tokens a round"):
        play_round(Scenario.on(pair_of(tiny, heads, spec="medusa:2:0"), ids, k=3))
    with pytest.raises(ValueError, match="two tokens or more"):
        play_round(Scenario.on(pair_of(tiny, heads), ids[:1], k=1))
    with pytest.raises(DraftError, match="more heads than the 3 trained"):
        pair_of(tiny, heads, spec="medusa:4:0")


def test_the_chips_and_captions_say_which_head_drafted(tiny, heads):
    from specviz.views.llmpage import play_k
    from specviz.views.narration import play_narrated
    from specviz.views.stepping import chips

    ids = tiny.tokenizer.encode("ab a")
    tr = play_narrated(Scenario.on(pair_of(tiny, heads), ids, k=K, seed=0), n_rounds=1)[0]
    assert tr.sources == ("head 1", "head 2", "head 3")
    drafted = [c for c in chips(tr, len(tr.steps) - 1) if 1 <= c.slot <= K and not c.final]
    assert [c.lines[0].split("  ")[0] for c in drafted] == ["head 1", "head 2", "head 3"]
    assert "head 2's q" in " ".join(s.caption for s in tr.steps)
    assert play_k("correct", 6, heads=4) == (4, "Medusa's 4 heads draft one token each: "
                                                "k = 4, not 6.")


def test_a_round_whose_heads_are_unsure_says_so_in_its_caption_and_chip(tiny, heads):
    from specviz.views.narration import play_narrated
    from specviz.views.stepping import chips

    ids = tiny.tokenizer.encode("ab a")
    sc = Scenario.on(pair_of(tiny, heads, spec="medusa:3:1"), ids, k=K, seed=0)
    tr = play_narrated(sc, n_rounds=1)[0]  # no head is sure of one token: nothing drafted
    assert tr.k == 0 and tr.stopped.startswith("head 1 unsure (max q ")
    assert "The draft stops after 0 token(s): head 1 unsure (max q " in tr.steps[0].caption
    last = chips(tr, len(tr.steps) - 1)[-1]
    assert last.status == "plain" and last.lines == ("from p: no drafts",
                                                     "stopped: head 1 unsure")


def test_measured_plays_medusa_at_most_its_heads_beside_a_longer_k(tiny, heads):
    """/measured's k is every draft's; Medusa's K heads draft one token each, so its decodes
    play k = K while the others play k (m_draft=all, m_k=8 raised for medusa:4 before)."""
    from specviz.views import measureruns as mr

    m = mr.measure(tiny, "", ["medusa:2", "lookup"], k=4, T=0.7, max_new=4, reps=1,
                   ids=[4, 5, 6], kit=kit_with(heads))
    ks = {d.label: {s.k for runs in d.runs.values() for s in runs} for d in m.drafts}
    assert ks == {"medusa:2": {2}, "lookup": {4}}
