"""`python -m specviz plan`: the planner on files, printed as a verdict and tables.

    python -m specviz plan --metrics FILE --target-config FILE|PRESET --draft-config FILE|PRESET
                           --gpu H100 --context 4096 [--batch B] [--json]
                           [--metrics-before FILE] [--model NAME]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import TextIO

from .analysis.drafting import DRAFT_RENAMED
from .analysis.planner import Measured
from .clitable import format_table
from .views import plan as pv
from .web.settings import FIELD

BATCH_ROWS = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


def add_parser(sub) -> None:
    p = sub.add_parser("plan", help="price speculation on your measurements, models and GPU",
                       description="Read server acceptance metrics and two config.json files "
                                   "(or preset names), price every k and batch size on an "
                                   "accelerator, and print the verdict and the tables.")
    p.add_argument("--metrics", default=None,
                   help="metrics file: vLLM /metrics text (one or more scrapes), SGLang "
                        "/metrics (its gauges) or /get_server_info, vLLM or SGLang JSON, "
                        "llama.cpp log or timings, or a CSV (default: the shipped vLLM "
                        "example)")
    p.add_argument("--metrics-before", default=None,
                   help="an earlier vLLM /metrics scrape: the counters are differenced, "
                        "--metrics minus this one")
    _arg(p, "--model", "plan_model", "the model_name to read, where a scrape holds several models")
    _arg(p, "--target-config", "plan_target",
         f"target config.json path or preset ({', '.join(pv.preset_names())})")
    _arg(p, "--draft-config", "plan_draft", "draft config.json or preset")
    _arg(p, "--gpu", "plan_gpu", "accelerator: " + ", ".join(pv.ACCELERATORS))
    _arg(p, "--context", "plan_ctx", "tokens of context per sequence")
    for flag, key, what in (("--dtype", "plan_tdtype", "target weights"),
                            ("--draft-dtype", "plan_ddtype", "draft weights"),
                            ("--kv-dtype", "plan_kvdtype", "KV cache")):
        _arg(p, flag, key, what, choices=True)
    kmax = FIELD["plan_kmax"].parse
    _arg(p, "--k-max", "plan_kmax", f"longest draft priced ({kmax.lo}..{kmax.hi})")
    _arg(p, "--k", "plan_klen", "draft length, where the metrics lack it (llama.cpp timings, "
         "SGLang's averages)")
    _arg(p, "--rounds", "plan_rounds", "rounds behind hand-entered rates")
    _arg(p, "--batch", "plan_batch", "your batch size, checked and priced")
    _arg(p, "--draft-kind", "plan_dkind", "what drafts: a draft model, an EAGLE / EAGLE-3 / MTP "
         "head on the target (--draft-config is then the head's own config, if it has one), or "
         "prompt lookup (lookup; ngram is its old name)", choices=True)
    _arg(p, "--head-layers", "plan_hlayers", "a head's layers, without config")
    p.add_argument("--tree", default="", metavar="TOPK,STEPS,TOKENS",
                   help="SGLang tree drafting: eagle-topk, num-steps, num-draft-tokens")
    _arg(p, "--lookup-ms", "plan_lookup_ms", "n-gram lookup per round")
    _arg(p, "--target-overhead-ms", "plan_t_oh_ms",
         "fixed time per target pass (launch, sampling, scheduling)")
    _arg(p, "--draft-overhead-ms", "plan_d_oh_ms", "per draft pass")
    p.add_argument("--measured", default="", metavar="TARGET[,VERIFY[,DRAFT]]",
                   help="measured pass times at batch 1 in ms: decode step, verify pass, "
                        "draft step; shown beside the roofline's")
    _arg(p, "--measured-c", "plan_m_c", "or a measured c")
    p.add_argument("--measured-here", default=None, metavar="FILE",
                   help="the output of python -m specviz llm --json: acceptance and pass times "
                        "measured on this machine, used instead of --metrics and --measured")
    p.add_argument("--json", action="store_true", help="print everything as JSON instead")


def _arg(p, flag: str, key: str, help: str, *, choices: bool = False) -> None:
    """Option `flag` as /plan's URL field `key` (settings.FIELD): its default, its type and,
    where asked, its options."""
    f = FIELD[key]
    kw = {"choices": (*f.parse.options, *getattr(f.parse, "renamed", {}))} if choices else {}
    if not isinstance(f.default, str):
        kw["type"] = type(f.default)
    p.add_argument(flag, default=f.default, help=help, **kw)


def _numbers(text: str, flag: str, n: int, cast=float) -> list:
    """'a,b,c' -> up to n numbers (missing ones 0); ValueError naming the flag."""
    parts = [p.strip() for p in text.split(",") if p.strip()] if text else []
    try:
        vals = [cast(p) for p in parts]
    except ValueError:
        raise ValueError(f"{flag} takes up to {n} comma-separated numbers; got {text!r}") \
            from None
    if len(vals) > n or not all(math.isfinite(v) and v >= 0 for v in vals):
        raise ValueError(f"{flag} takes up to {n} comma-separated numbers >= 0; got {text!r}")
    return vals + [cast(0)] * (n - len(vals))


def _drafts(args: argparse.Namespace) -> pv.DraftInputs:
    topk, steps, tokens = _numbers(args.tree, "--tree", 3, int)
    mt, mv, md = _numbers(args.measured, "--measured", 3)
    kind = DRAFT_RENAMED.get(args.draft_kind, args.draft_kind)  # an old name reads as now
    return pv.DraftInputs(kind, args.head_layers, topk or 1, steps, tokens, args.lookup_ms,
                          args.target_overhead_ms, args.draft_overhead_ms,
                          Measured(mt / 1e3, mv / 1e3, md / 1e3, args.measured_c))


def _read(path_or_preset: str, presets: tuple[str, ...], flag: str) -> tuple[str, str, str]:
    """(config text, preset name, label): a preset reads as no text, labelled by its name as
    it is ('Llama-3.2-1B', not its stem 'Llama-3'); a file by its stem."""
    if path_or_preset in presets:
        return "", path_or_preset, path_or_preset
    return _text(path_or_preset, flag), presets[0], Path(path_or_preset).stem


def build(args: argparse.Namespace) -> pv.PlanPage:
    metrics = pv.example_text(pv.EXAMPLES[0]) if args.metrics is None else _text(
        args.metrics, "--metrics")
    before = "" if args.metrics_before is None else _text(args.metrics_before,
                                                          "--metrics-before")
    names = pv.preset_names()
    t_text, t_name, t_label = _read(args.target_config, names, "--target-config")
    d_text, d_name, d_label = _read(args.draft_config, names, "--draft-config")
    return pv.plan_page(metrics_text=metrics, target_text=t_text, target_preset=t_name,
                        draft_text=d_text, draft_preset=d_name,
                        accel=pv.accelerator(args.gpu), context_len=args.context,
                        target_dtype=args.dtype, draft_dtype=args.draft_dtype,
                        kv_dtype=args.kv_dtype, k_max=args.k_max, k_len=args.k,
                        rounds=args.rounds, batch=args.batch,
                        target_name=t_label, draft_name=d_label, drafts=_drafts(args),
                        metrics_before=before, model=args.model, here=_here(args))


def _here(args: argparse.Namespace):
    """The measured-here source from a saved `llm --json` run, or None."""
    if args.measured_here is None:
        return None
    from .views.measured import here_from_json
    try:
        doc = json.loads(_text(args.measured_here, "--measured-here"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"--measured-here {args.measured_here!r} is not JSON ({exc})") \
            from None
    return here_from_json(doc if isinstance(doc, dict) else {})


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
                          "measured": page.tables.get("measured"),
                          "batch_note": page.batch_note}, indent=2, default=float), file=out)
        return 0
    f3 = ".3f"
    print("Verdict\n=======\n" + page.verdict, file=out)
    for line in page.model_lines:
        print(f"  model: {line}", file=out)
    for n in page.notes + ([page.batch_note] if page.batch_note else []):
        print(f"  note: {n}", file=out)
    if "measured" in page.tables:
        print("\nBatch 1: the roofline beside your measurements", file=out)
        print(format_table(page.tables["measured"], [
            ("quantity", "", str), ("roofline", "roofline", ".4g"),
            ("measured", "measured", ".4g"), ("how", "measured how", str)]), file=out)
    print("\nAcceptance by position (95% Wilson intervals)" if page.report.alpha_ci else
          "\nAcceptance by position (an average: no count of rounds, so no intervals)", file=out)
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
