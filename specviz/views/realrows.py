"""Exact on real rows: the laws of one real round of Gemma 3 270M and its draft, and a Monte
Carlo check of the first emitted token against the target's row.

At each position i of a round drafted from the prompt, the real rows p_i and q_i give the
chance the draft is kept, beta_i = sum_x min(p_i(x), q_i(x)) (core.rule.overlap), and the
law of the token emitted on a rejection, norm(max(0, p_i - q_i)) (core.rule.residual).

The check runs the core's exact law and Monte Carlo (views.demos.exactness) on the rows at
the prompt, over a vocabulary lumped without loss for this question: the `top` tokens of
largest max(p, q) one by one, then the rest in two lumps, one where p >= q and one where
p < q. Inside a lump where p - q keeps one sign, sum min(p, q) = min(sum p, sum q) and
sum max(0, p - q) = max(0, sum p - sum q), so the chance of keeping the draft, the
residual's mass on every lump, and the law of the first emitted token on the lumps are
exactly those of the full 262,144-token rows, for every rule whose coin is
min(1, p / q) and whose rejection law is the residual or p (correct, no_resample).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..analysis.audit import CAUGHT, CONSISTENT, FALSE_ALARM, UNRESOLVED
from ..analysis.stats import GOF_ALPHA
from ..core.round import play_round
from ..core.rule import overlap, residual
from ..core.scenario import Scenario
from ..llm.drafts import Kit, draft_pair, kind_of, parse_draft
from .demos import Exactness, exactness
from .llmpage import PLAIN_KIT, encode_prompt
from .pagedata import exactness_rows
from .work import heavy

LUMP_TOP = 30  # tokens kept one by one in the check's vocabulary (then two lumps)
BROKEN = "no_resample"  # the negative control: a rejection draws from p, not the residual
CHECK_N = 40_000  # Monte Carlo rounds per rule
SHOWN = 3  # residual tokens named per position


def lump(p: np.ndarray, q: np.ndarray, *, top: int = LUMP_TOP):
    """(p', q', members): p and q (V,) summed over top + 2 cells, the `top` tokens of
    largest max(p, q) and the rest split by the sign of p - q; members[j]: ids in cell j."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    order = np.lexsort((np.arange(len(p)), -np.maximum(p, q)))
    head, rest = order[:top], order[top:]
    members = [np.array([i]) for i in head]
    members += [rest[p[rest] >= q[rest]], rest[p[rest] < q[rest]]]
    pl = np.array([p[m].sum() for m in members])
    ql = np.array([q[m].sum() for m in members])
    return pl / pl.sum(), ql / ql.sum(), members


@dataclass(frozen=True)
class RealRows:
    positions: list[dict]  # one per drafted position: token, p, q, keep chance, beta, residual
    cells: tuple[str, ...]  # the check's vocabulary, as text
    check: Exactness  # correct and the broken rule on the lumped rows at the prompt
    beta_full: float  # sum min(p, q) on the full rows at the prompt
    beta_lumped: float  # the same on the lumped rows (equal up to rounding)


def _names(pair, members) -> tuple[str, ...]:
    names = [f"'{pair.name(int(m[0]))}'" for m in members[:-2]]
    return tuple(names + [f"other {len(members[-2]):,} tokens, p >= q",
                          f"other {len(members[-1]):,} tokens, p < q"])


def _position(pair, prefix, i, x) -> dict:
    p, q = pair.p(prefix), pair.q(prefix)
    r = residual(p, q)
    top = np.argsort(-r)[:SHOWN]
    return {"i": i + 1, "context": pair.tail(prefix), "token": pair.name(x),
            "p": float(p[x]), "q": float(q[x]),
            "keep": float(min(1.0, p[x] / q[x])) if q[x] > 0 else 1.0,
            "beta": float(overlap(p, q)), "reject": 1.0 - float(overlap(p, q)),
            "residual": ", ".join(f"'{pair.name(int(t))}' {r[t]:.3f}" for t in top)}


@heavy
def real_rows(model, text: str, draft: str, *, k: int = 4, T: float = 1.0, seed: int = 0,
              n: int = CHECK_N, kit: Kit = PLAIN_KIT) -> RealRows:
    """One real round's per-position laws and the first token's check at the prompt."""
    ids = encode_prompt(model, text)
    spec = parse_draft(draft, cfg=model.cfg)
    if T == 0:
        raise ValueError("at T = 0 p and q are one-hot at their argmax, so a draft is kept "
                         "or not with certainty and there is no law to sample: the check "
                         "needs T > 0")
    if kind_of(spec).proposes:
        raise ValueError("prompt lookup has no q of its own to check; choose a model draft")
    pair = draft_pair(model, spec, T=T, kit=kit)
    tr = play_round(Scenario.on(pair, ids, k=k, seed=seed))
    rows = [_position(pair, ids + [x.token for x in tr.positions[:i]], i, pos.token)
            for i, pos in enumerate(tr.positions)]
    p, q = pair.p(ids), pair.q(ids)
    pl, ql, members = lump(p, q)
    V = len(pl)
    check = exactness(Scenario.of(np.tile(pl, (V, 1)), np.tile(ql, (V, 1)), ctx=0, k=1,
                                  seed=seed), n=n, rules=("correct", BROKEN), n_tokens=1)
    return RealRows(rows, _names(pair, members), check, float(overlap(p, q)),
                    float(overlap(pl, ql)))


def check_rows(r: RealRows) -> list[dict]:
    """The check's table: each rule's TV from the target's row, Monte Carlo and exact,
    against the sampling floor and the threshold derived from n."""
    return [{**row, "n": a.audit.n, "consistent": a.audit.verdict == CONSISTENT}
            for row, a in zip(exactness_rows(r.check), r.check.audits, strict=True)]


def expected(row: dict) -> str:
    """What the check's verdict on one rule means, as the end of its sentence."""
    return {CONSISTENT: ", as a lossless rule must.",
            FALSE_ALARM: f": a lossless rule flagged, which happens by chance in about "
                         f"{GOF_ALPHA:g} of runs (the chi-square test's level).",
            CAUGHT: ": this broken rule's output is not the target's, and the check sees it.",
            UNRESOLVED: f": this broken rule was not caught at this n (its exact TV "
                        f"{row['exact_tv']:.5f} is below what n draws can see); raise n.",
            }[row["verdict"]]


def law_rows(r: RealRows) -> list[dict]:
    """The first emitted token's law on the check's cells: the target's row, each rule's
    exact law and its Monte Carlo share."""
    out = []
    for j, name in enumerate(r.cells):
        row = {"cell": name, "p": float(r.check.target[j])}
        for a in r.check.audits:
            row[f"{a.rule}_exact"] = float(a.exact_law[j])
            row[f"{a.rule}_mc"] = float(a.mc_law[j])
        out.append(row)
    return out


POSITION_COLUMNS = {
    "i": ("position", "%d"), "context": ("context", None), "token": ("draft", None),
    "p": ("p(x)", "%.4f"), "q": ("q(x)", "%.4f"), "keep": ("min(1, p/q)", "%.4f"),
    "beta": ("sum min(p, q)", "%.4f"),
    "residual": ("residual's top tokens", None),
}
CHECK_COLUMNS = {
    "rule": ("rule", None), "lossless": ("lossless rule", "check"),
    "mc_tv": ("Monte Carlo TV", "%.5f"), "exact_tv": ("exact TV", "%.5f"),
    "floor": ("sampling floor", "%.5f"), "threshold": ("threshold", "%.5f"),
    "p_value": ("chi-square p", "%.4f"), "verdict": ("verdict", None),
}
LAW_COLUMNS = {
    "cell": ("token", None), "p": ("p (target)", "%.5f"),
    "correct_exact": ("correct, exact", "%.5f"), "correct_mc": ("correct, sampled", "%.5f"),
    f"{BROKEN}_exact": ("broken, exact", "%.5f"), f"{BROKEN}_mc": ("broken, sampled", "%.5f"),
}
