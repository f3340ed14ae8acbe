"""SGLang's averages read as acceptance: its /metrics gauges and its /get_server_info.

SGLang's scheduler adds up, each decode log interval (--decode-log-interval steps), the
tokens its verify steps kept counting each step's own token (accepted drafts a + rounds n)
and the verify steps, then sets its gauges and zeroes the sums:
    sglang:spec_accept_length = (a + n) / n = 1 + a / n           (every build)
    sglang:spec_accept_rate   = (a + n) / (n x num_draft_tokens)   (builds to v0.5.9: HELP
                                "accepted tokens / total draft tokens"), so k = L / rate - 1
                              = a / (proposed drafts)              (v0.5.10 on: HELP
                                "accepted drafts / proposed drafts"), so k = (L - 1) / rate
with num_draft_tokens its --speculative-num-draft-tokens (a chain: --speculative-num-steps
+ 1). Newer builds also set sglang:spec_num_steps (k itself) and sglang:spec_num_draft_tokens
(more than k + 1: a tree). /get_server_info returns the server's arguments
(speculative_num_steps, speculative_eagle_topk, speculative_num_draft_tokens, ...) and
internal_states, one per data-parallel rank, each with avg_spec_accept_length: the same ratio
since the server started.

An average has no count behind it: no interval can be put on it, several ranks can only be
averaged unweighted, and it says nothing of how acceptance falls with the position (the
planner then takes it to be the same at every position: alpha^i).
"""

from __future__ import annotations

import math

from ..core.tables import K_MAX
from .pasted import show
from .record import (
    Averages,
    MetricsError,
    choose_model,
    make_averages,
    not_zero,
    prometheus_samples,
)

LENGTH = "sglang:spec_accept_length"  # gauge: mean acceptance length, last log interval
RATE = "sglang:spec_accept_rate"  # gauge: L / num_draft_tokens, or (L - 1) / k (v0.5.10 on)
STEPS = "sglang:spec_num_steps"  # gauge (v0.5.10 on): the active speculative_num_steps, k
TOKENS = "sglang:spec_num_draft_tokens"  # gauge (v0.5.10 on): tokens verified per round
NEW_RATE_HELP = "accepted drafts / proposed drafts"  # the newer rate's HELP text
GAUGES = (LENGTH, RATE, STEPS, TOKENS)
SERVER_AVG = "avg_spec_accept_length"  # /get_server_info, per internal state
STATES_MAX = 1024  # internal states (data-parallel ranks) read from one server info
K_HOW = "enter k (the server's --speculative-num-steps)"
GAUGE_NOTE = (f"{LENGTH} is the average over the server's last log interval "
              "(--decode-log-interval verify steps), not since it started")
NEAR_WHOLE = 0.05  # how near a whole number k from the rate must be, where HELP is missing


def has_gauges(text: str) -> bool:
    """Whether text names SGLang's acceptance gauge (with ':' or escaped)."""
    return LENGTH in text or LENGTH.replace(":", "_") in text


def _samples(text: str) -> tuple[dict[str, dict[tuple, float]], dict[str, str]]:
    """(gauge name -> {labels: value}, the last value of each series: the latest scrape;
    gauge name -> its HELP text)."""
    out: dict[str, dict[tuple, float]] = {g: {} for g in GAUGES}
    docs: dict[str, str] = {}
    for name, labels, value, help_text in prometheus_samples(text, "sglang:"):
        if name in out:
            out[name][labels] = float(value)
            docs[name] = help_text
    return out, docs


def _unweighted(vals: list, name: str, notes: list[str], *, src: str, many: str,
                whose: str) -> float:
    """The ranks' values of `name`, each a finite number, averaged unweighted (a note when
    they differ: `whose` has no count of rounds to weigh them by)."""
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise MetricsError(f"{src}: {name} must be a number; got {show(v)}")
        if not math.isfinite(v):
            raise MetricsError(f"{src}: {name} must be a finite number; got {show(v)}")
    if len(set(vals)) > 1:
        notes.append(f"{len(vals):,} {many} averaged unweighted: {whose} has no count of "
                     "rounds to weigh them by")
    return sum(vals) / len(vals)


def _mean(values: dict[tuple, float], name: str, notes: list[str]) -> float:
    """The series' values averaged unweighted (a note when there are several)."""
    return _unweighted(list(values.values()), name, notes, src="SGLang /metrics",
                       many=f"series of {name} (ranks)", whose="a gauge")


def _k_from_rate(length: float, rate: float, help_text: str, notes: list[str]) -> int:
    """k from the length and the rate gauge, by the rate's definition (its HELP text); where
    HELP is missing, the one definition that gives a whole k."""
    src = "SGLang /metrics gauges"
    if not (rate > 0 and length >= 1):
        raise MetricsError(f"{src}: {LENGTH} = {length:.4g} and {RATE} = {rate:.4g} give no "
                           f"draft length: {K_HOW}")
    old, new = length / rate - 1, (length - 1) / rate
    if help_text:
        ks = [new if NEW_RATE_HELP in help_text else old]
    else:
        ks = [x for x in (old, new) if abs(x - round(x)) <= NEAR_WHOLE] or [old, new]
    if len(ks) != 1:
        raise MetricsError(f"{src}: {LENGTH} = {length:.4g} with {RATE} = {rate:.4g} gives k "
                           f"= {old:.3g} (builds to v0.5.9) or {new:.3g} (v0.5.10 on), with no "
                           f"HELP line to tell which: {K_HOW}")
    if not 1 <= round(ks[0]) <= K_MAX:
        raise MetricsError(f"{src}: {LENGTH} = {length:.4g} with {RATE} = {rate:.4g} gives k "
                           f"= {ks[0]:.3g}, outside 1..{K_MAX}: {K_HOW}")
    how = "(L - 1) / rate" if ks[0] == new else "L / rate - 1"
    notes.append(f"k = {how} = {ks[0]:.3g} from {LENGTH} and {RATE} (for a tree, topk > 1, "
                 f"that counts the tree's tokens, not its depth: then {K_HOW})")
    return round(ks[0])


def _pick(got: dict, model: str | None) -> tuple[dict, tuple[str, ...]]:
    """The samples of `model` (or of the only one), and the model names found."""
    models = choose_model((lab for g in got.values() for lab in g), model, what="gauges")
    if model is not None:
        got = {n: {lab: v for lab, v in g.items() if dict(lab).get("model_name", model) == model}
               for n, g in got.items()}
    return got, models


def parse_gauges(text: str, *, k: int | None = None, model: str | None = None) -> Averages:
    """SGLang's /metrics -> Averages: the mean acceptance length from sglang:spec_accept_length;
    k entered, else sglang:spec_num_steps, else from sglang:spec_accept_rate."""
    src = "SGLang /metrics gauges"
    raw, docs = _samples(text)
    got, models = _pick(raw, model)
    if not got[LENGTH]:
        raise MetricsError(f"{src}: no {LENGTH} sample (found: "
                           f"{', '.join(g for g in GAUGES if got[g]) or 'none'})")
    notes = [GAUGE_NOTE]
    length = _mean(got[LENGTH], LENGTH, notes)
    not_zero(length, source=src, what=LENGTH)
    steps = _mean(got[STEPS], STEPS, notes) if got[STEPS] else None
    tokens = _mean(got[TOKENS], TOKENS, notes) if got[TOKENS] else None
    if steps and tokens and tokens > steps + 1:
        notes.append(f"SGLang drafted a tree ({TOKENS} = {tokens:.4g} > {STEPS} + 1): enter "
                     "that tree (topk, steps, tokens verified) to price it as one")
    if k is None and steps:
        k = round(steps)
    elif k is None:
        if not got[RATE]:
            raise MetricsError(f"{src}: {LENGTH} gives the mean acceptance length but not the "
                               f"draft length (no {STEPS} or {RATE}): {K_HOW}")
        k = _k_from_rate(length, _mean(got[RATE], RATE, notes), docs.get(RATE, ""), notes)
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


def _arg(doc: dict, name: str, states: list[dict]):
    """A server argument: the document's, a decode server's (PD router), or a state's."""
    decode = doc.get("decode") if isinstance(doc.get("decode"), list) else []
    parts = [doc] + [d for d in decode[:8] if isinstance(d, dict)] + states[:1]
    return next((p[name] for p in parts if p.get(name) is not None), None)


def _tree_note(doc: dict, states: list[dict]) -> str | None:
    """SGLang's arguments name a tree (speculative_eagle_topk > 1): say how to price it."""
    topk = _arg(doc, "speculative_eagle_topk", states)
    tokens = _arg(doc, "speculative_num_draft_tokens", states)
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
    if k is None:
        k = _arg(doc, "speculative_num_steps", states)
        if k is None:
            raise MetricsError(f"{src}: {SERVER_AVG} without speculative_num_steps: {K_HOW}")
    length = _unweighted(vals, SERVER_AVG, notes, src=src, many=f"ranks' {SERVER_AVG}",
                         whose="the server info")
    if note := _tree_note(doc, states):
        notes.append(note)
    return make_averages(source=src, length=length, what=SERVER_AVG, k=k, notes=tuple(notes))
