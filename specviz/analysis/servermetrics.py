"""Acceptance as servers report it, read into one record: rounds, drafted, accepted, per position.

Formats read (each with its own parser, never a pattern where a parser exists):
- vLLM's Prometheus exposition (prometheus_client's text parser): vllm:spec_decode_num_drafts,
  _num_draft_tokens, _num_accepted_tokens, _num_accepted_tokens_per_pos{position="i"} (from 0),
  with or without _total and any other labels; several scrapes pasted one after another are
  differenced, last minus first.
- vLLM's per-request metrics.speculative_decoding (JSON): acceptance_histogram, num_spec_steps,
  num_draft_tokens, num_accepted_draft_tokens, num_spec_tokens.
- SGLang's meta_info (JSON): spec_verify_ct, spec_num_proposed_drafts / spec_draft_token_num,
  spec_num_correct_drafts / spec_accept_token_num, spec_correct_drafts_histogram /
  spec_accept_histogram; or its server-wide avg_spec_accept_length.
- llama.cpp's response timings (JSON: draft_n, draft_n_accepted) and its server log line
  "draft acceptance = r (a accepted / g generated), mean acceptance length = m, acceptance rate
  per position = (r1, r2, ...)" (a log line has no parser; a fixed pattern reads it).
- A hand-entered histogram or per-position rates (CSV through pandas): serverformats.py.

Per position i (1-based) the record holds how many rounds kept draft i, which needs drafts 1..i
kept too; the histogram h_j (rounds keeping exactly j) and these counts a_i determine each
other: a_i = sum_{j >= i} h_j (a_0 = rounds).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
from prometheus_client.parser import text_string_to_metric_families

VLLM = "vllm:spec_decode_"
COUNTERS = ("num_drafts", "num_draft_tokens", "num_accepted_tokens", "num_accepted_tokens_per_pos")
MAX_TEXT_CHARS = 2_000_000  # a pasted or uploaded metrics text
K_MAX = 64  # positions a record may hold


ECHO_NAMES, ECHO_CHARS = 3, 60  # what a message repeats of the names it was given


def listed(names, *, most: int = ECHO_NAMES, chars: int = ECHO_CHARS) -> str:
    """names as 'a, b, c and 17 more', each cut to chars: a message about input that does
    not grow with it."""
    names = [str(n) for n in names]
    shown = [n if len(n) <= chars else n[:chars] + "…" for n in names[:most]]
    more = f" and {len(names) - most:,} more" if len(names) > most else ""
    return ", ".join(shown) + more


class MetricsError(ValueError):
    """Input that cannot be read as acceptance; the message says why, for the page."""


@dataclass(frozen=True)
class Acceptance:
    """Acceptance counts of many rounds, whatever the server."""

    source: str  # which format it was read from
    rounds: int  # verify steps (vLLM's num_drafts)
    drafted: int  # draft tokens proposed
    accepted: int  # draft tokens kept
    k: int  # draft tokens per round
    per_position: np.ndarray | None = None  # (k,) rounds keeping draft i, i = 1..k; None: unknown
    notes: tuple[str, ...] = field(default=())

    @property
    def mean_acceptance_length(self) -> float:
        """1 + accepted / rounds (vLLM's name; SGLang's accept length)."""
        return 1.0 + self.accepted / self.rounds

    @property
    def draft_acceptance_rate(self) -> float:
        """accepted / drafted: not alpha (later positions are tried less often)."""
        return self.accepted / self.drafted

    @property
    def histogram(self) -> np.ndarray | None:
        """(k+1,) rounds keeping exactly j drafts: h_j = a_j - a_(j+1), a_0 = rounds."""
        if self.per_position is None:
            return None
        a = np.concatenate([[self.rounds], self.per_position, [0]])
        return a[:-1] - a[1:]


# --------------------------------------------------------------------------- checks
def _count(x: object, what: str) -> int:
    ok = isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
    if not ok or x < 0 or x != int(x):
        raise MetricsError(f"{what} must be a whole number >= 0; got {x!r}")
    return int(x)


def make_acceptance(*, source: str, rounds: int, drafted: int, accepted: int, k: int,
                    per_position: np.ndarray | None = None,
                    notes: tuple[str, ...] = ()) -> Acceptance:
    """A checked record: rounds > 0, accepted <= drafted, per-position counts that fall
    with the position and add up to accepted."""
    rounds, drafted, accepted = (_count(v, n) for v, n in
                                 ((rounds, "rounds"), (drafted, "drafted"), (accepted, "accepted")))
    if rounds == 0:
        raise MetricsError(f"{source}: no speculative rounds counted (0 drafts), so there is "
                           "no acceptance to measure")
    if not 1 <= k <= K_MAX:
        raise MetricsError(f"{source}: draft length k = {k} is outside 1..{K_MAX}")
    if accepted > drafted:
        raise MetricsError(f"{source}: {accepted:,} accepted tokens exceed the {drafted:,} "
                           "drafted")
    if per_position is not None:
        a = np.asarray(per_position, dtype=np.int64)  # (k,)
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
        per_position = a
    return Acceptance(source, rounds, drafted, accepted, int(k), per_position, tuple(notes))


def from_histogram(hist: list, *, source: str, rounds: int | None = None,
                   accepted: int | None = None, drafted: int | None = None,
                   notes: tuple[str, ...] = ()) -> Acceptance:
    """A record from h_j = rounds keeping exactly j drafts (j = 0..k); the totals, where the
    server gives them too, must agree with it."""
    if not isinstance(hist, (list, tuple)) or len(hist) < 2:
        raise MetricsError(f"{source}: the acceptance histogram needs counts for 0..k "
                           "accepted drafts (at least two numbers)")
    h = np.array([_count(x, "a histogram count") for x in hist], dtype=np.int64)  # (k+1,)
    k = len(h) - 1
    n, acc = int(h.sum()), int(h @ np.arange(k + 1))
    for given, got, what in ((rounds, n, "rounds (sum of the histogram)"),
                             (accepted, acc, "accepted tokens (sum of j x h_j)")):
        if given is not None and _count(given, what) != got:
            raise MetricsError(f"{source}: the histogram does not add up: it gives {got:,} "
                               f"{what}, the totals say {int(given):,}")
    a = h[::-1].cumsum()[::-1][1:]  # (k,) a_i = sum_{j >= i} h_j
    return make_acceptance(source=source, rounds=n, drafted=drafted if drafted is not None
                           else n * k, accepted=acc, k=k, per_position=a, notes=notes)


# --------------------------------------------------------------------------- Prometheus
def _series(text: str) -> dict[tuple[str, tuple], list[float]]:
    """Each vLLM spec-decode counter series (name without _total, labels) -> its values, in
    the order the scrapes were pasted."""
    out: dict[tuple[str, tuple], list[float]] = {}
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                name = s.name.removesuffix("_total")
                if not name.startswith(VLLM) or name.endswith("_created"):
                    continue
                out.setdefault((name, tuple(sorted(s.labels.items()))), []).append(s.value)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        why = str(exc)[:80] + ("..." if len(str(exc)) > 80 else "")
        raise MetricsError(f"this is not Prometheus exposition text ({why})") from None
    return out


def _delta(values: list[float], key: tuple[str, tuple]) -> float:
    """last - first over the scrapes (the value itself for one scrape); counters only grow."""
    for i, (a, b) in enumerate(zip(values, values[1:], strict=False)):
        if b < a:
            labels = listed((f"{k}={v}" for k, v in key[1]), most=4)
            raise MetricsError(
                f"counter {key[0]}{{{labels}}} decreased between scrapes {i + 1} and {i + 2} "
                f"({a:g} -> {b:g}): the server restarted, or the scrapes come from different "
                "servers; paste scrapes of one server run, oldest first")
    return values[-1] - values[0] if len(values) > 1 else values[0]


def parse_prometheus(text: str, model: str | None = None) -> Acceptance:
    """vLLM's /metrics text -> Acceptance; several scrapes are differenced (last - first),
    series that differ only in other labels (engine, ...) are added; with several model_name
    values, `model` picks one."""
    series = _series(text)
    if not series:
        raise MetricsError("no speculative-decoding counters in the text: expected "
                           + ", ".join(VLLM + c for c in COUNTERS[:3])
                           + " (with or without _total), as vLLM exposes at /metrics")
    models = sorted({dict(lab).get("model_name", "") for _, lab in series} - {""})
    if model is None and len(models) > 1:
        raise MetricsError(f"the text holds counters of {len(models)} models "
                           f"({listed(models)}); choose one")
    scrapes = max(len(v) for v in series.values())
    totals: dict[str, float] = {}
    pos: dict[int, float] = {}
    for key, values in series.items():
        labels = dict(key[1])
        if model is not None and labels.get("model_name", model) != model:
            continue
        d = _delta(values, key)
        name = key[0].removeprefix(VLLM)
        if name == "num_accepted_tokens_per_pos":
            p = int(float(labels.get("position", "-1")))
            if p < 0:
                raise MetricsError("num_accepted_tokens_per_pos has a series without a "
                                   "position label (from 0)")
            pos[p] = pos.get(p, 0.0) + d
        else:
            totals[name] = totals.get(name, 0.0) + d
    missing = [VLLM + c for c in COUNTERS[:3] if c not in totals]
    if missing:
        raise MetricsError("speculative-decoding counters missing: " + ", ".join(missing))
    rounds = int(totals["num_drafts"])
    drafted, accepted = int(totals["num_draft_tokens"]), int(totals["num_accepted_tokens"])
    notes = [f"{scrapes} scrapes differenced (last minus first)"] if scrapes > 1 else []
    a = None
    if pos:
        k = max(pos) + 1
        a = np.array([pos.get(i, 0.0) for i in range(k)])
    else:
        k = round(drafted / rounds) if rounds else 1
        notes.append("no per-position counters: position independence is assumed")
    if rounds and drafted != k * rounds:
        notes.append(f"drafted tokens ({drafted:,}) are not k x rounds ({k} x {rounds:,}): "
                     "rounds of different lengths were pooled")
    return make_acceptance(source="vLLM Prometheus", rounds=rounds, drafted=drafted,
                           accepted=accepted, k=max(k, 1), per_position=a, notes=tuple(notes))


# --------------------------------------------------------------------------- any text
def parse_any(text: str, *, k: int | None = None, model: str | None = None,
              rounds: int | None = None) -> Acceptance:
    """Whatever a user pasted: JSON (vLLM per request, SGLang, llama.cpp), a llama.cpp log
    line, a hand-entered CSV, or Prometheus text. k (llama.cpp timings) and rounds
    (hand-entered rates) are needed only where the format does not say them."""
    if not isinstance(text, str) or not text.strip():
        raise MetricsError("the metrics text is empty")
    if len(text) > MAX_TEXT_CHARS:
        raise MetricsError(f"the metrics text is {len(text):,} characters; the cap is "
                           f"{MAX_TEXT_CHARS:,}")
    from . import serverformats  # it builds on this module's record

    body = text.strip()
    if body[0] in "{[":
        try:
            doc = json.loads(body)
        except json.JSONDecodeError as exc:
            raise MetricsError(f"this looks like JSON but is not valid JSON ({exc})") from None
        return serverformats.from_json(doc, k=k)
    head = body.splitlines()[0].replace(" ", "").lower()
    if head.startswith(("accepted,rounds", "position,rate")):
        return serverformats.parse_hand(body, rounds=rounds)
    if "draft acceptance" in body and "accepted" in body:
        return serverformats.parse_llamacpp_log(body)
    return parse_prometheus(body, model=model)
