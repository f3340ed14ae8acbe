"""The JSON, log and hand-entered acceptance formats, read into servermetrics.Acceptance.

vLLM per request (metrics.speculative_decoding): acceptance_histogram is dense, index j = verify
steps that kept exactly j drafts; num_spec_steps, num_draft_tokens, num_accepted_draft_tokens,
num_spec_tokens (= k). SGLang (meta_info): spec_verify_ct (rounds), spec_num_proposed_drafts or
spec_draft_token_num (drafted), spec_num_correct_drafts or spec_accept_token_num (accepted),
spec_correct_drafts_histogram or spec_accept_histogram (k + 1 buckets). llama.cpp (timings):
draft_n (drafted), draft_n_accepted (accepted); no rounds, no positions. A list of responses is
pooled by adding their counts.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd

from .servermetrics import Acceptance, MetricsError, from_histogram, listed, make_acceptance

SGLANG_ROUNDS = "spec_verify_ct"
SGLANG_DRAFTED = ("spec_num_proposed_drafts", "spec_proposed_drafts", "spec_draft_token_num")
SGLANG_ACCEPTED = ("spec_num_correct_drafts", "spec_accepted_drafts", "spec_accept_token_num")
SGLANG_HIST = ("spec_correct_drafts_histogram", "spec_accept_histogram")
HAND_HIST = ("accepted", "rounds")  # CSV columns: j, rounds that kept exactly j drafts
HAND_RATES = ("position", "rate")  # CSV columns: i (from 1), share of rounds keeping draft i


def _first(d: dict, names: tuple[str, ...]):
    return next((d[n] for n in names if d.get(n) is not None), None)


def _vllm(sd: dict) -> Acceptance:
    hist = sd.get("acceptance_histogram")
    src = "vLLM per-request metrics"
    if hist is None:
        raise MetricsError(f"{src}: no acceptance_histogram (start the server with "
                           "--per-request-spec-decode-metrics summary)")
    k = sd.get("num_spec_tokens")
    if k is not None and len(hist) != int(k) + 1:
        raise MetricsError(f"{src}: the histogram has {len(hist)} buckets, not "
                           f"num_spec_tokens + 1 = {int(k) + 1}")
    return from_histogram(list(hist), source=src, rounds=sd.get("num_spec_steps"),
                          accepted=sd.get("num_accepted_draft_tokens"),
                          drafted=sd.get("num_draft_tokens"))


def _sglang(mi: dict) -> Acceptance:
    src = "SGLang meta_info"
    rounds, drafted = mi.get(SGLANG_ROUNDS), _first(mi, SGLANG_DRAFTED)
    accepted, hist = _first(mi, SGLANG_ACCEPTED), _first(mi, SGLANG_HIST)
    if hist is not None:
        return from_histogram(list(hist), source=src, rounds=rounds, accepted=accepted,
                              drafted=drafted)
    if rounds is None or drafted is None or accepted is None:
        raise MetricsError(f"{src}: needs {SGLANG_ROUNDS}, a drafted count "
                           f"({SGLANG_DRAFTED[0]}) and an accepted count ({SGLANG_ACCEPTED[0]})")
    k = round(drafted / rounds) if rounds else 1
    return make_acceptance(source=src, rounds=rounds, drafted=drafted, accepted=accepted, k=k,
                           notes=("no histogram: position independence is assumed",))


def _llamacpp(t: dict, k: int | None) -> Acceptance:
    src = "llama.cpp timings"
    if k is None:
        raise MetricsError(f"{src} give drafted and accepted tokens but not the draft length: "
                           "enter k (the server's --draft-max)")
    drafted, accepted = t["draft_n"], t.get("draft_n_accepted", 0)
    rounds = max(1, round(drafted / k))
    return make_acceptance(source=src, rounds=rounds, drafted=drafted, accepted=accepted, k=k,
                           notes=(f"rounds taken as drafted / k = {rounds:,} (llama.cpp may "
                                  "draft fewer than k)",
                                  "no per-position counts: position independence is assumed"))


def _one(doc: dict, k: int | None) -> Acceptance:
    sd = (doc.get("metrics") or {}).get("speculative_decoding") if isinstance(
        doc.get("metrics"), dict) else None
    if sd is None and "acceptance_histogram" in doc:
        sd = doc
    if sd is not None:
        return _vllm(sd)
    mi = doc.get("meta_info", doc)
    if isinstance(mi, dict) and (SGLANG_ROUNDS in mi or _first(mi, SGLANG_HIST) is not None):
        return _sglang(mi)
    t = doc.get("timings", doc)
    if isinstance(t, dict) and "draft_n" in t:
        return _llamacpp(t, k)
    raise MetricsError("no speculative-decoding fields in this JSON: expected vLLM's "
                       "metrics.speculative_decoding, SGLang's meta_info (spec_verify_ct, "
                       "...) or llama.cpp's timings (draft_n, draft_n_accepted)")


def _pool(records: list[Acceptance]) -> Acceptance:
    """Counts of several responses added; all must share k when positions are known."""
    first = records[0]
    if all(r.per_position is not None for r in records):  # shorter drafts: zeros after k
        k = max(r.k for r in records)
        pos = sum(np.pad(r.per_position, (0, k - r.k)) for r in records)
    else:
        k, pos = first.k, None
    return make_acceptance(source=f"{first.source} ({len(records)} responses pooled)",
                           rounds=sum(r.rounds for r in records),
                           drafted=sum(r.drafted for r in records),
                           accepted=sum(r.accepted for r in records), k=k, per_position=pos,
                           notes=first.notes)


def from_json(doc: object, *, k: int | None = None) -> Acceptance:
    """A response (or a list of responses) of vLLM, SGLang or llama.cpp -> Acceptance."""
    docs = doc if isinstance(doc, list) else [doc]
    if not docs or not all(isinstance(d, dict) for d in docs):
        raise MetricsError("the JSON must be a response object or a list of them")
    try:
        records = [_one(d, k) for d in docs]
    except (TypeError, KeyError, AttributeError, ZeroDivisionError) as exc:
        raise MetricsError(f"the JSON's speculative-decoding fields are malformed ({exc})") \
            from None
    return records[0] if len(records) == 1 else _pool(records)


# --------------------------------------------------------------------------- llama.cpp log
_NUM = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_LOG = re.compile(r"draft acceptance\s*=\s*" + _NUM + r"\s*\(\s*(\d+)\s*accepted\s*/\s*(\d+)"
                  r"\s*generated\)(?:,\s*mean acceptance length\s*=\s*" + _NUM + r")?"
                  r"(?:,\s*acceptance rate per position\s*=\s*\(([^)]*)\))?")
_GEN_DRAFTS = re.compile(r"#gen drafts\s*=\s*(\d+)")


def parse_llamacpp_log(text: str) -> Acceptance:
    """llama.cpp's server log line (a log line has no parser, so a fixed pattern reads it);
    rounds from its statistics line (#gen drafts) or accepted / (mean length - 1)."""
    m = _LOG.search(text)
    if m is None:
        raise MetricsError("no llama.cpp line 'draft acceptance = r (a accepted / g "
                           "generated), ...' in the text")
    accepted, drafted = int(m.group(2)), int(m.group(3))
    rates = [float(x) for x in m.group(5).split(",")] if m.group(5) else None
    g = _GEN_DRAFTS.search(text)
    if g:
        rounds = int(g.group(1))
    elif m.group(4) and float(m.group(4)) > 1:
        rounds = round(accepted / (float(m.group(4)) - 1.0))
    else:
        raise MetricsError("the llama.cpp line gives no mean acceptance length, so the "
                           "number of rounds is unknown")
    src = "llama.cpp log"
    if rates is None:
        k = max(1, round(drafted / rounds))
        return make_acceptance(source=src, rounds=rounds, drafted=drafted, accepted=accepted,
                               k=k, notes=("no per-position rates: position independence "
                                           "is assumed",))
    pos = np.round(np.array(rates) * rounds).astype(np.int64)  # (k,)
    notes = ("per-position counts rebuilt from rates printed to 3 decimals",)
    return make_acceptance(source=src, rounds=rounds, drafted=drafted,
                           accepted=int(pos.sum()), k=len(pos), per_position=pos, notes=notes)


# --------------------------------------------------------------------------- by hand
def parse_hand(text: str, *, rounds: int | None = None) -> Acceptance:
    """A hand-entered CSV: columns accepted,rounds (the histogram) or position,rate (the
    share of rounds that kept draft i, i from 1; needs `rounds`)."""
    try:
        df = pd.read_csv(io.StringIO(text.strip()))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise MetricsError(f"the table is not CSV ({exc})") from None
    cols = tuple(c.strip().lower() for c in df.columns)
    df.columns = cols
    try:
        if cols[:2] == HAND_HIST:
            df = df.sort_values("accepted")
            if df["accepted"].tolist() != list(range(len(df))):
                raise MetricsError("the histogram's 'accepted' column must run 0, 1, ..., k")
            return from_histogram(df["rounds"].tolist(), source="hand-entered histogram")
        if cols[:2] == HAND_RATES:
            if not rounds:
                raise MetricsError("per-position rates need the number of rounds they were "
                                   "measured over")
            r = df.sort_values("position")["rate"].to_numpy(dtype=float)
            if ((r < 0) | (r > 1)).any() or not np.isfinite(r).all():
                raise MetricsError("per-position rates must be numbers in [0, 1]")
            pos = np.round(r * rounds).astype(np.int64)
            return make_acceptance(source="hand-entered per-position rates", rounds=rounds,
                                   drafted=rounds * len(r), accepted=int(pos.sum()), k=len(r),
                                   per_position=pos)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, MetricsError):
            raise
        raise MetricsError(f"the table holds entries that are not numbers ({exc})") from None
    raise MetricsError(f"the table's columns must be {','.join(HAND_HIST)} (a histogram) or "
                       f"{','.join(HAND_RATES)} (per-position rates); got {listed(cols)}")
