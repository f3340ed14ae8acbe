"""A measured figure as the median of repeated runs with its spread, and whether the machine
was busy while they ran.

Timings on a shared CPU move by tens of percent from one run to the next. So every figure
we print comes from several runs taken interleaved (each repetition runs every variant once,
so a busy minute slows them all alike), and reads median (lo-hi), lo and hi the smallest and
largest of the runs; two measurements agree when their spreads overlap. The 1-minute load
average before the runs, against the CPU count, says whether other work shared the machine.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

BUSY_PER_CPU = 0.5  # a 1-minute load average above this many per CPU: the machine is busy


@dataclass(frozen=True)
class Spread:
    """The median of n runs and their range [lo, hi]."""

    median: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, values: Iterable[float | None]) -> Spread | None:
        """The runs' median and range (None and NaN left out); None when none is left."""
        v = np.array([x for x in values if x is not None and math.isfinite(x)], dtype=float)
        if not len(v):
            return None
        return cls(float(np.median(v)), float(v.min()), float(v.max()), len(v))

    def text(self, fmt: str = ".2f", unit: str = "") -> str:
        """'36.2 (34.9-38.0)', or '36.2' for one run or no spread."""
        head = f"{self.median:{fmt}}{unit}"
        if self.n < 2 or f"{self.lo:{fmt}}" == f"{self.hi:{fmt}}":
            return head
        return f"{head} ({self.lo:{fmt}}-{self.hi:{fmt}})"

    def overlaps(self, other: Spread) -> bool:
        """Whether the two ranges share a value: the two measurements agree."""
        return self.lo <= other.hi and other.lo <= self.hi

    def above(self, other: Spread) -> bool:
        """Whether every run of self lies above every run of other (beyond both spreads)."""
        return self.lo > other.hi


def scaled(s: Spread | None, factor: float) -> Spread | None:
    return None if s is None else Spread(s.median * factor, s.lo * factor, s.hi * factor, s.n)


@dataclass(frozen=True)
class Load:
    """The 1-minute load average before and after a measurement, and the CPU count."""

    before: float
    after: float
    cpus: int

    @property
    def busy(self) -> bool:
        """Other work shared the machine when the runs began."""
        return self.before > BUSY_PER_CPU * self.cpus

    def text(self) -> str:
        """The machine's load, in a sentence that says whether the figures can be trusted."""
        head = (f"Load average {self.before:.1f} before the runs and {self.after:.1f} after "
                f"(1 minute, {self.cpus} CPU{'s' * (self.cpus != 1)}; the runs themselves add "
                "up to about the threads they use)")
        if self.busy:
            return (head + f": the machine was busy (above {BUSY_PER_CPU:g} per CPU before "
                    "the runs), so the times are noisy; rerun on a quiet machine before "
                    "acting on them.")
        return head + ": the machine was quiet."


def load_average() -> float:
    """The 1-minute load average (NaN where the system has none)."""
    try:
        return float(os.getloadavg()[0])
    except OSError:
        return float("nan")


def cpus() -> int:
    return os.cpu_count() or 1
