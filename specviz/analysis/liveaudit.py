"""The audit of a live server: is what it samples the target's law? (issue 41, part 3)

    audit_server(server=URL, reference=URL | None, prompt=TEXT, n=N, sampling=Sampling(...))

1. The target's laws, from the reference (a server with speculation off, or the same server:
   the first token after a prompt is sampled by the target alone, so its top logprobs are the
   target's): the first token's top tokens p1(x) (asked twice: a server that disagrees with
   itself is refused), then, for each top token x the samples drew first, the second's
   p2(y | x) by a further request continuing the prompt with x (by its id where the server
   gives ids: llama.cpp's mixed prompt [text, id]).
2. n samples of the server under audit, each max_tokens = `tokens` long (llama-server drafts
   at most max_tokens - 1 - (tokens already out) tokens: with 2 nothing would be drafted, so
   the default asks for a few more), of which the first two tokens count.
3. Two statistics (lawcompare.compare): the first token over the top tokens plus one bucket
   for the rest, and the first two tokens over (x, y) for y among x's top tokens, (x, rest),
   (x, anything) for a top x not drawn, and one bucket for a first token outside the top.
   The laws carry the probabilities the reference reported after its sampling chain
   (llama.cpp: post_sampling_probs), so temperature, top-k and top-p are the server's own.

Nothing is known of the server's draft, so no known broken law is named; `resolution` is the
TV a run must be able to catch (the power: lawcompare), else the verdict is too small to tell.
"""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from .completions import Position, ServerError, endpoint, model_of, positions, post
from .lawcompare import Comparison, compare

TOP = 10  # top tokens a law is read over (plus one bucket for the rest)
TOKENS = 3  # tokens each sample asks for (room for one draft: see the module's docstring)
SELF_TOL = 2e-3  # largest difference of one probability between two identical requests
RESOLUTION = 0.15  # the TV a run must catch with probability POWER, else too small to tell
N_MAX = 100_000  # samples one audit may ask for
REST = "(rest)"
ANY = "(any)"


@dataclass(frozen=True)
class Sampling:
    """The request's sampling parameters (None: the server's default)."""

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None

    def body(self) -> dict:
        out: dict = {"temperature": self.temperature}
        if self.top_k is not None:
            out["top_k"] = self.top_k
        if self.top_p is not None:
            out["top_p"] = self.top_p
        return out


@dataclass(frozen=True)
class LiveAudit:
    """The verdict on n samples of a live server, and what it took."""

    n: int
    comparison: Comparison
    first: dict  # token -> the reference's p1 over the top tokens (REST: the rest)
    first_counts: dict  # token -> samples whose first token it was
    names: dict  # token -> its text
    sample_s: float  # seconds sampling took
    law_s: float  # seconds the reference's laws took
    requests: int
    warnings: tuple[str, ...] = field(default=())

    @property
    def verdict(self) -> str:
        return self.comparison.verdict


def _laws_at(url: str, prompt, *, top: int, sampling: Sampling, timeout_s: float
             ) -> tuple[dict, str, list[str]]:
    """The reference's top tokens after prompt: ({token: p}, model, warnings)."""
    doc = post(url, {"prompt": prompt, "max_tokens": 1, "logprobs": top, "n_probs": top,
                     "post_sampling_probs": True, **sampling.body()}, timeout_s=timeout_s)
    pos = positions(doc)
    if not pos or pos[0].top is None:
        raise ServerError(f"{url} returned no top logprobs: it cannot give the target's law "
                          "(use a reference server that does)")
    law, warn = pos[0].top, []
    if len(law) < top and sum(law.values()) < 1 - 1e-3:
        warn.append(f"the reference gave {len(law)} top logprobs of the {top} asked "
                    f"(holding {sum(law.values()):.3f} of the mass); the rest is one bucket")
    return law, model_of(doc), warn


def _sample(url: str, prompt: str, seed: int, *, tokens: int, sampling: Sampling,
            timeout_s: float) -> tuple[list[Position], str]:
    doc = post(url, {"prompt": prompt, "max_tokens": tokens, "logprobs": 1, "seed": seed,
                     **sampling.body()}, timeout_s=timeout_s)
    pos = positions(doc)
    if len(pos) < 2:
        raise ServerError(f"{url} returned {len(pos)} token(s) where {tokens} were asked "
                          "(it stopped early: choose a prompt the model goes on from)")
    return pos, model_of(doc)


def _cells(law: dict, top: int) -> tuple[list, np.ndarray]:
    """The top tokens of law and their probabilities, with REST last."""
    keys = sorted(law, key=lambda t: -law[t])[:top]
    p = np.array([law[t] for t in keys], dtype=np.float64)
    return keys + [REST], np.append(p, max(0.0, 1.0 - p.sum()))


def _check_self(a: dict, b: dict, url: str) -> None:
    worst = max(a.keys() | b.keys(), key=lambda t: abs(a.get(t, 0.0) - b.get(t, 0.0)))
    d = abs(a.get(worst, 0.0) - b.get(worst, 0.0))
    if d > SELF_TOL:
        raise ServerError(f"{url} disagrees with itself between two identical requests: "
                          f"p({worst!r}) = {a.get(worst, 0.0):.4f}, then "
                          f"{b.get(worst, 0.0):.4f}; its laws cannot be trusted")


def _continue(prompt: str, first: Position):
    """The prompt followed by a first token: by id where the server gave one."""
    return [prompt, first.token] if isinstance(first.token, int) else prompt + first.text


def audit_server(*, server: str, prompt: str, n: int, reference: str | None = None,
                 sampling: Sampling = Sampling(), top: int = TOP, tokens: int = TOKENS,
                 model: str | None = None, timeout_s: float = 30.0, seed: int = 0,
                 concurrency: int = 1, resolution: float = RESOLUTION) -> LiveAudit:
    """The audit (see the module's docstring); ServerError for what prevents one."""
    if not 1 <= n <= N_MAX or not 2 <= tokens <= 64 or not 1 <= top <= 20:
        raise ValueError(f"n in 1..{N_MAX}, tokens in 2..64 and top in 1..20; "
                         f"got n = {n}, tokens = {tokens}, top = {top}")
    url, ref = endpoint(server), endpoint(reference or server)
    t0 = time.monotonic()
    law1, ref_model, warnings = _laws_at(ref, prompt, top=top, sampling=sampling,
                                         timeout_s=timeout_s)
    again, _, _ = _laws_at(ref, prompt, top=top, sampling=sampling, timeout_s=timeout_s)
    _check_self(law1, again, ref)
    law_s = time.monotonic() - t0
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        runs = list(pool.map(lambda i: _sample(url, prompt, seed + i, tokens=tokens,
                                               sampling=sampling, timeout_s=timeout_s),
                             range(n)))
    sample_s = time.monotonic() - t0
    _check_model({m for _, m in runs}, ref_model, model, url, ref)
    keys1, p1 = _cells(law1, top)
    names = {p.token: p.text for pos, _ in runs for p in pos[:2]}
    firsts = Counter(pos[0].token for pos, _ in runs)
    t0 = time.monotonic()
    seconds, seen = {}, {pos[0].token: pos[0] for pos, _ in runs}
    for x in keys1[:-1]:
        if firsts[x]:
            law2, _, warn = _laws_at(ref, _continue(prompt, seen[x]), top=top,
                                     sampling=sampling, timeout_s=timeout_s)
            seconds[x] = _cells(law2, top)
            warnings += [w for w in warn if w not in warnings]
    law_s += time.monotonic() - t0
    counts1 = np.array([firsts[x] for x in keys1[:-1]] + [n - sum(firsts[x]
                                                                  for x in keys1[:-1])])
    joint_keys, joint_p = _joint(keys1, p1, seconds)
    pairs = Counter(_joint_key(pos[0].token, pos[1].token, keys1, seconds) for pos, _ in runs)
    counts2 = np.array([pairs[c] for c in joint_keys])
    comparison = compare({"first token": counts1, "first two tokens": counts2},
                         {"first token": p1, "first two tokens": joint_p},
                         resolution=resolution)
    return LiveAudit(n=n, comparison=comparison, first=dict(zip(keys1, p1, strict=True)),
                     first_counts=dict(zip(keys1, counts1.tolist(), strict=True)),
                     names=names, sample_s=sample_s, law_s=law_s,
                     requests=n + 2 + len(seconds), warnings=tuple(warnings))


def _joint(keys1: list, p1: np.ndarray, seconds: dict) -> tuple[list, np.ndarray]:
    """The first-two-token cells and their probabilities p1(x) p2(y | x)."""
    keys, probs = [], []
    for x, px in zip(keys1, p1, strict=True):
        if x in seconds:
            k2, p2 = seconds[x]
            keys += [(x, y) for y in k2]
            probs += list(px * p2)
        else:
            keys.append((x, ANY))
            probs.append(px)
    return keys, np.array(probs)


def _joint_key(x, y, keys1: list, seconds: dict) -> tuple:
    if x not in keys1[:-1]:
        return (REST, ANY)
    if x not in seconds:
        return (x, ANY)
    return (x, y if y in seconds[x][0][:-1] else REST)


def _check_model(models: set, ref_model: str, want: str | None, url: str, ref: str) -> None:
    models.discard("")
    if len(models) > 1:
        raise ServerError(f"{url} answered as several models: {', '.join(sorted(models))}")
    got = next(iter(models), "")
    if want is not None and got and got != want:
        raise ServerError(f"{url} answers with model {got!r}, not {want!r}")
    if got and ref_model and got != ref_model:
        raise ServerError(f"{url} answers with model {got!r} but the reference {ref} with "
                          f"{ref_model!r}: their laws are not comparable")
