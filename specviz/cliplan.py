"""`python -m specviz plan`: the planner on files, printed as a verdict and tables.

    python -m specviz plan --metrics FILE --target-config FILE|PRESET --draft-config FILE|PRESET
                           --gpu H100 --context 4096 [--batch B] [--json]
                           [--metrics-before FILE] [--model NAME]
                           [--tp N --draft-tp N --devices N --interconnect NAME]
                           [--exec eager|graphs|none --layer-us US ...]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import TextIO

from .analysis.drafting import DRAFT_RENAMED
from .clitable import format_table
from .views import plan as pv
from .views.plansettings import DEFAULTS, URL, PlanSettings
from .web.settings import FIELD

SET = "set_"  # the dest prefix of the flags that are plan settings (_arg)
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
    p.add_argument("--metrics-before", default=None, dest="before_file",
                   help="an earlier vLLM /metrics scrape: the counters are differenced, "
                        "--metrics minus this one")
    _arg(p, "--model", "model", "the model_name to read, where a scrape holds several models")
    _arg(p, "--target-config", "target_preset",
         f"target config.json path or preset ({', '.join(pv.preset_names())})")
    _arg(p, "--draft-config", "draft_preset", "draft config.json or preset")
    _arg(p, "--gpu", "gpu", "accelerator: " + ", ".join(pv.ACCELERATORS))
    _arg(p, "--context", "context_len", "tokens of context per sequence")
    for flag, key, what in (("--dtype", "target_dtype", "target weights"),
                            ("--draft-dtype", "draft_dtype", "draft weights"),
                            ("--kv-dtype", "kv_dtype", "KV cache")):
        _arg(p, flag, key, what, choices=True)
    kmax = FIELD[URL["k_max"]].parse
    _arg(p, "--k-max", "k_max", f"longest draft priced ({kmax.lo}..{kmax.hi})")
    _arg(p, "--k", "k_len", "draft length, where the metrics lack it (llama.cpp timings, "
         "SGLang's averages)")
    _arg(p, "--rounds", "rounds", "rounds behind hand-entered rates")
    _arg(p, "--batch", "batch", "your batch size, checked and priced")
    _add_deployment(p)
    _arg(p, "--draft-kind", "draft_kind", "what drafts: a draft model, an EAGLE / EAGLE-3 / MTP "
         "head on the target (--draft-config is then the head's own config, if it has one), "
         "Medusa's heads (--tree 1,DEPTH,TOKENS: its heads and tree; default Medusa's "
         "mc_sim_7b_63, depth 4, 64 tokens) or prompt lookup (lookup; ngram is its old name)",
         choices=True)
    _arg(p, "--head-layers", "head_layers", "a head's layers, without config")
    p.add_argument("--tree", default="", metavar="TOPK,STEPS,TOKENS",
                   help="SGLang tree drafting: eagle-topk, num-steps, num-draft-tokens")
    _arg(p, "--lookup-ms", "lookup_ms", "n-gram lookup per round")
    _arg(p, "--target-overhead-ms", "target_overhead_ms",
         "extra fixed time per target pass (sampling, scheduling), beside --exec's")
    _arg(p, "--draft-overhead-ms", "draft_overhead_ms", "per draft pass")
    p.add_argument("--measured", default="", metavar="TARGET[,VERIFY[,DRAFT]]",
                   help="measured pass times at batch 1 in ms: decode step, verify pass, "
                        "draft step; shown beside the roofline's")
    _arg(p, "--measured-c", "measured_c", "or a measured c")
    _arg(p, "--measured-k", "measured_k", "the k your verify pass was measured at (0: the "
         "metrics' k)")
    p.add_argument("--measured-here", default=None, metavar="FILE",
                   help="the output of python -m specviz llm --json: acceptance and pass times "
                        "measured on this machine, used instead of --metrics and --measured")
    p.add_argument("--json", action="store_true", help="print everything as JSON instead")


def _add_deployment(p) -> None:
    """The flags of the split and of the fixed costs."""
    _arg(p, "--tp", "tp", "the target's tensor parallelism (devices it is split across)")
    _arg(p, "--draft-tp", "draft_tp", "the draft model's (0: 1; a head runs at --tp)")
    _arg(p, "--devices", "devices", "accelerators in the server (0: as many as --tp)")
    _arg(p, "--interconnect", "interconnect", "the link between them (NVLink, PCIe, "
         "Infinity Fabric, ICI: as the accelerator has them; default its first)")
    _arg(p, "--exec", "exec_mode", "how passes run: eager PyTorch, CUDA graphs or compiled, "
         "or no fixed cost (the roofline alone)", choices=True)
    for cost, what in (("layer", "a layer's launch floor"), ("pass", "a pass's, outside "
                       "its layers"), ("round", "a round's verification and bookkeeping"),
                       ("tree", "a tree's round"), ("level", "each level a tree drafts")):
        _arg(p, f"--{cost}-us", f"{cost}_us", f"{what}, us (-1: the --exec default)")


def _arg(p, flag: str, name: str, help: str, *, choices: bool = False) -> None:
    """Option `flag` as the plan setting `name`: its default (PlanSettings'), its type and,
    where asked, its options (its URL field's, settings.FIELD)."""
    f = FIELD[URL[name]]
    kw = {"choices": (*f.parse.options, *getattr(f.parse, "renamed", {}))} \
        if choices else {}
    default = getattr(DEFAULTS, name)
    if not isinstance(default, str):
        kw["type"] = type(default)
    p.add_argument(flag, dest=SET + name, default=default, help=help, **kw)


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


def _read(path_or_preset: str, presets: tuple[str, ...], flag: str) -> tuple[str, str, str]:
    """(config text, preset name, label): a preset reads as no text, labelled by its name as
    it is ('Llama-3.2-1B', not its stem 'Llama-3'); a file by its stem."""
    if path_or_preset in presets:
        return "", path_or_preset, path_or_preset
    return _text(path_or_preset, flag), presets[0], Path(path_or_preset).stem


def settings(args: argparse.Namespace) -> PlanSettings:
    """The plan's settings from the flags: each flag of _arg as it is, files read, the
    comma-separated flags split."""
    s = {k.removeprefix(SET): v for k, v in vars(args).items() if k.startswith(SET)}
    s["draft_kind"] = DRAFT_RENAMED.get(s["draft_kind"], s["draft_kind"])  # an old name
    if args.metrics is not None:  # a file: no example behind it
        s |= {"example": "", "metrics_text": _text(args.metrics, "--metrics")}
    if args.before_file is not None:
        s["metrics_before"] = _text(args.before_file, "--metrics-before")
    names = pv.preset_names()
    for who, flag in (("target", "--target-config"), ("draft", "--draft-config")):
        text, preset, label = _read(s[f"{who}_preset"], names, flag)
        s |= {f"{who}_text": text, f"{who}_preset": preset, f"{who}_name": label}
    topk, steps, tokens = _numbers(args.tree, "--tree", 3, int)
    mt, mv, md = _numbers(args.measured, "--measured", 3)
    return PlanSettings(**s, tree_topk=topk or 1, tree_steps=steps, tree_tokens=tokens,
                        measured_target_ms=mt, measured_verify_ms=mv, measured_draft_ms=md)


def build(args: argparse.Namespace) -> pv.PlanPage:
    return pv.plan_page(settings(args), here=_here(args))


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
        print(json.dumps(pv.page_json(page), indent=2, default=float), file=out)
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
