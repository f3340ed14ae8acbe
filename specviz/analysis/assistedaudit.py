"""transformers' assisted generation, audited end to end under a warp (issue 41, part 2).

    audit_assisted(*, warp=WARP, k=K, n=None, seed=0, bug=None) -> AssistedAudit
    table_model(M, *, seed=0) -> LlamaForCausalLM     whose next-token law is the table M
    raw_q_reported(assistant)   context: the assistant reports its raw logits as the q of
                                drafts it sampled under the warp (transformers issue #47932)

What runs, n times (torch seeded once from seed): target.generate(prompt,
assistant_model=assistant, do_sample=True, temperature=warp.temperature, top_k=warp.top_k,
top_p=warp.top_p, max_new_tokens=k + 2), stopped once two tokens are out; the assistant
drafts k tokens a round (num_assistant_tokens = k, constant schedule, no confidence stop:
a round drafts k, as core's exact rounds do; max_new_tokens = k + 2 lets the second round
draft k too). The first token and the first two are counted (auditpairs' FIRST and TWO).

The models know their laws: LlamaForCausalLM with one layer whose attention and MLP write
nothing (o_proj = down_proj = 0) and a one-hot embedding, so the last hidden state is the
last token's one-hot row, RMS-normed, and the logits are a column of lm_head set to the
table's logs: a bigram model, logits(prefix) = log M[last token of prefix]. The tables the
audit uses are read back from forward passes (the target on the prompt and on prompt + x for
every x: the float32 rows transformers samples from); the prompt's row must equal the row
of its last token, else the exact laws do not apply and the audit refuses.

The laws (analysis.lawcompare.compare):
  target: plain sampling under the warp, core.exact.target_joint(warp_rows(P), ctx)
  known:  every rule of the registry that reads a request's warp (core.rules.reads_warp),
          with this warp and the draft warped (warp_draft = 1: the assistant samples under
          the request's processors): warped (the rule), warp_raw_q (#47932's mechanism),
          warp_raw_target, warp_raw_residual, warp_unnormalised, by core.exact.exact_joint;
          each also with the draft warped twice (drafted_twice), which is what transformers
          5.25.0's assistant does: generate hands the target's processors (the warpers among
          them) to the assistant's generate, which appends its own from the same config, so
          drafts come from warp(warp(q)); its scores are that row, so the output stays exact.
n by default: n_for_power, the smallest n at which each known biased law would be caught
with probability POWER (lawcompare's own `unseen` test on exact counts).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from ..core.exact import exact_joint, target_joint
from ..core.ruledefs import Rule, on
from ..core.rules import RULES, reads_warp
from ..core.scenario import Scenario
from ..core.tables import temper_rows
from ..core.warp import Warp, keep_mask, warp_rows
from .auditpairs import FIRST, TWO
from .lawcompare import BIASED, LEVEL, UNLIKE, Comparison, compare

WARP = Warp(temperature=0.8, top_k=4, top_p=0.8, draft=True)  # top-k cuts half of V = 8
K = 2  # drafts a round: both first tokens come from drafts when the first is kept
PROMPT = (5, 2, 0)  # a prompt's row is its last token's (0 here): the prefix does not matter
ROW_ATOL = 1e-6  # the prompt's row against its last token's, read back in float32
MARGIN = 1e-3  # top-p's boundary: no row may keep a different set at top_p (1 +- MARGIN)
N_MAX = 100_000
BUGS = ("raw_q",)  # the negative controls audit_assisted can wrap in
TWICE = " (draft warped twice)"  # a known law's name: the rule with drafted_twice
DRAFT_ROW = {0: "the raw q", 1: "warp(q)", 2: "warp(warp(q)): the warp applied twice"}
NO_ROW = "none of q, warp(q), warp(warp(q))"


def assisted_tables(V: int = 8, seed: int = 47932) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q): V x V rows, seeded. P peaked (Dirichlet 0.5) with a tail top-k cuts; Q half
    P, half a flat row (Dirichlet 2): the raw q spreads mass the warp takes away, so a q
    reported raw is far from the one the drafts came from."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(V, 0.5), size=V)
    Q = 0.5 * P + 0.5 * rng.dirichlet(np.full(V, 2.0), size=V)
    return P, Q


def table_model(M: np.ndarray, *, seed: int = 0):
    """LlamaForCausalLM (float32, one layer writing nothing) with logits(prefix) =
    log M[last token] + a constant: see the module's docstring. M: (V, V), rows > 0."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    M = np.asarray(M, dtype=np.float64)
    V = M.shape[0]
    if M.shape != (V, V) or not (M > 0).all():
        raise ValueError(f"a table model needs a V x V table of positive rows; got {M.shape}")
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=V, hidden_size=V, intermediate_size=4, num_hidden_layers=1,
                      num_attention_heads=1, num_key_value_heads=1, max_position_embeddings=64,
                      tie_word_embeddings=False, bos_token_id=None, eos_token_id=None,
                      pad_token_id=None)
    model = LlamaForCausalLM(cfg).eval()
    scale = math.sqrt(V / (1.0 + V * cfg.rms_norm_eps))  # RMSNorm of a one-hot row
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(torch.eye(V))
        layer = model.model.layers[0]
        layer.self_attn.o_proj.weight.zero_()
        layer.mlp.down_proj.weight.zero_()
        model.lm_head.weight.copy_(torch.as_tensor(np.log(M).T / scale))  # (V out, V hidden)
    g = model.generation_config
    g.bos_token_id = g.eos_token_id = g.pad_token_id = None
    return model


def _as_assistant(model, k: int):
    """Draft k tokens every round: constant schedule, no confidence stop."""
    g = model.generation_config
    g.num_assistant_tokens, g.num_assistant_tokens_schedule = k, "constant"
    g.assistant_confidence_threshold = 0.0
    return model


def read_rows(model, prompt: Sequence[int]) -> np.ndarray:
    """The model's next-token rows, read back (V, V): row x after prompt + x; refused
    (ValueError) unless the row after the prompt is the row of its last token."""
    import torch

    V = model.config.vocab_size
    ids = torch.as_tensor([list(prompt) + [x] for x in range(V)])  # (V, L + 1)
    with torch.no_grad():
        logits = model(input_ids=ids).logits[:, -2:].double()  # (V, 2, V)
    rows = torch.softmax(logits, dim=-1).numpy()
    M, after_prompt = rows[:, 1], rows[:, 0]  # (V, V), (V, V): each the prompt's row
    gap = float(np.abs(after_prompt - M[prompt[-1]]).max())
    if gap > ROW_ATOL:
        raise ValueError(f"the row after the prompt differs from its last token's by {gap:.2g}: "
                         "the model is not a table, and its exact laws are not core's")
    return M


def check_margin(M: np.ndarray, warp: Warp) -> None:
    """Refuse a warp whose top-p boundary or top-k rank sits within float32's reach."""
    R = temper_rows(M, warp.temperature)
    if warp.top_p < 1.0:
        lo, hi = (keep_mask(R, replace(warp, top_p=min(1.0, warp.top_p * f)))
                  for f in (1.0 - MARGIN, 1.0 + MARGIN))
        if (lo != hi).any():
            raise ValueError(f"top-p = {warp.top_p:g} sits within {MARGIN:g} of a row's "
                             "cumulative mass: float32 may keep another set")
    if 0 < warp.top_k < M.shape[1]:
        ranked = -np.sort(-R, axis=1)
        gap = ranked[:, warp.top_k - 1] - ranked[:, warp.top_k]
        if ((gap < MARGIN * ranked[:, 0]) & (ranked[:, warp.top_k] > 0)).any():
            raise ValueError(f"top-k = {warp.top_k} cuts between two near-equal tokens")


def drafted_twice(rule: Rule) -> Rule:
    """A warp rule whose draft samples from warp(warp(q)), the request's warpers applied
    twice (transformers 5.25.0's assistant: the target's processors are handed to its
    generate, which appends its own from the same config); the ratio and the residual read
    that row where the rule reads the draft's row, the raw q where it reads the raw q."""
    once = rule.draft_table

    def twice(P: np.ndarray, Q: np.ndarray, prm: dict) -> np.ndarray:
        return warp_rows(once(P, Q, prm), Warp.from_params(prm))

    def bent(table: partial) -> partial:  # partial(on, f, p_rows, q_rows): the rule's rows
        f, p_rows, q_rows = table.args
        return partial(on, f, p_rows, twice if q_rows is once else q_rows)

    return replace(rule, draft_table=twice, accept_table=bent(rule.accept_table),
                   reject_table=bent(rule.reject_table))


def exact_laws(P: np.ndarray, Q: np.ndarray, *, ctx: int, k: int, warp: Warp
               ) -> tuple[dict, dict]:
    """(target, known): {statistic: law} of plain sampling under the warp, and
    {rule: {statistic: law}} of every warp rule of the registry (the draft warped), each
    also with the draft warped twice (drafted_twice: TWICE after its name)."""
    two = target_joint(warp_rows(P, warp), ctx, n_tokens=2)  # (V, V)
    target = {FIRST: two.sum(axis=1), TWO: two}
    prm = warp.params(draft=True)
    known = {}
    for name, rule in RULES.items():
        if reads_warp(rule):
            rule = rule.with_params(**prm)
            for label, r in ((name, rule), (name + TWICE, drafted_twice(rule))):
                law = exact_joint(Scenario.of(P, Q, ctx=ctx, k=k, rule=r), n_tokens=2)
                known[label] = {FIRST: law.sum(axis=1), TWO: law}
    return target, known


def n_for_power(target: dict, known: dict, *, level: float = LEVEL,
                only: Sequence[str] | None = None) -> int:
    """The smallest n at which compare() would see every known biased law (or those named
    in `only`): lawcompare's `unseen` on exact counts n * target, by bisection."""
    laws = {name: known[name] for name in (only or known)}

    def seen(n: int) -> bool:
        return not compare({key: n * law for key, law in target.items()}, target, laws,
                           level=level).unseen

    hi = 16
    while not seen(hi):
        hi *= 2
        if hi > N_MAX:
            raise ValueError(f"some known law is too close to the target to see with "
                             f"{N_MAX:,} samples")
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if seen(mid) else (mid, hi)
    return hi


def _stop_after(length: int):
    """A StoppingCriteria: stop once the sequence is `length` tokens long."""
    from transformers import StoppingCriteria, StoppingCriteriaList

    class After(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            return input_ids.new_full((input_ids.shape[0],), input_ids.shape[1] >= length,
                                      dtype=bool)

    return StoppingCriteriaList([After()])


def _generate_kwargs(assistant, *, ids, warp: Warp, k: int) -> dict:
    """generate's arguments: assisted, sampling under the warp, stopped after two tokens."""
    import torch

    return dict(assistant_model=assistant, do_sample=True, temperature=warp.temperature,
                top_k=warp.top_k, top_p=warp.top_p, min_p=warp.min_p or None,
                max_new_tokens=k + 2, stopping_criteria=_stop_after(ids.shape[1] + 2),
                attention_mask=torch.ones_like(ids))


def sample_pairs(target, assistant, *, prompt: Sequence[int], n: int, warp: Warp, k: int,
                 seed: int) -> np.ndarray:
    """Counts (V, V) of the first two tokens of n assisted generations under the warp."""
    import torch

    V, L = target.config.vocab_size, len(prompt)
    ids = torch.as_tensor([list(prompt)])
    kw = _generate_kwargs(assistant, ids=ids, warp=warp, k=k)
    counts = np.zeros((V, V), dtype=np.int64)
    torch.manual_seed(seed)
    with torch.no_grad():
        for _ in range(n):
            out = target.generate(ids, **kw)[0, L:L + 2].tolist()
            counts[out[0], out[1]] += 1
    return counts


def reported_row(target, assistant, *, prompt: Sequence[int], warp: Warp, k: int
                 ) -> np.ndarray:
    """The row (V,) the candidate generator reports for its first draft after the prompt
    (the softmax of its first candidate logits), caught in one generate."""
    import torch

    caught, shipped = [], target._get_candidate_generator

    def get(*args, **kwargs):
        gen = shipped(*args, **kwargs)
        inner = gen.get_candidates

        def candidates(*a, **kw):
            ids, logits = inner(*a, **kw)
            if logits is not None and not caught:
                caught.append(torch.softmax(logits[0, 0].double(), dim=-1).numpy())
            return ids, logits

        gen.get_candidates = candidates
        return gen

    ids = torch.as_tensor([list(prompt)])
    target._get_candidate_generator = get
    try:
        with torch.no_grad():
            target.generate(ids, **_generate_kwargs(assistant, ids=ids, warp=warp, k=k))
    finally:
        del target._get_candidate_generator  # the class's method again
    return caught[0]


def warps_applied(row: np.ndarray, q: np.ndarray, warp: Warp) -> int | None:
    """How many times (0, 1, 2) the warp was applied to q to give row; None: neither."""
    r = q
    for times in range(3):
        if np.allclose(row, r, atol=ROW_ATOL * 10):
            return times
        r = warp_rows(r, warp)
    return None


@contextmanager
def raw_q_reported(assistant) -> Iterator[None]:
    """Within: the assistant's generate reports its raw logits as its scores, so the
    candidate generator hands the verifier the raw q while the drafts were sampled under
    the warp (transformers issue #47932's mechanism). The negative control."""
    shipped = assistant.generate

    def generate(*args, **kwargs):
        out = shipped(*args, output_logits=True, **kwargs)
        out["scores"] = out.logits  # raw, before the processors
        return out

    assistant.generate = generate
    try:
        yield
    finally:
        del assistant.generate  # the class's method again


@dataclass(frozen=True)
class AssistedAudit:
    """The verdict on n assisted generations, and what it took."""

    version: str  # "transformers X, torch Y"
    warp: Warp
    k: int
    n: int
    seed: int
    bug: str | None
    comparison: Comparison
    seconds: float  # sampling only
    n_needed: int  # n_for_power on these laws
    exact_tv: dict  # known rule -> its exact TV from the target (the worst statistic)
    draft_warps: int | None  # the first draft's reported row is warp applied this often to q

    @property
    def verdict(self) -> str:
        return self.comparison.verdict

    @property
    def sentence(self) -> str:
        c, w = self.comparison, self.comparison.worst
        what = (f"{self.version} assisted generation ({self.warp.text}, k = {self.k}"
                + (f", bug wrapped in: {self.bug}" if self.bug else "") + ")")
        if c.verdict == BIASED:
            like = c.behaves_like  # "like NAME", "like one of ..." or "biased, unlike ..."
            head = like if like.startswith(UNLIKE) else f"biased, {like}"
        else:
            head = c.verdict + (f", like {c.like[0]}" if len(c.like) == 1 else "")
        return (f"{what}: {head}; worst {w.name}: TV {w.tv:.4f} against the line "
                f"{w.threshold:.4f} (floor {w.floor:.4f}), p = {w.p_value:.3g}; n = "
                f"{self.n:,} (it catches TV >= {c.detectable:.4f}; {self.n_needed:,} needed "
                f"to see every known bug) in {self.seconds:.1f} s; the first draft's "
                f"reported row is {DRAFT_ROW.get(self.draft_warps, NO_ROW)}")


def audit_assisted(*, warp: Warp = WARP, k: int = K, n: int | None = None, seed: int = 0,
                   bug: str | None = None, tables: tuple[np.ndarray, np.ndarray] | None = None,
                   prompt: Sequence[int] = PROMPT, level: float = LEVEL) -> AssistedAudit:
    """The audit (see the module's docstring); bug "raw_q" wraps in the negative control."""
    import torch
    import transformers

    if bug is not None and bug not in BUGS:
        raise ValueError(f"unknown bug {bug!r}; bugs: {', '.join(BUGS)}")
    if not 1 <= k <= 8:
        raise ValueError(f"k must be in 1..8; got {k!r}")
    P0, Q0 = tables if tables is not None else assisted_tables()
    target, assistant = table_model(P0, seed=seed), _as_assistant(table_model(Q0, seed=seed), k)
    P, Q = read_rows(target, prompt), read_rows(assistant, prompt)
    for M in (P, Q, warp_rows(Q, warp)):  # the assistant may warp its warped row again
        check_margin(M, warp)
    law, known = exact_laws(P, Q, ctx=prompt[-1], k=k, warp=warp)
    n_needed = n_for_power(law, known, level=level)
    n = n_needed if n is None else int(n)
    if not 1 <= n <= N_MAX:
        raise ValueError(f"n must be in 1..{N_MAX:,}; got {n!r}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # V = 8: threads only add overhead
    t0 = time.perf_counter()
    try:
        with raw_q_reported(assistant) if bug == "raw_q" else nullcontext():
            counts = sample_pairs(target, assistant, prompt=prompt, n=n, warp=warp, k=k,
                                  seed=seed)
            seconds = time.perf_counter() - t0
            row = reported_row(target, assistant, prompt=prompt, warp=warp, k=k)
    finally:
        torch.set_num_threads(threads)
    cmp = compare({FIRST: counts.sum(axis=1), TWO: counts}, law, known, level=level)
    return AssistedAudit(f"transformers {transformers.__version__}, torch {torch.__version__}",
                         warp, k, n, seed, bug, cmp, seconds, n_needed,
                         {m.name: m.exact_tv for m in cmp.matches},
                         warps_applied(row, Q[prompt[-1]], warp))
