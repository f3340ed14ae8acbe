"""Greedy decoding with and without speculation, and where the two part.

Greedy speculation is the one round engine on one-hot rows: q = onehot(argmax of the
draft's row), p = onehot(argmax z) of the target's logits z. The coin min(1, p(x) / q(x))
keeps a draft exactly when it is the target's argmax, and the residual
norm(max(0, p - q)) is the target's argmax, so the output is the target's own greedy text
whenever both decodes see the same argmax. They see the target's logits from different
passes: plain greedy from one position at a time, speculation from the verification pass
over k + 1 positions, whose matrix products sum in another order. Where the top two
logits are closer than that rounding, the argmax can flip: greedy output differs while
the method stays lossless. Top2 records the two largest logits of every row each decode
read, so compare() can show the margin z_1 - z_2 at the first difference in both passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .decode import Run, alone
from .pair import LLMPair
from .runner import Runner


@dataclass(frozen=True)
class Top2:
    """The two largest logits of one row and the pass that computed it."""

    ids: tuple[int, int]  # token ids, largest first
    logits: tuple[float, float]
    positions: int  # positions of the pass that computed the row (1: one at a time)

    @property
    def margin(self) -> float:
        """z_1 - z_2: how far the argmax is from flipping."""
        return self.logits[0] - self.logits[1]


def top2(z: np.ndarray, positions: int) -> Top2:
    """The two largest entries of z (V,): ties go to the lower id, as np.argmax."""
    i = int(np.argmax(z))
    rest = z.copy()
    rest[i] = -np.inf
    j = int(np.argmax(rest))
    return Top2((i, j), (float(z[i]), float(z[j])), int(positions))


def one_hot(V: int, x: int) -> np.ndarray:
    row = np.zeros(V)
    row[x] = 1.0
    return row


class GreedyPair(LLMPair):
    """The pair at temperature 0: p and q one-hot at their argmax. seen[prefix] is the
    Top2 of the target's logits at every prefix it scored."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.seen: dict[tuple[int, ...], Top2] = {}

    def score(self, prefix: Sequence[int], tails: Sequence[Sequence[int]], *,
              which: str = "p") -> None:
        n = len(self.target.passes)
        super().score(prefix, tails, which=which)
        if which != "p":
            return
        width = self.target.passes[-1][0] if len(self.target.passes) > n else 0
        for t in tails:
            full = [int(x) for x in prefix] + [int(x) for x in t]
            if tuple(full) not in self.seen:
                self.seen[tuple(full)] = top2(self.target.logits(full, [len(full)])[0], width)

    def p(self, prefix: Sequence[int]) -> np.ndarray:
        key = self.key(prefix)
        if key not in self.seen:
            self.seen[key] = top2(self.target.logits(prefix, [len(prefix)])[0], 1)
        return self._rows.get(("greedy p", key), lambda: one_hot(self.V, self.seen[key].ids[0]))

    def q(self, prefix: Sequence[int]) -> np.ndarray:
        if self.ngram is None and self.draft is None:
            return super().q(prefix)  # lookup: it proposes
        key = self.key(prefix)
        return self._rows.get(("greedy q", key),
                              lambda: one_hot(self.V, int(np.argmax(super(GreedyPair, self)
                                                                    .q(prefix)))))


def greedy_plain(runner: Runner, prompt: Sequence[int], *, max_new: int = 64,
                 seen: dict | None = None, stop_at_eos: bool = True) -> Run:
    """The target alone, greedy: x = argmax z, one position per call; seen (if given)
    gets the Top2 of every row read, by prefix."""

    def pick(seq: list[int], z: np.ndarray) -> int:
        t = top2(z, runner.passes[-1][0])
        if seen is not None:
            seen[tuple(seq)] = t
        return t.ids[0]

    return alone(runner, prompt, max_new=max_new, pick=pick, stop_at_eos=stop_at_eos)


@dataclass(frozen=True)
class Agreement:
    """Plain greedy against speculative greedy, token by token."""

    plain: tuple[int, ...]
    spec: tuple[int, ...]
    agree: tuple[bool, ...]  # position by position over the shorter of the two
    first: int | None  # index of the first difference (None: they agree throughout)
    one_pass: Top2 | None  # the one-position pass's top two at that prefix
    verify_pass: Top2 | None  # the verification pass's top two at the same prefix
    smallest: tuple[int, float] | None  # (index, margin) of the closest call of the plain run
    largest_shift: float  # largest |z_1 one pass - z_1 verify pass| where both read a row


def compare(plain: Sequence[int], spec: Sequence[int], plain_rows: Sequence[Top2 | None],
            spec_rows: Sequence[Top2 | None]) -> Agreement:
    """Where plain and spec (token ids) first differ, with the rows each decode read at
    position i (plain_rows[i], spec_rows[i]: Top2 at prompt + tokens[:i], None unknown)."""
    n = min(len(plain), len(spec))
    agree = tuple(int(a) == int(b) for a, b in zip(plain[:n], spec[:n], strict=True))
    first = next((i for i, ok in enumerate(agree) if not ok), None)
    upto = n if first is None else first + 1  # the prefixes both decodes share
    one = [plain_rows[i] if i < len(plain_rows) else None for i in range(upto)]
    ver = [spec_rows[i] if i < len(spec_rows) else None for i in range(upto)]
    margins = [(i, r.margin) for i, r in enumerate(one) if r is not None]
    shifts = [abs(a.logits[0] - b.logits[0]) for a, b in zip(one, ver, strict=True)
              if a is not None and b is not None and a.ids[0] == b.ids[0]]
    return Agreement(
        plain=tuple(int(t) for t in plain), spec=tuple(int(t) for t in spec), agree=agree,
        first=first, one_pass=None if first is None else one[first],
        verify_pass=None if first is None else ver[first],
        smallest=min(margins, key=lambda m: m[1]) if margins else None,
        largest_shift=max(shifts, default=0.0))


def rows_along(seen: dict, prompt: Sequence[int], tokens: Sequence[int]) -> list[Top2 | None]:
    """seen's Top2 at prompt + tokens[:i] for each i."""
    seq = [int(t) for t in prompt]
    out = []
    for t in tokens:
        out.append(seen.get(tuple(seq)))
        seq.append(int(t))
    return out
