"""web/guard and what it stands on: escaping, the worker pool, stops, bounded stores."""

from __future__ import annotations

import re
import threading
import time

import numpy as np
import pytest
from scenarios import sc

from specviz.core import interrupt
from specviz.core.tables import default_tables
from specviz.text import ngram
from specviz.views.work import ByteLRU
from specviz.web import guard


@pytest.mark.parametrize("text, banned", [
    ("![](//host/i1)", "!["), ("[Sign in](//host)", "]("), ("$$x$$", "$$"),
    ("<img src=x>", "<img"), ("https://host", "://"), ("www.host.example", "www."),
    ("- a list", "- a"), ("1. a list", "1. a"), ("`code`", "`c"), (":red[x]", ":red["),
])
def test_plain_leaves_no_markdown(text, banned):
    out = guard.plain(text)
    assert banned not in out.replace("\\", "") or "\\" in out
    assert _shown(out) == text  # only backslashes and word joiners were added


def _shown(out: str) -> str:
    """What a reader sees: backslash escapes resolved, the invisible joiners gone."""
    return re.sub(r"\\(.)", r"\1", out).replace(guard.WORD_JOINER, "")


# What the browser finds in text after Markdown has been parsed (escapes resolved): each
# pattern written from its rule (GFM's autolink literals, emoji shortcodes, Material icons,
# Streamlit's colour / background / badge directives).
FORMED = {
    "www autolink": re.compile(r"(?i)www\."),
    "scheme autolink": re.compile(r"(?i)[a-z][a-z0-9+.-]*://"),
    "email autolink": re.compile(r"[\w.+-]@[\w-]"),
    "emoji or icon": re.compile(r":[\w/+-]+:"),
    "directive": re.compile(r":[a-z][\w-]*\["),
}
ENTITY = re.compile(r"(?<!\\)&#?\w+;")  # a character reference (one not escaped)
HOSTILE = [
    "Sign in at www.evil.example.txt", "WWW.EVIL.EXAMPLE", "see https://evil.example/x",
    "HTTP://evil.example", "mail me@evil.example now", ":smile: :+1: :rocket:",
    ":material/home: :material/lock_open:", ":red[alert] :blue-background[x] :rainbow[y]",
    ":green-badge[ok] :small[s] :violet[*bold*]", "a:red[b]c", "::red[x]",
    "model_name=\"www.evil.example\",x=\":material/bolt:\"",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_plain_lets_no_autolink_emoji_icon_or_directive_form(text):
    out = guard.plain(text)
    seen = re.sub(r"\\(.)", r"\1", out)  # the text as the browser's transforms see it
    for what, pattern in FORMED.items():
        assert not pattern.search(seen), (what, out)
    assert _shown(out) == text


def test_plain_leaves_character_references_as_typed():
    out = guard.plain("&lt;b&gt; &#60; &amp;")
    assert not ENTITY.search(out) and _shown(out) == "&lt;b&gt; &#60; &amp;"
    assert ENTITY.search("&lt;b&gt;")  # negative control


def test_plain_negative_control_the_patterns_find_the_raw_text():
    for text in HOSTILE:
        assert any(p.search(text) for p in FORMED.values()), text


def test_plain_keeps_ordinary_prose():
    s = "Corpus: my notes.txt, 6-gram, V = 95 (draft q)."
    assert guard.plain(s) == s
    assert guard.plain("two\nlines") == "two lines"


def test_plain_does_not_grow_with_its_input():
    for n in (10, guard.PLAIN_MAX_CHARS, 10**6):
        out = guard.plain("x" * n)
        assert len(_shown(out)) <= guard.PLAIN_MAX_CHARS + 40
        assert (f"{n:,} characters in all" in out) == (n > guard.PLAIN_MAX_CHARS)


def test_worker_pool_runs_at_most_its_size_and_says_when_waiting(monkeypatch):
    notes = []

    class Slot:
        def info(self, text):
            notes.append(text)

        def empty(self):
            pass

    monkeypatch.setattr(guard.st, "empty", Slot)
    now, peak, lock = [0], [0], threading.Lock()

    def job():
        with guard.worker():
            with lock:
                now[0] += 1
                peak[0] = max(peak[0], now[0])
            time.sleep(0.15)
            with lock:
                now[0] -= 1

    threads = [threading.Thread(target=job) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == guard.HEAVY_WORKERS
    assert len(notes) >= 6 - guard.HEAVY_WORKERS and "free worker" in notes[0]


def test_a_nested_heavy_call_does_not_wait_for_itself():
    """Nested heavy work runs in the slot its outer call holds: with every other slot taken
    a nested call that wanted one of its own would wait forever. It runs in a thread, so a
    regression fails at the timeout instead of hanging the suite."""
    held = []

    def nested():
        with guard.worker():
            others = [("other", i) for i in range(guard._LINE.free)]
            for who in others:
                guard._LINE.take(who)
            try:
                with guard.worker(), guard.worker():
                    held.append(len(others))
            finally:
                for who in others:
                    guard._LINE.give(who)

    t = threading.Thread(target=nested, daemon=True)
    t.start()
    t.join(timeout=10)
    assert not t.is_alive(), "a nested heavy call waited for a slot of its own"
    assert held == [guard.HEAVY_WORKERS - 1]  # the outer call held exactly one slot


def test_interrupt_stops_loops_and_follows_into_worker_threads():
    from specviz.core.montecarlo import simulate
    from specviz.views import demos

    d = default_tables()
    calls = []
    interrupt.install(lambda: calls.append(1) or len(calls) > 2)
    try:
        with pytest.raises(interrupt.Interrupted):
            simulate(sc(d.P, d.Q, 0, 4), n=10_000_000)
        calls.clear()
        with pytest.raises(interrupt.Interrupted):
            demos.exactness(sc(d.P, d.Q, 0, 4, seed=0), n=10_000_000)
    finally:
        interrupt.install(None)
    simulate(sc(d.P, d.Q, 0, 4), n=1_000)  # no hook: runs


def test_byte_lru_evicts_by_bytes():
    lru = ByteLRU(100)
    for i in range(5):
        lru.put(i, str(i), 30)
    assert lru.nbytes <= 100 and 4 in lru and 0 not in lru
    assert lru.get(2) == "2"
    lru.put(9, "9", 30)
    assert 2 in lru and 3 not in lru  # 2 was used more recently than 3
    assert lru.put("huge", "x", 1_000) == "x" and "huge" not in lru


def test_counts_past_the_model_cap_are_refused_while_counting():
    rng = np.random.default_rng(0)
    text = "".join(chr(c) for c in rng.integers(0x100, 0x2FFF, 400_000))
    t0 = time.perf_counter()
    with pytest.raises(ngram.ModelTooLarge, match="over the cap of 8 MB"):
        ngram.train(text, "char", 8, max_bytes=8 * 2**20)
    assert time.perf_counter() - t0 < 10
    assert ngram.MODEL_MAX_BYTES <= 80 * 2**20


def test_a_session_keeps_few_uploads(monkeypatch):
    """Streamlit keeps every file a client PUTs until the session ends; the app holds a
    session to SESSION_UPLOADS files and SESSION_UPLOAD_BYTES, keeping those in use."""
    from types import SimpleNamespace

    from streamlit.runtime import scriptrunner
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
    from streamlit.runtime.uploaded_file_manager import UploadedFileRec

    mgr = MemoryUploadedFileManager("/upload")
    for i in range(10):
        mgr.add_file("s1", UploadedFileRec(f"f{i}", f"{i}.txt", "text/plain", b"x" * 2**21))
    mgr.add_file("s2", UploadedFileRec("other", "o.txt", "text/plain", b"x" * 2**21))
    ctx = SimpleNamespace(uploaded_file_mgr=mgr, session_id="s1")
    monkeypatch.setattr(scriptrunner, "get_script_run_ctx", lambda: ctx)
    guard.session_uploads({"f0"})
    held = mgr.file_storage["s1"]
    assert len(held) <= guard.SESSION_UPLOADS
    assert sum(len(f.data) for f in held.values()) <= guard.SESSION_UPLOAD_BYTES
    assert "f0" in held and "f9" in held and "f1" not in held  # in use, newest; oldest gone
    assert "other" in mgr.file_storage["s2"]
