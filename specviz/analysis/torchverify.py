"""transformers' own speculative sampling step as a verifier function (issue 41, part 2).

    shipped(drafted, q, p, rng) -> emitted

A thin adapter, as a user would write one for any torch implementation: it hands the audit's
tables to `transformers.generation.utils._speculative_sampling` as the library calls it from
its assisted generation (transformers 5.25.0's signature):

    _speculative_sampling(candidate_input_ids (1, L),  the drafts are its last k ids
                          candidate_logits (1, k, V),  the draft's logits (softmaxed inside)
                          candidate_length = k,
                          new_logits (1, k + 1, V),    the target's logits
                          assistant_ensemble_weight=None)
      -> (valid_tokens (1, n + 1), n_matches)

log q and log p are the logits (softmax gives q and p back; log 0 = -inf gives 0). Its
randomness is torch's global generator (torch.rand_like, torch.multinomial): the adapter seeds
it from rng at each call, so the audit's seed fixes the run. torch and transformers are the
optional audit extra (requirements-audit.lock); importing this module does not need them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

SEED_MAX = 2**63 - 1


def _logits(rows: np.ndarray):
    import torch
    with np.errstate(divide="ignore"):
        return torch.as_tensor(np.log(np.asarray(rows, dtype=np.float64)))[None]  # (1, m, V)


def shipped(drafted, q, p, rng: np.random.Generator) -> list[int]:
    """transformers' _speculative_sampling on (drafted, q, p), seeded from rng."""
    import torch
    from transformers.generation.utils import _speculative_sampling

    torch.manual_seed(int(rng.integers(SEED_MAX)))
    ids = torch.as_tensor(np.asarray(drafted, dtype=np.int64))[None]  # (1, k)
    tokens, _ = _speculative_sampling(ids, _logits(q), len(drafted), _logits(p))
    return [int(t) for t in tokens[0].tolist()]


def with_reported_q(report: Callable[[np.ndarray], np.ndarray]) -> Callable:
    """shipped, handed report(q) instead of the q the drafts came from: transformers issue
    #47932's mechanism (a candidate generator reports a q it did not sample from)."""

    def verify(drafted, q, p, rng):
        return shipped(drafted, report(np.asarray(q, dtype=np.float64)), p, rng)

    return verify


def flattened(q: np.ndarray) -> np.ndarray:
    """A q with mass on tokens the draft never proposes: half q, half uniform, as the raw
    distribution beside its truncation is (rows: (k, V))."""
    return 0.5 * q + 0.5 / q.shape[-1]
