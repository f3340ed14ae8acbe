"""Readers of server acceptance metrics, on fixtures written from each format's documentation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specviz.analysis.servermetrics import MetricsError, parse_any, parse_prometheus

EX = Path(__file__).resolve().parents[2] / "specviz" / "analysis" / "examples"
FX = Path(__file__).resolve().parents[1] / "fixtures" / "plan"


def read(name: str) -> str:
    return (EX / name if (EX / name).exists() else FX / name).read_text()


def test_two_scrapes_are_differenced_with_total_and_extra_labels():
    a = parse_any(read("vllm_metrics.prom"))
    assert (a.rounds, a.drafted, a.k) == (120_000, 480_000, 4)  # 170,000 - 50,000 rounds
    assert a.accepted_at.tolist() == [96_000, 72_000, 50_400, 33_264]
    assert a.accepted == sum(a.accepted_at)
    assert a.mean_acceptance_length == pytest.approx(1 + a.accepted / 120_000)
    assert any("2 scrapes" in n for n in a.notes)
    one = parse_any(read("vllm_one_scrape.prom"))
    assert one.accepted_at.tolist() == a.accepted_at.tolist()


def test_without_total_suffix_and_engines_added():
    a = parse_any(read("vllm_no_total.prom"))
    assert (a.rounds, a.accepted_at.tolist()) == (1000, [700, 490, 343])
    b = parse_any(read("vllm_two_engines.prom"))
    assert (b.rounds, b.accepted_at.tolist()) == (4000, [3200, 2400, 1600])


def test_several_models_need_a_choice():
    with pytest.raises(MetricsError, match="2 models"):
        parse_any(read("vllm_two_models.prom"))
    assert parse_prometheus(read("vllm_two_models.prom"), model="b").accepted_at.tolist() == \
        [500, 250]


def test_vllm_per_request_histogram():
    a = parse_any(read("vllm_request.json"))
    assert (a.rounds, a.drafted, a.accepted, a.k) == (43, 129, 10, 3)
    assert a.accepted_at.tolist() == [4, 3, 3]  # from the histogram [39, 1, 0, 3]
    assert a.draft_acceptance_rate == pytest.approx(0.07751937984496124)


def test_sglang_new_and_old_names():
    a = parse_any(read("sglang_meta_info.json"))
    assert (a.rounds, a.accepted, a.drafted, a.k) == (43, 63, 215, 5)
    assert a.accepted_at.tolist() == [32, 18, 7, 3, 3]  # from [11, 14, 11, 4, 0, 3]
    old = parse_any(read("sglang_old_names.json"))
    assert (old.rounds, old.drafted, old.accepted, old.k, old.accepted_at) == \
        (188, 940, 11, 5, None)


def test_llamacpp_timings_and_log():
    with pytest.raises(MetricsError, match="draft length"):
        parse_any(read("llamacpp_timings.json"))
    t = parse_any(read("llamacpp_timings.json"), k=8)
    assert (t.drafted, t.accepted, t.accepted_at) == (347, 65, None)
    log = parse_any(read("llamacpp_log.txt"))
    assert (log.rounds, log.k, log.drafted) == (87, 3, 259)
    assert np.allclose(log.accepted_at / 87, [0.805, 0.632, 0.483], atol=0.006)


def test_hand_entered():
    h = parse_any(read("hand_histogram.csv"))
    assert h.rounds == 1000 and h.accepted_at.tolist() == [700, 480, 320, 200]  # from
    # the histogram [300, 220, 160, 120, 200]
    r = parse_any(read("hand_rates.csv"), rounds=1000)
    assert r.accepted_at.tolist() == [800, 600, 450]
    with pytest.raises(MetricsError, match="number of rounds"):
        parse_any(read("hand_rates.csv"))


@pytest.mark.parametrize(("name", "message"), [
    ("not_prometheus.txt", "not Prometheus exposition"),
    ("vllm_decreasing.prom", "decreased between scrapes 1 and 2"),
    ("no_spec.prom", "no speculative-decoding counters"),
    ("vllm_request_bad_histogram.json", "does not add up"),
])
def test_bad_inputs_say_why(name, message):
    with pytest.raises(MetricsError, match=message):
        parse_any(read(name))


def test_more_bad_inputs():
    for text, message in [("", "empty"), ("{not json", "not valid JSON"),
                          ('{"foo": 1}', "no speculative-decoding fields"),
                          ("x" * 2_000_001, "cap"),
                          ("accepted,rounds\n0,5\n2,3\n", "0, 1, ..., k")]:
        with pytest.raises(MetricsError, match=message):
            parse_any(text)
    rising = read("vllm_no_total.prom").replace(" 490.0", " 900.0")
    with pytest.raises(MetricsError):
        parse_any(rising)
