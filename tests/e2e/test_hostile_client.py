"""What a raw client (no browser: no Origin, no XSRF token) can do to a real server, and what
the HTTP layer takes: clear-cache messages, huge WebSocket frames, the metrics endpoint,
over-long URLs, and the memory closed sessions leave while the server idles.

Servers that are measured (memory, timing) are started for the test alone.
"""

from __future__ import annotations

import contextlib
import os
import socket
import statistics
import threading
import time
import urllib.error
import urllib.request

import pytest
import rawclient
from harness import health, start_server
from test_browser import settle
from test_hostile_server import Peak, rss_mb

TEXT_READY = "Round 0 starts after"
HEAVY = ("order=8&open=tokens_per_call_and_speedup_by_draft_order_chart,"  # /text with models
         "the_drafters_side_by_side_chart_and_table")  # the default page does not count, and
# its two sections that decode (draft orders, drafters) open: a cold run does real work
FRAME_MB = 200  # Streamlit's default server.maxMessageSize, which the server once buffered
FRAME_GROWTH_MB = 60  # what one such frame (or four at once) may add to the server now
IDLE_TTL_S = 2  # disconnected sessions expire after this (the default is 120 s)
QUIET_S = 1  # the server collects once quiet this long ($SPECVIZ_COLLECT_QUIET_S, default 5)
# closed sessions have expired and been collected: the collector sees the count change within
# QUIET_S, then QUIET_S of quiet; with room for a loaded machine
COLLECTED_S = IDLE_TTL_S + 2 * QUIET_S + 5
VISITORS = 24


def visitor_query(i: int) -> str:
    """The i-th distinct /text visitor: its own target order, temperature, seed, round."""
    return f"order={3 + i % 6}&Tp={0.5 + 0.01 * i:.2f}&seed={i}&rnd={i}"


def _visitors(port: int, pid: int) -> float:
    """VISITORS raw sessions, each running /text with its own settings and kept open until
    the last has run; the server's resident MB with all of them held, read before they close
    together. (Closed one by one, the first sessions expired, and were freed, while the last
    ran on a loaded machine: CI read 198 -> 277 MB, a few sessions' worth, against 333 -> 953
    here when quiet.)"""
    with contextlib.ExitStack() as held:
        for i in range(VISITORS):
            ws = held.enter_context(rawclient.session(port))
            rawclient.run_script(ws, "text", visitor_query(i))
        return rss_mb(pid)


def _text_run(port: int, query: str = "") -> float:
    """Seconds the server takes to run /text for a new raw session."""
    with rawclient.session(port) as ws:
        return rawclient.run_script(ws, "text", query)


# ----------------------------------------------------------------------------- clear-cache
def test_a_raw_clients_clear_cache_leaves_the_shared_models():
    """A raw client's clear-cache emptied every cache of every session: warm /text 0.53 s
    became 7.67 s after one clear. Now a clear (one every 0.5 s, even) leaves /text warm."""
    srv = start_server()
    try:
        _text_run(srv.port)  # imports, the default corpus, its counts
        cold, warm = _text_run(srv.port, HEAVY), _text_run(srv.port, HEAVY)  # order-8 counts
        stop = threading.Event()
        with rawclient.session(srv.port) as ws:
            rawclient.send(ws, clear_cache=True)
            time.sleep(1.0)
            after = _text_run(srv.port, HEAVY)

            def keep_clearing() -> None:
                while not stop.wait(0.5):
                    rawclient.send(ws, clear_cache=True)

            clearer = threading.Thread(target=keep_clearing, daemon=True)
            clearer.start()
            try:
                during = [_text_run(srv.port, HEAVY) for _ in range(3)]
            finally:
                stop.set()
                clearer.join()
        print(f"/text on the server: cold {cold:.2f} s, warm {warm:.2f} s, after a clear "
              f"{after:.2f} s; clearing every 0.5 s {statistics.median(during):.2f} s, median")
        assert after < 0.5 * cold, (cold, warm, after)
        # a clear every 0.5 s that dropped the models would make every run cold: the median
        # sees that, and not one run slowed by the load (at load 10: 0.19, 0.32, 0.10 s
        # against a cold 0.50 s)
        assert statistics.median(during) < 0.5 * cold, (cold, warm, during)
        assert health(srv.url)
    finally:
        srv.stop()


# ----------------------------------------------------------------------------- frames
def test_a_huge_frame_is_refused_before_it_is_buffered():
    """One 200 MB WebSocket frame added 368 MB to the server before it was refused at
    25 MB, four at once 802 MB. Now the frame's header is enough to refuse it."""
    srv = start_server()
    try:
        time.sleep(1.0)
        base = rss_mb(srv.pid)
        with Peak(srv) as one:
            sent, code = rawclient.big_frame(srv.port, FRAME_MB * 10**6)
        results = []
        with Peak(srv) as four:
            threads = [threading.Thread(target=lambda: results.append(
                rawclient.big_frame(srv.port, FRAME_MB * 10**6))) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        print(f"{FRAME_MB} MB frame: server took {sent / 1e6:.0f} MB, close {code}; RSS "
              f"{base:.0f} -> peak {one.mb:.0f} MB (one), {four.mb:.0f} MB (four at once)")
        assert one.mb - base < FRAME_GROWTH_MB, (base, one.mb)
        assert four.mb - base < FRAME_GROWTH_MB, (base, four.mb)
        assert health(srv.url)
    finally:
        srv.stop()


def test_garbage_frames_log_one_line_each_rate_limited():
    """200 frames that are no BackMsg wrote 200 tracebacks (75 KB in a second): now one line,
    once per LOG_EVERY_S, with the count of those left out (issue 40 item 6)."""
    srv = start_server()
    try:
        before = len(srv.log())
        for i in range(200):
            rawclient.garbage_frame(srv.port, bytes([0xFF, i % 256]) * 30)
        time.sleep(1.0)
        new = srv.log()[before:]
        lines = [x for x in new.splitlines() if "deserializing" in x]
        assert "Traceback" not in new and 1 <= len(lines) <= 3, new[:2000]
        assert len(new) < 2_000 and health(srv.url)
    finally:
        srv.stop()


STOP_S = 2.0  # SIGTERM to exit, during a measurement, on a loaded machine (issue 40 item 6)


def _burn(stop: float) -> None:
    while time.monotonic() < stop:
        pass


@pytest.mark.model
@pytest.mark.slow
def test_sigterm_ends_the_server_within_2_s_during_a_measurement():
    """Measure (every draft, k = 8, 64 tokens) pressed by a raw client, the model loaded and
    decoding, two busy processes beside it (the machine loaded on top of what it runs):
    SIGTERM, then the process is gone within STOP_S, timed by its parent's wait. It took
    3.0-7.4 s under load (a round's passes, then the graceful shutdown)."""
    import multiprocessing
    import signal

    srv = start_server()
    burners = [multiprocessing.Process(target=_burn, args=(time.monotonic() + 300,))
               for _ in range(2)]
    try:
        def press() -> None:
            with contextlib.suppress(Exception), rawclient.session(srv.port) as ws:
                rawclient.press(ws, "measured", "m_draft=all&m_k=8&m_new=64", "Measure",
                                timeout_s=600)
        threading.Thread(target=press, daemon=True).start()
        t0 = time.monotonic()
        while rss_mb(srv.pid) < 1_000 and time.monotonic() - t0 < 240:  # the model loads
            time.sleep(0.5)
        for b in burners:
            b.start()
        time.sleep(8)  # decoding, under load
        t1 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        srv.proc.wait(30)
        took = time.monotonic() - t1
        print(f"SIGTERM to exit during a measurement: {took:.2f} s "
              f"(load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
        assert took < STOP_S
    finally:
        for b in burners:
            if b.is_alive():
                b.terminate()
        srv.stop()


@pytest.mark.slow
def test_a_query_streamlit_leaves_out_gets_a_note():
    """Streamlit empties a query over 524,288 characters or 1,000 parameters with a line in
    the log only: the page opened at its defaults with no word why (issue 40 item 6)."""
    srv = start_server()
    try:
        for query, said in (("k=3&prompt=" + "a" * 530_000, "530,011 characters"),
                            ("&".join(f"x{i}=1" for i in range(1_200)), "characters")):
            alerts: list[str] = []
            with rawclient.session(srv.port) as ws:
                rawclient.run_script(ws, "text", query, alerts=alerts)
            assert any("settings were left out" in a and said in a for a in alerts), alerts
        alerts = []
        with rawclient.session(srv.port) as ws:  # a query it reads: no such note
            rawclient.run_script(ws, "text", "k=3&prompt=" + "a" * 500_000, alerts=alerts)
        assert not any("left out" in a for a in alerts) and alerts  # the prompt's own note
    finally:
        srv.stop()


# ----------------------------------------------------------------------------- HTTP
def test_metrics_are_closed(server):
    """/_stcore/metrics answered anyone (only the proxy closed it)."""
    for method in ("GET", "OPTIONS"):
        req = urllib.request.Request(server.url + "/_stcore/metrics", method=method)
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(req, timeout=10)
        assert exc.value.code == 404, (method, exc.value.code)
    assert health(server.url)


def _status_line(port: int, target: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        return s.recv(64).split(b"\r\n")[0]


@pytest.mark.parametrize("chars", [130_000, 1_000_000, 2_000_000])
def test_an_over_long_url_reaches_the_app(server, chars):
    """A request line over ~125 KB was refused (the browser saw a reset) before the app
    could say what it left out; a browser sends up to 2 MiB."""
    assert _status_line(server.port, "/text?prompt=" + "a" * chars) == b"HTTP/1.1 200 OK"


def test_an_over_long_url_gets_the_apps_note(server, page):
    page.goto(server.url + "/text?k=3&prompt=" + "a" * 300_000)
    note = page.get_by_text("URL parameter prompt=")
    note.first.wait_for(timeout=120_000)
    settle(page, timeout=120_000)
    assert page.get_by_text(TEXT_READY).count() >= 1
    assert "k=3" in page.url


# ----------------------------------------------------------------------------- idle memory
def test_closed_sessions_memory_goes_while_the_server_idles():
    """50 /text visitors took a fresh server from 74 to 1,071 MB, unchanged 150 s after the
    last tab closed. Now the server collects once it is quiet after sessions end.

    The visitors come twice. The first pass computes each one's settings, which the
    server's bounded caches keep on purpose (about 10 MB a setting); the second pass
    brings the same settings in new sessions, so what the closed sessions held is what
    must go."""
    srv = start_server(env={"STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL": str(IDLE_TTL_S),
                            "SPECVIZ_COLLECT_QUIET_S": str(QUIET_S)})
    try:
        _visitors(srv.port, srv.pid)  # the shared models and each visitor's cached results
        time.sleep(COLLECTED_S)
        base = rss_mb(srv.pid)
        closed = _visitors(srv.port, srv.pid)
        deadline = time.monotonic() + COLLECTED_S + 5
        idle = rss_mb(srv.pid)
        while idle - base >= 0.5 * (closed - base) and time.monotonic() < deadline:
            time.sleep(0.5)  # not gone yet: the sessions expire, then a quiet period
            idle = rss_mb(srv.pid)
        print(f"{VISITORS} /text sessions: {base:.0f} -> {closed:.0f} MB; idle {idle:.0f} MB")
        assert closed - base > 0.5 * VISITORS, (base, closed)  # each session held some
        assert idle - base < 0.5 * (closed - base), (base, closed, idle)
    finally:
        srv.stop()
