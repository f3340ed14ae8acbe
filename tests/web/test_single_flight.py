"""An audience on a cold share link: the shared stream store plays a key's rounds once, the
other sessions wait for them and read them (issue 40, item 4: 25 clients on one unplayed
/llm link each played it, median 44 s, max 107 s)."""

from __future__ import annotations

import threading
import time

from specviz.views.work import Flights
from specviz.web import llmstage


class FakeStream:
    """What _played reads of a stream: rounds played on demand (a sleep each), bytes."""

    made = 0
    extended = 0

    def __init__(self) -> None:
        FakeStream.made += 1
        self.played, self.lock = 0, threading.Lock()
        self.nbytes, self.shared = 1_000, {}

    def kept(self, rnd: int) -> bool:
        return rnd < self.played

    def extend(self, rnd: int) -> int:
        with self.lock:
            FakeStream.extended += 1
            time.sleep(0.3)
            self.played = max(self.played, rnd + 1)
        return rnd


def test_a_cold_key_is_played_once_however_many_ask_at_once():
    FakeStream.made = FakeStream.extended = 0
    key, got, errors = ("flight test", time.monotonic()), [], []

    def ask() -> None:
        try:
            got.append(llmstage._played(key, FakeStream, 3))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and len(got) == 12
    assert FakeStream.made == 1 and FakeStream.extended == 1
    assert len({id(s) for s, _ in got}) == 1 and {r for _, r in got} == {3}


def test_flights_let_one_caller_in_per_key_and_others_through():
    flights, inside, most = Flights(), {"a": 0, "b": 0}, {"a": 0, "b": 0}
    lock = threading.Lock()

    def run(key: str) -> None:
        with flights.hold(key):
            with lock:
                inside[key] += 1
                most[key] = max(most[key], inside[key])
            time.sleep(0.02)
            with lock:
                inside[key] -= 1

    threads = [threading.Thread(target=run, args=(k,)) for k in "ab" * 6]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert most == {"a": 1, "b": 1} and flights.waiting("a") == 0
