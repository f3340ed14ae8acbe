"""A deployment as the planner prices it: the models, their types, the accelerator, the devices
and how the models are split across them, the fixed costs; what runs where, and what memory
each device holds.

The target runs at tensor parallelism tp on tp devices; a draft model at draft_tp on the
first draft_tp of them (vLLM's and SGLang's layout: the draft shares the target's devices); a
head (EAGLE, EAGLE-3, MTP) runs where the target runs, at its tp. The device that holds a
draft shard is the fullest, so it bounds the batch: a server's KV cache is as large on
every device as on its fullest (vLLM allocates the same number of blocks on each).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import parallel
from .accelerators import Accelerator, Interconnect
from .drafting import Drafter
from .overheads import Overheads, overheads
from .parallel import ParallelError, Split
from .shape import ModelShape, dtype_bytes

MEM_FRACTION = 0.9  # share of device memory the server may take (vLLM's default)
RESERVE_GIB = 1.0  # of it, for activations and the runtime (assumed; an option): vLLM's
# startup log measures its own ("non_torch_memory", "PyTorch activation peak memory")
DEVICES_MAX = 1_024


class PlanError(ValueError):
    """A setup that cannot run (it does not fit); the message says what would."""


@dataclass(frozen=True)
class Setup:
    """Everything the planner prices: models, types, accelerator, context, the split and the
    fixed costs. draft_tp 0: a draft model at 1, a head at the target's tp; devices 0: tp;
    link None: the accelerator's first."""

    target: ModelShape
    draft: Drafter
    accel: Accelerator
    context_len: int  # tokens of context each sequence holds in its KV cache
    target_dtype: str = "bf16"
    draft_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    mem_fraction: float = MEM_FRACTION
    reserve_bytes: float = RESERVE_GIB * 2**30
    target_overhead_s: float = 0.0  # fixed time added to every target pass
    draft_overhead_s: float = 0.0  # and to every draft pass
    tp: int = 1  # the target's tensor parallelism
    draft_tp: int = 0
    devices: int = 0
    link: Interconnect | None = None
    costs: Overheads = field(default_factory=lambda: overheads("none"))

    @property
    def head(self) -> bool:
        return self.draft.shape is not None and self.draft.kind != "model"

    @property
    def dtp(self) -> int:
        """The draft's tensor parallelism: a head's is the target's."""
        return self.tp if self.head else (self.draft_tp or 1)

    @property
    def n_devices(self) -> int:
        return self.devices or self.tp

    @property
    def replicas(self) -> int:
        """Copies of the deployment the devices hold (data parallel)."""
        return self.n_devices // self.tp

    def split(self, tp: int) -> Split:
        return Split(tp, (self.link or self.accel.link()) if tp > 1 else None)


def check(s: Setup) -> None:
    """ParallelError for a split that cannot run: tp that does not divide a model's heads, more
    devices asked than the server has, a draft split wider than the target's, a head at
    another tp than the target's."""
    parallel.check_tp(s.target, s.tp, s.target.name)
    if not 1 <= s.n_devices <= DEVICES_MAX:
        raise ParallelError(f"the server's devices must be 1..{DEVICES_MAX:,}; got "
                            f"{s.n_devices:,}")
    if s.tp > s.n_devices:
        raise ParallelError(f"tensor parallelism {s.tp} needs {s.tp} devices; the server has "
                            f"{s.n_devices}")
    if s.head and s.draft_tp not in (0, s.tp):
        raise ParallelError(f"a head runs where the target runs, at its tensor parallelism "
                            f"{s.tp}; got draft tp {s.draft_tp}")
    if s.dtp > s.tp:
        raise ParallelError(f"the draft runs on the target's devices: its tensor parallelism "
                            f"{s.dtp} exceeds the target's {s.tp}")
    if s.draft.shape is not None:
        parallel.check_tp(s.draft.shape, s.dtp, s.draft.name)


@dataclass(frozen=True)
class Capacity:
    """How many sequences fit at context context_len next to the weights, on the fullest
    device (all bytes per device)."""

    usable_bytes: float  # memory x mem_fraction - reserve
    target_weight_bytes: float  # the target's weights on one device
    kv_per_seq_target: float  # bytes of KV cache per sequence, target, on one device
    batch_with_draft: int  # largest B with both models (0: the draft does not fit)
    batch_target_only: int  # largest B without the draft
    draft_weight_bytes: float = 0.0  # the draft's weights on a device that holds them
    kv_per_seq_draft: float = 0.0


def capacity(s: Setup) -> Capacity:
    """B_max = floor((memory x fraction - reserve - weights) / KV bytes per sequence at
    context_len), on the fullest device: the target's share and, where the draft runs, the
    draft's; and for the target alone."""
    usable = s.accel.memory_bytes * s.mem_fraction - s.reserve_bytes
    wt = parallel.weights_per_device(s.target, s.target.params, s.tp, s.target_dtype)
    kt = (s.target.kv_bytes_per_token(s.kv_dtype) * s.context_len
          * parallel.kv_share(s.target, s.tp))
    shape, wd, kd = s.draft.shape, 0.0, 0.0
    if shape is not None:
        wd = parallel.weights_per_device(shape, s.draft.resident_params, s.dtp, s.draft_dtype)
        kd = shape.kv_bytes_per_token(s.kv_dtype) * s.context_len * parallel.kv_share(
            shape, s.dtp)
    both = math.floor((usable - wt - wd) / (kt + kd)) if kt + kd > 0 else 0
    alone = math.floor((usable - wt) / kt) if kt > 0 else 0
    return Capacity(usable, wt, kt, max(both, 0), max(alone, 0), wd, kd)


def fit_message(s: Setup, cap: Capacity) -> str:
    """Why the target does not fit on its devices, and what would: smaller weights, a wider
    split, a larger accelerator."""
    gib = 2**30
    at = f" at tensor parallelism {s.tp}" if s.tp > 1 else ""
    need = cap.target_weight_bytes + cap.kv_per_seq_target + s.reserve_bytes
    lines = [f"{s.target.name} in {s.target_dtype} needs {cap.target_weight_bytes / gib:.1f} "
             f"GiB of weights{at} plus {cap.kv_per_seq_target / gib:.2f} GiB of KV cache per "
             f"sequence at context {s.context_len:,} on each device; {s.accel.name} offers "
             f"{cap.usable_bytes / gib:.1f} GiB ({s.mem_fraction:.0%} of its "
             f"{s.accel.memory_bytes / gib:.1f} GiB, less {s.reserve_bytes / gib:.1f} GiB for "
             "activations and the runtime)."]
    per = cap.target_weight_bytes / dtype_bytes(s.target_dtype)
    fits = [d for d in ("fp8", "int4") if dtype_bytes(d) < dtype_bytes(s.target_dtype)
            and per * dtype_bytes(d) + cap.kv_per_seq_target < cap.usable_bytes]
    if fits:
        lines.append(f"It fits with {' or '.join(fits)} weights.")
    if (wider := _wider_split(s, cap)) is not None:
        lines.append(f"It fits split {wider} ways (--tp {wider}, on {wider} devices).")
    lines.append(f"Or choose an accelerator with more than {need / s.mem_fraction / gib:.0f} "
                 "GiB.")
    return " ".join(lines)


def _wider_split(s: Setup, cap: Capacity) -> int | None:
    """The smallest tensor parallelism above s.tp (up to 8 x s.tp) at which the target and
    one sequence's KV cache fit, or None."""
    for tp in range(s.tp + 1, 8 * s.tp + 1):
        try:
            parallel.check_tp(s.target, tp, s.target.name)
        except ParallelError:
            continue
        w = parallel.weights_per_device(s.target, s.target.params, tp, s.target_dtype)
        kv = cap.kv_per_seq_target * parallel.kv_share(s.target, tp) / parallel.kv_share(
            s.target, s.tp)
        if w + kv < cap.usable_bytes:
            return tp
    return None
