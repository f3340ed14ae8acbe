"""What drafts, and what a round's passes cost: a draft model, a head on the target, n-gram
lookup, chains or SGLang's trees, priced by the roofline or by what the user measured.

- model: a separate decoder (its own embedding, layers, LM head and KV cache).
- eagle / eagle3 / mtp: a head of one or a few decoder layers fed the target's hidden states
  (EAGLE, Li et al. 2024, arXiv 2401.15077: an fc from [embedding, feature] 2d -> d; EAGLE-3,
  arXiv 2503.01840: three of the target's layers' features, 3d -> d, and its own smaller
  LM head; MTP, DeepSeek-V3's multi-token prediction module, 2d -> d). A step reads the head's
  layers and an LM head; the target's embedding and (when shared) LM head cost no memory.
- medusa: Medusa's heads (Cai et al. 2024, arXiv 2401.10774) on the target's last hidden
  state, head i guessing the token i + 1 ahead: each a residual block of one d x d layer and
  its own LM head of vocab x d (fewer rows where the config trims it), all run once a round
  in one pass, where the target runs; their candidates form a fixed tree, verified in one
  target pass of its nodes and the target's own next token.
- lookup: prompt lookup / n-gram matching / suffix drafting (Saxena 2023; vLLM's "ngram"
  method): no model, a lookup cost per round. (The word the real model's drafts use,
  llm.drafts: there "ngram" is an n-gram model.)
A tree (SGLang's --speculative-eagle-topk > 1) drafts `steps` levels of `topk` tokens per
sequence and verifies `verify_tokens` tree tokens in one target pass: priced as that tree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .shape import ModelShape

HEAD_NAMES = {"eagle": "EAGLE head", "eagle3": "EAGLE-3 head", "mtp": "MTP head"}
HEADS = tuple(HEAD_NAMES)
DRAFT_KINDS: dict[str, str] = {
    "model": "a draft model",
    **{kind: f"an {name}" for kind, name in HEAD_NAMES.items()},
    "medusa": "Medusa heads",
    "lookup": "prompt lookup / n-gram matching (no model)",
}
DRAFT_RENAMED = {"ngram": "lookup"}  # old names, still read (with a note)
HEAD_INPUT = {"eagle": 2, "eagle3": 3, "mtp": 2}  # the fc's input, in multiples of d
HEAD_LAYERS_DEFAULT = 1  # EAGLE's and DeepSeek-V3's MTP: one decoder layer
HEAD_LAYERS_MAX = 8
EAGLE3_DRAFT_VOCAB = 32_000  # EAGLE-3's own LM head: draft_vocab_size in its published
# configs (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B)
MEDUSA_TREE = (63, 4)  # nodes, depth: Medusa's mc_sim_7b_63 (its medusa_choices.py), the tree
# Spec-Bench runs with 4 heads (evaluation/inference_medusa.py): the default without a tree
MEDUSA_HEADS_MAX = 8
LOOKUP_S_DEFAULT = 1e-4  # an n-gram lookup per round, batch-wide (assumed; an option)
TREE_MAX = 512  # tree tokens verified per sequence


class DraftError(ValueError):
    """A drafter that cannot be priced; the message names the field."""


@dataclass(frozen=True)
class Tree:
    """SGLang's tree drafting: --speculative-eagle-topk, --speculative-num-steps,
    --speculative-num-draft-tokens (tokens verified per sequence in one pass)."""

    topk: int
    steps: int
    verify_tokens: int


@dataclass(frozen=True)
class Drafter:
    """What drafts: `shape` is the draft model, or a head's own layers (its LM head as a
    tied matrix of `vocab` rows), or None for n-gram lookup."""

    kind: str
    shape: ModelShape | None
    shared_head: bool = False  # a head using the target's LM head: no memory of its own
    lookup_s: float = LOOKUP_S_DEFAULT  # lookup: seconds per round
    tree: Tree | None = None
    source: str = ""

    @property
    def name(self) -> str:
        return self.shape.name if self.shape is not None else DRAFT_KINDS[self.kind]

    @property
    def resident_params(self) -> int:
        """Weights the draft adds to memory: the model, or a head less a shared LM head."""
        if self.shape is None:
            return 0
        shared = self.shape.vocab * self.shape.d_model if self.shared_head else 0
        return self.shape.params - shared


def layer_count(n: int) -> str:
    """'1 layer', '3 layers'."""
    return f"{n} layer{'s' if n != 1 else ''}"


def model_draft(shape: ModelShape) -> Drafter:
    return Drafter("model", shape, source=shape.source)


def head_from_target(target: ModelShape, *, kind: str,
                     layers: int = HEAD_LAYERS_DEFAULT) -> Drafter:
    """A head with the target's width, attention and MLP, `layers` layers like the target's
    last ones (routed where those are: DeepSeek-V3's MTP layer follows its 58 routed layers,
    not its 3 dense first ones), the fc of its kind, and the target's LM head (a head with
    its own comes with its config: head_from_config; an EAGLE-3 head without one has
    EAGLE-3's own of EAGLE3_DRAFT_VOCAB rows). An MTP head on a target
    whose config names its MTP layers (num_nextn_predict_layers) has that many, whatever
    `layers` says."""
    _check_kind(kind, HEADS)
    why = layer_count(layers)
    if kind == "mtp" and target.mtp_layers:
        layers, why = target.mtp_layers, (f"its num_nextn_predict_layers = "
                                          f"{target.mtp_layers} (the MTP module it ships)")
    if not 1 <= layers <= HEAD_LAYERS_MAX:
        raise DraftError(f"a head has 1..{HEAD_LAYERS_MAX} layers; got {layers}")
    dense = max(0, target.dense_layers - (target.layers - layers))  # of the last `layers`
    own = kind == "eagle3" and EAGLE3_DRAFT_VOCAB < target.vocab
    shape = replace(target, name=f"{HEAD_NAMES[kind]} ({layer_count(layers)} at d "
                    f"{target.d_model:,})", layers=layers, tied=True, dense_layers=dense,
                    input_fc=HEAD_INPUT[kind], mtp_layers=0, source="",
                    vocab=EAGLE3_DRAFT_VOCAB if own else target.vocab)
    vocab = (f", and EAGLE-3's own LM head over its draft vocabulary of "
             f"{EAGLE3_DRAFT_VOCAB:,} (draft_vocab_size in its published configs)"
             if own else "")
    return Drafter(kind, shape, shared_head=not own,
                   source=f"the target's width and {why}{vocab}")


def head_from_config(shape: ModelShape, target: ModelShape, *, kind: str,
                     draft_vocab: int = 0) -> Drafter:
    """A head from its own config.json (EAGLE checkpoints ship one): its layers, width and
    fc; the target's LM head unless it has its own smaller vocabulary (EAGLE-3's
    draft_vocab_size)."""
    _check_kind(kind, HEADS)
    if shape.d_model != target.d_model:
        raise DraftError(f"the head's hidden_size {shape.d_model:,} differs from the "
                         f"target's {target.d_model:,}: a head reads the target's features")
    own = 0 < draft_vocab < target.vocab
    head = replace(shape, tied=True, vocab=draft_vocab if own else target.vocab,
                   input_fc=HEAD_INPUT[kind])
    return Drafter(kind, head, shared_head=not own,
                   source=f"its own config.json{(': ' + shape.source) if shape.source else ''}")


def medusa_heads(target: ModelShape, *, depth: int = MEDUSA_TREE[1],
                 nodes: int = MEDUSA_TREE[0], vocab: int = 0) -> Drafter:
    """Medusa's heads on the target, one per level of its fixed tree of `nodes` nodes (depth
    heads): each one d x d layer (its residual block) and its own LM head of vocab x d
    (vocab 0: the target's; a trimmed one, vLLM's truncated_vocab_size, has fewer rows),
    priced as one pass of one token a sequence (no attention, no KV cache) at the target's
    tensor parallelism; the tree is verified in one target pass of nodes + 1 tokens.
    (Medusa's own code, and Spec-Bench's, applies the heads to every tree position inside
    the verify pass: the same weights read, nodes + 1 times the MACs, not priced here.)"""
    if not 1 <= depth <= MEDUSA_HEADS_MAX:
        raise DraftError(f"Medusa has 1..{MEDUSA_HEADS_MAX} heads (its tree's depth); got "
                         f"{depth}")
    if not depth <= nodes < TREE_MAX:
        raise DraftError(f"a Medusa tree of depth {depth} has {depth}..{TREE_MAX - 1} nodes; "
                         f"got {nodes}")
    if not 0 <= vocab <= target.vocab:
        raise DraftError(f"the heads' vocabulary is 1..{target.vocab:,} (0: the target's); "
                         f"got {vocab}")
    rows = vocab or target.vocab
    shape = replace(target, name=f"Medusa heads ({depth} at d {target.d_model:,})", layers=0,
                    tied=True, dense_layers=0, input_fc=depth, lm_heads=depth, mtp_layers=0,
                    vocab=rows, cross_attn=False, encoder_layers=0, source="")
    trimmed = f" (trimmed to {rows:,} rows)" if rows < target.vocab else ""
    return Drafter("medusa", shape, tree=Tree(1, depth, nodes + 1),
                   source=f"the target's width, {depth} heads of one d x d layer and an LM "
                          f"head of {rows:,} x {target.d_model:,}{trimmed} each")


def ngram_draft(lookup_s: float = LOOKUP_S_DEFAULT) -> Drafter:
    if not (math.isfinite(lookup_s) and 0 < lookup_s <= 1.0):
        raise DraftError(f"the lookup time must be in (0, 1] s per round; got {lookup_s!r}")
    return Drafter("lookup", None, lookup_s=lookup_s, source="no draft model")


def with_tree(d: Drafter, *, topk: int, steps: int, verify_tokens: int) -> Drafter:
    """d drafting SGLang's tree; topk = 1 and verify_tokens = steps + 1 is a chain."""
    if d.kind == "lookup":
        raise DraftError("tree drafting needs a draft model or head, not prompt lookup")
    if d.kind == "medusa":
        raise DraftError("Medusa's tree is its own: give its nodes and depth (medusa_heads)")
    for name, v, hi in (("topk", topk, 64), ("steps", steps, 64),
                        ("draft tokens", verify_tokens, TREE_MAX)):
        if not 1 <= v <= hi:
            raise DraftError(f"tree {name} must be in 1..{hi}; got {v}")
    if verify_tokens > 1 + topk * steps * topk:
        raise DraftError(f"{verify_tokens} draft tokens exceed what {steps} steps of topk "
                         f"{topk} can draft")
    return replace(d, tree=Tree(topk, steps, verify_tokens))


def tree_note(d: Drafter) -> str | None:
    """The warning every input path shows for a tree: what is priced."""
    t = d.tree
    if d.kind == "medusa" and t is not None:
        return (f"Medusa's {t.steps} heads (Cai et al. 2024) run once a round, on the target's "
                f"last hidden state; their fixed tree of {t.verify_tokens - 1} candidates is "
                f"verified with the target's own next token in one target pass of "
                f"{t.verify_tokens} tokens, with the measured acceptance at depth {t.steps}; "
                "other trees are not priced, since their acceptance was not measured.")
    if t is None or (t.topk == 1 and t.verify_tokens == t.steps + 1):
        return None
    return (f"Tree drafting (topk {t.topk}, {t.steps} steps, {t.verify_tokens} draft tokens) "
            f"is priced as that tree: {t.steps} draft passes of {t.topk} tokens per sequence "
            f"and one target pass verifying {t.verify_tokens} tokens, with the measured "
            f"acceptance at depth {t.steps}; other k are not priced, since another tree's "
            "acceptance was not measured.")


def _check_kind(kind: str, allowed: tuple[str, ...]) -> None:
    if kind not in allowed:
        raise DraftError(f"unknown draft kind {kind!r}; choose one of {list(allowed)}")
