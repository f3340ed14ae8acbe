"""/audit's data: a verifier function audited (analysis.verifieraudit), drawn as /exactness
draws ours: its first-token law beside the target's, TV against n beside the sampling floor,
and the verdict in one sentence.

A built-in example runs here; code pasted into the page runs only when the app runs locally
(is_local: SPECVIZ_LOCAL=1 in the server's environment, or a server bound to a loopback
address; never anything a visitor's request says), in a child process with a time budget.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..analysis.auditpairs import FIRST, TWO
from ..analysis.lawcompare import BIASED, LOSSLESS
from ..analysis.stats import empirical, sampling_floor, tv
from ..analysis.verifieraudit import PairRun, VerifierAudit, audit_isolated, audit_verifier, load
from ..analysis.verifiers import BAD, EXAMPLES
from .demos import Convergence, Row
from .work import heavy

LOCAL_ENV = "SPECVIZ_LOCAL"  # "1": this server may run code pasted into /audit
LOOPBACK = ("localhost", "127.0.0.1", "::1")
PAIRS = ("zeros", "p ≫ q", "near-ties", "k = 1", "V = 16, k = 4")  # every known bug shows
# on one of these (the least: inclusive_coin, TV 0.106 on the first token of 'zeros', which
# n = 2,000 catches: 0.085); the CLI audits on all nine pairs
N_DEFAULT, N_MAX = 2_000, 5_000  # the page stays within its time budget (20 s)
CODE_BUDGET_S = 60.0  # what pasted code may take, all rounds together
CHOICES = tuple(name for name, ex in EXAMPLES.items() if name != "hangs")  # built-in examples
CHECKPOINTS = (100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000)  # n of the TV sweep
CODE_EXAMPLE = '''import numpy as np

def verify(drafted, q, p, rng):
    """Leviathan et al. 2022, Algorithm 1."""
    out = []
    for i, x in enumerate(drafted):
        if rng.random() < min(1.0, p[i, x] / q[i, x]):
            out.append(int(x))
            continue
        r = np.maximum(p[i] - q[i], 0.0)
        out.append(int(rng.choice(len(r), p=r / r.sum())))
        return out
    return out + [int(rng.choice(p.shape[1], p=p[-1]))]
'''


def is_local(env: Mapping[str, str], address: str | None) -> bool:
    """Whether this server may run pasted code: its operator said so (SPECVIZ_LOCAL=1), or
    it listens on a loopback address only (server.address), so no one else can reach it."""
    return env.get(LOCAL_ENV, "") == "1" or (address or "").strip("[]") in LOOPBACK


@heavy
def audit_example(name: str, *, n: int, seed: int) -> VerifierAudit:
    """A built-in example (verifiers.EXAMPLES) audited on PAIRS, here."""
    if name not in CHOICES:
        raise ValueError(f"unknown example {name!r}")
    return audit_verifier(load(name), n=n, seed=seed, pair_names=PAIRS, name=name)


def audit_code(code: str, *, n: int, seed: int) -> VerifierAudit:
    """Pasted code defining verify(...), audited on PAIRS in a child process (only where
    is_local says so: the page asks it first)."""
    return audit_isolated(source=code, n=n, seed=seed, pair_names=PAIRS,
                          budget_s=CODE_BUDGET_S, name="your verify")


def expected(name: str) -> str:
    """What a built-in example is, and the verdict it should get."""
    _, what, verdict, like = EXAMPLES[name]
    return f"{what}: should be {verdict}" + (f", like {like}" if verdict == BIASED and like
                                             else "")


def tone(a: VerifierAudit) -> str:
    """success (lossless), warning (biased, bad input, too small to tell): st.error is kept
    for what went wrong in the app, and a biased verdict is a finding."""
    return "success" if a.verdict == LOSSLESS else "warning"


def _run(a: VerifierAudit, pair: str) -> PairRun:
    return next(r for r in a.runs if r.pair.name == pair)


def _labels(run: PairRun) -> list[str]:
    """Cell names: the token ids, or the pooled ones' ids and 'rest'."""
    V, cells = run.pair.V, run.cells
    if int(cells.max()) + 1 == V:
        return [str(x) for x in range(V)]
    names = [""] * (int(cells.max()) + 1)
    for x in np.flatnonzero(cells < len(names) - 1):
        names[cells[x]] = str(x)
    names[-1] = "rest"
    return names


def worst_pair(a: VerifierAudit) -> str:
    """The pair of the statistic furthest above its line (what the charts show first)."""
    return a.comparison.worst.name.split(": ")[0] if a.comparison else PAIRS[0]


def nearest(a: VerifierAudit) -> str:
    """The known rule drawn beside the audit: the one it behaves like, else the rule."""
    like = a.comparison.like if a.comparison else ()
    return like[0] if len(like) == 1 else "correct"


def first_rows(a: VerifierAudit, pair: str) -> list[Row]:
    """The first token on one pair: target, the audited function's frequencies, and the
    exact law of the known rule it is nearest (charts.marginal_bars' rows)."""
    run = _run(a, pair)
    seen = empirical(run.counts()[FIRST])
    target, near = run.laws["correct"][FIRST], run.laws[nearest(a)][FIRST]
    return [{"token": t, "target": float(target[i]), "speculative": float(seen[i]),
             "exact": float(near[i])} for i, t in enumerate(_labels(run))]


def convergence(a: VerifierAudit, pair: str) -> Convergence:
    """TV of the first two tokens against n (the first m samples, m on CHECKPOINTS and n),
    the floor at each m, and the nearest known rule's bias (where it levels off)."""
    run = _run(a, pair)
    target = run.laws["correct"][TWO]
    ns = sorted({m for m in CHECKPOINTS if m < a.n} | {a.n})
    mc = [tv(empirical(run.counts(m)[TWO]), target) for m in ns]
    name = nearest(a)
    bias = tv(run.laws[name][TWO], target)
    return Convergence(ns=ns, floor=[sampling_floor(target, m) for m in ns],
                       mc_tv={a.name: mc}, exact_tv={} if name == "correct" else {name: bias})


def check_rows(a: VerifierAudit) -> list[Row]:
    """Each output statistic of each pair: n, TV, floor, the line, p-value, passed."""
    return [{"statistic": c.name, "n": c.n, "tv": c.tv, "floor": c.floor, "line": c.threshold,
             "p": c.p_value, "passed": c.passed} for c in a.comparison.checks] \
        if a.comparison else []


def bad_examples() -> tuple[str, ...]:
    return tuple(name for name in CHOICES if EXAMPLES[name][2] == BAD)
