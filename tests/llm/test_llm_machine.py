"""llm.machine: each figure is work / time of one sample, the best kept per clock, the work
done in the pass's threads at once (small shapes here: the figures' sizes are the
benchmark's business, not a test's)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from specviz.llm import blas, machine


@pytest.mark.parametrize("threads", [1, 2])
def test_figures_are_the_best_sample_by_each_clock(monkeypatch, threads):
    """Bandwidth: the bytes once over the faster read, whatever the threads; the rates: the
    FLOPs of every thread's products summed."""
    monkeypatch.setattr(machine, "BIG_ROWS", 4096)
    monkeypatch.setattr(machine, "PRODUCT", (64, 64, 64))
    monkeypatch.setattr(machine, "ROWS_W", 128)
    m = machine.Machine(d=32, rows=(1, 5), threads=threads)
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
        assert np.isclose(m.peak[c], max(threads * 2 * 64**3 / t for t in times[2::per]))
        assert np.isclose(m.rate[5][c], max(
            threads * machine.RATE_REPEAT * 2 * 5 * 128 * 32 / t for t in times[4::per]))
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


@pytest.mark.parametrize("threads", [1, 2])
def test_each_figure_is_measured_in_the_pass_threads_at_once(monkeypatch, threads):
    """As a pass runs: each read of the big matrix in `threads` concurrent parts (the one-row
    product over contiguous tile ranges covering it once, the plain read over array parts),
    the large product and each row count's products run in `threads` threads at once, each
    n-row product one part (n made even) over the whole in-cache matrix."""
    monkeypatch.setattr(machine, "BIG_ROWS", 4096)  # 64 tiles at d = 32
    monkeypatch.setattr(machine, "PRODUCT", (64, 64, 64))
    monkeypatch.setattr(machine, "ROWS_W", 128)  # 2 tiles
    m = machine.Machine(d=32, rows=(1, 5), threads=threads)
    groups: list[int] = []  # functions handed to concurrently at once, by machine
    real = machine.concurrently
    monkeypatch.setattr(machine, "concurrently", lambda fns: groups.append(len(fns)) or real(fns))
    seen: list[tuple[int, int, int]] = []  # (rows of x, tiles, thread) of each BLAS product
    lock = threading.Lock()

    def record(a, b, **kw):
        with lock:
            seen.append((len(a), len(b), threading.get_ident()))
        return np.matmul(a, b, **kw)

    monkeypatch.setattr(blas, "matmul", record)
    m.sample()
    assert groups == [threads] * 4  # the plain read, the large product, rows 1 and 5
    read = [s for s in seen if s[1] != 2]
    assert sorted(n for _, n, _ in read) == [64 // threads] * threads
    assert {r for r, _, _ in read} == {2} and len({who for *_, who in read}) == threads
    for rows in (2, 6):
        mine = [s for s in seen if s[1] == 2 and s[0] == rows]
        assert len(mine) == threads * machine.RATE_REPEAT
        assert len({who for *_, who in mine}) == threads


def test_the_cpu_clock_counts_every_thread_of_the_process():
    """A split product's CPU time is spent in the pool's threads too: the cpu clock is the
    process's, so work done on the pool while the caller waits is counted."""
    spent: list[float] = []

    def spin():
        c0 = time.thread_time()
        while time.thread_time() - c0 < 0.05:
            pass
        spent.append(time.thread_time() - c0)

    wall, cpu = machine.timed(lambda: machine.concurrently([lambda: None, spin]))
    assert cpu >= 0.99 * spent[0] and wall >= 0.99 * spent[0]
