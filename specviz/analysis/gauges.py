"""SGLang's averages read as acceptance: its /metrics gauges and its /get_server_info.

SGLang's scheduler adds up, each decode log interval (--decode-log-interval steps), the
tokens its verify steps kept counting each step's own token (accepted drafts + rounds) and the
verify steps (rounds), then sets two gauges and zeroes both sums:
    sglang:spec_accept_length = (accepted + rounds) / rounds = 1 + accepted / rounds
    sglang:spec_accept_rate   = (accepted + rounds) / (rounds x num_draft_tokens)
with num_draft_tokens its --speculative-num-draft-tokens (a chain: --speculative-num-steps
+ 1), so that length / rate = num_draft_tokens and k = length / rate - 1 for a chain.
/get_server_info returns the server's arguments (speculative_num_steps, speculative_eagle_topk,
speculative_num_draft_tokens, ...) and internal_states, one per data-parallel rank, each with
avg_spec_accept_length: the same ratio since the server started.

An average has no count behind it: no interval can be put on it, several ranks can only be
averaged unweighted, and it says nothing of how acceptance falls with the position (the
planner then takes it to be the same at every position: alpha^i).
"""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from ..core import interrupt
from ..core.tables import K_MAX
from .pasted import show
from .record import (
    CHECK_EVERY,
    Averages,
    MetricsError,
    choose_model,
    make_averages,
    not_zero,
)

LENGTH = "sglang:spec_accept_length"  # gauge: mean acceptance length, last log interval
RATE = "sglang:spec_accept_rate"  # gauge: length / num_draft_tokens
ESCAPED = "sglang_"  # the same names where a client escaped ':' (OpenMetrics)
SERVER_AVG = "avg_spec_accept_length"  # /get_server_info, per internal state
STATES_MAX = 1024  # internal states (data-parallel ranks) read from one server info
K_HOW = "enter k (the server's --speculative-num-steps)"
GAUGE_NOTE = (f"{LENGTH} is the average over the server's last log interval "
              "(--decode-log-interval verify steps), not since it started")


def has_gauges(text: str) -> bool:
    """Whether text names SGLang's acceptance gauge (with ':' or escaped)."""
    return LENGTH in text or LENGTH.replace(":", "_") in text


def _samples(text: str) -> dict[str, dict[tuple, float]]:
    """gauge name -> {labels: value} (the last value of each series: the latest scrape)."""
    out: dict[str, dict[tuple, float]] = {LENGTH: {}, RATE: {}}
    try:
        for i, s in enumerate(x for fam in text_string_to_metric_families(text)
                              for x in fam.samples):
            if i % CHECK_EVERY == 0:
                interrupt.check()
            name = s.name.replace(ESCAPED, "sglang:", 1) if s.name.startswith(ESCAPED) \
                else s.name
            if name in out:
                out[name][tuple(sorted(s.labels.items()))] = float(s.value)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        why = str(exc)[:80] + ("..." if len(str(exc)) > 80 else "")
        raise MetricsError(f"this is not Prometheus exposition text ({why})") from None
    return out


def _mean(values: dict[tuple, float], name: str, notes: list[str]) -> float:
    """The series' values averaged unweighted (a note when there are several)."""
    vals = list(values.values())
    bad = [v for v in vals if v != v or v in (float("inf"), float("-inf"))]
    if bad:
        raise MetricsError(f"SGLang /metrics: {name} must be a finite number; got {bad[0]}")
    if len(set(vals)) > 1:
        notes.append(f"{len(vals):,} series of {name} (ranks) averaged unweighted: a gauge "
                     "has no count of rounds to weigh them by")
    return sum(vals) / len(vals)


def parse_gauges(text: str, *, k: int | None = None, model: str | None = None) -> Averages:
    """SGLang's /metrics -> Averages: the mean acceptance length from sglang:spec_accept_length;
    k entered, else length / sglang:spec_accept_rate - 1 (a chain's num_draft_tokens - 1)."""
    src = "SGLang /metrics gauges"
    got = _samples(text)
    models = tuple(sorted({dict(lab).get("model_name", "") for g in got.values()
                           for lab in g} - {""}))
    choose_model(models, model, what="gauges")
    if model is not None:
        got = {n: {lab: v for lab, v in g.items() if dict(lab).get("model_name", model) == model}
               for n, g in got.items()}
    if not got[LENGTH]:
        raise MetricsError(f"{src}: no {LENGTH} sample (found: {RATE if got[RATE] else 'none'})")
    notes = [GAUGE_NOTE]
    length = _mean(got[LENGTH], LENGTH, notes)
    not_zero(length, source=src, what=LENGTH)
    if k is None:
        if not got[RATE]:
            raise MetricsError(f"{src}: {LENGTH} gives the mean acceptance length but not the "
                               f"draft length (no {RATE} to divide it by): {K_HOW}")
        rate = _mean(got[RATE], RATE, notes)
        tokens = length / rate if rate > 0 and length >= 1 else 0.0  # num_draft_tokens
        if not 2 <= tokens <= K_MAX + 1:
            raise MetricsError(f"{src}: {LENGTH} = {length:.4g} over {RATE} = {rate:.4g} is "
                               f"not a number of draft tokens in 2..{K_MAX + 1}: {K_HOW}")
        k = round(tokens) - 1
        notes.append(f"k = {LENGTH} / {RATE} - 1 = {tokens:.3g} - 1 (SGLang's num_draft_tokens "
                     "less one; with tree drafting, topk > 1, that counts the tree's tokens, "
                     f"not its depth: then {K_HOW})")
    return make_averages(source=src, length=length, what=LENGTH, k=k, notes=tuple(notes),
                         models=models if len(models) > 1 else ())


# --------------------------------------------------------------------------- server info
def is_server_info(doc: object) -> bool:
    """Whether a JSON document is SGLang's /get_server_info (or its PD router's)."""
    if not isinstance(doc, dict):
        return False
    return SERVER_AVG in doc or "internal_states" in doc or (
        isinstance(doc.get("decode"), list) and any(
            isinstance(d, dict) and "internal_states" in d for d in doc["decode"][:8]))


def _states(doc: dict, notes: list[str]) -> list[dict]:
    """The internal states: the document's own, or each decode server's (PD disaggregation);
    the first STATES_MAX of them, with a note when there are more."""
    decode = doc.get("decode") if isinstance(doc.get("decode"), list) else []
    parts = [doc] + [d for d in decode[:STATES_MAX] if isinstance(d, dict)]
    states, seen = [], 0
    for part in parts:
        inner = part.get("internal_states")
        if isinstance(inner, list):
            seen += len(inner)
            states += [s for s in inner[:STATES_MAX] if isinstance(s, dict)]
    if seen > STATES_MAX or len(decode) > STATES_MAX:
        notes.append(f"the first {STATES_MAX:,} internal states read (of {seen:,}+)")
    return states[:STATES_MAX]


def _tree_note(doc: dict, state: dict) -> str | None:
    """SGLang's arguments name a tree (speculative_eagle_topk > 1): say how to price it."""
    topk = doc.get("speculative_eagle_topk", state.get("speculative_eagle_topk"))
    tokens = doc.get("speculative_num_draft_tokens", state.get("speculative_num_draft_tokens"))
    if isinstance(topk, int) and not isinstance(topk, bool) and topk > 1:
        return (f"SGLang drafted a tree (speculative_eagle_topk = {show(topk)}, "
                f"speculative_num_draft_tokens = {show(tokens)}): enter that tree (topk, steps, "
                "tokens verified) to price it as one, not as a chain of k")
    return None


def from_server_info(doc: dict, *, k: int | None = None) -> Averages:
    """/get_server_info -> Averages: avg_spec_accept_length of each internal state (one per
    data-parallel rank; averaged unweighted), k entered or the server's speculative_num_steps."""
    src = "SGLang /get_server_info"
    notes = [f"{SERVER_AVG} is the average since the server started"]
    states = _states(doc, notes)
    vals = [s[SERVER_AVG] for s in states if s.get(SERVER_AVG) is not None]
    if doc.get(SERVER_AVG) is not None:  # older builds: at the top level
        vals.append(doc[SERVER_AVG])
    if not vals:
        algo = doc.get("speculative_algorithm")
        raise MetricsError(f"{src}: no {SERVER_AVG} in internal_states "
                           f"(speculative_algorithm = {show(algo)}): the server runs without "
                           "speculative decoding, or has not verified a draft yet")
    first = states[0] if states else {}
    if k is None:
        k = doc.get("speculative_num_steps", first.get("speculative_num_steps"))
        if k is None:
            raise MetricsError(f"{src}: {SERVER_AVG} without speculative_num_steps: {K_HOW}")
    bad = [v for v in vals if isinstance(v, bool) or not isinstance(v, (int, float))]
    if bad:
        raise MetricsError(f"{src}: {SERVER_AVG} must be a number; got {show(bad[0])}")
    if len(set(vals)) > 1:
        notes.append(f"{len(vals):,} ranks' {SERVER_AVG} averaged unweighted: the server info "
                     "has no count of rounds to weigh them by")
    if note := _tree_note(doc, first):
        notes.append(note)
    return make_averages(source=src, length=sum(vals) / len(vals), what=SERVER_AVG, k=k,
                         notes=tuple(notes))
