"""Honest measurements, on the tiny Gemma 3 of test_llm_tiny (fast, no real model): decodes
of equal length with the prefill off the clock, each decode repeated interleaved, figures
as medians with their spreads, and what cannot be true flagged as noise, not printed as a
result (issue 40, item 7)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_llm_tiny import write_tiny

from specviz.analysis.spread import Load, Spread
from specviz.llm import store
from specviz.llm.decode import Summary, alone, plain, speculate, summarise
from specviz.llm.drafts import draft_pair, parse_draft
from specviz.llm.runner import Runner
from specviz.views import measured as mv
from specviz.views import measureruns as mr


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return store.read_model(write_tiny(tmp_path_factory.mktemp("tiny") / "t.gguf"))


def test_a_spread_is_the_median_and_range_of_the_runs():
    s = Spread.of([3.0, 1.0, None, 2.0, float("nan"), 10.0])
    assert (s.median, s.lo, s.hi, s.n) == (2.5, 1.0, 10.0, 4)
    assert s.text(".1f") == "2.5 (1.0-10.0)" and Spread.of([2.0]).text(".1f") == "2.0"
    assert Spread.of([]) is None and Spread.of([None]) is None
    a, b, c = Spread(1, 0.9, 1.1, 3), Spread(1.2, 1.1, 1.3, 3), Spread(1.5, 1.4, 1.6, 3)
    assert a.overlaps(b) and b.overlaps(a) and not a.overlaps(c)
    assert c.above(a) and not b.above(a) and not a.above(c)


def test_the_load_says_when_the_machine_is_busy():
    assert Load(1.5, 3.0, 2).busy and "busy" in Load(1.5, 3.0, 2).text()
    quiet = Load(0.9, 2.5, 2)
    assert not quiet.busy and "quiet" in quiet.text() and "2 CPUs" in quiet.text()


def test_end_of_text_stops_a_decode_only_when_asked(tiny):
    ids = tiny.tokenizer.encode("ab a")
    eos = tiny.cfg.eos
    stop = alone(Runner(tiny.weights), ids, max_new=5, pick=lambda seq, z: eos)
    on = alone(Runner(tiny.weights), ids, max_new=5, pick=lambda seq, z: eos,
               stop_at_eos=False)
    assert stop.tokens == (eos,) and on.tokens == (eos,) * 5 and on.made == 5


def test_the_prefill_is_off_the_clock_and_every_pass_a_decode_step(tiny):
    """Each decode starts from the prompt's prefill, run before the clock: the target
    alone then runs one position a pass; a chain's verification, exactly k + 1."""
    ids = tiny.tokenizer.encode("ab a ab a")
    a = plain(Runner(tiny.weights), ids, T=1.0, max_new=6, stop_at_eos=False)
    assert a.prefill_s > 0 and {(n, h) for n, h, _ in a.target_passes} == {(1, 1)}
    assert len(a.target_passes) == 6
    pair = draft_pair(tiny, parse_draft("early-exit:1", cfg=tiny.cfg))
    s = speculate(pair, ids, k=3, max_new=6, stop_at_eos=False, keep_rounds=False)
    assert s.prefill_s > 0 and not s.rounds and s.made >= 6 and len(s.tokens) == 6
    assert max(n for n, _, _ in s.target_passes) <= 4  # no pass holds the prompt
    assert max(n for n, _, _ in s.draft_passes) <= 2  # a catch-up of two, at most
    sm = summarise(s, a, k=3)
    assert sm.rounds == len(s.tallies) and sm.tokens == 6 and sm.made == (s.made, 6)
    assert sm.drafted_per_round == 3.0  # a chain drafts k a round (counted without traces)
    assert sm.tokens_per_call == sum(t.emitted for t in s.tallies) / len(s.tallies)
    assert sm.spec_tps == pytest.approx(s.made / s.seconds)
    assert 0 <= sm.outside_round_s and 0 <= sm.outside_token_s


def test_greedy_at_t_0_is_the_target_alone_argmax(tiny):
    ids = tiny.tokenizer.encode("ab a")
    g = plain(Runner(tiny.weights), ids, T=0, max_new=6, stop_at_eos=False)
    from specviz.llm.lossless import greedy_plain
    assert g.tokens == greedy_plain(Runner(tiny.weights), ids, max_new=6,
                                    stop_at_eos=False).tokens


def test_each_decode_runs_once_a_repetition_in_a_rotated_order():
    calls = []
    jobs = {key: (lambda rep, key=key: calls.append((rep, key)) or key) for key in "abc"}
    runs, done, left = mr.interleaved(jobs, 3, stop_s=1e9, t0=0.0)
    assert done == 3 and not left and {k: len(v) for k, v in runs.items()} == dict.fromkeys(
        "abc", 3)
    assert [k for _, k in calls] == list("abc" "bca" "cab")


def test_past_the_budget_a_repetition_is_dropped_whole(monkeypatch):
    clock = iter(range(100))
    monkeypatch.setattr(mr.time, "perf_counter", lambda: float(next(clock)))
    jobs = {key: (lambda rep, key=key: key) for key in "ab"}
    runs, done, left = mr.interleaved(jobs, 5, stop_s=2.5, t0=0.0)  # time passes 1 a job
    assert done == 1 and not left and runs == {"a": ["a"], "b": ["b"]}
    clock = iter(range(100))
    runs, done, left = mr.interleaved(jobs, 5, stop_s=0.5, t0=0.0)
    assert done == 1 and left == ["b"] and runs == {"a": ["a"], "b": []}  # what did not run


def summary(**kw) -> Summary:
    base = dict(k=4, rounds=10, tokens=30, target_1_s=0.040, target_k1_s=0.050,
                verify_rows=5.0, drafted_per_round=4.0, draft_s=0.020, c=0.5,
                tokens_per_call=3.0, accepted_at=(8, 6, 4, 2), drafted_at=(10,) * 4,
                spec_tps=20.0, plain_tps=25.0, outside_round_s=0.01, outside_token_s=0.002)
    return Summary(**(base | kw))


def measure_of(runs, *, subset=True) -> mv.Figures:
    d = mr.DraftMeasure("skip:4,8", {"greedy": tuple(runs)}, subset=subset, c_macs=0.9)
    return mv.figures(d, "greedy")


def test_c_of_one_or_more_for_a_part_of_the_target_is_noise_not_a_result():
    noisy = measure_of([summary(c=1.2, draft_s=0.048), summary(c=1.4, draft_s=0.056),
                        summary(c=0.9, draft_s=0.036)])
    assert noisy.c_noise and mv.blame(noisy) == "noise: cannot be true"
    d = mr.DraftMeasure("skip:4,8", {"greedy": (summary(c=1.2), summary(c=1.4))}, subset=True)
    row = mv.summary_rows(mr.Measurement(5, 4, 1.0, 30, (d,), 1.0))[0]
    assert row["c"] is None and row["c_t"] == "noise" and "cannot be true" in row["why"]
    assert "c = 1.200 (0.900-1.400) cannot be true" in mv.why(noisy)
    # the negative controls: below 1, or a draft that is not a part of the target's pass
    assert not measure_of([summary(c=0.95), summary(c=0.99)]).c_noise
    assert not measure_of([summary(c=1.2)], subset=False).c_noise


def test_a_speedup_above_what_the_round_allows_beyond_both_spreads_is_noise():
    """E / (n c + t(k+1)/t(1)) = 3 / (4 x 0.5 + 1.25) = 0.923x: the passes allow no more."""
    allowed = 3.0 / (4 * 0.5 + 0.050 / 0.040)
    ok = measure_of([summary(spec_tps=22.0), summary(spec_tps=23.0)])
    assert ok["formula"].median == pytest.approx(allowed)
    assert not ok.speedup_noise and mv.blame(ok) == "draft too dear"  # n c = 2 > 1.25 - 1
    fast = measure_of([summary(spec_tps=30.0), summary(spec_tps=32.0)])  # 1.2-1.28x
    assert fast.speedup_noise and "beyond both spreads: noise" in mv.why(fast)
    near = measure_of([summary(spec_tps=22.0), summary(spec_tps=30.0)])  # spread reaches it
    assert not near.speedup_noise


def test_the_formula_is_shown_beside_the_wall_clock_with_the_gap_explained():
    f = measure_of([summary(), replace(summary(), spec_tps=21.0)])
    text = mv.why(f)
    assert "the passes allow 0.92x" in text and "the wall clock says 0.82x (0.80-0.84)" in text
    assert "10.0 ms a round with speculation" in text
    assert "2.0 ms a token without" in text
    # with the time outside the passes: E (t1 + o) / (n t_draft + t(k+1) + o_round)
    assert f["outside"].median == pytest.approx(3 * 0.042 / (4 * 0.020 + 0.050 + 0.010))


def test_a_measurement_of_the_tiny_model_repeats_each_decode(tiny):
    ids = tiny.tokenizer.encode("ab a ab")
    m = mr.measure(tiny, "", ["early-exit:1", "lookup"], k=2, T=0.7, max_new=4, reps=3,
                   ids=ids)
    assert m.reps == 3 and m.modes == ("greedy", "sampled") and m.load.cpus >= 1
    for d in m.drafts:
        assert {mode: len(r) for mode, r in d.runs.items()} == {"greedy": 3, "sampled": 3}
        for mode in d.modes:  # the same seed each time: the same counts
            assert len({(s.tokens_per_call, s.accepted_at) for s in d.runs[mode]}) == 1
        assert d.agreement is not None
    greedy = mr.measure(tiny, "", ["early-exit:1"], k=2, T=0, max_new=4, reps=2, ids=ids)
    assert greedy.modes == ("greedy",) and greedy.drafts[0].modes == ("greedy",)
    rows = mv.summary_rows(greedy)
    assert [r["mode"] for r in rows] == ["greedy"] and rows[0]["reps"] == 2


def test_each_repetition_is_set_against_its_own_plain_run(tiny):
    """Repetition r's speculative run over repetition r's plain run, not another's: the
    speedup of each repetition pairs decodes that ran side by side."""
    from specviz.llm.decode import Run, Tally

    spec = parse_draft("lookup", cfg=tiny.cfg)
    one = ((1, 1, 0.01),) * 4
    alone = [Run((5,) * 4, s, one, (), made=4) for s in (1.0, 2.0, 4.0)]
    fast = [Run((5,) * 4, s, ((3, 3, 0.01),) * 2, (), tallies=(Tally(2, 2, 1, 2),) * 2,
                made=4) for s in (0.5, 1.0, 2.0)]
    runs = {("alone", "sampled"): alone, ("lookup", "sampled"): fast}
    (d,) = mr._measures([spec], runs, [2, 5], k=2, scored=3, cfg=tiny.cfg, seen={}, reps=3)
    assert [s.plain_tps for s in d.runs["sampled"]] == [4.0, 2.0, 1.0]
    assert [s.speedup for s in d.runs["sampled"]] == [2.0, 2.0, 2.0]
