"""llama.cpp's server log, read into record.Acceptance.

A log line has no parser, so plain string splitting reads it (no pattern: nothing can
backtrack), line by line, each line at most LOG_LINE_MAX characters. Two kinds of line:
- per request (a slot's print_timing): "draft acceptance = r (a accepted / g generated)",
  newer builds adding ", mean acceptance length = m, acceptance rate per position = (r1, ...)",
  the newest ", mean len = m" with the rates on a trace line of their own that follows
  ("acc per pos = (r1, ...)", at -lv 4), older builds writing "draft acceptance rate = r (a
  accepted / g generated)";
- per speculative implementation, cumulative since the server started: "statistics NAME:
  #calls(b,g,a) = ..., #gen drafts = n, #acc drafts = ..., #gen tokens = g, #acc tokens = a"
  (newer: ", #mean acc len = m, #acc rate/pos = (r1, ...)").
Where statistics lines are present, the last one of each implementation gives the totals of
every request (rounds = #gen drafts, drafted = #gen tokens, accepted = #acc tokens, a_i =
r_i x rounds); otherwise the request lines are pooled, each request's rounds being
a / (m - 1) (mean acceptance length m = 1 + a / rounds), or g / k with the draft length k.
"""

from __future__ import annotations

import math

import numpy as np

from ..core import interrupt
from ..core.tables import K_MAX
from .pasted import show
from .record import CHECK_EVERY, Acceptance, MetricsError, count, make_acceptance

LOG_LINE_MAX = 4096  # characters of one log line read (llama.cpp's are a few hundred)
LOG_NUMBER_MAX = 32  # characters of one number in a log line
REQUEST_KEY = "draft acceptance"  # a request's line
MEAN_KEYS = ("mean acceptance length", "mean len")  # a request's mean acceptance length
RATE_KEYS = ("acceptance rate per position", "acc per pos")  # and its rates per position
STATS_KEY = "#gen drafts"  # an implementation's cumulative statistics line
SRC = "llama.cpp log"


def _number(token: str, what: str) -> float:
    """One number of a log line, finite and at most LOG_NUMBER_MAX characters."""
    t = token.strip()
    x = None
    if 0 < len(t) <= LOG_NUMBER_MAX:
        try:
            x = float(t)
        except ValueError:
            x = None
    if x is None or not math.isfinite(x):
        raise MetricsError(f"{SRC}: {what} must be a finite number of at most "
                           f"{LOG_NUMBER_MAX} characters; got {show(t)}")
    return x


def _after(line: str, key: str) -> str | None:
    """The rest of the line after `key` and an '=' (None when key is absent)."""
    i = line.find(key)
    return None if i < 0 else line[i + len(key):].partition("=")[2]


def _field(line: str, key: str, what: str) -> int | None:
    """The count after 'key =' up to the next comma (None when key is absent)."""
    rest = _after(line, key)
    return None if rest is None else count(_number(rest.partition(",")[0], what),
                                           f"{SRC}: {what}")


def _rates(line: str, key: str) -> list[float] | None:
    """The tuple after 'key = (', as numbers in [0, 1] (None when key is absent)."""
    rest = _after(line, key)
    if rest is None:
        return None
    cells = rest.partition("(")[2].partition(")")[0].split(",")
    if len(cells) > K_MAX:
        raise MetricsError(f"{SRC}: {len(cells):,} rates per position; a draft length is at "
                           f"most {K_MAX}")
    rates = [_number(c, "a rate per position") for c in cells]
    if not all(0 <= r <= 1 for r in rates):
        raise MetricsError(f"{SRC}: rates per position must be in [0, 1]; got {show(rates)}")
    return rates


def _lines(text: str) -> tuple[list[str], dict[str, str]]:
    """(every request line, the last statistics line of each implementation)."""
    requests, stats = [], {}
    for i, line in enumerate(text.splitlines()):
        if i % CHECK_EVERY == 0:
            interrupt.check()
        is_request, is_stats = REQUEST_KEY in line, STATS_KEY in line
        if (is_request or is_stats) and len(line) > LOG_LINE_MAX:
            raise MetricsError(f"{SRC}: line {i + 1:,} is {len(line):,} characters; the cap "
                               f"is {LOG_LINE_MAX:,} (llama.cpp's lines are a few hundred)")
        if is_stats:
            head = line.partition(STATS_KEY)[0]
            name = head[head.rfind("statistics") + 10:].partition(":")[0].strip() \
                if "statistics" in head else ""
            stats[name or "draft"] = line
        elif is_request:
            requests.append(line)
        elif RATE_KEYS[1] in line and requests and len(line) <= LOG_LINE_MAX:
            requests[-1] += ", " + line[line.index(RATE_KEYS[1]):]  # its trace line
    return requests, stats


def _request(line: str) -> tuple[int, int, float | None, list[float] | None]:
    """(accepted, generated, mean acceptance length or None, rates per position or None)."""
    rest = line[line.index(REQUEST_KEY):].partition("(")[2]
    inside, _, tail = rest.partition(")")
    words = inside.replace("/", " / ").split()  # a accepted / g generated
    if len(words) != 5 or (words[1], words[2], words[4]) != ("accepted", "/", "generated"):
        raise MetricsError(f"{SRC}: expected 'draft acceptance = r (a accepted / g "
                           f"generated)'; got {show(line.strip())}")
    accepted = count(_number(words[0], "the accepted count"), f"{SRC}: accepted")
    drafted = count(_number(words[3], "the generated count"), f"{SRC}: generated")
    mean = next((m for m in (_after(tail, key) for key in MEAN_KEYS) if m is not None), None)
    mean = None if mean is None else _number(mean.partition(",")[0],
                                             "the mean acceptance length")
    rates = next((r for r in (_rates(tail, key) for key in RATE_KEYS) if r is not None), None)
    return accepted, drafted, mean, rates


def _record(*, rounds: int, drafted: int, accepted: int, pos: np.ndarray | None,
            k: int | None, notes: list[str]) -> Acceptance:
    """A record from totals; with per-position counts a_i (rebuilt from rates, so accepted
    is taken as their sum), k is their length."""
    if rounds == 0:
        raise MetricsError(f"{SRC}: no speculative rounds counted (#gen drafts = 0), so "
                           "there is no acceptance to measure")
    if pos is None:
        notes.append("no per-position rates: position independence is assumed")
        return make_acceptance(source=SRC, rounds=rounds, drafted=drafted, accepted=accepted,
                               k=k or max(1, round(drafted / rounds)), notes=tuple(notes))
    pos = pos.astype(np.int64)  # (k,) each <= rounds <= 2^53
    notes.append("per-position counts rebuilt from rates printed to 3 decimals")
    return make_acceptance(source=SRC, rounds=rounds, drafted=drafted,
                           accepted=int(pos.sum()), k=len(pos), accepted_at=pos,
                           notes=tuple(notes))


def _from_stats(stats: dict[str, str], reqs: list[tuple]) -> Acceptance:
    """The last statistics line of each implementation, added; where a line lacks the token
    counts (older builds), the request lines' sums stand in for them."""
    rows = [(_field(line, STATS_KEY, "#gen drafts"), _field(line, "#gen tokens", "#gen tokens"),
             _field(line, "#acc tokens", "#acc tokens"), _rates(line, "#acc rate/pos"))
            for line in stats.values()]
    notes = [f"rounds from the last cumulative statistics line of {', '.join(stats)} (every "
             f"request since the server started; {len(reqs):,} request "
             f"line{'s' if len(reqs) != 1 else ''} in the text)"]
    rounds = count(sum(r[0] for r in rows), f"{SRC}: #gen drafts")
    if all(r[1] is not None and r[2] is not None for r in rows):
        drafted, accepted = (count(sum(r[i] for r in rows), f"{SRC}: {what}")
                             for i, what in ((1, "#gen tokens"), (2, "#acc tokens")))
    elif reqs:
        drafted, accepted = (count(sum(r[i] for r in reqs), f"{SRC}: {what} (summed)")
                             for i, what in ((1, "generated"), (0, "accepted")))
        notes.append("drafted and accepted tokens from the request lines")
    else:
        raise MetricsError(f"{SRC}: the statistics line has no '#gen tokens' and '#acc "
                           "tokens', and there is no 'draft acceptance' line")
    rates = rows[0][3] if len(rows) == 1 else None
    if len(rows) > 1:
        notes.append("several speculative implementations added: per-position rates dropped")
    elif rates is None and len(reqs) == 1:  # older builds: the rates on the request line
        rates = reqs[0][3]
    pos = None if rates is None else np.round(np.array(rates) * rounds)  # (k,) r_i x rounds
    return _record(rounds=rounds, drafted=drafted, accepted=accepted, pos=pos, k=None,
                   notes=notes)


def _from_requests(reqs: list[tuple], k: int | None) -> Acceptance:
    """Every request line pooled: rounds from each one's mean acceptance length, or g / k."""
    drafted = count(sum(r[1] for r in reqs), f"{SRC}: generated (summed)")
    notes = [f"{len(reqs):,} requests pooled"] if len(reqs) > 1 else []
    if all(r[2] is not None and r[2] > 1 for r in reqs):
        per = [count(round(a / (m - 1.0)), f"{SRC}: rounds (accepted / (mean acceptance "
                     "length - 1))") for a, _, m, _ in reqs]
    elif k is not None:
        per = [max(1, round(g / k)) for _, g, _, _ in reqs]
        notes.append(f"rounds taken as generated / k (k = {k}; llama.cpp may draft fewer)")
    else:
        raise MetricsError(f"{SRC}: the request lines give no mean acceptance length and there "
                           "is no statistics line (#gen drafts), so the number of rounds is "
                           "unknown: enter k (the server's --draft-max)")
    rounds = count(sum(per), f"{SRC}: rounds (summed)")
    widths = {len(r[3]) if r[3] is not None else None for r in reqs}
    pos = None
    if len(widths) == 1 and None not in widths:  # every request: rates of one length
        pos = sum(np.round(np.array(r[3]) * n) for r, n in zip(reqs, per, strict=True))
    return _record(rounds=rounds, drafted=drafted, accepted=sum(r[0] for r in reqs), pos=pos,
                   k=k, notes=notes)


def parse_llamacpp_log(text: str, *, k: int | None = None) -> Acceptance:
    """llama.cpp's server log -> Acceptance: the cumulative statistics lines where there are
    any, else every request line pooled (k, the server's --draft-max, only where the lines
    do not give the rounds)."""
    lines, stats = _lines(text)
    reqs = [_request(line) for line in lines]  # each checked, also where statistics rule
    if stats:
        return _from_stats(stats, reqs)
    if not reqs:
        raise MetricsError("no llama.cpp line 'draft acceptance = r (a accepted / g "
                           "generated), ...' in the text")
    return _from_requests(reqs, k)
