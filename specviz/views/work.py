"""The app's work policy: its caps and budgets (within the engine's own limits, core.tables'
K_MAX, N_MAX, V_MAX), which page computations are heavy, its one bounded store (ByteLRU:
the gallery's audits, the web layer's models, streams and results) and single flight
(Flights: one computation per key, the other callers wait for it)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager

K_APP_MAX = 32  # drafted tokens per round in the app
N_APP_MAX = 10_000_000  # Monte Carlo decodes per run in the app
WORK_APP_MAX = 50_000_000  # decodes x (k + 1) per rule in one run: ~seconds and ~200 MB
# decodes x (k + 1) x rules in one request, a rule priced by the rows its round scores
# (core.rules.rules_cost: a tree counts its nodes, multi-draft its m candidates a position):
# about 5 s on 2 busy cores (benchmarks/memory.py drives the worst case of each page)
WORK_REQUEST_MAX = 60_000_000
WORK_STOP_S = 20.0  # the time stop behind those prices (core.interrupt.budget), loaded or not


def n_cap(k: int, rules: float = 1.0, widest: float = 1.0) -> int:
    """The most decodes per rule at draft length k when rules costing `rules` plain runs in
    all run in one request, the widest of them `widest` (core.rules.rules_cost prices a
    rule by the rows its round scores): N_APP_MAX, or less, so that n (k + 1) widest <=
    WORK_APP_MAX per rule and n (k + 1) rules <= WORK_REQUEST_MAX per request."""
    per_rule = int(WORK_APP_MAX // ((int(k) + 1) * max(1.0, float(widest))))
    per_request = int(WORK_REQUEST_MAX // ((int(k) + 1) * max(1.0, float(rules))))
    return max(1, min(N_APP_MAX, per_rule, per_request))


def heavy(fn: Callable) -> Callable:
    """Mark fn as heavy: at most a few such calls run at once across all sessions."""
    fn.heavy = True
    return fn


class ByteLRU:
    """Values by key, each with a size in bytes (or 1, to count them), and the parts it may
    share with others (part key -> bytes: a trimmed head two streams hold), each part
    counted once while any value kept holds it; the least recently used go first when the
    total passes max_bytes. A value larger than max_bytes is returned but not kept. With
    idle_s, expire() drops the values nobody has asked for in that long."""

    def __init__(self, max_bytes: int, idle_s: float | None = None) -> None:
        self.max_bytes, self.idle_s = int(max_bytes), idle_s
        self._items: OrderedDict[Hashable, tuple[object, int, dict]] = OrderedDict()
        self._used: dict[Hashable, float] = {}  # key -> when last asked for (monotonic)
        self._lock = threading.Lock()

    def expire(self, now: float | None = None) -> int:
        """Drop the values unused for idle_s (none without idle_s); how many went."""
        if self.idle_s is None:
            return 0
        now = time.monotonic() if now is None else now
        with self._lock:
            old = [k for k in self._items if now - self._used.get(k, now) > self.idle_s]
            for k in old:
                del self._items[k]
                self._used.pop(k, None)
        return len(old)

    def _total(self) -> int:
        parts: dict[Hashable, int] = {}
        for _, _, shared in self._items.values():
            parts.update(shared)
        return sum(size for _, size, _ in self._items.values()) + sum(parts.values())

    @property
    def nbytes(self) -> int:
        """What the values kept hold: their sizes, and each shared part once."""
        with self._lock:
            return self._total()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def get(self, key: Hashable, default=None):
        with self._lock:
            if key not in self._items:
                return default
            self._items.move_to_end(key)
            self._used[key] = time.monotonic()
            return self._items[key][0]

    def put(self, key: Hashable, value: object, size: int,
            shared: dict[Hashable, int] | None = None) -> object:
        size, shared = max(0, int(size)), dict(shared or {})
        with self._lock:
            self._items.pop(key, None)
            self._used.pop(key, None)
            if size + sum(shared.values()) > self.max_bytes:
                return value
            self._items[key] = (value, size, shared)
            self._used[key] = time.monotonic()
            while self._total() > self.max_bytes and len(self._items) > 1:
                self._used.pop(self._items.popitem(last=False)[0], None)
        return value

    def get_or_make(self, key: Hashable, make: Callable[[], object],
                    size: Callable[[object], int]) -> object:
        """The value at key, made (outside the lock) and kept when missing."""
        hit = self.get(key, self)  # the store itself is never a value
        if hit is not self:
            return hit
        value = make()
        return self.put(key, value, size(value))

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._used.clear()


class Flights:
    """One computation per key at a time: hold(key) lets one caller in and keeps the others
    asking for the same key waiting (calling wait() between looks: a stop check) until it
    is done; then each looks in its store again and finds the result there."""

    def __init__(self) -> None:
        self._gates: dict[Hashable, list] = {}  # key -> [lock, callers holding or waiting]
        self._lock = threading.Lock()

    def waiting(self, key: Hashable) -> int:
        """Callers holding or waiting for key."""
        with self._lock:
            return self._gates[key][1] if key in self._gates else 0

    @contextmanager
    def hold(self, key: Hashable, wait: Callable[[], object] = lambda: None) -> Iterator[None]:
        with self._lock:
            gate = self._gates.setdefault(key, [threading.Lock(), 0])
            gate[1] += 1
        try:
            while not gate[0].acquire(timeout=0.2):
                wait()
            try:
                yield
            finally:
                gate[0].release()
        finally:
            with self._lock:
                gate[1] -= 1
                if gate[1] == 0:
                    del self._gates[key]
