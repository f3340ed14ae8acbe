"""The acceptance record every server format is read into, and its checks: counts of rounds,
drafted and accepted tokens, and per position i (1-based) how many rounds kept draft i, which
needs drafts 1..i kept too. The histogram h_j (rounds keeping exactly j) and these counts a_i
determine each other: a_i = sum_{j >= i} h_j (a_0 = rounds).

Averages is the other record: what a server gives as an average only (SGLang's gauges and
server info), with no counts to weigh it by.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
from prometheus_client.parser import text_string_to_metric_families

from ..core import interrupt
from ..core.roundstats import Rates, accepted_at, quotient
from ..core.tables import K_MAX
from .pasted import listed, show, whole

COUNT_MAX = 2**53  # largest count read: Prometheus counters are floats, whole only up to 2^53
CHECK_EVERY = 1024  # samples or lines read between two stop checks


class MetricsError(ValueError):
    """Input that cannot be read as acceptance; the message says why, for the page."""


class ModelChoice(MetricsError):
    """A scrape of several models, none of them chosen (or one it does not hold)."""

    def __init__(self, message: str, models: tuple[str, ...]):
        super().__init__(message)
        self.models = models  # the model_name labels found, sorted


@dataclass(frozen=True)
class Acceptance(Rates):
    """Acceptance counts of many rounds, whatever the server."""

    source: str  # which format it was read from
    rounds: int  # verify steps (vLLM's num_drafts)
    drafted: int  # draft tokens proposed
    accepted: int  # draft tokens kept
    k: int  # draft tokens per round
    accepted_at: np.ndarray | None = None  # (k,) rounds keeping draft i, i = 1..k; None: unknown
    notes: tuple[str, ...] = field(default=())
    models: tuple[str, ...] = ()  # a scrape's model_name labels, where it holds several


@dataclass(frozen=True)
class Averages:
    """Acceptance a server gives only as an average (SGLang's gauges and server info): the mean
    acceptance length L = 1 + accepted / rounds at draft length k. No count of rounds stands
    behind it, so it carries no interval and no per-position law."""

    source: str
    mean_acceptance_length: float  # L, in [1, k + 1]
    k: int  # draft tokens per round
    notes: tuple[str, ...] = field(default=())
    models: tuple[str, ...] = ()  # a scrape's model_name labels, where it holds several
    accepted_at: None = None  # never known from an average

    @property
    def draft_acceptance_rate(self) -> float:
        """(L - 1) / k: accepted / drafted, had every round drafted k."""
        return quotient(self.mean_acceptance_length - 1.0, self.k)


# --------------------------------------------------------------------------- checks
def count(x: object, what: str) -> int:
    """x as a count: a whole number in 0..COUNT_MAX, else MetricsError naming `what`."""
    n = whole(x, lo=0, hi=COUNT_MAX)
    if n is None:
        raise MetricsError(f"{what} must be a whole number in 0..{COUNT_MAX:,} (2^53); "
                           f"got {show(x)}")
    return n


def draft_length(x: object, what: str) -> int:
    """x as a draft length k: a whole number in 1..K_MAX, else MetricsError naming `what`."""
    k = whole(x, lo=1, hi=K_MAX)
    if k is None:
        raise MetricsError(f"{what} must be a draft length in 1..{K_MAX}; got {show(x)}")
    return k


def make_acceptance(*, source: str, rounds: int, drafted: int, accepted: int, k: int,
                    accepted_at: np.ndarray | None = None,
                    notes: tuple[str, ...] = ()) -> Acceptance:
    """A checked record: rounds > 0, accepted <= drafted, per-position counts that fall
    with the position and add up to accepted."""
    rounds, drafted, accepted = (count(v, f"{source}: {n}") for v, n in
                                 ((rounds, "rounds"), (drafted, "drafted"), (accepted, "accepted")))
    if rounds == 0:
        raise MetricsError(f"{source}: no speculative rounds counted (0 drafts), so there is "
                           "no acceptance to measure")
    if whole(k, lo=1, hi=K_MAX) is None:
        raise MetricsError(f"{source}: draft length k = {show(k)} is outside 1..{K_MAX}")
    if drafted < rounds:
        raise MetricsError(f"{source}: {drafted:,} drafted tokens are fewer than the "
                           f"{rounds:,} rounds; every round drafts at least one token")
    if accepted > drafted:
        raise MetricsError(f"{source}: {accepted:,} accepted tokens exceed the {drafted:,} "
                           "drafted")
    if accepted_at is not None:
        a = np.asarray(accepted_at, dtype=np.int64)  # (k,)
        if a.shape != (k,) or (a < 0).any():
            raise MetricsError(f"{source}: per-position counts must be {k} numbers >= 0")
        if a[0] > rounds or (np.diff(a) > 0).any():
            raise MetricsError(
                f"{source}: per-position accepted counts {a.tolist()} rise with the position "
                f"or exceed the {rounds:,} rounds; draft i can only be kept when drafts "
                "1..i-1 were")
        if int(a.sum()) != accepted:
            raise MetricsError(f"{source}: per-position accepted counts add up to "
                               f"{int(a.sum()):,}, not the {accepted:,} accepted tokens")
        accepted_at = a
    return Acceptance(source, rounds, drafted, accepted, int(k), accepted_at, tuple(notes))


def from_histogram(hist: list, *, source: str, rounds: int | None = None,
                   accepted: int | None = None, drafted: int | None = None,
                   notes: tuple[str, ...] = ()) -> Acceptance:
    """A record from h_j = rounds keeping exactly j drafts (j = 0..k); the totals, where the
    server gives them too, must agree with it."""
    if not isinstance(hist, (list, tuple)) or len(hist) < 2:
        raise MetricsError(f"{source}: the acceptance histogram needs counts for 0..k "
                           "accepted drafts (at least two numbers)")
    if len(hist) > K_MAX + 1:
        raise MetricsError(f"{source}: the histogram has {len(hist):,} buckets; a draft "
                           f"length k is at most {K_MAX} (k + 1 buckets)")
    h = np.array([count(x, f"{source}: a histogram count") for x in hist],
                 dtype=np.int64)  # (k+1,)
    if int(h.sum()) > COUNT_MAX:
        raise MetricsError(f"{source}: the histogram counts more than {COUNT_MAX:,} rounds")
    k = len(h) - 1
    n, acc = int(h.sum()), int(h @ np.arange(k + 1))
    for given, got, what in ((rounds, n, "rounds (sum of the histogram)"),
                             (accepted, acc, "accepted tokens (sum of j x h_j)")):
        if given is not None and count(given, what) != got:
            raise MetricsError(f"{source}: the histogram does not add up: it gives {got:,} "
                               f"{what}, the totals say {int(given):,}")
    return make_acceptance(source=source, rounds=n, drafted=drafted if drafted is not None
                           else n * k, accepted=acc, k=k, accepted_at=accepted_at(h),
                           notes=notes)


def not_zero(length: float, *, source: str, what: str) -> None:
    """A server's average of 0 means it has no average yet: say so."""
    if length == 0:
        raise MetricsError(f"{source}: {what} is 0: the server has not verified a draft yet "
                           "(or runs without speculative decoding)")


def make_averages(*, source: str, length: object, what: str, k: int,
                  notes: tuple[str, ...] = (), models: tuple[str, ...] = ()) -> Averages:
    """A checked average: L (named `what` in messages) finite and in [1, k + 1]."""
    k = draft_length(k, f"{source}: k")
    if isinstance(length, bool) or not isinstance(length, (int, float)) \
            or not np.isfinite(length):
        raise MetricsError(f"{source}: {what} must be a number; got {show(length)}")
    not_zero(length, source=source, what=what)
    if not 1.0 <= length <= k + 1:
        raise MetricsError(f"{source}: {what} = {length:.4g} is outside 1..k + 1 = {k + 1} "
                           f"(k = {k}); a round keeps 0..k drafts and adds one token")
    return Averages(source, float(length), k, tuple(notes), tuple(models))


def choose_model(labels: Iterable[tuple], model: str | None, *,
                 what: str = "counters") -> tuple[str, ...]:
    """The model_name values of these series' labels (sorted); several need `model`, one of
    them (else ModelChoice)."""
    models = tuple(sorted({dict(lab).get("model_name", "") for lab in labels} - {""}))
    names = listed(models)
    if model is None and len(models) > 1:
        raise ModelChoice(f"the text holds {what} of {len(models):,} models ({names}); "
                          "choose one", models)
    if model is not None and models and model not in models:
        raise ModelChoice(f"no {what} of model {show(model)}; the text holds {names}",
                          models)
    return models


def prometheus_samples(text: str, prefix: str) -> Iterator[tuple[str, tuple, float, str]]:
    """(name, labels, value, its family's HELP text) of each sample of Prometheus text, read
    by prometheus_client's parser, names with `prefix` written as a client that escapes ':'
    (OpenMetrics) writes them read as the prefix; MetricsError where the parser refuses it."""
    escaped = prefix.replace(":", "_")
    try:
        samples = ((fam, s) for fam in text_string_to_metric_families(text) for s in fam.samples)
        for i, (fam, s) in enumerate(samples):
            if i % CHECK_EVERY == 0:
                interrupt.check()
            name = prefix + s.name.removeprefix(escaped) if s.name.startswith(escaped) \
                else s.name
            yield name, tuple(sorted(s.labels.items())), s.value, fam.documentation or ""
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        why = str(exc)[:80] + ("..." if len(str(exc)) > 80 else "")
        raise MetricsError(f"this is not Prometheus exposition text ({why})") from None
