"""Heavy jobs in line (issue 40 item 3: two presses of Measure held both workers ~4 minutes
and another visitor's /llm round waited 218 s): first come, first served, one job per
session at a time, the place in line shown, and long work handing its slot to the next
visitor between its pieces."""

from __future__ import annotations

import threading
import time

from specviz.core import interrupt
from specviz.web import guard
from specviz.web.guard import Line


def _wait_for(cond, timeout: float = 10.0) -> None:
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < timeout, "timed out"
        time.sleep(0.01)


def test_jobs_start_in_arrival_order_and_see_their_place():
    line, started, places = Line(1), [], {}
    line.take("first")
    threads = []
    for i in range(4):
        def job(i=i):
            line.take(f"s{i}", shown=lambda ahead: places.setdefault(i, []).append(ahead))
            started.append(i)
            line.give(f"s{i}")
        threads.append(threading.Thread(target=job))
        threads[-1].start()
        _wait_for(lambda n=i: len(line.waiting) == n + 1)
    line.give("first")
    for t in threads:
        t.join(10)
    assert started == [0, 1, 2, 3]
    assert places[3][0] == 3 and places[0][0] == 0  # three ahead of the last, none of the first


def test_a_sessions_second_job_does_not_hold_up_the_next_visitor():
    line, started = Line(2), []
    line.take("A")  # A's first job runs; a slot is free

    def job(who: str) -> None:
        line.take(who)
        started.append(who)

    a2 = threading.Thread(target=job, args=("A",))
    a2.start()
    _wait_for(lambda: len(line.waiting) == 1)
    time.sleep(0.3)
    assert started == []  # one job per session: A's second waits for its first
    b = threading.Thread(target=job, args=("B",))
    b.start()
    b.join(5)
    assert started == ["B"]  # B, after A's second, takes the free slot at once
    line.give("A")
    a2.join(5)
    assert started == ["B", "A"]


def test_long_work_hands_its_slot_to_the_next_visitor_at_its_turns(monkeypatch):
    monkeypatch.setattr(guard, "_LINE", Line(1))
    log = []

    def measurement() -> None:
        with guard.worker():
            for piece in range(6):
                interrupt.turn()
                log.append(("m", piece))
                time.sleep(0.1)

    def round_() -> None:
        with guard.worker():
            log.append(("r", 0))

    m = threading.Thread(target=measurement)
    m.start()
    _wait_for(lambda: len(log) >= 1)
    r = threading.Thread(target=round_)
    r.start()
    m.join(10)
    r.join(10)
    at = log.index(("r", 0))
    assert at <= 3  # it waited for at most the piece running when it came, not all six


def test_a_stop_while_waiting_for_its_turn_again_gives_back_nothing_twice(monkeypatch):
    line = Line(1)
    monkeypatch.setattr(guard, "_LINE", line)
    stop = threading.Event()

    def measurement() -> None:
        def check() -> None:
            if stop.is_set():
                raise interrupt.Interrupted("gone")
        interrupt.install(check)
        try:
            with guard.worker():
                while True:
                    interrupt.turn()
                    time.sleep(0.02)
        except interrupt.Interrupted:
            pass
        finally:
            interrupt.install(None)

    m = threading.Thread(target=measurement)
    m.start()
    _wait_for(lambda: line.free == 0)
    other = threading.Thread(target=lambda: (line.take("B"), time.sleep(0.3), line.give("B")))
    other.start()  # B waits; the measurement hands it its slot and waits for its turn
    _wait_for(lambda: "B" in line.running)
    stop.set()  # the measurement's session goes while it waits
    m.join(5)
    other.join(5)
    assert line.free == 1 and not line.running and not line.waiting
