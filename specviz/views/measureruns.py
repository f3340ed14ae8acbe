"""The real model's decodes for /measured and the CLI, repeated and interleaved.

Every decode is run `reps` times. A repetition runs each one once (the target alone, greedy
and sampled, then each draft's two speculative decodes; later repetitions start at another
of them), so a busy stretch of the machine slows them all alike, and each repetition's
speculative runs are compared with its own plain ones. Each figure is the median over the
repetitions with its range (analysis.spread); the counts (tokens, acceptance) are the same
in every repetition, since each replays the same seed. Decodes run the same number of
tokens with and without speculation (end-of-text does not stop them), after the prompt's
prefill, off the clock: a token's cost here is a decode step's. T = 0 decodes greedily, so
only the greedy pair runs. The first repetition's greedy pair is also the lossless check
(llm.lossless).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ..analysis.spread import Load, Spread, cpus, load_average
from ..core import interrupt
from ..core.kinds import kind_of as rule_kind
from ..core.rules import get_rule
from ..core.tables import T_MAX, T_MIN, check_n, check_temperature
from ..llm.decode import Run, Summary, plain, speculate, summarise
from ..llm.draftkind import DraftSpec
from ..llm.drafts import Kit, draft_pair, kind_of, parse_draft
from ..llm.lossless import Agreement, compare, greedy_plain, rows_along
from ..llm.runner import Runner
from ..llm.store import Model
from .llmpage import PLAIN_KIT, encode_prompt
from .work import heavy

REPS = 3  # times each decode runs, interleaved
REPS_MAX = 9
NEW_MAX = 64  # tokens the page generates per run
K_MAX = 8  # drafted tokens per round the page measures
MEASURE_STOP_S = 240.0  # time one measurement may take; runs stop between decodes after it
MODES = ("greedy", "sampled")
TIMED = ("target_1_s", "target_k1_s", "draft_s", "c", "spec_tps", "plain_tps",
         "outside_round_s", "outside_token_s")  # what moves between repetitions


def check_temperature_or_greedy(T: object) -> float:
    """T = 0 (greedy), or a temperature the pair takes (core.tables.check_temperature)."""
    if T == 0 and not isinstance(T, bool):
        return 0.0
    try:
        return check_temperature(T)
    except ValueError:
        raise ValueError(f"temperature T must be 0 (greedy) or a number in [{T_MIN:g}, "
                         f"{T_MAX:g}]; got {T!r}") from None


def modes(T: float) -> tuple[str, ...]:
    """The decodings a measurement at T runs: greedy, and sampled unless T = 0."""
    return MODES[:1] if T == 0 else MODES


@dataclass(frozen=True)
class DraftMeasure:
    """One draft's runs: a Summary per repetition and mode, greedy's agreement, and what
    its kind's cost model says (llm.draftkind)."""

    label: str
    runs: dict[str, tuple[Summary, ...]]  # mode -> one Summary per repetition
    agreement: Agreement | None = None  # plain greedy against speculative greedy
    subset: bool = False  # its pass is a part of the target's: c < 1 up to noise
    c_macs: float | None = None  # its multiply-adds over the target's, per position

    @property
    def modes(self) -> tuple[str, ...]:
        return tuple(self.runs)

    def summary(self, mode: str) -> Summary:
        """The runs of one mode as one Summary: each timed figure the median over the
        repetitions, the counts (the same in each) the first's."""
        runs = self.runs[mode]
        med = {f: Spread.of(getattr(s, f) for s in runs) for f in TIMED}
        return replace(runs[0], **{f: None if v is None else v.median for f, v in med.items()})

    def spread(self, mode: str, figure: str) -> Spread | None:
        """One figure over the repetitions: a Summary field or property (speedup)."""
        return Spread.of(getattr(s, figure) for s in self.runs[mode])

    @property
    def greedy(self) -> Summary:
        return self.summary("greedy")

    @property
    def sampled(self) -> Summary:
        return self.summary("sampled")


@dataclass(frozen=True)
class Measurement:
    prompt_tokens: int
    k: int
    T: float
    max_new: int
    drafts: tuple[DraftMeasure, ...]
    seconds: float  # wall clock of the whole measurement
    stopped: str | None = None  # what the time budget left out
    reps: int = 1  # repetitions every draft ran
    load: Load | None = None
    modes: tuple[str, ...] = MODES  # the decodings run
    first: dict = field(default_factory=dict)  # (label or "alone", mode) -> the first run,
    # with its rounds where asked (keep_first: the CLI prints them)


Job = Callable[[int], Run]  # repetition -> the run


def interleaved(jobs: dict[tuple, Job], reps: int, *, stop_s: float,
                t0: float) -> tuple[dict[tuple, list[Run]], int, list[tuple]]:
    """Each job once per repetition, the order rotated by one each time (the first in
    order). Past stop_s (between jobs): in the first repetition the jobs not run are left
    out; later, the unfinished repetition is dropped. -> (runs by job, repetitions done,
    jobs left out)."""
    keys = list(jobs)
    out: dict[tuple, list[Run]] = {key: [] for key in keys}
    for rep in range(reps):
        order = keys[rep % len(keys):] + keys[: rep % len(keys)]
        done = []
        for key in order:
            interrupt.check(deadline=False)
            interrupt.turn()  # the app's worker may go to the next visitor in line here
            if time.perf_counter() - t0 > stop_s or interrupt.overdue():
                if rep == 0:
                    return out, 1, [k for k in keys if k not in done]
                for k in done:
                    out[k].pop()
                return out, rep, []
            out[key].append(jobs[key](rep))
            done.append(key)
    return out, reps, []


def _draft_jobs(model, ids, spec: DraftSpec, *, k, T, seed, max_new, kit, rule, seen,
                keep_first, run_modes) -> dict[tuple, Job]:
    def job(mode: str) -> Job:
        def run(rep: int) -> Run:
            pair = draft_pair(model, spec, T=1.0 if mode == "greedy" else T,
                              greedy=mode == "greedy", kit=kit)
            r = speculate(pair, ids, k=spec.played(k), seed=seed, rule=rule, max_new=max_new,
                          stop_at_eos=False, keep_rounds=keep_first and rep == 0)
            if rep == 0 and mode == "greedy":
                seen[spec.label] = pair.seen
            return r
        return run
    return {(spec.label, mode): job(mode) for mode in run_modes}


def _alone_jobs(model, ids, *, T, seed, max_new, seen, run_modes) -> dict[tuple, Job]:
    def greedy(rep: int) -> Run:
        return greedy_plain(Runner(model.weights), ids, max_new=max_new, stop_at_eos=False,
                            seen=seen.setdefault("alone", {}) if rep == 0 else None)

    def sampled(rep: int) -> Run:
        return plain(Runner(model.weights), ids, T=T, seed=seed, max_new=max_new,
                     stop_at_eos=False)
    return {("alone", m): f for m, f in (("greedy", greedy), ("sampled", sampled))
            if m in run_modes}


def _measures(specs, runs, ids, *, k, scored, cfg, seen, reps) -> list[DraftMeasure]:
    """Each draft's Summary per mode and repetition (against that repetition's plain run),
    greedy's agreement and its kind's cost model."""
    out = []
    for spec in specs:
        kk = spec.played(k)
        by_mode = {m: tuple(summarise(runs[(spec.label, m)][r], runs[("alone", m)][r], k=kk,
                                      scored=scored) for r in range(reps))
                   for m in MODES if (spec.label, m) in runs and runs[(spec.label, m)]}
        if not by_mode:
            continue
        agreement = None
        if "greedy" in by_mode:
            alone, spec_run = runs[("alone", "greedy")][0], runs[(spec.label, "greedy")][0]
            agreement = compare(alone.tokens, spec_run.tokens,
                                rows_along(seen["alone"], ids, alone.tokens),
                                rows_along(seen[spec.label], ids, spec_run.tokens))
        kind = kind_of(spec)
        out.append(DraftMeasure(spec.label, by_mode, agreement, kind.subset,
                                kind.c_macs(spec, cfg)))
    return out


@heavy
def measure(model: Model, text: str, drafts: Sequence[str], *, k: int = 4, T: float = 1.0,
            seed: int = 0, max_new: int = 16, kit: Kit = PLAIN_KIT,
            stop_s: float = MEASURE_STOP_S, reps: int = REPS, rule: str = "correct",
            ids: Sequence[int] | None = None, only: str | None = None,
            keep_first: bool = False, caps: tuple[int, int] = (K_MAX, NEW_MAX)) -> Measurement:
    """The target alone, greedy and sampled (T = 0: greedy only; only: that mode alone),
    then each draft's speculative decodes, reps times interleaved; past stop_s what was not
    run is named in `stopped`. ids: the prompt's tokens, when checked already; caps: the
    largest k and max_new (the page's; the CLI's are the engine's)."""
    k = check_n(k, caps[0], "k (drafted tokens per round)")
    max_new = check_n(max_new, caps[1], "max_new")
    reps = check_n(reps, REPS_MAX, "reps (runs of each decode)")
    T = check_temperature_or_greedy(T)
    run_modes = modes(T) if only is None else (only,)
    ids = encode_prompt(model, text) if ids is None else list(ids)
    specs = [parse_draft(d, cfg=model.cfg) for d in drafts]
    r = get_rule(rule)
    scored = rule_kind(r).scored(r, k)
    seen: dict = {}
    jobs = _alone_jobs(model, ids, T=T, seed=seed, max_new=max_new, seen=seen,
                       run_modes=run_modes)
    for spec in specs:
        jobs |= _draft_jobs(model, ids, spec, k=k, T=T, seed=seed, max_new=max_new, kit=kit,
                            rule=rule, seen=seen, keep_first=keep_first, run_modes=run_modes)
    before, t0 = load_average(), time.perf_counter()
    runs, done, left = interleaved(jobs, reps, stop_s=stop_s, t0=t0)
    seconds = time.perf_counter() - t0
    load = Load(before, load_average(), cpus())
    found = _measures(specs, runs, ids, k=k, scored=scored, cfg=model.cfg, seen=seen,
                      reps=done)
    names = list(dict.fromkeys(key[0] for key in left if key[0] != "alone"))
    stopped = None
    if names or any(key[0] == "alone" for key in left):
        stopped = (f"Stopped after {stop_s:g} s: {', '.join(names) or 'nothing'} not measured "
                   "(lower max_new or measure one draft at a time)")
    elif done < reps:
        stopped = (f"Stopped after {stop_s:g} s: every decode ran {done} of the {reps} times "
                   "asked, so the spreads are of fewer runs")
    firsts = {key: r[0] for key, r in runs.items() if r} if keep_first else {}
    return Measurement(len(ids), k, float(T), max_new, tuple(found), seconds,
                       stopped, done, load, run_modes, firsts)
