"""A decoder's shape as the roofline prices it: parameters, MACs per token, bytes read, KV cache.

Attention is grouped-query (GQA/MQA) or multi-head latent attention (MLA, DeepSeek-V2, arXiv
2405.04434: K and V rebuilt from one cached latent of kv_lora_rank plus a shared RoPE key of
qk_rope_head_dim). The MLP is SwiGLU, dense or routed experts (the first dense_layers layers
dense, as DeepSeek's first_k_dense_replace). Biases on q, k, v (Qwen2), q/k RMSNorm (Qwen3,
Gemma 3) and extra norms per layer (Gemma 3's four) are counted where the config has them.
An encoder-decoder (T5, Raffel et al. 2020) is priced as its decoder: each layer adds a
cross-attention whose q and o a decode step reads (its K and V of the encoder's output are
made once per request and read as a KV cache of the source's tokens, so a context counts the
source too); the encoder's layers are held in memory and run once per request, not per step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

FloatOrArray = float | np.ndarray

DTYPE_BYTES: dict[str, float] = {
    "fp32": 4,
    "fp16": 2,
    "bf16": 2,
    "fp8": 1,
    "int8": 1,
    "int4": 0.5,
}


SERVED_DTYPES = tuple(d for d in DTYPE_BYTES if d != "fp32")  # what a server keeps weights
# and KV cache in: the planner's choices (the page's and the CLI's)
FP8_COMPUTE = ("fp8", "int8")  # types whose matmuls run on fp8 tensor cores where a chip has
# them (roofline.Accelerator.peak_for); every other type computes at the bf16 peak


def dtype_bytes(dtype: str) -> float:
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"unknown dtype {dtype!r}; choose one of {list(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype]


@dataclass(frozen=True)
class ModelShape:
    """A decoder: layers of attention and a SwiGLU MLP (dense, or routed experts), RMSNorm,
    an embedding, and an LM head that is its own matrix unless tied to the embedding."""

    name: str
    layers: int
    d_model: int
    ffn: int  # dense MLP width (the dense layers of a routed model too)
    heads: int
    kv_heads: int
    vocab: int
    head_size: int = 0  # per-head width; 0 = d_model // heads
    tied: bool = False  # LM head shares the embedding matrix
    experts: int = 0  # routed experts per layer E; 0 = a dense MLP
    experts_per_tok: int = 0  # experts each token chooses (top-k of E)
    expert_ffn: int = 0  # each routed expert's MLP width
    shared_ffn: int = 0  # total width of the always-on shared experts
    dense_layers: int = 0  # leading layers with the dense MLP in a routed model
    qkv_bias: bool = False  # biases on q, k and v (Qwen2)
    o_bias: bool = False  # a bias on the attention output too (Llama's attention_bias)
    qk_norm: bool = False  # RMSNorm over each head's q and k (Qwen3, Gemma 3)
    norms_per_layer: int = 2  # RMSNorm vectors of d per layer (Gemma 3: 4)
    kv_lora_rank: int = 0  # MLA: width of the cached latent; 0 = no MLA
    q_lora_rank: int = 0  # MLA: low-rank query width; 0 = a full q projection
    qk_rope_head_dim: int = 0  # MLA: per-head RoPE part of q and k (one shared k part)
    qk_nope_head_dim: int = 0  # MLA: per-head part of q and k without RoPE
    v_head_dim: int = 0  # MLA: per-head width of v
    input_fc: int = 0  # a draft head's fc from input_fc x d features to d (EAGLE: 2)
    mtp_layers: int = 0  # MTP layers the checkpoint ships (DeepSeek's num_nextn_predict_layers)
    mlp_mats: int = 3  # matrices of a dense MLP: 3 gated (SwiGLU, GeGLU), 2 not (ReLU, GELU)
    cross_attn: bool = False  # a decoder layer's cross-attention to an encoder (T5)
    encoder_layers: int = 0  # an encoder-decoder's encoder layers (held, not read per step)
    lm_heads: int = 1  # LM heads a token reads (Medusa's heads: one each, vocab x d apiece)
    source: str = ""

    @property
    def head_dim(self) -> int:
        return self.head_size or self.d_model // self.heads

    @property
    def mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def q_dim(self) -> int:
        """Width of Q: heads * head_dim (MLA: heads * (nope + rope))."""
        if self.mla:
            return self.heads * (self.qk_nope_head_dim + self.qk_rope_head_dim)
        return self.heads * self.head_dim

    @property
    def o_dim(self) -> int:
        """Width of the attention output: q_dim (MLA: heads * v_head_dim)."""
        return self.heads * self.v_head_dim if self.mla else self.q_dim

    @property
    def kv_dim(self) -> int:
        """Width of K (and of V) per token: kv_heads * head_dim (GQA only)."""
        return self.kv_heads * self.head_dim

    @property
    def kv_cached(self) -> int:
        """Numbers cached per token and layer: 2 kv_dim (K and V), or for MLA the latent and
        the shared RoPE key, kv_lora_rank + qk_rope_head_dim."""
        return self.kv_lora_rank + self.qk_rope_head_dim if self.mla else 2 * self.kv_dim

    @property
    def moe(self) -> bool:
        return self.experts > 0

    @property
    def routed_layers(self) -> int:
        return self.layers - self.dense_layers if self.moe else 0

    @property
    def expert_params(self) -> int:
        """Weights of one routed expert summed over the routed layers: 3 d expert_ffn each."""
        return self.routed_layers * 3 * self.d_model * self.expert_ffn

    def _attention(self) -> int:
        """One layer's attention weights. GQA: d (q_dim + 2 kv_dim) + o_dim d, plus biases
        and q/k norms. MLA: q (d q_lora + q_lora + q_lora q_dim, or d q_dim), the latent and
        RoPE key d (kv_lora + rope) with its norm kv_lora, their expansion kv_lora heads
        (nope + v), and o_dim d."""
        d = self.d_model
        if self.mla:
            r, h = self.q_lora_rank, self.heads
            q = d * r + r + r * self.q_dim if r else d * self.q_dim
            kv = d * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
            up = self.kv_lora_rank * h * (self.qk_nope_head_dim + self.v_head_dim)
            return q + kv + up + self.o_dim * d
        w = d * (self.q_dim + 2 * self.kv_dim) + self.o_dim * d
        bias = (self.q_dim + 2 * self.kv_dim if self.qkv_bias else 0) + (d if self.o_bias else 0)
        return w + bias + (2 * self.head_dim if self.qk_norm else 0)

    def _mlp(self, experts: int) -> int:
        """A routed layer's MLP weights through `experts` experts: experts * 3 d expert_ffn +
        3 d shared_ffn + d E (router); a dense layer's 3 d ffn (gate, up, down)."""
        d = self.d_model
        return experts * 3 * d * self.expert_ffn + 3 * d * self.shared_ffn + d * self.experts

    def _cross_step(self) -> int:
        """What a decode step reads of one layer's cross-attention: q (d q_dim) and o
        (o_dim d); 0 without one."""
        return (self.d_model * self.q_dim + self.o_dim * self.d_model) if self.cross_attn else 0

    def _cross_once(self) -> int:
        """One layer's cross-attention weights a decode step does not read: k and v of the
        encoder's output (2 d kv_dim, applied once per request) and its norm (d)."""
        return (2 * self.d_model * self.kv_dim + self.d_model) if self.cross_attn else 0

    def _layers(self, experts: int) -> int:
        """All decoder layers' weights with `experts` routed experts in each routed layer, a
        cross-attention where there is one, and a draft head's input fc (input_fc d^2)."""
        dense = self.layers - self.routed_layers
        per = (self._attention() + self.norms_per_layer * self.d_model + self._cross_step()
               + self._cross_once())
        return (self.layers * per + dense * self.mlp_mats * self.d_model * self.ffn
                + self.routed_layers * self._mlp(experts) + self.input_fc * self.d_model**2)

    @property
    def encoder_params(self) -> int:
        """An encoder-decoder's encoder: its layers (attention, norms, the dense MLP) and its
        final norm; 0 for a decoder."""
        if not self.encoder_layers:
            return 0
        d = self.d_model
        per = self._attention() + self.norms_per_layer * d + self.mlp_mats * d * self.ffn
        return self.encoder_layers * per + d

    @property
    def unread_params(self) -> int:
        """Weights held but not read by a decode step: the encoder and the cross-attention's
        k, v and norm."""
        return self.encoder_params + self.layers * self._cross_once()

    @property
    def embedding_params(self) -> int:
        """vocab * d for the embedding, and again for an untied head (for each of lm_heads
        heads: Medusa's heads, tied, hold their lm_heads matrices and no embedding)."""
        return (self.lm_heads if self.tied else 1 + self.lm_heads) * self.vocab * self.d_model

    @property
    def params(self) -> int:
        """Exact parameter count: the layers with all E experts, the embedding (and an
        untied head), the final norm d, and an encoder where there is one."""
        return (self._layers(self.experts) + self.embedding_params + self.d_model
                + self.encoder_params)

    @property
    def active_params(self) -> int:
        """Parameters one token computes with: its top-k experts, not all E."""
        return self._layers(self.experts_per_tok) + self.embedding_params + self.d_model

    def _context_macs(self, context_len: int) -> int:
        """One layer's attention over the context: 2 context_len q_dim (scores and values);
        MLA with the up-projections absorbed (as servers decode it): context_len heads
        (2 kv_lora_rank + rope)."""
        if self.mla:
            return context_len * self.heads * (2 * self.kv_lora_rank + self.qk_rope_head_dim)
        return 2 * context_len * self.q_dim

    def macs_per_token(self, context_len: int) -> int:
        """Full-count MACs of one token at context context_len: every layer's weights the
        token computes with (its top-k experts), the attention over the context, and
        vocab d for each LM head."""
        weights = self._layers(self.experts_per_tok) - self.layers * (
            self.norms_per_layer * self.d_model + self._cross_once())
        return (weights + self.layers * self._context_macs(context_len)
                + self.lm_heads * self.vocab * self.d_model)

    def kv_bytes_per_token(self, kv_dtype: str = "fp16") -> float:
        """KV cache of one token of context: layers * kv_cached * dtype bytes."""
        return self.layers * self.kv_cached * dtype_bytes(kv_dtype)

    def experts_touched(self, pass_tokens: ArrayLike) -> FloatOrArray:
        """Expected distinct experts per layer that n tokens touch, each choosing top-k of E
        (uniform routing, k distinct per token): E (1 - (1 - k/E)^n). E for a dense model's
        single MLP is reported as 0."""
        if not self.moe:
            return 0.0 * np.asarray(pass_tokens, dtype=float)
        n = np.asarray(pass_tokens, dtype=float)
        e = self.experts * (1.0 - (1.0 - self.experts_per_tok / self.experts) ** n)
        return float(e) if e.ndim == 0 else e

    def weight_bytes(self, pass_tokens: ArrayLike = 1, dtype: str = "fp16") -> FloatOrArray:
        """Bytes of weights a pass over n tokens reads: every weight once, except routed
        experts, of which only the expected number touched (experts_touched) per layer, an
        untied input embedding, of which only the n rows gathered (at most vocab), and what
        a decode step does not read (unread_params: an encoder, cross k and v)."""
        nbytes = dtype_bytes(dtype)
        n = np.asarray(pass_tokens, dtype=float)
        fixed = (self.params - self.experts * self.expert_params - self.unread_params) * nbytes
        rows = 0.0 if self.tied else (self.vocab - np.minimum(n, self.vocab)) * self.d_model
        return (fixed - rows * nbytes
                + np.asarray(self.experts_touched(n)) * self.expert_params * nbytes)

