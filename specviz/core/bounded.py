"""A least-recently-used store bounded by bytes, not entries (thread-safe)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable


class ByteLRU:
    """Values by key, each with a size in bytes; the least recently used go first when the
    total passes max_bytes. A value larger than max_bytes is returned but not kept."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = int(max_bytes)
        self._items: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(size for _, size in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def get(self, key: Hashable, default=None):
        with self._lock:
            if key not in self._items:
                return default
            self._items.move_to_end(key)
            return self._items[key][0]

    def put(self, key: Hashable, value: object, size: int) -> object:
        size = max(0, int(size))
        with self._lock:
            self._items.pop(key, None)
            if size > self.max_bytes:
                return value
            self._items[key] = (value, size)
            total = sum(s for _, s in self._items.values())
            while total > self.max_bytes and len(self._items) > 1:
                _, (_, s) = self._items.popitem(last=False)
                total -= s
        return value

    def get_or_make(self, key: Hashable, make: Callable[[], object],
                    size: Callable[[object], int]) -> object:
        """The value at key, made (outside the lock) and kept when missing."""
        hit = self.get(key, _MISSING)
        if hit is not _MISSING:
            return hit
        value = make()
        return self.put(key, value, size(value))

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


_MISSING = object()
