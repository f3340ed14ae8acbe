"""Gemma 3's shape and weights, read from a GGUF file and dequantised to f32 NumPy.

The numbers come from the file's metadata (gemma3.*) wherever it holds them. Two facts of
the architecture are missing from older conversions (this package's file among them), and
llama.cpp's own Gemma 3 code fixes them the same way: the sliding-window layers use RoPE
base 10,000 (rope.freq_base is the global layers' 1,000,000), and every sixth layer (5, 11,
17) attends globally. Files that carry rope.freq_base_swa or attention.sliding_window_pattern
(an int: every n-th layer global; or one flag per layer, true = sliding) are read instead.
GGUF conversion stores Gemma's RMSNorm weights with the +1 already added, so a norm is
x / rms(x) * w here. Every weight matrix is held blas.Tiled (the layout the pass's products
run fast in), dequantised a block of rows at a time straight into its tiles.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .blas import TILE, Tiled

ROPE_LOCAL_BASE = 10_000.0  # RoPE base of the sliding-window layers, where the file has none
GLOBAL_EVERY = 6  # layer i attends globally when (i + 1) % GLOBAL_EVERY == 0 (likewise)
LOAD_ROWS = 128 * TILE  # rows of a matrix dequantised at a time (21 MB of the head in f32)
ARCH = "gemma3"

Progress = Callable[[float, str], None]  # (fraction done in [0, 1], what is happening)


class ModelFileError(ValueError):
    """A .gguf that cannot be this model (wrong architecture, missing tensor or key)."""


@dataclass(frozen=True)
class Config:
    n_layers: int  # 18
    d: int  # width, 640
    n_heads: int  # query heads, 4
    n_kv: int  # key/value heads, 1
    head_dim: int  # 256
    ffn: int  # 2048
    V: int  # vocabulary, 262,144
    eps: float  # RMSNorm epsilon
    rope_global: float  # 1e6
    rope_local: float  # 1e4
    window: int  # sliding window of the local layers, 512
    context: int  # trained context length
    bos: int
    eos: int
    sliding: tuple[bool, ...] = ()  # per layer, True = sliding window (() = every sixth global)

    def is_global(self, layer: int) -> bool:
        if self.sliding:
            return not self.sliding[layer]
        return (layer + 1) % GLOBAL_EVERY == 0

    def rope_base(self, layer: int) -> float:
        return self.rope_global if self.is_global(layer) else self.rope_local

    @property
    def scale(self) -> float:
        """Attention scale 1/sqrt(head_dim) (Gemma 3's query_pre_attn_scalar = head_dim)."""
        return float(self.head_dim) ** -0.5


@dataclass(frozen=True)
class Layer:
    attn_norm: np.ndarray  # (d,)
    attn_q: Tiled  # (n_heads * head_dim, d)
    attn_k: Tiled  # (n_kv * head_dim, d)
    attn_v: Tiled  # (n_kv * head_dim, d)
    attn_q_norm: np.ndarray  # (head_dim,)
    attn_k_norm: np.ndarray  # (head_dim,)
    attn_output: Tiled  # (d, n_heads * head_dim)
    post_attention_norm: np.ndarray  # (d,)
    ffn_norm: np.ndarray  # (d,)
    ffn_gate: Tiled  # (ffn, d)
    ffn_up: Tiled  # (ffn, d)
    ffn_down: Tiled  # (d, ffn)
    post_ffw_norm: np.ndarray  # (d,)


LAYER_TENSORS = tuple(Layer.__dataclass_fields__)  # a block's tensors, in the file's order


@dataclass(frozen=True)
class Weights:
    cfg: Config
    embed: Tiled  # (V, d) f32, also the tied head
    layers: tuple[Layer, ...]
    output_norm: np.ndarray  # (d,)

    @property
    def nbytes(self) -> int:
        arrays = [self.embed, self.output_norm] + [
            getattr(lay, n) for lay in self.layers for n in LAYER_TENSORS]
        return int(sum(a.nbytes for a in arrays))


def field(reader, key: str, default=ModelFileError):
    """The value of a metadata key: default where the file lacks it, if given, else
    ModelFileError naming the key."""
    f = reader.fields.get(key)
    if f is None and default is ModelFileError:
        raise ModelFileError(f"the .gguf has no metadata key {key!r}")
    return default if f is None else f.contents()


def _pattern(value, n_layers: int) -> tuple[bool, ...]:
    """Which layers slide: from an int n (every n-th layer global) or per-layer flags."""
    if value is None:
        return ()
    if isinstance(value, int):
        return tuple((i + 1) % value != 0 for i in range(n_layers)) if value > 0 else ()
    flags = tuple(bool(v) for v in value)
    if len(flags) != n_layers:
        raise ModelFileError(f"sliding_window_pattern has {len(flags)} flags for {n_layers} "
                             "layers")
    return flags


def read_config(reader) -> Config:
    """The shape from the GGUF metadata."""
    arch = field(reader, "general.architecture")
    if arch != ARCH:
        raise ModelFileError(f"the .gguf holds a {arch!r} model, not {ARCH!r}")
    g = lambda k: field(reader, f"{ARCH}.{k}")  # noqa: E731
    n_heads, d_k = int(g("attention.head_count")), int(g("attention.key_length"))
    if int(g("attention.value_length")) != d_k:
        raise ModelFileError("key and value head sizes differ; Gemma 3 has them equal")
    n_layers = int(g("block_count"))
    return Config(
        n_layers=n_layers, d=int(g("embedding_length")), n_heads=n_heads,
        n_kv=int(g("attention.head_count_kv")), head_dim=d_k,
        ffn=int(g("feed_forward_length")),
        V=len(reader.fields["tokenizer.ggml.tokens"].data),
        eps=float(g("attention.layer_norm_rms_epsilon")), rope_global=float(g("rope.freq_base")),
        rope_local=float(field(reader, f"{ARCH}.rope.freq_base_swa", ROPE_LOCAL_BASE)),
        sliding=_pattern(field(reader, f"{ARCH}.attention.sliding_window_pattern", None),
                         n_layers),
        window=int(g("attention.sliding_window")),
        context=int(g("context_length")),
        bos=int(field(reader, "tokenizer.ggml.bos_token_id")),
        eos=int(field(reader, "tokenizer.ggml.eos_token_id")))


def load_weights(reader, *, progress: Progress | None = None) -> Weights:
    """Every tensor of an open GGUFReader, dequantised to f32 (gguf.quants), checked
    against the shapes the metadata implies; the matrices Tiled."""
    from gguf.quants import dequantize

    cfg = read_config(reader)
    tensors = {t.name: t for t in reader.tensors}
    done, total = 0, sum(int(t.n_bytes) for t in reader.tensors)

    def get(name: str, shape: tuple[int, ...], into: Tiled | None = None) -> np.ndarray | Tiled:
        """The tensor; a matrix written into `into`'s tiles."""
        nonlocal done
        t = tensors.get(name)
        if t is None:
            raise ModelFileError(f"the .gguf has no tensor {name!r}")
        has = tuple(int(n) for n in reversed(t.shape))  # GGUF lists the fastest axis first
        if has != shape:
            raise ModelFileError(f"tensor {name} has shape {has}, expected {shape}")
        if into is not None:  # a matrix, dequantised a block of rows at a time into its tiles
            a = into
            for s in range(0, shape[0], LOAD_ROWS):
                a.put(s, dequantize(t.data[s: s + LOAD_ROWS], t.tensor_type))
            a.done()
        else:  # a copy, not a view of the mapped file (so the mapping and its pages can go)
            a = np.array(dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(shape)
            a.setflags(write=False)  # shared by every session
        done += int(t.n_bytes)
        if progress is not None:
            progress(done / total, f"dequantising {name}")
        return a

    d, hq, hk = cfg.d, cfg.n_heads * cfg.head_dim, cfg.n_kv * cfg.head_dim
    shapes = {"attn_norm": (d,), "attn_q": (hq, d), "attn_k": (hk, d), "attn_v": (hk, d),
              "attn_q_norm": (cfg.head_dim,), "attn_k_norm": (cfg.head_dim,),
              "attn_output": (d, hq), "post_attention_norm": (d,), "ffn_norm": (d,),
              "ffn_gate": (cfg.ffn, d), "ffn_up": (cfg.ffn, d), "ffn_down": (d, cfg.ffn),
              "post_ffw_norm": (d,)}
    embed = get("token_embd.weight", (cfg.V, d), Tiled(cfg.V, d))
    matrices = [(i, n) for i in range(cfg.n_layers) for n in LAYER_TENSORS if len(shapes[n]) == 2]
    held = dict(zip(matrices, Tiled.many([shapes[n] for _, n in matrices]), strict=True))
    layers = tuple(Layer(**{n: get(f"blk.{i}.{n}.weight", shapes[n], held.get((i, n)))
                            for n in LAYER_TENSORS}) for i in range(cfg.n_layers))
    return Weights(cfg=cfg, embed=embed, layers=layers,
                   output_norm=get("output_norm.weight", (d,)))
