"""The JSON and hand-entered acceptance formats, read into record.Acceptance (the
llama.cpp log: llamalog.py).

vLLM per request (metrics.speculative_decoding): acceptance_histogram is dense, index j = verify
steps that kept exactly j drafts; num_spec_steps, num_draft_tokens, num_accepted_draft_tokens,
num_spec_tokens (= k); acceptance_histogram_by_draft_length (newer builds) splits it by the
length each step proposed, and where drafts of several lengths were proposed the longest's
steps give the per-position law. SGLang (meta_info): spec_verify_ct (rounds),
spec_num_proposed_drafts or spec_draft_token_num (drafted), spec_num_correct_drafts or
spec_accept_token_num (accepted), spec_correct_drafts_histogram or spec_accept_histogram (up to
k + 1 buckets; k is drafted / rounds), older builds spec_verify_ct and completion_tokens.
llama.cpp (timings): draft_n (drafted), draft_n_accepted (accepted), with generation_settings'
speculative.n_max (k); no rounds, no positions. A list of responses is pooled by adding their
counts.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from ..core import interrupt
from ..core.tables import K_MAX
from .pasted import listed, show
from .record import (
    CHECK_EVERY,
    Acceptance,
    MetricsError,
    count,
    draft_length,
    from_histogram,
    make_acceptance,
)

SGLANG_ROUNDS = "spec_verify_ct"
SGLANG_DRAFTED = ("spec_num_proposed_drafts", "spec_proposed_drafts", "spec_draft_token_num")
SGLANG_ACCEPTED = ("spec_num_correct_drafts", "spec_accepted_drafts", "spec_accept_token_num")
SGLANG_HIST = ("spec_correct_drafts_histogram", "spec_accept_histogram")
LLAMA_N_MAX = "speculative.n_max"  # llama.cpp's generation_settings: the longest draft
HAND_HIST = ("accepted", "rounds")  # CSV columns: j, rounds that kept exactly j drafts
HAND_RATES = ("position", "rate")  # CSV columns: i (from 1), share of rounds keeping draft i
HAND_LINE_MAX = 200  # characters of one line of a hand-entered table


def _first(d: dict, names: tuple[str, ...]):
    return next((d[n] for n in names if d.get(n) is not None), None)


def _by_length(by: dict, src: str) -> Acceptance:
    """acceptance_histogram_by_draft_length of several lengths: the per-position law from the
    steps that drafted the longest (each tried every position), with a note on the rest."""
    rows = {}
    for key, h in list(by.items())[:K_MAX + 2]:
        kk = int(key) if isinstance(key, str) and key.isascii() and key.isdigit() \
            and len(key) <= 3 else None
        if kk is None or kk > K_MAX or not isinstance(h, list) or len(h) != kk + 1:
            raise MetricsError(f"{src}: acceptance_histogram_by_draft_length maps a draft "
                               f"length k (0..{K_MAX}) to k + 1 counts; got {show(key)}: "
                               f"{show(h)}")
        rows[kk] = h
    top = max(rows)
    if top == 0:
        raise MetricsError(f"{src}: acceptance_histogram_by_draft_length holds only steps "
                           "with no valid draft (k = 0)")
    steps = ", ".join(f"{kk}: {sum(count(x, src) for x in rows[kk]):,}" for kk in sorted(rows))
    note = (f"drafts of {len(rows)} lengths (steps by length: {steps}): the per-position law "
            f"is read from the steps that drafted {top}, each of which tried every position; "
            "the shorter drafts are left out")
    return from_histogram(rows[top], source=src, notes=(note,))


def _vllm(sd: dict) -> Acceptance:
    hist = sd.get("acceptance_histogram")
    src = "vLLM per-request metrics"
    by = sd.get("acceptance_histogram_by_draft_length")
    if isinstance(by, dict) and len(by) > 1:
        return _by_length(by, src)
    if hist is None:
        raise MetricsError(f"{src}: no acceptance_histogram (start the server with "
                           "--per-request-spec-decode-metrics summary)")
    k = sd.get("num_spec_tokens")
    if k is not None:
        k = draft_length(k, f"{src}: num_spec_tokens")
        if isinstance(hist, list) and len(hist) != k + 1:
            raise MetricsError(f"{src}: the histogram has {len(hist):,} buckets, not "
                               f"num_spec_tokens + 1 = {k + 1}")
    return from_histogram(hist, source=src, rounds=sd.get("num_spec_steps"),
                          accepted=sd.get("num_accepted_draft_tokens"),
                          drafted=sd.get("num_draft_tokens"))


def _sglang(mi: dict, k: int | None) -> Acceptance:
    """meta_info -> Acceptance. k is proposed drafts / verify count: the histogram grows only
    to the most drafts a round kept, so it is padded with zeros up to k + 1 buckets. Older
    builds give only the verify count and completion tokens (accepted = completion - rounds,
    drafted = k x rounds, k entered)."""
    src = "SGLang meta_info"
    rounds, drafted = mi.get(SGLANG_ROUNDS), _first(mi, SGLANG_DRAFTED)
    accepted, hist = _first(mi, SGLANG_ACCEPTED), _first(mi, SGLANG_HIST)
    if hist is not None:
        if isinstance(hist, list) and rounds and drafted:
            spec_k = round(count(drafted, f"{src}: {SGLANG_DRAFTED[0]}")
                           / count(rounds, f"{src}: {SGLANG_ROUNDS}"))
            hist = hist + [0] * max(0, min(spec_k, K_MAX) + 1 - len(hist))
        return from_histogram(hist, source=src, rounds=rounds, accepted=accepted,
                              drafted=drafted)
    if rounds is not None and drafted is None and accepted is None \
            and mi.get("completion_tokens") is not None:
        return _sglang_old(mi, k)
    if rounds is None or drafted is None or accepted is None:
        raise MetricsError(f"{src}: needs {SGLANG_ROUNDS}, a drafted count "
                           f"({SGLANG_DRAFTED[0]}) and an accepted count ({SGLANG_ACCEPTED[0]})")
    rounds, drafted, accepted = (count(v, f"{src}: {n}") for v, n in (
        (rounds, SGLANG_ROUNDS), (drafted, "the drafted count"),
        (accepted, "the accepted count")))
    k = round(drafted / rounds) if rounds else 1
    return make_acceptance(source=src, rounds=rounds, drafted=drafted, accepted=accepted, k=k,
                           notes=("no histogram: position independence is assumed",))


def _sglang_old(mi: dict, k: int | None) -> Acceptance:
    src = "SGLang meta_info (verify count and completion tokens only)"
    rounds = count(mi[SGLANG_ROUNDS], f"{src}: {SGLANG_ROUNDS}")
    tokens = count(mi["completion_tokens"], f"{src}: completion_tokens")
    if k is None:
        raise MetricsError(f"{src}: these give the accepted tokens (completion_tokens - "
                           f"{SGLANG_ROUNDS}) but not the draft length: enter k (the server's "
                           "--speculative-num-steps)")
    k = draft_length(k, "k (the server's --speculative-num-steps)")
    if tokens < rounds:
        raise MetricsError(f"{src}: completion_tokens = {tokens:,} is below {SGLANG_ROUNDS} = "
                           f"{rounds:,}; every round emits at least one token")
    return make_acceptance(source=src, rounds=rounds, drafted=k * rounds,
                           accepted=tokens - rounds, k=k,
                           notes=("accepted = completion tokens - rounds (each round emits "
                                  "one token of the target's)",
                                  "no histogram: position independence is assumed"))


def _llamacpp(t: dict, k: int | None, settings: object) -> Acceptance:
    """timings' draft_n and draft_n_accepted; k given, or generation_settings'
    speculative.n_max (the response's own draft length)."""
    src = "llama.cpp timings"
    n_max = settings.get(LLAMA_N_MAX) if isinstance(settings, dict) else None
    if k is None and n_max is None:
        raise MetricsError(f"{src} give drafted and accepted tokens but not the draft length "
                           f"(no generation_settings.{LLAMA_N_MAX}): enter k (the server's "
                           "--draft-max)")
    k = draft_length(k, "k (the server's --draft-max)") if k is not None else draft_length(
        n_max, f"{src}: generation_settings.{LLAMA_N_MAX}")
    drafted = count(t["draft_n"], f"{src}: draft_n")
    accepted = count(t.get("draft_n_accepted", 0), f"{src}: draft_n_accepted")
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
        return _sglang(mi, k)
    t = doc.get("timings", doc)
    if isinstance(t, dict) and "draft_n" in t:
        return _llamacpp(t, k, doc.get("generation_settings"))
    raise MetricsError("no speculative-decoding fields in this JSON: expected vLLM's "
                       "metrics.speculative_decoding, SGLang's meta_info (spec_verify_ct, "
                       "...) or /get_server_info (internal_states' avg_spec_accept_length), "
                       "or llama.cpp's timings (draft_n, draft_n_accepted)")


def _pool(records: list[Acceptance]) -> Acceptance:
    """Counts of several responses added; all must share k when positions are known."""
    first = records[0]
    src = f"{first.source} ({len(records):,} responses pooled)"
    rounds = count(sum(r.rounds for r in records), f"{src}: rounds")  # bounds every a_i
    if all(r.accepted_at is not None for r in records):  # shorter drafts: zeros after k
        k = max(r.k for r in records)
        pos = sum(np.pad(r.accepted_at, (0, k - r.k)) for r in records)
    else:
        k, pos = first.k, None
    return make_acceptance(source=src, rounds=rounds, drafted=sum(r.drafted for r in records),
                           accepted=sum(r.accepted for r in records), k=k, accepted_at=pos,
                           notes=first.notes)


def from_json(doc: object, *, k: int | None = None) -> Acceptance:
    """A response (or a list of responses) of vLLM, SGLang or llama.cpp -> Acceptance."""
    docs = doc if isinstance(doc, list) else [doc]
    if not docs or not all(isinstance(d, dict) for d in docs):
        raise MetricsError("the JSON must be a response object or a list of them")
    try:
        records = []
        for i, d in enumerate(docs):
            if i % CHECK_EVERY == 0:
                interrupt.check()
            records.append(_one(d, k))
    except (TypeError, KeyError, AttributeError, ZeroDivisionError) as exc:
        raise MetricsError(f"the JSON's speculative-decoding fields are malformed ({exc})") \
            from None
    return records[0] if len(records) == 1 else _pool(records)


# --------------------------------------------------------------------------- by hand
def _hand_lines(text: str) -> None:
    """A hand-entered table is small: at most K_MAX + 2 lines of HAND_LINE_MAX characters
    (pandas slows down quadratically with thousands of columns)."""
    lines = text.splitlines()
    if len(lines) > K_MAX + 2:
        raise MetricsError(f"a hand-entered table has a header and at most {K_MAX + 1} rows; "
                           f"this one has {len(lines):,} lines")
    long = max(len(line) for line in lines)
    if long > HAND_LINE_MAX:
        raise MetricsError(f"a hand-entered table has short lines (at most {HAND_LINE_MAX} "
                           f"characters); one has {long:,}")


def parse_hand(text: str, *, rounds: int | None = None) -> Acceptance:
    """A hand-entered CSV: columns accepted,rounds (the histogram) or position,rate (the
    share of rounds that kept draft i, i from 1; needs `rounds`)."""
    _hand_lines(text.strip())
    try:
        df = pd.read_csv(io.StringIO(text.strip()))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise MetricsError(f"the table is not CSV ({str(exc)[:80]})") from None
    cols = tuple(str(c).strip().lower() for c in df.columns)
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
            rounds = count(rounds, "the rounds behind the rates")
            r = df.sort_values("position")["rate"].to_numpy(dtype=float)
            if ((r < 0) | (r > 1)).any() or not np.isfinite(r).all():
                raise MetricsError("per-position rates must be numbers in [0, 1]")
            pos = np.round(r * rounds).astype(np.int64)
            return make_acceptance(source="hand-entered per-position rates", rounds=rounds,
                                   drafted=rounds * len(r), accepted=int(pos.sum()), k=len(r),
                                   accepted_at=pos)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, MetricsError):
            raise
        raise MetricsError(f"the table holds entries that are not numbers ({str(exc)[:80]})") \
            from None
    raise MetricsError(f"the table's columns must be {','.join(HAND_HIST)} (a histogram) or "
                       f"{','.join(HAND_RATES)} (per-position rates); got {listed(cols)}")
