"""The audit of a verifier function: is verify(drafted, q, p, rng) -> emitted lossless?

    audit_verifier(fn, *, n=N_DEFAULT, seed=0, pair_names=None, budget_s=BUDGET_S,
                   level=LEVEL) -> VerifierAudit
    load(spec) -> function       spec "module:function", or a name of verifiers.EXAMPLES

On each pair of analysis.auditpairs, n times: draft x_1..x_k from q itself (q at the prefix
each time), call verify(drafted (k,), q (k, V), p (k + 1, V), rng) on copies, check what comes
back, and when the round emitted one token play a second round from it, for the first two
tokens. The counts (first token, first two tokens, tokens per round) go to
analysis.lawcompare.compare against the correct rule's exact laws and every known rule's.

Exit status (VerifierAudit.status): 0 lossless, 1 biased, 2 bad input (the function raised,
returned something other than 1..k+1 integer tokens in 0..V-1, changed its inputs, or the
run passed its time budget), 3 too small to tell (a known bug would go unseen at this n).
A function that never returns is stopped only from outside: audit_isolated runs the audit in
a child process (spawned: nothing of the caller's state) and kills it past the budget.

    audit_isolated(spec=None, *, source=None, budget_s=BUDGET_S, **kw) -> VerifierAudit
        spec as load() reads it, or source: Python text defining `verify` (run in the child)
"""

from __future__ import annotations

import importlib
import math
import multiprocessing
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core import interrupt
from ..core.sampling import draw_rows
from .auditpairs import FIRST, OUTPUT, TOKENS, TWO, Pair, bug_text, exact_laws, pair_named, pairs
from .lawcompare import (
    BAD_INPUT,
    BIASED,
    INCONCLUSIVE,
    LEVEL,
    LOSSLESS,
    UNLIKE,
    Comparison,
    compare,
    mean_and_error,
)
from .verifiers import EXAMPLES

N_DEFAULT = 10_000  # samples a pair (each one or two rounds)
N_MAX = 200_000
BUDGET_S = 600.0  # the whole run's time budget, seconds
STATUS = {LOSSLESS: 0, BIASED: 1, BAD_INPUT: 2, INCONCLUSIVE: 3}


class BadVerifier(ValueError):
    """The function broke the contract; the message says how, at which call."""


@dataclass(frozen=True)
class PairRun:
    """What the function emitted on one pair: its samples in order, as cells."""

    pair: Pair
    first: np.ndarray  # (n,) int32: the first token's cell
    second: np.ndarray  # (n,) int32: the second token's cell
    length: np.ndarray  # (n,) int8: tokens the first round emitted, 1..k+1
    cells: np.ndarray  # (V,) token -> cell
    laws: dict  # rule -> {statistic: exact law in cells}

    def counts(self, m: int | None = None) -> dict[str, np.ndarray]:
        """The counts of the first m samples (all by default), by statistic."""
        f, s, L = self.first[:m], self.second[:m], self.length[:m]
        B = int(self.cells.max()) + 1
        two = np.bincount(f.astype(np.int64) * B + s, minlength=B * B).reshape(B, B)
        return {FIRST: two.sum(axis=1), TWO: two,
                TOKENS: np.bincount(L - 1, minlength=self.pair.k + 1)}


@dataclass(frozen=True)
class VerifierAudit:
    """The verdict, what it rests on, and the run (for the page's figures)."""

    name: str
    verdict: str  # lossless | biased | bad input | too small to tell
    sentence: str
    n: int
    seconds: float
    calls: int
    runs: tuple[PairRun, ...] = ()
    comparison: Comparison | None = None
    acceptance: tuple[dict, ...] = ()  # per pair: observed and the rule's tokens per round
    error: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def status(self) -> int:
        return STATUS[self.verdict]


def load(spec: str) -> Callable:
    """A function from "module:function" (imported), or a built-in example's name."""
    if spec in EXAMPLES:
        return EXAMPLES[spec][0]
    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise ValueError(f"expected MODULE:FUNCTION or an example ({', '.join(EXAMPLES)}); "
                         f"got {spec!r}")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot load {spec!r}: {exc}") from None
    if not callable(fn):
        raise ValueError(f"{spec!r} is not a function")
    return fn


def load_source(source: str) -> Callable:
    """The function `verify` of Python source text (executed: only where that is allowed)."""
    space: dict = {"__name__": "pasted"}
    try:
        exec(compile(source, "<pasted verifier>", "exec"), space)  # noqa: S102
    except Exception as exc:
        raise ValueError(f"the code does not run: {type(exc).__name__}: {exc}") from None
    fn = space.get("verify")
    if not callable(fn):
        raise ValueError("the code must define a function named verify(drafted, q, p, rng)")
    return fn


def _tokens(out: object, k: int, V: int) -> list[int]:
    """The emitted tokens, checked: 1..k+1 integers in 0..V-1."""
    if isinstance(out, (list, tuple)) and all(
            isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in out):
        toks = [int(x) for x in out]  # the common case, without an array
    else:
        try:
            a = np.asarray(out)
        except Exception as exc:  # anything numpy refuses
            raise BadVerifier(f"returned {type(out).__name__}, not a sequence of tokens: "
                              f"{exc}") from None
        if a.ndim == 1 and len(a) == 0:
            toks = []
        elif a.ndim != 1 or a.dtype.kind not in "iu":
            raise BadVerifier(f"returned {a.dtype} of shape {a.shape}, not a sequence of "
                              "integer tokens")
        else:
            toks = [int(x) for x in a]
    if not 1 <= len(toks) <= k + 1:
        raise BadVerifier(f"returned {len(toks)} tokens; a round of k = {k} emits 1..{k + 1}")
    bad = [x for x in toks if not 0 <= x < V]
    if bad:
        raise BadVerifier(f"returned token {bad[0]}, outside 0..{V - 1}")
    return toks


class _Caller:
    """Calls the function on read-only arrays (a write raises, and is said as a change of its
    inputs), checks the answer and the clock."""

    def __init__(self, fn: Callable, rng: np.random.Generator, budget_s: float):
        self.fn, self.rng, self.calls = fn, rng, 0
        self.deadline = time.perf_counter() + budget_s
        self.budget_s = budget_s

    def __call__(self, drafted, q, p) -> list[int]:
        for a in (drafted, q, p):  # fresh arrays (fancy indexing), handed out read-only
            a.flags.writeable = False
        self.calls += 1
        try:
            out = self.fn(drafted, q, p, self.rng)
        except ValueError as exc:
            if "read-only" in str(exc):
                raise BadVerifier(f"changed its inputs (drafted, q or p: read-only) at call "
                                  f"{self.calls}") from None
            raise BadVerifier(f"raised ValueError at call {self.calls}: {exc}") from None
        except Exception as exc:
            raise BadVerifier(f"raised {type(exc).__name__} at call {self.calls}: {exc}") \
                from None
        if time.perf_counter() > self.deadline:
            raise BadVerifier(f"took longer than the time budget of {self.budget_s:g} s "
                              f"({self.calls:,} calls)")
        return _tokens(out, q.shape[0], q.shape[1])


ROWS_CELLS = 1 << 20  # entries of the (rows, V) block of q rows one vectorised draw reads


def _paths(pair: Pair, starts: np.ndarray, U: np.ndarray) -> np.ndarray:
    """Each round's prefix and drafts: starts (m,), then x_i ~ Q[x_(i-1)] with the uniforms
    U (m, k), by core.sampling.draw_rows, in blocks of ROWS_CELLS entries. -> (m, k + 1)"""
    m, k = len(starts), pair.k
    paths = np.empty((m, k + 1), dtype=np.int64)
    paths[:, 0] = starts
    step = max(1, ROWS_CELLS // pair.V)
    for a in range(0, m, step):
        for i in range(k):
            rows = paths[a:a + step, i]
            paths[a:a + step, i + 1] = draw_rows(pair.Q[rows], U[a:a + step, i])
    return paths


def _rounds(call: _Caller, pair: Pair, paths: np.ndarray) -> list[list[int]]:
    """The function on each round: drafted = path[1:], q = Q[path[:-1]], p = P[path]."""
    out = []
    for i, path in enumerate(paths):
        if i % 256 == 0:
            interrupt.check()  # an app's time budget (core.interrupt): OverBudget past it
        out.append(call(path[1:].copy(), pair.Q[path[:-1]], pair.P[path]))
    return out


def _play(call: _Caller, pair: Pair, n: int, rng: np.random.Generator) -> PairRun:
    """n samples: a first round from ctx; where it emitted one token, a second round from
    that token for the second."""
    U = rng.random((2, n, pair.k))  # the drafts' uniforms, two rounds a sample
    emitted = _rounds(call, pair, _paths(pair, np.full(n, pair.ctx), U[0]))
    length = np.array([len(e) for e in emitted], dtype=np.int8)
    first = np.array([e[0] for e in emitted], dtype=np.int32)
    second = np.array([e[1] if len(e) > 1 else -1 for e in emitted], dtype=np.int32)
    again = np.flatnonzero(length == 1)
    if len(again):
        more = _rounds(call, pair, _paths(pair, first[again], U[1, again]))
        second[again] = [e[0] for e in more]
    cells, laws = exact_laws(pair.name)
    return PairRun(pair, cells[first], cells[second], length, cells, laws)


def _acceptance(run: PairRun) -> dict:
    k = run.pair.k
    mean, se = mean_and_error(run.counts()[TOKENS], np.arange(1, k + 2))
    rule = float(run.laws["correct"][TOKENS] @ np.arange(1, k + 2))
    return {"pair": run.pair.name, "k": k, "tokens": mean, "se": se, "rule": rule,
            "z": (rule - mean) / se if se > 0 else (math.inf if rule > mean else 0.0)}


def _compare(runs: Sequence[PairRun], level: float) -> Comparison:
    observed, target, known = {}, {}, {}
    for r in runs:
        for stat, c in r.counts().items():
            key = f"{r.pair.name}: {stat}"
            observed[key], target[key] = c, r.laws["correct"][stat]
            for name, laws in r.laws.items():
                known.setdefault(name, {})[key] = laws[stat]
    output = [f"{r.pair.name}: {s}" for r in runs for s in OUTPUT]
    return compare(observed, target, known, output=output, level=level)


def _line(c) -> str:
    p = f"p = {c.p_value:.2g}" if c.p_value > 0 else "p < 1e-300"
    return f"{c.name}: TV {c.tv:.4f} against the line {c.threshold:.4f} (floor {c.floor:.4f}), {p}"


def _sentence(cmp: Comparison, acc: Sequence[dict], n: int, level: float) -> str:
    where = f"n = {n:,} a pair, {len(acc)} pairs"
    if cmp.verdict == BIASED:
        like = cmp.behaves_like  # "like NAME", "like one of ...", or UNLIKE ("biased, ...")
        if len(cmp.like) == 1:
            like += f" ({bug_text(cmp.like[0])})"
        head = like if like.startswith(UNLIKE) else f"biased, {like}"
        return f"{head}: {_line(cmp.worst)}; {where}."
    if cmp.verdict == INCONCLUSIVE:
        return (f"too small to tell: no statistic differs, but this n would not catch "
                f"{', '.join(cmp.unseen)}; it catches TV >= {cmp.detectable:.4f} at best; "
                f"{where}; raise n.")
    z = max(a["z"] for a in acc)
    text = (f"lossless: no statistic differs from the target at level {level:g} (worst "
            f"{_line(cmp.worst)}); it would catch a bias of TV >= {cmp.detectable:.4f}; "
            f"{where}")
    if z > _z_line(level / max(len(acc), 1)):
        lost = sum(a["rule"] - a["tokens"] for a in acc) / sum(a["rule"] for a in acc)
        like = f", like {cmp.like[0]}" if len(cmp.like) == 1 else ""
        text += (f"; but it accepts less than the rule{like}: it leaves {100 * lost:.1f}% of "
                 "the rule's tokens per round on the table")
    return text + "."


def _z_line(alpha: float) -> float:
    """The one-sided normal quantile z with P(Z > z) = alpha, by bisection on erfc."""
    lo, hi = 0.0, 40.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if 0.5 * math.erfc(mid / math.sqrt(2)) > alpha else (lo, mid)
    return hi


def audit_verifier(fn: Callable, *, n: int = N_DEFAULT, seed: int = 0,
                   pair_names: Sequence[str] | None = None, budget_s: float = BUDGET_S,
                   level: float = LEVEL, name: str = "") -> VerifierAudit:
    """Audit fn on the pairs (all of analysis.auditpairs by default), n samples each."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= N_MAX:
        raise ValueError(f"n must be an integer 1..{N_MAX:,}; got {n!r}")
    chosen = pairs() if pair_names is None else tuple(pair_named(p) for p in pair_names)
    name = name or getattr(fn, "__name__", "verify")
    rng = np.random.default_rng(seed)
    call = _Caller(fn, np.random.default_rng([seed, 1]), budget_s)
    t0 = time.perf_counter()
    try:
        runs = tuple(_play(call, pair, int(n), rng) for pair in chosen)
    except BadVerifier as exc:
        return VerifierAudit(name, BAD_INPUT, f"bad input: the function {exc}.", int(n),
                             time.perf_counter() - t0, call.calls, error=str(exc))
    cmp = _compare(runs, level)
    acc = tuple(_acceptance(r) for r in runs)
    return VerifierAudit(name, cmp.verdict, _sentence(cmp, acc, int(n), level), int(n),
                         time.perf_counter() - t0, call.calls, runs, cmp, acc)


STARTUP_S = 60.0  # what a spawned child may take to import numpy and specviz
READY = "ready"  # the child's first message: imported, the function loaded, the clock starts


def _child(conn, spec, source, kw) -> None:
    try:
        fn = load_source(source) if source is not None else load(spec)
        conn.send(READY)
        conn.send(audit_verifier(fn, **kw))
    except ValueError as exc:
        conn.send(exc)
    finally:
        conn.close()


def _answer(recv, budget_s: float):
    """(the child's answer or None, whether it came or the child ended before the budget):
    STARTUP_S for the child to be ready, then budget_s (+ 10%) for the audit."""
    wait = STARTUP_S
    try:
        while recv.poll(wait):
            msg = recv.recv()
            if msg != READY:
                return msg, True
            wait = 1.1 * budget_s + 1.0
    except EOFError:  # the child died without an answer
        return None, True
    return None, False


def audit_isolated(spec: str | None = None, *, source: str | None = None,
                   budget_s: float = BUDGET_S, **kw) -> VerifierAudit:
    """audit_verifier in a child process, killed past budget_s (counted once it has loaded
    the function): a function that never returns gets a verdict of bad input too. Bad specs
    and code that does not define verify raise ValueError."""
    name = kw.get("name") or spec or "verify"
    ctx = multiprocessing.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, spec, source,
                                            {**kw, "budget_s": budget_s, "name": name}),
                       daemon=True)
    t0 = time.perf_counter()
    proc.start()
    send.close()
    try:
        out, ended = _answer(recv, budget_s)
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
    if isinstance(out, ValueError):
        raise out
    if out is None:
        why = (f"took longer than the time budget of {budget_s:g} s (stopped)" if not ended
               else f"ended the process (exit code {proc.exitcode})")
        return VerifierAudit(name, BAD_INPUT, f"bad input: the function {why}.",
                             int(kw.get("n", N_DEFAULT)), time.perf_counter() - t0, 0,
                             error=why)
    return out
