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
  spec_accept_histogram; older builds' spec_verify_ct with completion_tokens (its server-wide
  avg_spec_accept_length alone is refused: an average, no counts).
- llama.cpp's response timings (JSON: draft_n, draft_n_accepted; k from generation_settings'
  speculative.n_max) and its server log: each request's "draft acceptance = r (a accepted / g
  generated), ..." line and the cumulative "statistics ...: #gen drafts = n, ..." lines
  (llamalog.py; a log line has no parser, so plain string splitting reads it).
- A hand-entered histogram or per-position rates (CSV through pandas): serverformats.py.

Per position i (1-based) the record holds how many rounds kept draft i, which needs drafts 1..i
kept too; the histogram h_j (rounds keeping exactly j) and these counts a_i determine each
other: a_i = sum_{j >= i} h_j (a_0 = rounds).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from prometheus_client.parser import text_string_to_metric_families

from ..core import interrupt
from ..core.tables import K_MAX
from .pasted import PasteError, cut, read_json, show, whole

VLLM = "vllm:spec_decode_"
COUNTERS = ("num_drafts", "num_draft_tokens", "num_accepted_tokens", "num_accepted_tokens_per_pos",
            "num_emitted_tokens")  # the last: vLLM v0 (accepted + one token per round)
SGLANG_GAUGE = "sglang:spec_accept_length"  # an average: refused, with a pointer
ESCAPED = "vllm_spec_decode_"  # the same names where a client escaped ':' (OpenMetrics)
MAX_TEXT_CHARS = 2_000_000  # a pasted or uploaded metrics text
COUNT_MAX = 2**53  # largest count read: Prometheus counters are floats, whole only up to 2^53
CHECK_EVERY = 1024  # samples or lines read between two stop checks
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


class ModelChoice(MetricsError):
    """A scrape of several models, none of them chosen (or one it does not hold)."""

    def __init__(self, message: str, models: tuple[str, ...]):
        super().__init__(message)
        self.models = models  # the model_name labels found, sorted


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
    models: tuple[str, ...] = ()  # a scrape's model_name labels, where it holds several

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
                    per_position: np.ndarray | None = None,
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
    a = h[::-1].cumsum()[::-1][1:]  # (k,) a_i = sum_{j >= i} h_j
    return make_acceptance(source=source, rounds=n, drafted=drafted if drafted is not None
                           else n * k, accepted=acc, k=k, per_position=a, notes=notes)


# --------------------------------------------------------------------------- Prometheus
def _label_text(key: tuple[str, tuple]) -> str:
    """A series as a message names it: its name and its labels, quoted short."""
    labels = ",".join(f"{k}={v}" for k, v in key[1])
    return key[0] + (f"{{{cut(labels)}}}" if labels else "")


def _series(text: str) -> dict[tuple[str, tuple], list[int]]:
    """Each vLLM spec-decode counter series (name without _total, labels) -> its values
    (each a count, checked), in the order the scrapes were pasted."""
    out: dict[tuple[str, tuple], list[int]] = {}
    names = {VLLM + c for c in COUNTERS}
    try:
        for i, s in enumerate(x for family in text_string_to_metric_families(text)
                              for x in family.samples):
            if i % CHECK_EVERY == 0:
                interrupt.check()
            name = s.name.removesuffix("_total")
            if name.startswith(ESCAPED):
                name = VLLM + name.removeprefix(ESCAPED)
            if name not in names:
                continue
            key = (name, tuple(sorted(s.labels.items())))
            n = whole(s.value, lo=0, hi=COUNT_MAX)
            if n is None:  # the message (built only then) names the series
                count(s.value, f"counter {_label_text(key)}")
            out.setdefault(key, []).append(n)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        if isinstance(exc, MetricsError):
            raise
        why = str(exc)[:80] + ("..." if len(str(exc)) > 80 else "")
        raise MetricsError(f"this is not Prometheus exposition text ({why})") from None
    return out


def _position(labels: dict) -> int:
    """The position label of num_accepted_tokens_per_pos (from 0), checked against K_MAX
    before anything is sized by it."""
    raw = labels.get("position")
    if raw is None:
        raise MetricsError("num_accepted_tokens_per_pos has a series without a position "
                           "label (from 0)")
    p = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 4 else None
    if p is None or p >= K_MAX:
        raise MetricsError(f"num_accepted_tokens_per_pos has position {show(raw)}; positions "
                           f"are whole numbers 0..{K_MAX - 1} (a draft length is at most "
                           f"{K_MAX})")
    return p


def _delta(values: list[int], key: tuple[str, tuple]) -> int:
    """last - first over the scrapes (the value itself for one scrape); counters only grow."""
    for i, (a, b) in enumerate(zip(values, values[1:], strict=False)):
        if b < a:
            raise MetricsError(
                f"counter {_label_text(key)} decreased between scrapes {i + 1} and {i + 2} "
                f"({a:,} -> {b:,}): the server restarted, or the scrapes come from different "
                "servers; paste scrapes of one server run, oldest first")
    return values[-1] - values[0] if len(values) > 1 else values[0]


def _names(series: dict) -> tuple[str, ...]:
    return tuple(sorted({dict(lab).get("model_name", "") for _, lab in series} - {""}))


def _models(series: dict, model: str | None) -> tuple[str, ...]:
    """The model_name values; several need `model`, one of them (else ModelChoice)."""
    models = _names(series)
    names = listed(models)
    if model is None and len(models) > 1:
        raise ModelChoice(f"the text holds counters of {len(models):,} models ({names}); "
                          "choose one", models)
    if model is not None and models and model not in models:
        raise ModelChoice(f"no counters of model {show(model)}; the text holds {names}",
                          models)
    return models


def _totals(series: dict, model: str | None) -> tuple[dict[str, int], dict[int, int]]:
    """(counter -> last - first summed over its series, position -> the same) of `model`."""
    totals: dict[str, int] = {}
    pos: dict[int, int] = {}
    for key, values in series.items():
        labels = dict(key[1])
        if model is not None and labels.get("model_name", model) != model:
            continue
        d = _delta(values, key)
        name = key[0].removeprefix(VLLM)
        if name == "num_accepted_tokens_per_pos":
            p = _position(labels)
            pos[p] = pos.get(p, 0) + d
        else:
            totals[name] = totals.get(name, 0) + d
    return totals, pos


def _rounds(totals: dict[str, int], notes: list[str]) -> int:
    """num_drafts (v1), or emitted - accepted tokens (v0: a round emits its accepted drafts
    and one token of the target's)."""
    missing = [VLLM + c for c in COUNTERS[1:3] if c not in totals]
    if "num_drafts" not in totals and "num_emitted_tokens" not in totals:
        missing.insert(0, f"{VLLM}num_drafts (v1) or {VLLM}num_emitted_tokens (v0)")
    if missing:
        found = ", ".join(VLLM + c for c in totals) or "none"
        raise MetricsError(f"speculative-decoding counters missing: {', '.join(missing)} "
                           f"(found: {found})")
    if "num_drafts" in totals:
        return count(totals["num_drafts"], f"{VLLM}num_drafts (summed over its series)")
    notes.append("vLLM v0 counters: rounds taken as emitted minus accepted tokens")
    return count(totals["num_emitted_tokens"] - totals["num_accepted_tokens"],
                 f"rounds ({VLLM}num_emitted_tokens - {VLLM}num_accepted_tokens)")


def parse_prometheus(text: str, model: str | None = None) -> Acceptance:
    """vLLM's /metrics text (v1 or v0 counters, names with ':' or escaped '_') ->
    Acceptance; several scrapes are differenced (last - first), series that differ only in
    other labels (engine, ...) are added; with several model_name values, `model` picks one."""
    series = _series(text)
    if not series and SGLANG_GAUGE in text:
        raise MetricsError(f"SGLang's /metrics gives only gauges ({SGLANG_GAUGE}, "
                           "sglang:spec_accept_rate: averages, no counts of rounds or drafts): "
                           "paste a response's meta_info (spec_verify_ct, ...) instead")
    if not series:
        raise MetricsError("no speculative-decoding counters in the text: expected "
                           + ", ".join(VLLM + c for c in COUNTERS[:3])
                           + " (with or without _total), as vLLM exposes at /metrics")
    models = _models(series, model)
    scrapes = max(len(v) for v in series.values())
    totals, pos = _totals(series, model)
    notes = [f"{scrapes} scrapes differenced (last minus first)"] if scrapes > 1 else []
    rounds = _rounds(totals, notes)
    drafted, accepted = (count(totals[c], f"{VLLM}{c} (summed over its series)")
                         for c in COUNTERS[1:3])
    a = None
    if pos:
        k = max(pos) + 1
        a = np.array([count(pos.get(i, 0), f"{COUNTERS[3]} at position {i}")
                      for i in range(k)], dtype=np.int64)  # (k,) k <= K_MAX
    else:
        k = round(drafted / rounds) if rounds else 1
        notes.append("no per-position counters: position independence is assumed")
    if rounds and drafted != k * rounds:
        notes.append(f"drafted tokens ({drafted:,}) are not k x rounds ({k} x {rounds:,}): "
                     "rounds of different lengths were pooled")
    rec = make_acceptance(source="vLLM Prometheus", rounds=rounds, drafted=drafted,
                          accepted=accepted, k=max(k, 1), per_position=a, notes=tuple(notes))
    return replace(rec, models=models) if len(models) > 1 else rec


# --------------------------------------------------------------------------- any text
def parse_scrapes(before: str, after: str, *, model: str | None = None) -> Acceptance:
    """Two /metrics scrapes of one vLLM server, an earlier and a later one: the counters
    differenced, later minus earlier (as two scrapes pasted one after the other)."""
    for what, text in (("earlier", before), ("later", after)):
        if not isinstance(text, str) or not text.strip():
            raise MetricsError(f"the {what} scrape is empty")
        if len(text) > MAX_TEXT_CHARS // 2:
            raise MetricsError(f"the {what} scrape is {len(text):,} characters; the cap is "
                               f"{MAX_TEXT_CHARS // 2:,}")
        if text.lstrip()[0] in "{[" or llamalog_keys(text):
            raise MetricsError(f"the {what} scrape is not Prometheus text: two scrapes are "
                               "differenced only for vLLM's /metrics")
    return parse_prometheus(before.strip() + "\n" + after.strip() + "\n", model=model)


def llamalog_keys(text: str) -> bool:
    """Whether text holds a llama.cpp log line (a request's or a statistics line)."""
    from . import llamalog

    return llamalog.REQUEST_KEY in text or llamalog.STATS_KEY in text


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
    from . import llamalog, serverformats  # they build on this module's record

    body = text.strip()
    is_log = llamalog_keys(body)
    if body[0] in "{[":
        try:
            return serverformats.from_json(read_json(body), k=k)
        except PasteError as exc:
            if not is_log:  # a log's lines may start "[pid]"
                raise MetricsError(str(exc)) from None
    head = body.splitlines()[0].replace(" ", "").lower()
    if head.startswith(("accepted,rounds", "position,rate")):
        return serverformats.parse_hand(body, rounds=rounds)
    if is_log:
        return llamalog.parse_llamacpp_log(body, k=k)
    return parse_prometheus(body, model=model)
