"""llama.cpp's log and responses as its server writes them: request lines of either build,
the cumulative statistics lines of each speculative implementation, many requests pooled,
and the draft length from a response's generation_settings."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specviz.analysis.servermetrics import MetricsError, parse_any


def slot(task: int, accepted: int, generated: int, tail: str = "", *, old: bool = False) -> str:
    """A slot's print_timing line (older builds: 'draft acceptance rate =')."""
    key = "draft acceptance rate" if old else "draft acceptance"
    return (f"[1234] 0.07.{task:03d}.100 I slot print_timing: id  1 | task {task} | {key} = "
            f"{accepted / generated:.5f} ({accepted:5d} accepted / {generated:5d} generated)"
            f"{tail}\n")


def stats(name: str, calls: int, drafts: int, gen: int, acc: int, tail: str = "") -> str:
    """An implementation's statistics line: cumulative since the server started."""
    return (f"[1234] 0.07.999.200 I statistics {name:>16}: #calls(b,g,a) = {calls:4d} "
            f"{drafts + 9:6d} {drafts:6d}, #gen drafts = {drafts:6d}, #acc drafts = "
            f"{drafts // 2:6d}, #gen tokens = {gen:6d}, #acc tokens = {acc:6d}{tail}, "
            "dur(b,g,a) = 0.002, 812.150, 0.301 ms\n")


def timing(task: int) -> str:
    return (f"[1234] 0.07.{task:03d}.090 I slot print_timing: id  1 | task {task} |        eval "
            "time =    1880.11 ms /   200 tokens (    9.40 ms per token,   106.38 tokens per "
            "second)\n")


def test_many_requests_are_read_from_the_last_cumulative_statistics_line():
    """Three requests, each followed by the statistics line so far: the totals are the last
    line's, not the first request's."""
    log = (timing(0) + slot(0, 120, 200) + stats("draft", 1, 50, 200, 120)
           + timing(1) + slot(1, 90, 160) + stats("draft", 2, 90, 360, 210)
           + timing(2) + slot(2, 150, 240) + stats("draft", 3, 150, 600, 360))
    rec = parse_any(log)
    assert (rec.rounds, rec.drafted, rec.accepted, rec.k) == (150, 600, 360, 4)
    assert rec.accepted_at is None and "statistics line of draft" in rec.notes[0]


def test_newer_statistics_give_per_position_counts():
    tail = ", #mean acc len = 3.40, #acc rate/pos = (0.900, 0.700, 0.500, 0.300)"
    rec = parse_any(slot(0, 240, 400) + stats("draft-mtp", 1, 100, 400, 240, tail))
    assert (rec.rounds, rec.k) == (100, 4)
    assert rec.accepted_at.tolist() == [90, 70, 50, 30] and rec.accepted == 240


def test_older_builds_and_two_implementations_are_added():
    """Older builds print 'draft acceptance rate = ...' and '#calls = n' statistics lines, one
    per implementation (an n-gram drafter beside a draft model): their counts are added."""
    log = (slot(0, 171, 297, old=True)
           + "statistics ngram_simple: #calls = 15, #gen drafts = 5, #acc drafts = 5, "
             "#gen tokens = 187, #acc tokens = 73\n"
           + "statistics draft: #calls = 10, #gen drafts = 10, #acc drafts = 10, "
             "#gen tokens = 110, #acc tokens = 98\n")
    rec = parse_any(log)
    assert (rec.rounds, rec.drafted, rec.accepted) == (15, 297, 171)
    assert any("ngram_simple, draft" in n for n in rec.notes)


def test_request_lines_alone_are_pooled():
    """No statistics line: every request's rounds from its mean acceptance length
    (m = 1 + a / rounds), per-position counts rebuilt from each request's rates and added."""
    log = (slot(0, 60, 150, ", mean acceptance length =  2.20, acceptance rate per position = "
                            "(0.700, 0.500)")
           + slot(1, 90, 200, ", mean acceptance length =  1.90, acceptance rate per position = "
                              "(0.600, 0.300)"))
    rec = parse_any(log)
    assert rec.rounds == 50 + 100  # 60 / 1.2, 90 / 0.9
    assert rec.accepted_at.tolist() == [35 + 60, 25 + 30]
    assert rec.drafted == 350 and "2 requests pooled" in rec.notes


def test_the_newest_lines_mean_len_and_a_trace_line_of_rates():
    """Newer llama-server prints ', mean len = %5.2f' on the request's line and, at -lv 4,
    the rates on a trace line of their own right after it: both are read."""
    log = (timing(0) + slot(0, 150, 200, ", mean len =  2.50")
           + "[1234] 0.07.000.101 T slot print_timing: id  1 | task 0 |      acc per pos = "
             "(0.900, 0.600)\n"
           + timing(1) + slot(1, 60, 100, ", mean len =  2.20")
           + "[1234] 0.07.001.101 T slot print_timing: id  1 | task 1 |      acc per pos = "
             "(0.700, 0.500)\n")
    rec = parse_any(log)
    assert (rec.rounds, rec.drafted, rec.k) == (100 + 50, 300, 2)  # 150 / 1.5, 60 / 1.2
    assert rec.accepted_at.tolist() == [90 + 35, 60 + 25]
    bare = parse_any(slot(0, 150, 200, ", mean len =  2.50"))  # the trace line not logged
    assert bare.rounds == 100 and bare.accepted_at is None


def test_old_request_lines_need_k_and_say_so():
    log = slot(0, 171, 297, old=True) + slot(1, 80, 100, old=True)
    with pytest.raises(MetricsError, match="enter k \\(the server's --draft-max\\)"):
        parse_any(log)
    rec = parse_any(log, k=3)
    assert rec.rounds == 99 + 33 and (rec.drafted, rec.accepted) == (397, 251)


RESPONSE = {  # /completion's response: generation_settings and timings (trimmed)
    "content": "...", "tokens_predicted": 200,
    "generation_settings": {"n_predict": 200, "temperature": 0.0, "speculative.n_max": 8,
                            "speculative.n_min": 0, "speculative.p_min": 0.75},
    "timings": {"prompt_n": 20, "predicted_n": 200, "draft_n": 240, "draft_n_accepted": 150},
}


def test_a_response_gives_its_own_draft_length():
    rec = parse_any(json.dumps(RESPONSE))
    assert (rec.k, rec.rounds, rec.drafted, rec.accepted) == (8, 30, 240, 150)
    assert parse_any(json.dumps(RESPONSE), k=4).k == 4  # the user's k wins
    pooled = parse_any(json.dumps([RESPONSE, RESPONSE]))
    assert (pooled.rounds, pooled.drafted) == (60, 480)
    bare = {**RESPONSE, "generation_settings": {"speculative.n_max": 0}}
    with pytest.raises(MetricsError, match="speculative.n_max must be a draft length"):
        parse_any(json.dumps(bare))


def test_the_shipped_example_still_reads():
    from specviz.views import plan as pv

    rec = parse_any(pv.example_text("llamacpp_log.txt"))
    assert (rec.rounds, rec.k, rec.drafted) == (87, 3, 259)
    assert np.allclose(rec.accepted_at / 87, [0.805, 0.632, 0.483], atol=0.006)
