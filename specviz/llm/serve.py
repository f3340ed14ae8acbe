"""A small OpenAI-compatible /v1/completions endpoint: the real model decoding speculatively
with one rule of the registry (specviz.core.rules), so an audit of a live server
(analysis.liveaudit) can be pointed at a server whose rule is known: the correct rule must
pass, each broken one fail.

    python -m specviz.llm.serve --rule correct --port 8090 [--draft skip:4,8 --k 2]

Each request plays rounds (core.round.play) of the rule over the pair (the model, the draft)
from the prompt until max_tokens tokens are out. The sampling parameters of the request
(temperature, top_k, top_p) warp the pair's rows (core.warp); a rule that reads a warp itself
(rules.reads_warp: the warp_* bugs) is given them as its parameters over the raw rows instead.
With logprobs = m, each emitted position carries the target's top m tokens after the warp
(the law a lossless rule follows there), in llama.cpp's form: choices[0].logprobs.content[i]
= {id, token, logprob, top_logprobs: [{id, token, logprob}]}. A prompt is text, token ids, or
a list mixing both (llama.cpp's mixed prompt), so a client continues after a token exactly.

One pair per server, behind a lock: requests are served one at a time. Its row cache holds
ROW_CACHE_BYTES; MAX_TOKENS_MAX and LOGPROBS_MAX cap one request.
"""

from __future__ import annotations

import argparse
import json
import math
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from ..core.draws import RngDraws
from ..core.round import play
from ..core.rules import Rule, get_rule, reads_warp
from ..core.warp import Warp, WarpedPair
from .drafts import Kit, draft_pair, parse_draft
from .store import Model, load

MODEL_NAME = "specviz-gemma-3-270m"
ROW_CACHE_BYTES = 256 * 2**20  # the pair's rows (2 MiB each at V = 262,144): 128 rows
MAX_TOKENS_MAX = 16  # tokens one request may ask for
LOGPROBS_MAX = 20  # top tokens one position may report
PROMPT_TOKENS_MAX = 512  # tokens a prompt may hold
BODY_BYTES_MAX = 1 << 16


class BadRequest(ValueError):
    """A request this endpoint refuses; the message says why (HTTP 400)."""


class Engine:
    """The model, one draft and one rule, playing requests one at a time."""

    def __init__(self, model: Model, *, rule: str | Rule, draft: str = "skip:4,8",
                 k: int = 2, kit: Kit | None = None) -> None:
        """kit: the shipped corpus, for the drafts that read it (a trimmed head, an n-gram
        model: llm.drafts.Kit); the command line serves the others."""
        self.model, self.rule, self.k = model, get_rule(rule), int(k)
        self.pair = draft_pair(model, parse_draft(draft, cfg=model.cfg), T=1.0, kit=kit)
        self.pair._rows.max_rows = ROW_CACHE_BYTES // (8 * self.pair.V)
        self.lock = threading.Lock()

    def set_rule(self, rule: str | Rule) -> None:
        """Serve another rule of the registry (the pair, and the rows it keeps, stay)."""
        with self.lock:
            self.rule = get_rule(rule)

    def _setup(self, warp: Warp):
        """(pair, rule) for a request's warp (see the module's docstring)."""
        if reads_warp(self.rule):
            return self.pair, self.rule.with_params(**warp.params(draft=True))
        if warp.identity:
            return self.pair, self.rule
        return WarpedPair(self.pair, replace(warp, draft=True)), self.rule

    def prompt_ids(self, prompt: Any) -> list[int]:
        """Text, token ids, or a list mixing both (text encoded, BOS first)."""
        parts = prompt if isinstance(prompt, list) else [prompt]
        ids: list[int] = []
        for part in parts:
            if isinstance(part, str):
                ids += self.model.tokenizer.encode(part, bos=not ids)
            elif isinstance(part, int) and not isinstance(part, bool) and \
                    0 <= part < self.pair.V:
                ids.append(part)
            else:
                raise BadRequest(f"a prompt holds text and token ids in 0..{self.pair.V - 1}; "
                                 f"got {part!r}")
        if not ids or len(ids) > PROMPT_TOKENS_MAX:
            raise BadRequest(f"the prompt must hold 1..{PROMPT_TOKENS_MAX} tokens; "
                             f"got {len(ids)}")
        return ids

    def complete(self, body: dict) -> dict:
        """One /v1/completions request: the rounds played, the tokens and their logprobs."""
        ids, n_tok, n_probs, warp, seed = _request(self, body)
        rng = np.random.default_rng(seed)
        with self.lock:
            pair, rule = self._setup(warp)
            out: list[int] = []
            while len(out) < n_tok:
                out += list(play(pair, ids + out, self.k, rule, RngDraws(rng), light=True)
                            .tokens)
            out = out[:n_tok]
            content = [self._position(ids + out[:i], x, warp, n_probs)
                       for i, x in enumerate(out)]
        return {"id": f"cmpl-{seed}", "object": "text_completion", "created": int(time.time()),
                "model": MODEL_NAME,
                "choices": [{"index": 0, "text": self.model.tokenizer.decode(out),
                             "finish_reason": "length",
                             "logprobs": {"content": content} if n_probs else None}],
                "usage": {"prompt_tokens": len(ids), "completion_tokens": len(out)}}

    def _position(self, prefix: list[int], x: int, warp: Warp, n_probs: int) -> dict:
        """Token x at prefix with the target's top n_probs after the warp."""
        entry: dict[str, Any] = {"id": int(x), "token": self.model.tokenizer.decode([x])}
        if n_probs:
            law = WarpedPair(self.pair, warp).p(prefix) if not warp.identity \
                else self.pair.p(prefix)
            top = np.argsort(-law, kind="stable")[:n_probs]
            entry["logprob"] = _log(law[x])
            entry["top_logprobs"] = [{"id": int(t), "token": self.model.tokenizer.decode([t]),
                                      "logprob": _log(law[t])} for t in top]
        return entry


def _log(p: float) -> float:
    return math.log(p) if p > 0 else -1e30  # JSON has no -inf


def _request(engine: Engine, body: dict) -> tuple[list[int], int, int, Warp, int]:
    """The checked fields of a request: prompt ids, max_tokens, logprobs, warp, seed."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    ids = engine.prompt_ids(body.get("prompt", ""))
    n_tok, n_probs = body.get("max_tokens", 16), body.get("logprobs") or 0
    for name, v, hi in (("max_tokens", n_tok, MAX_TOKENS_MAX),
                        ("logprobs", n_probs, LOGPROBS_MAX)):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= hi:
            raise BadRequest(f"{name} must be an integer in 0..{hi}; got {v!r}")
    seed = body.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        seed = int(np.random.SeedSequence().entropy % 2**63)
    try:
        warp = Warp(float(body.get("temperature", 1.0)), int(body.get("top_k", 0) or 0),
                    float(body.get("top_p", 1.0)))
    except (TypeError, ValueError) as err:
        raise BadRequest(str(err)) from err
    return ids, max(n_tok, 1), n_probs, warp, seed


def make_server(engine: Engine, *, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server over engine (port 0: any free port; .server_address says which)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet
            pass

        def _send(self, code: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, {"object": "list", "data": [{"id": MODEL_NAME,
                                                             "object": "model"}]})
            elif self.path == "/health":
                self._send(200, {"status": "ok"})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            if self.path.rstrip("/") not in ("/v1/completions", "/completions"):
                return self._send(404, {"error": {"message": f"no route {self.path}"}})
            size = int(self.headers.get("Content-Length") or 0)
            if size > BODY_BYTES_MAX:
                return self._send(413, {"error": {"message": "request too large"}})
            try:
                self._send(200, engine.complete(json.loads(self.rfile.read(size) or b"{}")))
            except (BadRequest, json.JSONDecodeError) as err:
                self._send(400, {"error": {"message": str(err), "type": "invalid_request"}})

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="specviz's model behind /v1/completions, "
                                             "decoding speculatively with one rule")
    ap.add_argument("--rule", default="correct")
    ap.add_argument("--draft", default="skip:4,8")
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8090)
    args = ap.parse_args(argv)
    server = make_server(Engine(load(), rule=args.rule, draft=args.draft, k=args.k),
                         host=args.host, port=args.port)
    print(f"serving rule {args.rule!r} on http://{args.host}:{server.server_address[1]}",
          flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
