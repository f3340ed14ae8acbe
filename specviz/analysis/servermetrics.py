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
  spec_accept_histogram; older builds' spec_verify_ct with completion_tokens.
- SGLang's averages: the /metrics gauges sglang:spec_accept_length and sglang:spec_accept_rate,
  and /get_server_info's avg_spec_accept_length (gauges.py): read as an Averages record, with
  no interval and no per-position law.
- llama.cpp's response timings (JSON: draft_n, draft_n_accepted; k from generation_settings'
  speculative.n_max) and its server log: each request's "draft acceptance = r (a accepted / g
  generated), ..." line and the cumulative "statistics ...: #gen drafts = n, ..." lines
  (llamalog.py; a log line has no parser, so plain string splitting reads it).
- A hand-entered histogram or per-position rates (CSV through pandas): serverformats.py.

The records and their checks: record.py.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..core.tables import K_MAX
from . import gauges, llamalog, serverformats
from .pasted import PasteError, cut, read_json, show, sized, whole
from .record import (
    COUNT_MAX,
    Acceptance,
    Averages,
    MetricsError,
    choose_model,
    count,
    make_acceptance,
    prometheus_samples,
)

VLLM = "vllm:spec_decode_"
COUNTERS = ("num_drafts", "num_draft_tokens", "num_accepted_tokens", "num_accepted_tokens_per_pos",
            "num_emitted_tokens")  # the last: vLLM v0 (accepted + one token per round)
ESCAPED = "vllm_spec_decode_"  # the same names where a client escaped ':' (OpenMetrics)
MAX_TEXT_CHARS = 2_000_000  # a pasted or uploaded metrics text


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
    for name, labels, value, _ in prometheus_samples(text, VLLM):
        key = (name.removesuffix("_total"), labels)
        if key[0] not in names:
            continue
        n = whole(value, lo=0, hi=COUNT_MAX)
        if n is None:  # the message (built only then) names the series
            count(value, f"counter {_label_text(key)}")
        out.setdefault(key, []).append(n)
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
    if not series:
        raise MetricsError("no speculative-decoding counters in the text: expected "
                           + ", ".join(VLLM + c for c in COUNTERS[:3])
                           + " (with or without _total), as vLLM exposes at /metrics")
    models = choose_model((lab for _, lab in series), model)
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
                          accepted=accepted, k=max(k, 1), accepted_at=a, notes=tuple(notes))
    return replace(rec, models=models) if len(models) > 1 else rec


# --------------------------------------------------------------------------- any text
def parse_scrapes(before: str, after: str, *, model: str | None = None) -> Acceptance:
    """Two /metrics scrapes of one vLLM server, an earlier and a later one: the counters
    differenced, later minus earlier (as two scrapes pasted one after the other)."""
    for what, text in (("earlier", before), ("later", after)):
        sized(text, f"the {what} scrape", MAX_TEXT_CHARS // 2, MetricsError)
        if text.lstrip()[0] in "{[" or llamalog_keys(text):
            raise MetricsError(f"the {what} scrape is not Prometheus text: two scrapes are "
                               "differenced only for vLLM's /metrics")
    return parse_prometheus(before.strip() + "\n" + after.strip() + "\n", model=model)


def llamalog_keys(text: str) -> bool:
    """Whether text holds a llama.cpp log line (a request's or a statistics line)."""
    return llamalog.REQUEST_KEY in text or llamalog.STATS_KEY in text


def parse_any(text: str, *, k: int | None = None, model: str | None = None,
              rounds: int | None = None) -> Acceptance | Averages:
    """Whatever a user pasted: JSON (vLLM per request, SGLang, llama.cpp), a llama.cpp log
    line, a hand-entered CSV, or Prometheus text (vLLM's counters; SGLang's gauges, an
    average). k (llama.cpp timings, SGLang's averages) and rounds (hand-entered rates) are
    needed only where the format does not say them."""
    body = sized(text, "the metrics text", MAX_TEXT_CHARS, MetricsError).strip()
    is_log = llamalog_keys(body)
    if body[0] in "{[":
        try:
            doc = read_json(body)
            if gauges.is_server_info(doc):
                return gauges.from_server_info(doc, k=k)
            return serverformats.from_json(doc, k=k)
        except PasteError as exc:
            if not is_log:  # a log's lines may start "[pid]"
                raise MetricsError(str(exc)) from None
    head = body.splitlines()[0].replace(" ", "").lower()
    if head.startswith(("accepted,rounds", "position,rate")):
        return serverformats.parse_hand(body, rounds=rounds)
    if is_log:
        return llamalog.parse_llamacpp_log(body, k=k)
    if gauges.has_gauges(body) and VLLM not in body and ESCAPED not in body:
        return gauges.parse_gauges(body, k=k, model=model)
    return parse_prometheus(body, model=model)
