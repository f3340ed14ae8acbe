"""A plan's deployment in words and as JSON: what runs where, what each device holds, what the
collectives cost, which fixed costs are assumed and where each comes from."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from . import parallel
from .planner import Plan, pass_parts

GIB = 2**30


def _link(p: Plan):
    s = p.setup
    return s.split(s.tp).link or s.split(s.dtp).link


def where(p: Plan) -> str:
    """Where each model runs and what a device holds; the all-reduces' share of a pass."""
    s, cap = p.setup, p.capacity
    devices = f"{s.n_devices} x {s.accel.name}" if s.n_devices > 1 else f"one {s.accel.name}"
    link = _link(p)
    text = f"On {devices}" + (f" ({link.name} between them)" if link else "") + ": "
    text += (f"the target at tensor parallelism {s.tp}, {cap.target_weight_bytes / GIB:.1f} "
             f"GiB of its weights on each device" if s.tp > 1 else
             f"the target, {cap.target_weight_bytes / GIB:.1f} GiB of weights")
    if s.draft.shape is not None:
        who = "head" if s.head else "draft"
        if s.tp == 1:
            text += f"; the {who} beside it, {cap.draft_weight_bytes / GIB:.2f} GiB"
        else:
            on = ("on the same devices" if s.dtp == s.tp else
                  f"on the first {s.dtp} of them" if s.dtp > 1 else "on the first device")
            text += (f"; the {who} at {s.dtp}, {on} ({cap.draft_weight_bytes / GIB:.2f} GiB "
                     "a device)")
    if s.replicas > 1:
        text += f"; {s.replicas} copies side by side (data parallel), each priced alike"
    if s.n_devices % s.tp:
        text += f"; {s.n_devices % s.tp} device(s) left idle"
    text += "."
    if s.tp > 1:
        t = pass_parts(s)
        text += (f" Its all-reduces (two a layer, {2 * s.target.layers + 1} a pass with the "
                 f"embedding's, and the logits gathered) cost {t['collectives_s'] * 1e3:.2f} "
                 f"ms of a {t['total_s'] * 1e3:.2f} ms target pass at batch 1. "
                 + parallel.PIPELINE_NOTE)
    return text


def costs_sentence(p: Plan) -> str:
    """The fixed costs the plan adds, and whether they are assumed (the mode's defaults)."""
    c = p.setup.costs
    if c.mode == "none":
        return "No fixed cost a pass: bytes and MACs alone (the roofline)."
    d = p.setup.draft
    shown = ("layer", "pass", "round") + (("tree",) if d.tree else ()) + (
        ("level",) if d.tree and d.kind != "medusa" else ())  # Medusa's tree: no levels
    parts = ", ".join(f"{r['cost']} {r['us']:,.0f} us" for r in c.rows() if r["cost"] in shown)
    head = ("Fixed costs assumed" if c.assumed else "Fixed costs as given") + f" ({parts}; "
    rule = ("a pass takes the larger of its launches and its roofline time" if c.mode ==
            "eager" else "each pass adds its launches to its roofline time")
    ask = (" Measure your pass times (the measured costs, --measured) to check them."
           if c.assumed else "")
    return head + f"{rule}): {c.source}.{ask}"


def past_measured(p: Plan, recommended: list[int]) -> str | None:
    """The sentence a recommendation past the measured draft length needs: what it assumes."""
    rep = p.acceptance
    past = sorted({k for k in recommended if k > rep.k})
    if not past or p.setup.draft.tree is not None:
        return None
    ks = ", ".join(str(k) for k in past)
    return (f"k = {ks} is past the measured k = {rep.k}: its tokens per call assume each "
            f"further draft is kept at the conditional rate {rep.tail:.3f} (alpha^i beyond "
            f"position {rep.k}), which was not measured.")


def deploy_json(p: Plan) -> dict:
    """The parallelism, the memory on a device, the fixed costs with their sources and the
    passes at batch 1, as plain JSON-able values."""
    s, cap = p.setup, p.capacity
    link = _link(p)
    k = int(np.asarray(p.best_k)[0]) or int(p.ks[0])
    verify = k + 1 if s.draft.tree is None else s.draft.tree.verify_tokens
    passes = {"target": pass_parts(s), "verify": pass_parts(s, tokens=verify)}
    if s.draft.shape is not None:
        width = 1 if s.draft.tree is None else s.draft.tree.topk
        passes["draft"] = pass_parts(s, tokens=width, draft=True)
    return {
        "parallelism": {"tp": s.tp, "draft_tp": s.dtp if s.draft.shape is not None else None,
                        "devices": s.n_devices, "replicas": s.replicas,
                        "interconnect": asdict(link) if link else None,
                        "pipeline": parallel.PIPELINE_NOTE, "where": where(p)},
        "memory_per_device": {"usable_bytes": cap.usable_bytes,
                              "target_weight_bytes": cap.target_weight_bytes,
                              "draft_weight_bytes": cap.draft_weight_bytes,
                              "kv_per_seq_target": cap.kv_per_seq_target,
                              "kv_per_seq_draft": cap.kv_per_seq_draft},
        "overheads": {"mode": s.costs.mode, "costs_us": s.costs.rows(),
                      "assumed": bool(s.costs.assumed), "source": s.costs.source},
        "draft": {"kind": s.draft.kind, "tree": asdict(s.draft.tree) if s.draft.tree else None},
        "accelerator": {"name": s.accel.name, "source": s.accel.source},
        "passes_at_batch_1": {"k": k, **passes},
    }
