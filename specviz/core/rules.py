"""The registry of verification rules: lossless, lossy by design, and broken by real bugs.

One registry serves every engine (play_round, simulate, exact_joint), the command line,
the pages and the tests. A rule is read through a few tables over (context c, token x):
  draft_table(P, Q)  -> Qs: what the draft really samples from
  accept_table(P, Q) -> A:  draft x at context c is kept iff u < A[c, x] (u <= A if inclusive)
  reject_table(P, Q) -> R:  law of the token emitted on the first rejection
plus flags: keep_unverified (emit the later drafts anyway), rejection_skips_draft (the
rejection token is R[c] with the rejected draft removed), and kind "multi" for several
candidates per position, kind "block" for a block verified jointly (its engines read P
and Qs; specviz.core.block). apply_rule turns a rule and a pair into RuleTables, which
also carry the exact per-position laws acc (drafted and kept) and rej (rejected, y emitted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from .rule import ratio, residual
from .tree import check_paths
from .warp import Warp, warp_rows

Table = np.ndarray  # (V, V), row = context c, column = token x
Params = dict[str, float]


# ---------------------------------------------------------------------- table builders
def _as_is(P: Table, Q: Table, prm: Params) -> Table:
    return Q


def _ratio(P: Table, Q: Table, prm: Params) -> Table:
    return ratio(P, Q)


def _residual(P: Table, Q: Table, prm: Params) -> Table:
    return residual(P, Q)


def _target(P: Table, Q: Table, prm: Params) -> Table:
    return P


def _target_prob(P: Table, Q: Table, prm: Params) -> Table:
    """A[c, x] = p(x | c): sampler-match keeps x iff a fresh sample from p equals it."""
    return P


def one_hot_argmax(M: Table) -> Table:
    """The greedy drafter: all mass on each row's most likely token (first maximum)."""
    H = np.zeros_like(M)
    H[np.arange(M.shape[0]), M.argmax(axis=1)] = 1.0
    return H


def _one_hot(P: Table, Q: Table, prm: Params) -> Table:
    return one_hot_argmax(Q)


def _one_hot_ratio(P: Table, Q: Table, prm: Params) -> Table:
    return ratio(P, one_hot_argmax(Q))


def _one_hot_residual(P: Table, Q: Table, prm: Params) -> Table:
    return residual(P, one_hot_argmax(Q))


def _greedy_match(P: Table, Q: Table, prm: Params) -> Table:
    """A[c, x] = 1 iff x = argmax_x P[c]."""
    return one_hot_argmax(P)


def _typical(P: Table, Q: Table, prm: Params) -> Table:
    """Medusa: keep x iff p(x) > min(eps, delta exp(-H(p))), H the entropy of p(.|c) in nats."""
    with np.errstate(divide="ignore", invalid="ignore"):
        H = -np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0)), 0.0).sum(axis=1)  # (V,)
    cut = np.minimum(prm["eps"], prm["delta"] * np.exp(-H))  # (V,)
    return (P > cut[:, None]).astype(np.float64)


def _lenient(P: Table, Q: Table, prm: Params) -> Table:
    """A = p / (l q): with l < 1 more drafts pass; l = 1 is the exact rule."""
    return ratio(P, Q) / prm["l"]


def _top_k(P: Table, Q: Table, prm: Params) -> Table:
    """q restricted to its top_k tokens per row and renormalised (ties: lower index first)."""
    kk = int(prm["top_k"])
    order = np.argsort(-Q, axis=1, kind="stable")[:, :kk]  # (V, top_k)
    keep = np.zeros_like(Q)
    rows = np.arange(Q.shape[0])[:, None]
    keep[rows, order] = Q[rows, order]
    return keep / keep.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------------- warped requests
# The rules below carry a request's warp as parameters and read the raw rows P, Q: the
# output must follow warp(P); the draft samples from warp(Q) when warp_draft = 1.
def _warped_p(P: Table, prm: Params) -> Table:
    return warp_rows(P, Warp.from_params(prm))


def _warped_q(P: Table, Q: Table, prm: Params) -> Table:
    return warp_rows(Q, Warp.from_params(prm)) if prm["warp_draft"] else Q


def _warp_target(P: Table, Q: Table, prm: Params) -> Table:
    return _warped_p(P, prm)


def _warp_ratio(P: Table, Q: Table, prm: Params) -> Table:
    return ratio(_warped_p(P, prm), _warped_q(P, Q, prm))


def _warp_residual(P: Table, Q: Table, prm: Params) -> Table:
    return residual(_warped_p(P, prm), _warped_q(P, Q, prm))


def _raw_target_ratio(P: Table, Q: Table, prm: Params) -> Table:
    return ratio(P, _warped_q(P, Q, prm))


def _raw_target_residual(P: Table, Q: Table, prm: Params) -> Table:
    return residual(P, _warped_q(P, Q, prm))


def _raw_q_ratio(P: Table, Q: Table, prm: Params) -> Table:
    return ratio(_warped_p(P, prm), Q)


def _raw_q_residual(P: Table, Q: Table, prm: Params) -> Table:
    return residual(_warped_p(P, prm), Q)


def _unnormalised(P: Table, prm: Params) -> Table:
    return warp_rows(P, Warp.from_params(prm), renormalise=False)


def _unnormalised_ratio(P: Table, Q: Table, prm: Params) -> Table:
    return ratio(_unnormalised(P, prm), _warped_q(P, Q, prm))


def _unnormalised_residual(P: Table, Q: Table, prm: Params) -> Table:
    return residual(_unnormalised(P, prm), _warped_q(P, Q, prm))


def _warp_params(draft: int = 0) -> tuple[Param, ...]:
    return (Param("temperature", 0.8, 0.05, 5.0, "target (and draft) temperature"),
            Param("top_k", 0, 0, 4096, "keep the k most likely (0 = off)", integer=True),
            Param("top_p", 0.9, 0.01, 1.0, "keep the most likely up to this mass"),
            Param("min_p", 0.0, 0.0, 1.0, "keep x with p(x) >= min_p max p"),
            Param("warp_draft", draft, 0, 1, "1: the draft samples from the warped q",
                  integer=True))


def _shape_param(default: int) -> tuple[Param, ...]:
    return (Param("shape", default, 0, 4, "tree preset (core.tree.PRESETS)", integer=True),)


# ---------------------------------------------------------------------- the rule
@dataclass(frozen=True)
class Param:
    name: str
    default: float
    lo: float
    hi: float
    help: str
    integer: bool = False


@dataclass(frozen=True)
class Rule:
    """One verification rule."""

    name: str
    label: str
    family: str  # "lossless" | "lossy by design" | "broken"
    source: str  # where it comes from: a paper section or the public issue that reported it
    description: str
    draft_table: Callable[[Table, Table, Params], Table] = _as_is
    accept_table: Callable[[Table, Table, Params], Table] = _ratio
    reject_table: Callable[[Table, Table, Params], Table] = _residual
    target_table: Callable[[Table, Table, Params], Table] = _target  # the law to follow
    reject_law: str = "norm(max(0, p - q))"  # how the app names the rejection law
    keep_unverified: bool = False  # emit the drafts after a rejection without checking them
    rejection_skips_draft: bool = False  # the rejection token avoids the rejected draft
    inclusive: bool = False  # keep iff u <= A, with u on a grid of 2^u_bits values from 0
    kind: str = "single"  # "single": one draft per position; "multi": m candidates;
    # "block": the block verified jointly (specviz.core.block); "tree": a token tree
    tree: str = ""  # kind "tree": how siblings are drawn and verified (core.tree.MODES)
    params: tuple[Param, ...] = ()
    values: tuple[tuple[str, float], ...] = ()  # overrides of the parameters' defaults
    paths: tuple[tuple[int, ...], ...] = ()  # kind "tree": an explicit tree as paths of
    # sibling indices (Medusa's choices); () drafts the preset 'shape'

    @property
    def lossless(self) -> bool:
        return self.family == "lossless"

    @property
    def prm(self) -> Params:
        p = {q.name: q.default for q in self.params}
        p.update(dict(self.values))
        return p

    def with_params(self, **kw: float) -> Rule:
        """The same rule with some parameters changed (checked against their ranges)."""
        known = {q.name: q for q in self.params}
        for key, v in kw.items():
            if key not in known:
                raise ValueError(f"rule {self.name!r} has no parameter {key!r}; "
                                 f"it has: {', '.join(known) or 'none'}")
            q = known[key]
            if not (isinstance(v, (int, float)) and q.lo <= v <= q.hi) or (
                q.integer and v != int(v)
            ):
                raise ValueError(f"{self.name}.{key} must be "
                                 f"{'an integer' if q.integer else 'a number'} in "
                                 f"[{q.lo:g}, {q.hi:g}]; got {v!r}")
        return replace(self, values=tuple({**dict(self.values), **kw}.items()))

    @property
    def param_text(self) -> str:
        if self.paths:
            return f"tree = {len(self.paths)} paths"
        return ", ".join(f"{k} = {v:g}" for k, v in self.prm.items())


def keep_prob(rule: Rule, A: Table) -> Table:
    """P(coin passes | A): clip(A, 0, 1) for u ~ U[0, 1) and the strict test u < A.

    Inclusive test on a grid u in {0, 1/G, ..., (G-1)/G}, G = 2^u_bits:
    P(u <= A) = min(G, floor(A G) + 1) / G for A >= 0, so even A = 0 passes with 1/G.
    """
    if not rule.inclusive:
        return np.clip(A, 0.0, 1.0)
    G = 2.0 ** rule.prm["u_bits"]
    safe = np.where(np.isfinite(A), A, G)  # inf passes always
    return np.where(A >= 0, np.minimum(G, np.floor(safe * G) + 1.0) / G, 0.0)


def coin_passes(rule: Rule, u: np.ndarray, A: np.ndarray) -> np.ndarray:
    """The coin as the rule executes it."""
    if not rule.inclusive:
        return u < A
    G = 2.0 ** rule.prm["u_bits"]
    return np.floor(u * G) / G <= A


RULES: dict[str, Rule] = {
    r.name: r
    for r in (
        Rule(
            "correct", "rejection sampling (standard)", "lossless",
            "Leviathan et al. 2022, Algorithm 1 and Thm 3.5; Chen et al. 2023, Algorithm 2",
            "keep x with probability min(1, p/q); on the first rejection emit one token from "
            "norm(max(0, p - q)); if all k pass, a bonus token from p",
        ),
        Rule(
            "one_hot", "one-hot q (greedy or n-gram drafter)", "lossless",
            "Leviathan et al. 2022, Algorithm 1 applied to a deterministic draft, as used for "
            "prompt-lookup and greedy drafters",
            "the drafter proposes one token with certainty (here q's most likely one), so q is "
            "one-hot: keep it with probability p(x); on rejection draw from p with x removed",
            draft_table=_one_hot, accept_table=_one_hot_ratio, reject_table=_one_hot_residual,
            reject_law="p with the draft removed",
        ),
        Rule(
            "sampler_match", "sampler match", "lossless",
            "exact-match verification of a sampled draft: emit the target's own sample",
            "draw a fresh token from p and keep the draft iff they agree; emit the fresh token "
            "either way. Exact, but it keeps sum p q of the mass instead of sum min(p, q)",
            accept_table=_target_prob, reject_table=_target, rejection_skips_draft=True,
            reject_law="p given it differs from the draft",
        ),
        Rule(
            "multi_draft", "multi-draft tree (SpecInfer)", "lossless",
            "Miao et al. 2024 (SpecInfer), multi-step speculative sampling",
            "m candidates per position from q; candidate j is kept with min(1, p_j/q), where "
            "p_1 = p and p_(j+1) = norm(max(0, p_j - q)) after each failure; if all fail, "
            "emit from p_(m+1)",
            kind="multi",
            params=(Param("m", 3, 1, 8, "candidates per position", integer=True),),
            reject_law="p_(m+1), the residual after m failures",
        ),
        Rule(
            "block", "block verification", "lossless",
            "Sun et al. 2024, Block verification accelerates speculative decoding "
            "(arXiv 2403.10444)",
            "the k drafts are verified jointly: weights w_i = min(1, w_(i-1) p/q) along the "
            "block, coins from the end backwards keep the longest prefix whose coin passes "
            "h_i = S_i / (S_i + 1 - w_i), then one token from norm(max(0, w_i p - q)) (the "
            "bonus from p if all k are kept). Never fewer kept drafts in expectation than "
            "token by token",
            kind="block", reject_law="norm(max(0, w_i p - q)), w_i the block's weight",
        ),
        Rule(
            "tree_iid", "token tree, i.i.d. siblings (SpecInfer)", "lossless",
            "Miao et al. 2023 (SpecInfer, arXiv 2305.09781), multi-step speculative sampling",
            "a tree of drafts (preset 'shape', cut to depth k); at each node the siblings, "
            "drawn i.i.d. from q, are tried in turn against p_j, p_(j+1) = norm(max(0, p_j "
            "- q)); the kept one's subtree goes on; if all fail, one token from the last "
            "residual; a kept leaf ends with the bonus from p",
            kind="tree", tree="iid", reject_law="the residual after every sibling failed",
            params=_shape_param(1),
        ),
        Rule(
            "tree_wor", "token tree, siblings without replacement", "lossless",
            "Jeon et al. 2024 (recursive speculative decoding, arXiv 2402.14160); EAGLE-2's "
            "distinct top candidates (Li et al. 2024, arXiv 2406.16858)",
            "as tree_iid, but the siblings are distinct: the j-th is drawn from q_j, q with "
            "the earlier siblings removed and renormalised, and the ratio and the residual "
            "use that q_j (recursive rejection sampling)",
            kind="tree", tree="wor", reject_law="the residual after every sibling failed",
            params=_shape_param(1),
        ),
        Rule(
            "warped", "warped target (temperature, top-k, top-p, min-p)", "lossless",
            "Leviathan et al. 2022, Algorithm 1 applied to the rows a request samples from",
            "the output must follow warp(p); keep x with min(1, warp(p)/q_s) and correct "
            "from norm(max(0, warp(p) - q_s)), where q_s is the row the draft sampled from "
            "(warp(q) with warp_draft = 1, else q)",
            draft_table=_warped_q, accept_table=_warp_ratio, reject_table=_warp_residual,
            target_table=_warp_target, reject_law="norm(max(0, warp(p) - q))",
            params=_warp_params(),
        ),
        Rule(
            "typical", "typical acceptance (Medusa)", "lossy by design",
            "Cai et al. 2024 (Medusa, arXiv 2401.10774), Sec. 2.3.1",
            "keep x iff p(x) > min(eps, delta exp(-H(p))); on rejection emit a token from p",
            accept_table=_typical, reject_table=_target, reject_law="p",
            params=(Param("eps", 0.09, 0.0, 1.0, "hard floor"),
                    Param("delta", 0.3, 0.0, 1.0, "entropy-scaled floor")),
        ),
        Rule(
            "lenient", "lenience l", "lossy by design",
            "Leviathan et al. 2022 (arXiv 2211.17192), the lenience parameter of its appendix",
            "keep x with probability min(1, p / (l q)); l = 1 is exact, smaller l keeps more; "
            "the residual is left as norm(max(0, p - q))",
            accept_table=_lenient,
            params=(Param("l", 0.5, 0.01, 1.0, "lenience"),),
        ),
        Rule(
            "greedy", "greedy match", "broken",
            "the from-scratch tutorial's broken rule 'greedy'",
            "keep x only if it is the target's most likely token; residual on rejection",
            accept_table=_greedy_match,
        ),
        Rule(
            "no_resample", "no residual (resample from p)", "broken",
            "the from-scratch tutorial's broken rule 'no_resample'",
            "on a rejection draw from p instead of the residual, so the draft's favourite "
            "tokens get their mass twice",
            reject_table=_target, reject_law="p",
        ),
        Rule(
            "continue", "keep later drafts unverified", "broken",
            "the from-scratch tutorial's broken rule 'continue'",
            "after a rejection emit the residual token, then the rest of the drafts without "
            "checking them, and end the round (no bonus)",
            keep_unverified=True,
        ),
        Rule(
            "topk_q", "q from before top-k", "broken",
            "huggingface/transformers issue #47932: candidate generators return a q they did "
            "not sample from; also deepseek-ai/DeepSpec issue #31",
            "the draft samples from its top-k renormalised distribution, but the ratio and "
            "the residual use the raw q",
            draft_table=_top_k,
            params=(Param("top_k", 2, 1, 64, "tokens the draft keeps", integer=True),),
        ),
        Rule(
            "greedy_draft", "draft temperature ignored", "broken",
            "z-lab/dflash issue #74 (draft sampler ignores temperature); "
            "jaymody/speculative-sampling issue #3",
            "the draft proposes its argmax (temperature dropped), while the ratio and the "
            "residual use its softmax q",
            draft_table=_one_hot,
        ),
        Rule(
            "inclusive_coin", "inclusive coin u <= p/q", "broken",
            "sgl-project/sglang issue #35771: a zero-probability draft accepted when the "
            "coin is exactly 0",
            "keep iff u <= p/q with u able to be 0: a token with p(x) = 0 passes whenever "
            "u = 0. The coin is drawn on a grid of 2^u_bits values from 0 (float32 gives 24 "
            "bits); the grid here is coarse so that a run of modest n sees the bias, which also "
            "rounds every threshold up by up to one grid step",
            inclusive=True,
            params=(Param("u_bits", 4, 1, 24, "bits of the coin", integer=True),),
        ),
        Rule(
            "warp_raw_target", "verify against the unwarped target", "broken",
            "vllm-project/vllm pull request #10198 (fixes issue #9834): target "
            "probabilities scored with default sampling parameters while the drafts were "
            "sampled with top-p",
            "the request samples from warp(p), but the ratio and the residual read the raw "
            "p; the bonus comes from warp(p)",
            draft_table=_warped_q, accept_table=_raw_target_ratio,
            reject_table=_raw_target_residual, target_table=_warp_target,
            params=_warp_params(),
        ),
        Rule(
            "warp_raw_residual", "residual from the unwarped target", "broken",
            "an easy slip with no public report found: the coin uses warp(p), the "
            "correction recomputes p from the raw logits",
            "keep x with min(1, warp(p)/q), but correct from norm(max(0, p - q)) with the "
            "raw p",
            draft_table=_warped_q, accept_table=_warp_ratio,
            reject_table=_raw_target_residual, target_table=_warp_target,
            reject_law="norm(max(0, p - q)), p unwarped", params=_warp_params(),
        ),
        Rule(
            "warp_raw_q", "warped draft, raw q in the ratio", "broken",
            "the warped form of rule 'topk_q' (a q the draft did not sample from); no "
            "public report of this form found",
            "the draft samples from warp(q), but the ratio and the residual divide by its "
            "raw q",
            draft_table=_warped_q, accept_table=_raw_q_ratio, reject_table=_raw_q_residual,
            target_table=_warp_target, params=_warp_params(draft=1),
        ),
        Rule(
            "warp_unnormalised", "top-p mask without renormalising", "broken",
            "an easy slip with no public report found: the truncated row is used before "
            "it is renormalised",
            "the verifier masks the tempered p to its top-p set but does not renormalise "
            "it, so the ratio is too small and the residual takes too much of the mass",
            draft_table=_warped_q, accept_table=_unnormalised_ratio,
            reject_table=_unnormalised_residual, target_table=_warp_target,
            params=_warp_params(),
        ),
        Rule(
            "tree_first_residual", "tree: the first residual for every sibling", "broken",
            "an easy slip in multi-draft verification: the residual is taken from the "
            "node's p each time, not from the one the earlier siblings left",
            "siblings i.i.d. from q, but after each failure p_(j+1) = norm(max(0, p - q)) "
            "from the node's p; from the third sibling on the mass is counted twice",
            kind="tree", tree="first", reject_law="norm(max(0, p - q)), reused",
            params=_shape_param(3),
        ),
        Rule(
            "tree_wor_as_iid", "tree: distinct siblings verified as i.i.d.", "broken",
            "the without-replacement drafts of top-k style trees verified with SpecInfer's "
            "i.i.d. rule (Jeon et al. 2024 explain why that is not exact)",
            "the siblings are drawn without replacement, but the ratio and the residual use "
            "q as if each had been drawn i.i.d. from q",
            kind="tree", tree="as_iid", reject_law="norm(max(0, p_j - q))",
            params=_shape_param(3),
        ),
    )
}

FAMILIES = ("lossless", "lossy by design", "broken")
TUTORIAL_RULES = ("correct", "greedy", "no_resample", "continue")  # the tutorial's four


def get_rule(rule: str | Rule) -> Rule:
    """Look a rule up by name; the error lists the valid names."""
    if isinstance(rule, Rule):
        return rule
    if isinstance(rule, str) and rule in RULES:
        return RULES[rule]
    raise ValueError(f"unknown rule {rule!r}; valid rules: {', '.join(RULES)}")


def with_tree(rule: str | Rule, paths: Sequence[Sequence[int]] = ()) -> Rule:
    """A tree rule drafting this explicit tree (checked: core.tree.check_paths); any other
    rule, or no paths, as it is."""
    r = get_rule(rule)
    if r.kind != "tree" or not paths:
        return r
    return replace(r, paths=check_paths([list(p) for p in paths]))


def reads_warp(rule: str | Rule) -> bool:
    """Whether the rule's parameters are a request's warp (shared controls in the app)."""
    return any(q.name == "warp_draft" for q in get_rule(rule).params)


def target_of(rule: str | Rule, P: Table, Q: Table) -> Table:
    """The table the rule's output must follow: P, or warp(P) for a warped request."""
    r = get_rule(rule)
    return r.target_table(np.asarray(P, dtype=np.float64), np.asarray(Q, dtype=np.float64),
                          r.prm)


@dataclass(frozen=True)
class RuleTables:
    """A rule applied to a pair: every table the engines need, computed once."""

    rule: Rule
    P: Table  # (V, V) the law to follow: the target, warped for the warp rules
    Q: Table  # (V, V) draft as given
    Qs: Table  # (V, V) what the draft samples from
    A: Table  # (V, V) single kind: keep iff the coin passes A[c, x]
    R: Table  # (V, V) law of the rejection token at context c
    acc: Table  # (V, V) exact: x drafted at c and kept (summed over a multi-draft's tries)
    rej: Table  # (V, V) exact: the position rejected and y emitted
    W: Table  # (V, V) exact: x drafted at c and rejected (single kind)
    chain: tuple[Table, ...] = field(default=())  # multi: A_j = p_j / q for tries j = 1..m

    @property
    def V(self) -> int:
        return self.P.shape[0]

    @property
    def reject_mass(self) -> np.ndarray:
        """The chance the position at context c is rejected. (V,)"""
        return self.rej.sum(axis=1)


def apply_rule(rule: str | Rule, P: Table, Q: Table) -> RuleTables:
    r = get_rule(rule)
    prm = r.prm
    Qs = r.draft_table(P, Q, prm)
    if r.kind == "multi":
        return _apply_multi(r, P, Q, Qs, int(prm["m"]))
    A = r.accept_table(P, Q, prm)
    R = r.reject_table(P, Q, prm)
    P = r.target_table(P, Q, prm)
    keep = keep_prob(r, A)  # (V, V)
    acc = Qs * keep
    W = Qs * (1.0 - keep)
    if r.rejection_skips_draft:
        # y ~ R[c] given y != x, for the rejected x: sum_x W[c, x] R[c, y] 1[y != x] / (1 - R[c, x])
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(R < 1.0, W / (1.0 - R), 0.0)  # (V, V)
        rej = R * (w.sum(axis=1, keepdims=True) - w)
    else:
        rej = W.sum(axis=1, keepdims=True) * R
    return RuleTables(r, P, Q, Qs, A, R, acc, rej, W)


def _apply_multi(r: Rule, P: Table, Q: Table, Qs: Table, m: int) -> RuleTables:
    """SpecInfer's multi-step sampling: p_1 = p, p_(j+1) = norm(max(0, p_j - q))."""
    p_j, chain = P, []
    acc = np.zeros_like(P)
    alive = np.ones(P.shape[0])  # (V,) chance that tries 1..j-1 all failed
    for _ in range(m):
        chain.append(ratio(p_j, Qs))
        kept = np.minimum(p_j, Qs)  # (V, V)
        acc += alive[:, None] * kept
        alive = alive * (1.0 - kept.sum(axis=1))
        p_j = residual(p_j, Qs)
    rej = alive[:, None] * p_j
    return RuleTables(r, P, Q, Qs, chain[0], p_j, acc, rej, np.zeros_like(P), tuple(chain))
