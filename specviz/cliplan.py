"""`python -m specviz plan`: the planner on files, printed as a verdict and tables.

    python -m specviz plan --metrics FILE --target-config FILE|PRESET --draft-config FILE|PRESET
                           --gpu H100 --context 4096 [--batch B] [--json]
                           [--metrics-before FILE] [--model NAME]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from .analysis.roofline import DTYPE_BYTES
from .clitable import format_table
from .views import plan as pv

DTYPES = tuple(DTYPE_BYTES)
BATCH_ROWS = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


def add_parser(sub) -> None:
    p = sub.add_parser("plan", help="price speculation on your measurements, models and GPU",
                       description="Read server acceptance metrics and two config.json files "
                                   "(or preset names), price every k and batch size on an "
                                   "accelerator, and print the verdict and the tables.")
    p.add_argument("--metrics", default=None,
                   help="metrics file: vLLM /metrics text (one or more scrapes), vLLM or "
                        "SGLang JSON, llama.cpp log or timings, or a CSV (default: the "
                        "shipped vLLM example)")
    p.add_argument("--metrics-before", default=None,
                   help="an earlier vLLM /metrics scrape: the counters are differenced, "
                        "--metrics minus this one")
    p.add_argument("--model", default="",
                   help="the model_name to read, where a scrape holds several models")
    p.add_argument("--target-config", default="Llama-3.1-8B",
                   help=f"target config.json path or preset ({', '.join(pv.preset_names())})")
    p.add_argument("--draft-config", default="Llama-3.2-1B", help="draft config.json or preset")
    p.add_argument("--gpu", default="H100", help="accelerator: " + ", ".join(pv.ACCELERATORS))
    p.add_argument("--context", type=int, default=4096, help="tokens of context per sequence")
    p.add_argument("--dtype", choices=DTYPES, default="bf16", help="target weights")
    p.add_argument("--draft-dtype", choices=DTYPES, default="bf16", help="draft weights")
    p.add_argument("--kv-dtype", choices=DTYPES, default="bf16", help="KV cache")
    p.add_argument("--k-max", type=int, default=8, help="longest draft priced (1..16)")
    p.add_argument("--k", type=int, default=0, help="draft length, where the metrics lack it")
    p.add_argument("--rounds", type=int, default=0, help="rounds behind hand-entered rates")
    p.add_argument("--batch", type=int, default=0, help="your batch size, checked and priced")
    p.add_argument("--json", action="store_true", help="print everything as JSON instead")


def _read(path_or_preset: str, presets: tuple[str, ...]) -> tuple[str, str]:
    """(config text, preset name): a preset name reads as no text."""
    if path_or_preset in presets:
        return "", path_or_preset
    try:
        return Path(path_or_preset).read_text(), presets[0]
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {path_or_preset!r}: {exc}") from None


def build(args: argparse.Namespace) -> pv.PlanPage:
    metrics = pv.example_text(pv.EXAMPLES[0]) if args.metrics is None else _text(
        args.metrics, "--metrics")
    before = "" if args.metrics_before is None else _text(args.metrics_before,
                                                          "--metrics-before")
    names = pv.preset_names()
    t_text, t_name = _read(args.target_config, names)
    d_text, d_name = _read(args.draft_config, names)
    return pv.plan_page(metrics_text=metrics, target_text=t_text, target_preset=t_name,
                        draft_text=d_text, draft_preset=d_name,
                        accel=pv.accelerator(args.gpu), context_len=args.context,
                        target_dtype=args.dtype, draft_dtype=args.draft_dtype,
                        kv_dtype=args.kv_dtype, k_max=args.k_max, k_len=args.k,
                        rounds=args.rounds, batch=args.batch,
                        target_name=Path(args.target_config).stem,
                        draft_name=Path(args.draft_config).stem, metrics_before=before,
                        model=args.model)


def _text(path: str, flag: str) -> str:
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {flag} {path!r}: {exc}") from None


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Print the plan; 2 with the messages on bad input."""
    page = build(args)
    if page.errors:
        raise ValueError("; ".join(page.errors))
    if args.json:
        from .analysis.plantables import to_json
        print(json.dumps({**to_json(page.plan), "notes": page.notes,
                          "batch_note": page.batch_note}, indent=2, default=float), file=out)
        return 0
    f3 = ".3f"
    print("Verdict\n=======\n" + page.verdict, file=out)
    for n in page.notes + ([page.batch_note] if page.batch_note else []):
        print(f"  note: {n}", file=out)
    print("\nAcceptance by position (95% Wilson intervals)", file=out)
    print(format_table(page.tables["acceptance"], [
        ("position", "i", "d"), ("rate", "P(kept)", f3), ("rate_lo", "lo", f3),
        ("rate_hi", "hi", f3), ("conditional", "P(kept | before kept)", f3),
        ("cond_lo", "lo", f3), ("cond_hi", "hi", f3), ("iid_rate", "alpha^i", f3)]), file=out)
    print("\nTokens per call by k", file=out)
    print(format_table(page.tables["by_k"], [
        ("k", "k", "d"), ("tokens_per_call", "tokens/call", f3),
        ("extrapolated", "extrapolated", lambda v: "yes" if v else "no"),
        ("speedup_at_batch_1", "speedup at B=1", f3)]), file=out)
    rows = [r for r in page.tables["by_batch"] if r["batch"] in BATCH_ROWS
            or r["batch"] == page.plan.batches[-1] or r["batch"] == page.plan.loses_from]
    print("\nBy batch size (all batches: --json)", file=out)
    print(format_table(rows, [
        ("batch", "B", "d"), ("best_k", "best k", "d"), ("speedup", "speedup", f3),
        ("user_tok_s_plain", "user tok/s off", ".1f"), ("user_tok_s_spec", "user tok/s on", ".1f"),
        ("gpu_tok_s_plain", "GPU tok/s off", ",.0f"), ("gpu_tok_s_spec", "GPU tok/s on", ",.0f"),
        ("draft_cost_c", "c", f3), ("break_even_alpha", "break-even alpha", f3)]), file=out)
    return 0
