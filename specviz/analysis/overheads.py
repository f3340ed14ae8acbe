"""What a pass costs beyond its bytes and MACs: launch floors and a round's own work, by how the
server runs its passes, each default from a published measurement.

Two costs a unit, each measured:
- eager PyTorch dispatches every op from Python: OP_EAGER_S an op, gpt-fast's eager Llama-2-7B
  (PyTorch blog, "Accelerating Generative AI with PyTorch II: GPT, Fast", 2023: 25.5 tok/s
  on an A100-80GB, CPU-bound by its own trace: 39.2 ms a token) over the ops a token
  dispatches in gpt-fast's model.py and generate.py (80 a layer, 28 outside the layers and
  sampling, counted at commit 32971d3: 2,588 a token of its 32 layers);
- a CUDA graph (or a compiled program) replays its kernels without the CPU, each still
  taking KERNEL_S on the device (CUDA.jl's documentation, "Graphs": a four-layer MLP's 8
  kernels in 16 us as one graph).
Counts a unit: a decoder layer is LAYER_OPS ops eager (gpt-fast's block) or LAYER_KERNELS
kernels in a graph (vLLM's Llama layer: two fused add + RMSNorm, QKV, RoPE, the cache write,
attention, O, gate-up, SiLU x mul, down); a pass outside its layers PASS_OPS ops or
PASS_KERNELS kernels (embedding, final norm, LM head, sampling); a round's verification and
bookkeeping ROUND_OPS (transformers' _speculative_sampling, Leviathan et al.'s Algorithm 1);
a tree's round TREE_OPS (EAGLE's generate_candidates, tree_decoding, evaluate_posterior and
update_inference_inputs as Spec-Bench ships them) and each level it drafts LEVEL_OPS (the
re-ranking and the attention mask's growth in EAGLE-2's topK_genrate loop, Spec-Bench's
model/eagle2/cnets.py).
Eager, a pass takes max(its launches, its roofline time): the GPU works while Python
dispatches. In a graph each kernel's fixed time adds to the pass's roofline time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

OP_EAGER_S = (1 / 25.5) / 2588  # 15.15 us an op dispatched from Python (gpt-fast, A100)
KERNEL_S = 16e-6 / 8  # 2 us a kernel replayed in a graph (CUDA.jl "Graphs")
LAYER_OPS, PASS_OPS, ROUND_OPS, TREE_OPS, LEVEL_OPS = 80, 28, 25, 40, 15
LAYER_KERNELS, PASS_KERNELS = 10, 6
SOURCES = {
    "eager": ("eager PyTorch: 15.15 us an op dispatched from Python (gpt-fast's eager "
              "Llama-2-7B, 25.5 tok/s on an A100-80GB, PyTorch blog 'Accelerating Generative "
              "AI with PyTorch II: GPT, Fast', over the 2,588 ops a token of its model.py and "
              "generate.py); 80 ops a layer, 28 a pass, 25 a round (transformers' "
              "_speculative_sampling), 40 a tree's round (EAGLE's utils.py) and 15 a level "
              "it drafts (EAGLE-2's topK_genrate)"),
    "graphs": ("CUDA graphs or compiled (XLA): 2 us a kernel on the device (CUDA.jl docs, "
               "'Graphs': 8 kernels in 16 us as one graph); 10 kernels a layer (vLLM's Llama "
               "layer), 6 a pass, 25 a round, 40 a tree's round and 15 a level, as kernels"),
    "none": "no fixed cost: bytes and MACs alone (the roofline)",
}
MODES = tuple(SOURCES)  # eager PyTorch, CUDA graphs / compiled, none
MODE_DEFAULT = "graphs"  # vLLM's and SGLang's default: CUDA graphs for decoding
COSTS = ("layer", "pass", "round", "tree", "level")  # a layer, a pass, a round, a tree's
# round and a tree's level


class OverheadError(ValueError):
    """An overhead that cannot be a time; the message names it."""


@dataclass(frozen=True)
class Overheads:
    """Fixed costs, in seconds: a layer's and a pass's launch floor, a chain round's
    verification and bookkeeping, a tree round's, a tree's level; how they combine with the
    roofline (eager: max, graphs: added); where each came from and which were assumed (the
    mode's defaults, not the user's)."""

    mode: str
    layer_s: float
    pass_s: float
    round_s: float
    tree_s: float
    level_s: float
    assumed: tuple[str, ...]  # names of the costs taken from the mode's defaults

    @property
    def source(self) -> str:
        return SOURCES[self.mode]

    def pass_time(self, roofline_s: ArrayLike, layers: int) -> np.ndarray:
        """A pass's time from its roofline time: eager, max(its launches, the roofline), the
        GPU working while Python dispatches; in a graph, the roofline plus its kernels'
        fixed times. Launches = layers x layer_s + pass_s."""
        floor = layers * self.layer_s + self.pass_s
        t = np.asarray(roofline_s, dtype=float)
        return np.maximum(t, floor) if self.mode == "eager" else t + floor

    def rows(self) -> list[dict]:
        """Each cost, its value, and whether it is assumed (the JSON's and the verdict's)."""
        return [{"cost": name, "us": getattr(self, f"{name}_s") * 1e6,
                 "assumed": name in self.assumed}
                for name in COSTS]


def defaults(mode: str) -> dict[str, float]:
    """The mode's fixed costs in seconds: layer, pass, round, tree, level."""
    if mode not in SOURCES:
        raise OverheadError(f"unknown execution mode {mode!r}; choose one of {list(MODES)}")
    unit, layer, pass_ = {"eager": (OP_EAGER_S, LAYER_OPS, PASS_OPS),
                          "graphs": (KERNEL_S, LAYER_KERNELS, PASS_KERNELS),
                          "none": (0.0, 0, 0)}[mode]
    return {"layer": layer * unit, "pass": pass_ * unit, "round": ROUND_OPS * unit,
            "tree": TREE_OPS * unit, "level": LEVEL_OPS * unit}


def overheads(mode: str = MODE_DEFAULT, **given_us: float) -> Overheads:
    """The mode's defaults, with any cost given in microseconds (layer_us, pass_us,
    round_us, tree_us, level_us; a negative number keeps the default) in its place."""
    base = defaults(mode)
    out, assumed = {}, []
    for name in COSTS:
        us = given_us.get(f"{name}_us", -1.0)
        if not math.isfinite(us) or us > 1e6:
            raise OverheadError(f"the {name} cost must be 0..1,000,000 us; got {us!r}")
        if us < 0:
            assumed.append(name)
        out[name] = base[name] if us < 0 else us * 1e-6
    assumed = tuple(assumed) if mode != "none" else ()
    return Overheads(mode, *(out[name] for name in COSTS), assumed)
