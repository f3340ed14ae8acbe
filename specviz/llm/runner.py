"""One model over its own KV cache: logits at any prefix, the cache reused across calls.

A Runner is the target (every layer, the full head) or a draft (a subset of the layers,
and the full head or a trimmed one). Asked for the logits at prefixes tokens[:j], it keeps
the cached positions that tokens shares with what the cache holds, rolls back the rest
(rejected drafts), and runs the missing positions as one block, computing the head only at
the positions asked for. Every pass is timed (passes), so the cost ratio c is measured.

Asked for the logits at many prefixes that branch (score: a token tree), it runs every
node the cache lacks in one pass with tree attention (SpecInfer, Miao et al. 2023): each
node at RoPE position len(base) - 1 + its depth, reading the base and its own ancestors
only. The cache then holds the tree past the base (Pending); the next call that reads on
keeps only the path it follows, moved down to the slots after the base, and drops the rest.

Each pass also keeps the final-normed hidden state at the rows it computed the head for
(hidden_at: what Medusa heads read, with no pass of their own), the newest KEPT_LOGITS.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from weakref import WeakValueDictionary

import numpy as np

from .blas import Tiled
from .forward import KVCache, forward
from .gemma import Weights

CONTEXT_MAX = 2048  # positions a runner may hold (prompt and generated together)
KEPT_LOGITS = 80  # logits rows kept per runner, newest prefixes first (1 MB each at full V)
TIMED_PASSES = 4096  # passes whose (positions, heads, seconds) are kept (a decode: ~1,100)


def common_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens a and b share."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0]) if len(diff) else n


Path = tuple[int, ...]  # the tokens after a tree's base, to one node
_HEADS: WeakValueDictionary[Hashable, Tiled] = WeakValueDictionary()
_heads_lock = threading.Lock()


def head_key(w: Weights, head_ids: np.ndarray) -> Hashable:
    """What names a trimmed head: the weights and its rows (ids: (N,) int64)."""
    return ("head", id(w), len(head_ids), hashlib.blake2b(head_ids.tobytes()).hexdigest())


def trimmed_head(w: Weights, head_ids: np.ndarray) -> Tiled:
    """The embedding's rows head_ids as a head (N x d f32: 42 MB at N = 16,384, 671 MB at
    262,143), one per weights and rows in the process while any runner holds it: every
    draft over the same rows shares it."""
    key = head_key(w, head_ids)
    with _heads_lock:
        head = _HEADS.get(key)
        if head is None:
            head = _HEADS[key] = Tiled.of(w.embed.rows(head_ids))
        return head


@dataclass
class Pending:
    """A token tree the cache holds past the base (the runner's tokens): each node's slot,
    and the logits at the nodes asked for. Paths are closed under prefixes."""

    base: int  # len(runner.tokens): the slots before it hold the base, in order
    slot: dict[Path, int] = field(default_factory=dict)
    logits: dict[Path, np.ndarray] = field(default_factory=dict)
    hidden: dict[Path, np.ndarray] = field(default_factory=dict)  # (d,) at those nodes


def tree_layout(t0: int, n_lin: int, base: int, nodes: Sequence[Path],
                slot: dict[Path, int]) -> tuple[np.ndarray, np.ndarray]:
    """A pass of n_lin tokens of the base at slots t0.., then the nodes (parents first) at
    the slots after them (added to slot): RoPE positions (n,) and the mask (n, t0 + n) of
    the slots each reads: causal for the base's tokens, the base and the node's own
    ancestors and itself for a node, at position base - 1 + depth."""
    n = n_lin + len(nodes)
    pos, mask = np.empty(n, dtype=np.int64), np.zeros((n, t0 + n), dtype=bool)
    for r in range(n_lin):
        pos[r] = t0 + r
        mask[r, : t0 + r + 1] = True
    for r, path in enumerate(nodes, start=n_lin):
        slot[path] = t0 + r
        pos[r] = base - 1 + len(path)
        mask[r, :base] = True
        mask[r, [slot[path[:d]] for d in range(1, len(path) + 1)]] = True
    return pos, mask


class Runner:
    """Logits of one model (layers, head) at prefixes, over one KV cache (not shared
    between threads: each caller owns its runners; the weights are shared)."""

    def __init__(self, w: Weights, layers: Sequence[int] | None = None,
                 head_ids: np.ndarray | None = None) -> None:
        self.w = w
        self.layers = tuple(range(w.cfg.n_layers)) if layers is None else tuple(layers)
        self.head_ids = None if head_ids is None else np.asarray(head_ids, dtype=np.int64)
        self.head = None if head_ids is None else trimmed_head(w, self.head_ids)
        self.cache = KVCache(w, self.layers)
        self.tokens: list[int] = []  # what the cache holds
        self._logits: dict[int, np.ndarray] = {}  # prefix length -> logits (V_head,)
        self._hidden: dict[int, np.ndarray] = {}  # prefix length -> hidden state (d,)
        self.passes: deque[tuple[int, int, float]] = deque(maxlen=TIMED_PASSES)
        self._lock = threading.Lock()
        self._tree: Pending | None = None  # a token tree held past self.tokens

    @property
    def nbytes(self) -> int:
        """Bytes this runner holds of its own: its KV cache and the logits rows it keeps
        (its trimmed head is shared: shared)."""
        with self._lock:
            rows = list(self._logits.values())
            if self._tree is not None:
                rows += list(self._tree.logits.values())
        return self.cache.nbytes + sum(r.nbytes for r in {id(r): r for r in rows}.values())

    @property
    def shared(self) -> dict[Hashable, int]:
        """What it holds that other runners may hold too: its trimmed head, by name."""
        if self.head is None:
            return {}
        return {head_key(self.w, self.head_ids): self.head.nbytes}

    def rollback(self, n: int) -> None:
        """Forget every position from n on (and any tree held past the base)."""
        self._tree = None
        self.cache.truncate(n)
        del self.tokens[n:]
        for j in [j for j in self._logits if j > n]:
            del self._logits[j]
        for j in [j for j in self._hidden if j > n]:
            del self._hidden[j]

    def forget(self) -> None:
        """Drop the logits kept for earlier prefixes (the KV cache stays, and the hidden
        states, KEPT_LOGITS x d floats at most: a Medusa round reads the last one)."""
        with self._lock:
            self._logits.clear()
            if self._tree is not None:
                self._tree.logits.clear()

    def logits(self, tokens: Sequence[int], lengths: Sequence[int]) -> list[np.ndarray]:
        """Logits at the prefixes tokens[:j] for j in lengths (each 1..len(tokens)), from at
        most one block pass. Each (V_head,) f32, read-only."""
        tokens = [int(t) for t in tokens]
        lengths = [int(j) for j in lengths]
        if not lengths or min(lengths) < 1 or max(lengths) > len(tokens):
            raise ValueError(f"prefix lengths must lie in 1..{len(tokens)}; got {lengths}")
        end = max(lengths)
        if end > CONTEXT_MAX:
            raise ValueError(f"the context holds {end} tokens; the cap is {CONTEXT_MAX}")
        with self._lock:
            if self._tree is not None:
                held = self._from_tree(tokens, lengths)
                if held is not None:
                    return held
                self._settle(tokens[:end])
            m = common_length(self.tokens, tokens[:end])
            missing = sorted({j for j in lengths if j > m or j not in self._logits})
            if missing:
                t = min(m, missing[0] - 1)
                self.rollback(t)  # lets the rows past t go: those asked for run again
                missing = sorted({j for j in lengths if j > t})
                t0 = time.perf_counter()
                out, hid = forward(self.w, tokens[t:end], self.cache,
                                   rows=[j - 1 - t for j in missing], head=self.head,
                                   with_hidden=True)
                self.passes.append((end - t, len(missing), time.perf_counter() - t0))
                self.tokens = tokens[:end]
                for j, row, h in zip(missing, out, hid, strict=True):
                    row.setflags(write=False)
                    self._logits[j], self._hidden[j] = row, h
            asked = [self._logits[j] for j in lengths]  # before the oldest are let go
            for kept in (self._logits, self._hidden):
                for j in sorted(kept)[:-KEPT_LOGITS]:
                    del kept[j]
            return asked

    def hidden_at(self, tokens: Sequence[int], j: int) -> np.ndarray:
        """The final-normed hidden state at prefix tokens[:j] (the state whose head gave
        the logits there), (d,) f32: the one a pass kept, else from a pass now."""
        tokens = [int(t) for t in tokens[:j]]
        with self._lock:
            held = self._hidden.get(j) if common_length(self.tokens, tokens) >= j else None
            if held is not None:
                return held
            self._logits.pop(j, None)  # not kept with its logits: computed again
        self.logits(tokens, [j])
        return self._hidden[j]

    def score(self, prefix: Sequence[int], tails: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """Logits at prefix + t for each t in tails, from at most one pass: a chain (every
        tail a prefix of the longest) as logits(); a tree with tree attention."""
        prefix = [int(t) for t in prefix]
        tails = [tuple(int(x) for x in t) for t in tails]
        if not tails:
            return []
        longest = max(tails, key=len)
        if all(longest[: len(t)] == t for t in tails):
            return self.logits(prefix + list(longest), [len(prefix) + len(t) for t in tails])
        if len(prefix) + len({p[:d] for p in tails for d in range(len(p) + 1)}) > CONTEXT_MAX:
            raise ValueError(f"the context and the tree hold over {CONTEXT_MAX} tokens")
        with self._lock:
            return self._tree_pass(prefix, tails)

    def _tree_pass(self, prefix: list[int], tails: list[Path]) -> list[np.ndarray]:
        """score's tree: one pass runs the base's tokens the cache lacks and the nodes the
        tree lacks, and keeps the rows asked for that are not kept yet."""
        tr, lin = self._tree_for(prefix, tails)
        rel = [tuple(prefix[tr.base:]) + t for t in tails]
        nodes = sorted({p[:d] for p in rel for d in range(1, len(p) + 1)} - set(tr.slot),
                       key=lambda p: (len(p), p))
        t0 = self.cache.n
        pos, mask = tree_layout(t0, len(lin), tr.base, nodes, tr.slot)
        at = self._rows_asked(tr, rel, t0=t0, n_lin=len(lin))
        if nodes or lin:
            began = time.perf_counter()
            out, hid = forward(self.w, lin + [p[-1] for p in nodes], self.cache,
                               rows=list(at.values()), head=self.head, positions=pos,
                               mask=mask, with_hidden=True)
            self.passes.append((len(lin) + len(nodes), len(at), time.perf_counter() - began))
            for p, row, h in zip(at, out, hid, strict=True):
                row.setflags(write=False)
                if p:
                    tr.logits[p], tr.hidden[p] = row, h
                else:
                    self._logits[tr.base], self._hidden[tr.base] = row, h
        self._tree = tr
        return [tr.logits[p] if p else self._logits[tr.base] for p in rel]

    def _tree_for(self, prefix: list[int], tails: list[Path]) -> tuple[Pending, list[int]]:
        """The tree the nodes go onto and the base's tokens that run before them: the tree
        held, and none, when prefix is on it; else a new tree at prefix after the tokens the
        cache lacks (its last one again when the root's row is asked for and not kept)."""
        tr = self._tree
        if tr is not None and self._extends(tr, prefix, tails):
            return tr, []
        if tr is not None:
            self._settle(prefix)
        m = common_length(self.tokens, prefix)
        root = any(not t for t in tails) and (m < len(prefix) or len(prefix)
                                               not in self._logits)
        t = min(m, len(prefix) - 1 if root else len(prefix))
        self.rollback(t)
        self.tokens = prefix
        return Pending(len(prefix)), prefix[t:]

    def _rows_asked(self, tr: Pending, rel: list[Path], *, t0: int,
                    n_lin: int) -> dict[Path, int]:
        """The rows a pass from slot t0 returns: path -> its row, for each node asked for
        whose logits are not kept, and the root (the base's last token, row n_lin - 1)."""
        at = {p: tr.slot[p] - t0 for p in rel if p and p not in tr.logits}
        if () in rel and tr.base not in self._logits:
            at[()] = n_lin - 1
        return at

    def _extends(self, tr: Pending, prefix: list[int], tails: list[Path]) -> bool:
        """Whether the nodes asked for can be added to the tree held: prefix runs along it,
        and each node asked for either has its logits or is not held yet."""
        if len(prefix) < tr.base or prefix[: tr.base] != self.tokens:
            return False
        head = tuple(prefix[tr.base:])
        rel = [head + t for t in tails]
        on = all(head[:d] in tr.slot for d in range(1, len(head) + 1))
        root_ok = all(p for p in rel) or tr.base in self._logits
        return on and root_ok and all(p in tr.logits or p not in tr.slot for p in rel if p)

    def _from_tree(self, tokens: list[int], lengths: list[int]) -> list[np.ndarray] | None:
        """The logits asked for when every one is held (the base's, or the tree's), or None."""
        tr = self._tree
        if tokens[: tr.base] != self.tokens:
            return None
        rows = [self._logits.get(j) if j <= tr.base else tr.logits.get(tuple(
            tokens[tr.base: j])) for j in lengths]
        return None if any(r is None for r in rows) else rows

    def _settle(self, tokens: Sequence[int]) -> None:
        """Keep, of the tree held, the path tokens runs along, moved to the slots after the
        base (its keys were made at those positions); drop the rest."""
        tr, self._tree = self._tree, None
        if common_length(self.tokens, tokens) < tr.base:
            self.rollback(common_length(self.tokens, tokens))
            return
        d = 0
        while d < len(tokens) - tr.base and tuple(tokens[tr.base: tr.base + d + 1]) in tr.slot:
            d += 1
        path = tuple(int(t) for t in tokens[tr.base: tr.base + d])
        src = [tr.slot[path[:i]] for i in range(1, d + 1)]
        if src:
            self.cache.move(src, tr.base)
        self.cache.truncate(tr.base + d)
        self.tokens = self.tokens + list(path)
        for i in range(1, d + 1):
            if path[:i] in tr.logits:
                self._logits[tr.base + i] = tr.logits[path[:i]]
                self._hidden[tr.base + i] = tr.hidden[path[:i]]

    def full_row(self, z: np.ndarray) -> np.ndarray:
        """Logits over the whole vocabulary: a trimmed head's rows in place, -inf elsewhere."""
        if self.head_ids is None:
            return z
        out = np.full(self.w.cfg.V, -np.inf, dtype=np.float32)
        out[self.head_ids] = z
        return out
