"""Medusa heads on Gemma 3 270M: the target drafts its own next tokens from its hidden state.

Head k (k = 1..K; Cai et al. 2024, Medusa-1): p_k(. | h_t) = softmax(E (SiLU(W1_k h_t) +
h_t)), h_t the target's last hidden state at position t (after the final norm), W1_k (d, d)
the head's own, E the target's tied output rows over the heads' N rows (a trimmed head,
FR-Spec: q = 0 off them). Head k predicts the token at t + k + 1. A round at a prefix of n
tokens reads h at position n - 2, which the target computed in the last round's pass (its
row gave the token at n - 1), so drafting costs K small products and no pass of the model:
draft i comes from head i, while head i is sure of itself: its top probability at T = 1
is at least spec.sure (SURE by default, chosen by SURE_HOW; a draft-side stop, core.stop).
The weights ship in data/medusa-heads.npz (f16) with a JSON beside it (checksum, the
training script's version, data, steps, seed, held-out top-1); `python -m
specviz.medusatrain` trains them (llm.medusafit).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.stop import unsure
from .blas import Tiled, rows_by
from .draftkind import DraftError, DraftSpec
from .lossless import GreedyPair, one_hot
from .pair import LLMPair, softmax
from .runner import TIMED_PASSES
from .store import Model

K_MAX = 4  # heads shipped
# The draft-side stop (core.stop): head i drafts while its top probability (its softmax at
# T = 1, greedy or not) is at least SURE. Chosen by SURE_HOW on the training data's held-out
# greedy continuations (7,360 positions of 80 of them; never the benchmark's prompts), with
# the pass over n positions at r = 1, 1.08, 1.01, 1.14, 1.27 of one (n = 1..5, the quiet
# bench_medusa run; r(4) between its neighbours): the s of the largest held-out speedup,
# 1.34x against 1.20x with every head drafting (1.55 drafts a round against 4), flat within
# 0.01 for s = 0.25-0.40.
SURE = 0.31
SURE_HOW = "python -m specviz.medusastop"
ROWS = 8192  # rows of the output layer the heads read
V_GEMMA = 262_144
HEADS_PATH = Path(__file__).with_name("data") / "medusa-heads.npz"
RETRAIN = "python -m specviz.medusatrain"


@dataclass(frozen=True)
class Heads:
    """K heads: W1 (K, d, d) f32, the output rows they read (N,) and where they came from."""

    W1: np.ndarray
    rows: np.ndarray
    meta: dict
    sha256: str

    @property
    def K(self) -> int:
        return len(self.W1)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def save_heads(path: Path, W1: np.ndarray, rows: np.ndarray, meta: dict) -> None:
    """W1 (K, d, d) in f16 and rows (N,) into path; meta and the file's sha256 beside it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        np.savez(f, W1=W1.astype(np.float16), rows=rows.astype(np.int32))
    meta = dict(meta, sha256=_sha(path), K=int(len(W1)), rows=int(len(rows)))
    path.with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n")


_lock = threading.Lock()
_loaded: dict[Path, Heads] = {}


def load_heads(path: Path = HEADS_PATH) -> Heads:
    """The heads in path, checked against the checksum beside them (once per process)."""
    with _lock:
        if path not in _loaded:
            if not path.exists() or not path.with_suffix(".json").exists():
                raise DraftError(f"no Medusa heads at {path}: train them with {RETRAIN}")
            meta = json.loads(path.with_suffix(".json").read_text())
            sha = _sha(path)
            if sha != meta.get("sha256"):
                raise DraftError(f"the Medusa heads at {path} do not match their checksum; "
                                 f"train them again with {RETRAIN}")
            with np.load(path) as z:
                W1 = z["W1"].astype(np.float32)
                rows = z["rows"].astype(np.int64)
            _loaded[path] = Heads(W1, rows, meta, sha)
        return _loaded[path]


def head_macs(d: int, rows: int) -> int:
    """Multiply-adds of one head at one position: W1 (d x d), then E (rows x d)."""
    return d * d + rows * d


class MedusaPair(LLMPair):
    """The target (p) and its own Medusa heads (q): draft i of a round comes from head i at
    the hidden state before the round's newest token (Heads; the module's docstring). A
    round starts at propose (the engine asks it first, each round): q depends on where the
    round began, so the rejection laws are kept per round."""

    def __init__(self, model: Model, spec: DraftSpec, *, T: float = 1.0, heads: Heads,
                 **kwargs) -> None:
        super().__init__(model, spec, T=T, **kwargs)
        if spec.heads is None or spec.heads > heads.K:
            raise DraftError(f"{spec.label} asks for more heads than the {heads.K} trained")
        if heads.W1.shape[1] != model.cfg.d:
            raise DraftError(f"the Medusa heads are {heads.W1.shape[1]} wide, the model "
                             f"{model.cfg.d}: train them again with {RETRAIN}")
        self.heads, self.K = heads, int(spec.heads)
        self.E = Tiled.of(model.weights.embed.rows(heads.rows))  # (N, d) as tiles
        self._base: tuple[int, ...] | None = None
        self._z: dict[int, np.ndarray] = {}  # head -> its logits (N,), this round
        self._head_passes: deque[tuple[int, int, float]] = deque(maxlen=TIMED_PASSES)

    @property
    def fingerprint(self) -> str:
        return f"gemma3-270m|{self.spec.label}|{self.heads.sha256[:12]}|T{self.T:g}"

    def propose(self, prefix: Sequence[int], k: int) -> None:
        """A round starts at prefix: no proposal, the heads draft from q."""
        self.spec.check_k(k)
        if len(prefix) < 2:
            raise ValueError("Medusa's heads read the state before the newest token: the "
                             "prompt needs two tokens or more")
        base = tuple(int(t) for t in prefix)
        if base != self._base:
            self._base, self._z, self._rejections = base, {}, None
        return None

    def stop(self, prefix: Sequence[int], drafts: Sequence[int]) -> str | None:
        """Head i = len(drafts) + 1 drafts while its top probability max_x softmax(z_i)(x)
        at T = 1 (z_i its logits) is at least spec.sure: the head's own row, known before
        any draft of the round is drawn (core.stop)."""
        if self.spec.sure <= 0.0:
            return None
        i = self.head_of(list(prefix) + list(drafts))
        top = unsure(softmax(self.head_logits(i), 1.0), self.spec.sure)
        return None if top is None else \
            f"head {i} unsure (max q {top:.2f} < {self.spec.sure:g})"

    def head_of(self, prefix: Sequence[int]) -> int:
        """Which head drafts the token after prefix in this round (1..K)."""
        base = self._base
        if base is None or tuple(int(t) for t in prefix[: len(base)]) != base:
            raise ValueError("Medusa drafts inside a round: propose() starts one")
        i = len(prefix) - len(base) + 1
        if not 1 <= i <= self.K:
            raise ValueError(f"head {i} asked for; {self.spec.label} has heads 1..{self.K}")
        return i

    def head_logits(self, i: int) -> np.ndarray:
        """Head i's logits over the heads' rows at this round, (N,): E (SiLU(W1_i h) + h),
        h the target's state at the round's prefix but its newest token."""
        if i not in self._z:
            h = self.target.hidden_at(self._base, len(self._base) - 1)  # (d,)
            t0 = time.perf_counter()
            a = h @ self.heads.W1[i - 1]  # (d,)
            u = a / (1.0 + np.exp(-a)) + h
            self._z[i] = rows_by(u[None, :], self.E)[0]  # (N,)
            self._head_passes.append((1, 1, time.perf_counter() - t0))
        return self._z[i]

    def full_row(self, z: np.ndarray) -> np.ndarray:
        """z over the heads' rows placed in the vocabulary, -inf elsewhere (V,)."""
        out = np.full(self.V, -np.inf, dtype=np.float32)
        out[self.heads.rows] = z
        return out

    def q(self, prefix: Sequence[int]) -> np.ndarray:
        i = self.head_of(prefix)
        return self._rows.get(("medusa", self._base, i),
                              lambda: softmax(self.full_row(self.head_logits(i)), self.T))

    @property
    def draft_passes(self) -> tuple[tuple[int, int, float], ...]:
        """(1, 1, seconds) of each head's products so far."""
        return tuple(self._head_passes)


class GreedyMedusaPair(GreedyPair, MedusaPair):
    """Medusa at T = 0: q one-hot at the head's argmax, p at the target's (GreedyPair)."""

    def q(self, prefix: Sequence[int]) -> np.ndarray:
        i = self.head_of(prefix)
        return self._rows.get(("medusa greedy", self._base, i), lambda: one_hot(
            self.V, int(self.heads.rows[np.argmax(self.head_logits(i))])))
