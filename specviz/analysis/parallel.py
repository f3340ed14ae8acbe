"""Tensor parallelism as the planner prices it (Megatron-LM, Shoeybi et al. 2019, arXiv
1909.08053): a model split N ways, what each device holds and reads, and what its collectives
cost on the link between the devices.

Each matrix is split N ways (attention by heads, the MLP by its width, the embedding and the
LM head by vocabulary rows); norm vectors are held whole on every device; K and V heads are
split while N divides them, and held one a device (replicated) once N exceeds them; MLA's
latent projections and cache, shared by all heads, are held whole (vLLM's ReplicatedLinear).
A pass all-reduces its activations twice a layer (after attention and after the MLP), once
after the vocabulary-split embedding, and gathers the LM head's logits:
    all-reduce(S bytes, N) = latency + hop x 2 (N - 1) + 2 (N - 1) / N x S / bandwidth
(a ring's two phases, Patarasuk & Yuan 2009), gather(S, N) = latency + (N - 1) / N x S / bw.
Pipeline parallelism (layers split across devices) is not priced: at decode it passes each
token through every stage in turn, so it adds latency where tensor parallelism removes it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .accelerators import Interconnect
from .shape import ModelShape, dtype_bytes

TP_MAX = 64  # devices one model may be split across
ACT_BYTES = 2  # activations move in bf16
PIPELINE_NOTE = ("Pipeline parallelism is not priced: a decode step passes each token through "
                 "every stage in turn, adding latency that tensor parallelism removes.")


class ParallelError(ValueError):
    """A split that cannot run; the message says why and what would."""


@dataclass(frozen=True)
class Split:
    """One model split N ways on a link (None at N = 1)."""

    tp: int
    link: Interconnect | None


def check_tp(m: ModelShape, tp: int, who: str) -> None:
    """ParallelError unless tp in 1..TP_MAX divides m's attention heads, its K and V heads
    (or is a multiple of them) and its MLP widths."""
    if not 1 <= tp <= TP_MAX:
        raise ParallelError(f"{who}: tensor parallelism must be 1..{TP_MAX}; got {tp}")
    if tp == 1:
        return
    if m.heads % tp:
        raise ParallelError(f"{who}: tensor parallelism {tp} does not divide its "
                            f"{m.heads} attention heads; choose one of "
                            f"{_divisors(m.heads)}")
    if not m.mla and m.kv_heads % tp and tp % m.kv_heads:
        raise ParallelError(f"{who}: tensor parallelism {tp} neither divides nor is a "
                            f"multiple of its {m.kv_heads} K and V heads")
    for width, what in ((m.ffn, "MLP width"), (m.expert_ffn, "expert MLP width")):
        if width and width % tp:
            raise ParallelError(f"{who}: tensor parallelism {tp} does not divide its "
                                f"{what} {width:,}")


def _divisors(n: int) -> str:
    return ", ".join(str(d) for d in range(1, min(n, TP_MAX) + 1) if n % d == 0)


def held_whole(m: ModelShape, tp: int) -> float:
    """Parameters each device holds beyond params / tp: the norm vectors (whole on every
    device), K and V projections past their head count, MLA's shared latent projections."""
    if tp == 1:
        return 0.0
    d, share = m.d_model, 1.0 - 1.0 / tp
    norms = m.layers * (m.norms_per_layer * d + (2 * m.head_dim if m.qk_norm else 0)) + d
    extra = norms * share
    if m.mla:
        latent = d * (m.kv_lora_rank + m.qk_rope_head_dim) + d * m.q_lora_rank
        extra += m.layers * latent * share
    elif tp > m.kv_heads:  # each device holds one K and one V head of its own
        extra += m.layers * 2 * d * m.head_dim * (1.0 - m.kv_heads / tp)
    return extra


def weights_per_device(m: ModelShape, params: float, tp: int, dtype: str) -> float:
    """Bytes of `params` of m one device holds: params / tp, plus what is held whole."""
    return (params / tp + held_whole(m, tp)) * dtype_bytes(dtype)


def kv_share(m: ModelShape, tp: int) -> float:
    """The share of the KV cache one device holds: 1 / tp while tp divides the K and V heads,
    1 / kv_heads once it exceeds them, all of MLA's latent cache."""
    if m.mla:
        return 1.0
    return 1.0 / min(tp, m.kv_heads)


def all_reduce_s(nbytes: ArrayLike, split: Split) -> np.ndarray:
    """A ring all-reduce of nbytes on each of tp devices (0 at tp 1)."""
    n, link = split.tp, split.link
    s = np.asarray(nbytes, dtype=float)
    if n == 1 or link is None:
        return 0.0 * s
    fixed = link.latency_s + link.hop_s * 2 * (n - 1)
    return fixed + 2 * (n - 1) / n * s / link.bandwidth(n)


def gather_s(nbytes: ArrayLike, split: Split) -> np.ndarray:
    """A gather of nbytes in all (each device's 1 / tp of them) to one device (0 at tp 1)."""
    n, link = split.tp, split.link
    s = np.asarray(nbytes, dtype=float)
    if n == 1 or link is None:
        return 0.0 * s
    return link.latency_s + link.hop_s * (n - 1) + (n - 1) / n * s / link.bandwidth(n)


def collectives_s(m: ModelShape, pass_tokens: ArrayLike, split: Split) -> np.ndarray:
    """A pass's collectives over n = tokens x batch tokens: 2 all-reduces a layer and one
    after the embedding, of n d activations, and the gather of n x vocab logits (of each
    LM head: Medusa's heads gather theirs)."""
    n = np.asarray(pass_tokens, dtype=float)
    act = n * m.d_model * ACT_BYTES
    return ((2 * m.layers + 1) * all_reduce_s(act, split)
            + gather_s(n * m.lm_heads * m.vocab * ACT_BYTES, split))
