"""llm.machine: each figure is work / time of one sample, the best kept per clock (small
shapes here: the figures' sizes are the benchmark's business, not a test's)."""

from __future__ import annotations

import numpy as np

from specviz.llm import machine


def test_figures_are_the_best_sample_by_each_clock(monkeypatch):
    monkeypatch.setattr(machine, "BIG_ROWS", 4096)
    monkeypatch.setattr(machine, "PRODUCT", (64, 64, 64))
    monkeypatch.setattr(machine, "ROWS_W", 128)
    m = machine.Machine(d=32, rows=(1, 5))
    seen = []
    real = machine.timed

    def spy(f):
        out = real(f)
        seen.append(out)
        return out

    monkeypatch.setattr(machine, "timed", spy)
    for _ in range(3):
        m.sample()
    per = len(seen) // 3  # two reads, the product, then one per row count
    assert per == 3 + 2
    big = 4096 * 32 * 4  # bytes
    for c in range(len(machine.CLOCKS)):
        times = [max(s[c], machine.TICK) for s in seen]
        reads = times[0::per] + times[1::per]  # the one-row product and the plain read
        assert np.isclose(m.bw[c], max(big / t for t in reads))
        assert np.isclose(m.peak[c], max(2 * 64**3 / t for t in times[2::per]))
        assert np.isclose(m.rate[5][c],
                          max(machine.RATE_REPEAT * 2 * 5 * 128 * 32 / t for t in times[4::per]))
        assert m.top[c] == max(m.peak[c], m.rate[1][c], m.rate[5][c])


def test_bandwidth_is_the_faster_read_whichever_it_is(monkeypatch):
    """A slow product cannot lower the bar: the bandwidth is the faster of the one-row
    product and the plain read, sample by sample (times given here, not measured)."""
    monkeypatch.setattr(machine, "BIG_ROWS", 4096)
    monkeypatch.setattr(machine, "PRODUCT", (64, 64, 64))
    monkeypatch.setattr(machine, "ROWS_W", 128)
    big = 4096 * 32 * 4  # bytes
    for product_s, plain_s in ((2.0, 1.0), (1.0, 4.0)):
        m = machine.Machine(d=32, rows=(1,))
        times = iter([(product_s, product_s), (plain_s, plain_s)] + [(9.0, 9.0)] * 2)
        monkeypatch.setattr(machine, "timed", lambda f, times=times: (f(), next(times))[1])
        m.sample()
        assert m.bw == [big / min(product_s, plain_s)] * 2
