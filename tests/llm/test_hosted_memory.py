"""What one visitor of a hosted server can make the real model hold, on the tiny Gemma 3 of
test_llm_tiny (fast, no real model): every byte a stream holds is counted in the shared
store, one trimmed head per size is shared and counted once, and a link cannot build a
head past the pages' cap (issue 40, item 1: one URL pinned ~650 MB counted as 27 MB)."""

from __future__ import annotations

import numpy as np
import pytest
from test_llm_tiny import write_tiny

from specviz.core.warp import Warp
from specviz.llm import store
from specviz.llm.draftkind import DraftError
from specviz.llm.drafts import Kit, parse_draft
from specviz.llm.pair import LLMPair
from specviz.views import llmpage
from specviz.views.work import ByteLRU


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return store.read_model(write_tiny(tmp_path_factory.mktemp("tiny") / "t.gguf"))


def _kit(model) -> Kit:
    ids = np.arange(model.cfg.V, dtype=np.int64)  # every token once: ties broken by id
    return Kit(lambda m: ids, lambda m, i, n: None)


def _stream(model, N: int, seed: int = 0):
    spec = llmpage.parse(model, "trimmed", str(N))
    return llmpage.stream(model, spec, model.tokenizer.encode("ab a"), k=2, T=1.0,
                          seed=seed, rule="correct", warp=Warp(), kit=_kit(model))


def test_a_shared_part_is_counted_once_and_evicted_with_its_last_holder():
    lru = ByteLRU(100)
    lru.put("a", "A", 10, {"head": 50})
    lru.put("b", "B", 10, {"head": 50})
    assert lru.nbytes == 70  # two values and one head, not two
    lru.put("c", "C", 10, {"other head": 50})  # 130 in all; without a, still 120
    assert "a" not in lru and "b" not in lru and "c" in lru and lru.nbytes == 60
    assert lru.put("huge", "x", 60, {"big": 50}) == "x" and "huge" not in lru


def test_drafts_over_the_same_rows_share_one_head(tiny):
    counts = np.arange(tiny.cfg.V)[::-1].copy()
    a = LLMPair(tiny, parse_draft("trimmed:100", cfg=tiny.cfg), counts=counts)
    b = LLMPair(tiny, parse_draft("trimmed:100", cfg=tiny.cfg), counts=counts)
    c = LLMPair(tiny, parse_draft("trimmed:120", cfg=tiny.cfg), counts=counts)
    assert a.draft.head is b.draft.head and a.draft.head is not c.draft.head
    assert a.shared == b.shared and set(a.shared).isdisjoint(c.shared)
    assert list(a.shared.values()) == [a.draft.head.nbytes]


def test_a_stream_counts_its_caches_and_its_head(tiny):
    s = _stream(tiny, 200)
    s.extend(1)
    head = s.owner.draft.head.nbytes
    assert s.shared == s.owner.shared and sum(s.shared.values()) == head
    caches = s.owner.target.cache.nbytes + s.owner.draft.cache.nbytes
    assert caches > 0 and s.nbytes >= caches  # the KV caches count beside the rows
    lru = ByteLRU(10 * 2**20)
    for seed in range(3):  # three streams over one head: the head counted once
        t = _stream(tiny, 200, seed)
        t.extend(0)
        lru.put(seed, t, t.nbytes, t.shared)
    assert lru.nbytes < 3 * head + sum(lru.get(i).nbytes for i in range(3))
    assert lru.nbytes >= head + sum(lru.get(i).nbytes for i in range(3))


def test_a_link_cannot_build_a_head_past_the_cap(tiny, monkeypatch):
    monkeypatch.setattr(llmpage, "HEAD_ROWS_MAX", 100)
    assert llmpage.parse(tiny, "trimmed", "100").head == 100
    with pytest.raises(DraftError, match=r"trimmed head of 101 rows .* at most 100 rows"):
        llmpage.parse(tiny, "trimmed", "101")
    assert llmpage.HEAD_ROWS_MAX * tiny.cfg.d * 4 < 700e6
    monkeypatch.undo()
    assert llmpage.HEAD_ROWS_MAX * 640 * 4 <= 100e6  # Gemma 3 270M: at most ~84 MB a head


def test_a_stream_nobody_reads_goes_after_its_idle_time(monkeypatch):
    """Memory a minute after the last visitor: the shared streams kept up to their budget
    (320 MiB) for as long as the server ran; now one unused for idle_s goes."""
    from specviz.views import work

    clock = [1000.0]
    monkeypatch.setattr(work.time, "monotonic", lambda: clock[0])
    lru = ByteLRU(100, idle_s=30.0)
    lru.put("old", "O", 10, {"head": 50})
    lru.put("new", "N", 10)
    clock[0] += 20
    assert lru.expire() == 0 and len(lru) == 2
    lru.get("new")  # read: its clock starts again
    clock[0] += 15
    assert lru.expire() == 1 and "old" not in lru and lru.nbytes == 10
    assert ByteLRU(100).expire(clock[0] + 1e6) == 0  # without idle_s nothing expires
