"""The registry of verification rules: lossless, lossy by design, and broken by real bugs.

One registry serves every engine (play_round, simulate, exact_joint), the command line,
the pages and the tests. Each entry is a Rule (specviz.core.ruledefs): the tables it
reads, built here from the target and draft tables, its flags and its parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial

import numpy as np

from .kinds import kind_of
from .kinds.treeshape import PRESETS, check_paths
from .rule import ratio, residual
from .ruledefs import (  # noqa: F401 (RuleTables, apply_rule, keep_prob, coin_passes: the engines')
    Param,
    Params,
    Rule,
    RuleTables,
    Table,
    apply_rule,
    coin_passes,
    given_p,
    given_q,
    keep_prob,
    on,
)
from .warp import Warp, warp_rows


# ---------------------------------------------------------------------- variant tables
def one_hot_argmax(M: Table) -> Table:
    """The greedy drafter: all mass on each row's most likely token (first maximum)."""
    H = np.zeros_like(M)
    H[np.arange(M.shape[0]), M.argmax(axis=1)] = 1.0
    return H


def _one_hot(P: Table, Q: Table, prm: Params) -> Table:
    return one_hot_argmax(Q)


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
    return warp_rows(Q, Warp(top_k=int(prm["top_k"])))


# ---------------------------------------------------------------------- rows a rule reads
# A variant's ratio and residual are those of chosen rows (ruledefs.on). The warp rules
# carry a request's warp as parameters and read the raw rows P, Q: the output must follow
# warp(P); the draft samples from warp(Q) when warp_draft = 1.
def _warped_p(P: Table, Q: Table, prm: Params) -> Table:
    return warp_rows(P, Warp.from_params(prm))


def _unnormalised(P: Table, Q: Table, prm: Params) -> Table:
    return warp_rows(P, Warp.from_params(prm), renormalise=False)


def _warped_q(P: Table, Q: Table, prm: Params) -> Table:
    return warp_rows(Q, Warp.from_params(prm)) if prm["warp_draft"] else Q


def _warp_rule(name: str, label: str, family: str, source: str, description: str, *,
               coin: Callable, fix: Callable, q: Callable = _warped_q, draft: int = 0,
               reject_law: str = Rule.reject_law) -> Rule:
    """A rule of a warped request: the draft samples from _warped_q, the output must follow
    warp(p); the coin is ratio(coin(P), q(Q)) and the correction residual(fix(P), q(Q))."""
    return Rule(name, label, family, source, description, draft_table=_warped_q,
                accept_table=partial(on, ratio, coin, q),
                reject_table=partial(on, residual, fix, q), target_table=_warped_p,
                reject_law=reject_law,
                params=(Param("temperature", 0.8, 0.05, 5.0, "target (and draft) temperature"),
                        Param("top_k", 0, 0, 4096, "keep the k most likely (0 = off)",
                              integer=True),
                        Param("top_p", 0.9, 0.01, 1.0, "keep the most likely up to this mass"),
                        Param("min_p", 0.0, 0.0, 1.0, "keep x with p(x) >= min_p max p"),
                        Param("warp_draft", draft, 0, 1,
                              "1: the draft samples from the warped q", integer=True)))


def _shape_param(default: int) -> tuple[Param, ...]:
    names = ", ".join(f"{i} = {p.name}" for i, p in enumerate(PRESETS))
    return (Param("shape", default, 0, len(PRESETS) - 1, names, integer=True),)


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
            draft_table=_one_hot, accept_table=partial(on, ratio, given_p, _one_hot),
            reject_table=partial(on, residual, given_p, _one_hot),
            reject_law="p with the draft removed",
        ),
        Rule(
            "sampler_match", "sampler match", "lossless",
            "exact-match verification of a sampled draft: emit the target's own sample",
            "draw a fresh token from p and keep the draft iff they agree; emit the fresh token "
            "either way. Exact, but it keeps sum p q of the mass instead of sum min(p, q)",
            accept_table=given_p,  # A[c, x] = p(x | c): a fresh sample from p equals x
            reject_table=given_p, rejection_skips_draft=True,
            reject_law="p given it differs from the draft",
        ),
        Rule(
            "multi_draft", "multi-draft tree (SpecInfer)", "lossless",
            "Miao et al. 2024 (SpecInfer), multi-step speculative sampling",
            "m candidates per position from q; candidate j is kept with min(1, p_j/q), where "
            "p_1 = p and p_(j+1) = norm(max(0, p_j - q)) after each failure; if all fail, "
            "emit from p_(m+1). The token tree with m i.i.d. siblings at every node, drafted "
            "along the kept path",
            kind="tree", tree="iid",
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
        _warp_rule(
            "warped", "warped target (temperature, top-k, top-p, min-p)", "lossless",
            "Leviathan et al. 2022, Algorithm 1 applied to the rows a request samples from",
            "the output must follow warp(p); keep x with min(1, warp(p)/q_s) and correct "
            "from norm(max(0, warp(p) - q_s)), where q_s is the row the draft sampled from "
            "(warp(q) with warp_draft = 1, else q)",
            coin=_warped_p, fix=_warped_p, reject_law="norm(max(0, warp(p) - q))",
        ),
        Rule(
            "typical", "typical acceptance (Medusa)", "lossy by design",
            "Cai et al. 2024 (Medusa, arXiv 2401.10774), Sec. 2.3.1",
            "keep x iff p(x) > min(eps, delta exp(-H(p))); on rejection emit a token from p",
            accept_table=_typical, reject_table=given_p, reject_law="p",
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
            reject_table=given_p, reject_law="p",
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
        _warp_rule(
            "warp_raw_target", "verify against the unwarped target", "broken",
            "vllm-project/vllm pull request #10198 (fixes issue #9834): target "
            "probabilities scored with default sampling parameters while the drafts were "
            "sampled with top-p",
            "the request samples from warp(p), but the ratio and the residual read the raw "
            "p; the bonus comes from warp(p)",
            coin=given_p, fix=given_p,
        ),
        _warp_rule(
            "warp_raw_residual", "residual from the unwarped target", "broken",
            "an easy slip with no public report found: the coin uses warp(p), the "
            "correction recomputes p from the raw logits",
            "keep x with min(1, warp(p)/q), but correct from norm(max(0, p - q)) with the "
            "raw p",
            coin=_warped_p, fix=given_p, reject_law="norm(max(0, p - q)), p unwarped",
        ),
        _warp_rule(
            "warp_raw_q", "warped draft, raw q in the ratio", "broken",
            "the warped form of rule 'topk_q' (a q the draft did not sample from); no "
            "public report of this form found",
            "the draft samples from warp(q), but the ratio and the residual divide by its "
            "raw q",
            coin=_warped_p, fix=_warped_p, q=given_q, draft=1,
        ),
        _warp_rule(
            "warp_unnormalised", "top-p mask without renormalising", "broken",
            "an easy slip with no public report found: the truncated row is used before "
            "it is renormalised",
            "the verifier masks the tempered p to its top-p set but does not renormalise "
            "it, so the ratio is too small and the residual takes too much of the mass",
            coin=_unnormalised, fix=_unnormalised,
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
    """A rule drafting a preset tree 'shape' given this explicit tree instead (checked:
    kinds.treeshape.check_paths); any other rule, or no paths, as it is."""
    r = get_rule(rule)
    if "shape" not in r.prm or not paths:
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


def drafted(rule: str | Rule, k: int) -> int:
    """Tokens one round drafts at most, each scored by the target: k for a chain, m k for m
    candidates a position (multi-draft), every node of a token tree."""
    r = get_rule(rule)
    return kind_of(r).drafted(r, k)


def rules_cost(rules: Sequence[str | Rule], k: int, params: Mapping | None = None,
               tree: Sequence[Sequence[int]] = ()) -> tuple[float, float]:
    """(all, widest): what running these rules at k costs against one plain rule, the rows
    a round scores, (drafted + 1) / (k + 1) each; params {rule: {parameter: value}} and the
    tree's paths as the request sets them."""
    params = params or {}
    costs = []
    for name in rules:
        r = get_rule(name)
        r = with_tree(r.with_params(**params[r.name]) if params.get(r.name) else r, tree)
        costs.append((drafted(r, k) + 1) / (int(k) + 1))
    return float(sum(costs)), max(costs, default=1.0)
